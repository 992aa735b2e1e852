/* ckks-prng.h: AES-256-CTR streams keyed from OpenSSL's CSPRNG or a seed.
 * The keystream is OpenSSL's EVP_aes_256_ctr, or the same bytes from
 * ckks-aes-ctr.c where the CPU has VAES.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-aes-ctr.h"
#include "ckks-internal.h"

typedef struct {
  void *evp;                   /* EVP_CIPHER_CTX, where there is no VAES */
  bool vaes;                   /* the keystream comes from @stream */
  CkksAesCtr stream;
} CkksPrng;

/* A stream keyed by 32 fresh bytes of RAND_priv_bytes. */
CkksStatus ckks_prng_init_random (CkksPrng *prng);
/* A deterministic stream keyed by @seed, separated by @domain. */
CkksStatus ckks_prng_init_seed (CkksPrng *prng, const uint8_t seed[32],
                                uint64_t domain);
CkksStatus ckks_prng_bytes (CkksPrng *prng, void *out, size_t len);
void ckks_prng_clear (CkksPrng *prng);

/* Uniform ternary coefficients in {-1, 0, 1}. */
CkksStatus ckks_sample_ternary (CkksPrng *prng, int8_t *out, size_t n);
/* Centred binomial, parameter 21: values in [-21, 21], sigma 3.24. */
CkksStatus ckks_sample_cbd (CkksPrng *prng, int8_t *out, size_t n);
/* Uniform values in [0, q), rejection sampling on the stream. */
CkksStatus ckks_sample_uniform_mod (CkksPrng *prng, uint64_t q, uint64_t *out,
                                    size_t n);
