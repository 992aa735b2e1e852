/* ckks-keys.h: secret and public keys, encryption and decryption.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The secret key is a uniform ternary polynomial; it has no plain serialiser
 * (only ckks_secret_key_seal/unseal with a caller's 256-bit key, AES-256-GCM)
 * and is wiped with OPENSSL_cleanse when freed. All randomness comes from
 * OpenSSL's CSPRNG (RAND_priv_bytes keys an AES-256-CTR stream per call);
 * uniform polynomials are expanded from a 32-byte seed (AES-256-CTR) directly
 * in NTT form, so a secret-key ciphertext and the public key travel as
 * (c0, seed). Errors are centred binomial with parameter 21 (sigma 3.24,
 * bounded by 21).
 *
 * Ownership as in ckks-cipher.h. Keys are read-only after creation and may be
 * shared between threads.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-cipher.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CkksSecretKey CkksSecretKey;
typedef struct CkksPublicKey CkksPublicKey;

/* Samples a fresh secret key. */
CkksStatus ckks_secret_key_new (const CkksContext *ctx, CkksSecretKey **out);
void ckks_secret_key_free (CkksSecretKey *sk);

/* Derives a fresh public key (b = -a*s + e, a from a seed) over all limbs. */
CkksStatus ckks_public_key_new (const CkksSecretKey *sk, CkksPublicKey **out);
void ckks_public_key_free (CkksPublicKey *pk);

/* Encrypts a plaintext (at @ct's limb count; pt needs at least that many).
 * Secret-key ciphertexts come out seeded. */
CkksStatus ckks_encrypt_sk (const CkksSecretKey *sk, const CkksPlaintext *pt,
                            CkksCiphertext *ct);
CkksStatus ckks_encrypt_pk (const CkksPublicKey *pk, const CkksPlaintext *pt,
                            CkksCiphertext *ct);
/* Encode and encrypt in one pass (the error is added before the NTT: one NTT
 * per limb for secret-key encryption). Same arguments as ckks_encode. */
CkksStatus ckks_encrypt_values_sk (const CkksSecretKey *sk, const double *re,
                                   const double *im, size_t count, double scale,
                                   CkksCiphertext *ct);
CkksStatus ckks_encrypt_values_pk (const CkksPublicKey *pk, const double *re,
                                   const double *im, size_t count, double scale,
                                   CkksCiphertext *ct);

/* Decrypts into @pt (created at ct's limb count or more; its scale becomes
 * ct's). */
CkksStatus ckks_decrypt (const CkksSecretKey *sk, const CkksCiphertext *ct,
                         CkksPlaintext *pt);

/* Seals @sk under @key (AES-256-GCM, random 96-bit nonce, the parameter
 * fingerprint authenticated). *out is malloc'ed, owned by the caller. */
CkksStatus ckks_secret_key_seal (const CkksSecretKey *sk, const uint8_t key[32],
                                 uint8_t **out, size_t *out_len);
/* Opens a sealed key for @ctx: CKKS_ERR_AUTH on a wrong key or any change. */
CkksStatus ckks_secret_key_unseal (const CkksContext *ctx, const uint8_t key[32],
                                   const uint8_t *data, size_t len,
                                   CkksSecretKey **out);

#ifdef __cplusplus
}
#endif
