/* ckks-params.h: CKKS parameters (ring degree, RNS modulus chain) and contexts.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A CkksParams is a plain value: the ring degree N = 2^log_n and the primes
 * q_0 .. q_{L-1} of the RNS chain. A CkksContext is built from validated
 * parameters and holds every precomputed table (NTT twiddles per prime, the
 * encoder's FFT roots, CRT constants, the CPU backend). A context is
 * read-only after creation: share one between any number of threads.
 * Every other object (keys, ciphertexts, plans) keeps a pointer to its
 * context, so the context must outlive them.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CKKS_MIN_LOG_N 12
#define CKKS_MAX_LOG_N 16
#define CKKS_MAX_MODULI 16
#define CKKS_MAX_PRIME_BITS 61
#define CKKS_MIN_PRIME_BITS 20

typedef struct {
  uint32_t log_n;                     /* N = 2^log_n, 12..16 */
  uint32_t n_moduli;                  /* L, 1..CKKS_MAX_MODULI */
  uint64_t moduli[CKKS_MAX_MODULI];   /* distinct primes, q = 1 mod 2N */
} CkksParams;

/* Fills @out with a named preset: "fast" (N = 8192), "default" (N = 16384)
 * or "wide" (N = 32768), each with four primes just below 2^50 (log2 Q ~ 200).
 * See docs/benchmarks.md for why the default is what it is. */
CkksStatus ckks_params_preset (const char *name, CkksParams *out);

/* One more preset, for HE-LoRA on narrow models only (not among the
 * general presets below: two limbs, no room for any deeper computation):
 * N = 4096 with two primes just below 2^50 (log2 Q ~ 100, within the HE
 * Standard's 109-bit bound for N = 4096), for inputs of up to 1024 values
 * (see ts_helora_session_new). */
#define CKKS_PRESET_COMPACT "compact"
#define CKKS_PRESET_COMPACT_MAX_WIDTH 1024

/* Names of the presets, NULL-terminated, in order fast, default, wide. */
const char *const *ckks_params_preset_names (void);

/* The preset the product uses unless told otherwise: "fast". By measurement
 * (docs/benchmarks.md) N = 8192 runs the HE-LoRA token fastest at the same
 * accuracy (two-limb ciphertexts either way), with log2 Q = 200 within the
 * 218-bit bound for N = 8192, and it halves the upload. */
const char *ckks_params_default_preset_name (void);

/* Generates a chain of @n_moduli distinct primes q = 1 mod 2N, the i-th the
 * largest such prime below 2^bits[i] not used before (20..61 bits), and
 * validates the result (ckks_params_validate). */
CkksStatus ckks_params_generate (uint32_t log_n, const unsigned *bits,
                                 size_t n_moduli, CkksParams *out);

/* Checks ring degree, primality, q = 1 mod 2N, distinctness, prime sizes and
 * the HE Standard bound on log2 Q for 128-bit security with a ternary secret
 * (N = 4096: 109, 8192: 218, 16384: 438, 32768: 881, 65536: 1772 bits);
 * returns CKKS_ERR_INSECURE_PARAMETERS when the bound is exceeded. */
CkksStatus ckks_params_validate (const CkksParams *params);

/* log2 of the product of the moduli. */
double ckks_params_log2_q (const CkksParams *params);

/* The HE Standard bound on log2 Q for ring degree 2^@log_n (0 if unknown). */
unsigned ckks_params_max_log2_q (uint32_t log_n);

/* True if @n is prime (deterministic Miller-Rabin for 64-bit integers). */
int ckks_is_prime (uint64_t n);

typedef struct CkksContext CkksContext;

typedef enum {
  CKKS_BACKEND_AUTO = 0,     /* fastest path this CPU supports (cpuid) */
  CKKS_BACKEND_SCALAR,       /* portable reference path */
  CKKS_BACKEND_AVX2,         /* AVX2 + FMA in double precision (primes < 2^50) */
  CKKS_BACKEND_IFMA,         /* AVX-512 IFMA52 (primes < 2^50) */
} CkksBackend;

/* Builds a context (validates @params first). Owned by the caller: free it
 * with ckks_context_free() after every object that uses it. AUTO takes the
 * fastest backend the CPU and the primes allow (IFMA, then AVX2, then
 * scalar); a named SIMD backend they do not allow is CKKS_ERR_UNSUPPORTED.
 * Every backend gives bit-identical results. */
CkksStatus ckks_context_new (const CkksParams *params, CkksContext **out);
CkksStatus ckks_context_new_with_backend (const CkksParams *params,
                                          CkksBackend backend,
                                          CkksContext **out);
void ckks_context_free (CkksContext *ctx);

const CkksParams *ckks_context_params (const CkksContext *ctx);
size_t ckks_context_ring_degree (const CkksContext *ctx);
size_t ckks_context_slots (const CkksContext *ctx);
/* Name of the arithmetic path in use: "scalar", "avx2" or "avx512ifma". */
const char *ckks_context_backend_name (const CkksContext *ctx);
/* The backend CKKS_BACKEND_AUTO picks on this CPU when every prime is below
 * 2^50 (every preset): "avx512ifma", "avx2" or "scalar". Static string;
 * thread-safe; cheap (cpuid only, no context). */
const char *ckks_cpu_backend_name (void);
/* SHA-256 of the serialised parameters: identifies them in every format. */
const uint8_t *ckks_context_fingerprint (const CkksContext *ctx);

/* Low level: the negacyclic NTT of one limb in place (@values: N integers
 * below q_limb; forward gives bit-reversed evaluation order). */
CkksStatus ckks_ntt_forward_limb (const CkksContext *ctx, uint32_t limb,
                                  uint64_t *values);
CkksStatus ckks_ntt_inverse_limb (const CkksContext *ctx, uint32_t limb,
                                  uint64_t *values);

#ifdef __cplusplus
}
#endif
