/* ckks-serial.h: versioned, length-checked binary formats.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every blob is: magic (4 bytes: CKPR params, CKPK public key, CKCT
 * ciphertext, CKPT plaintext), u16 version (1), u16 zero, u32 body length,
 * body, u64 checksum (a polynomial hash modulo 2^61 - 1 over everything
 * before it, which detects any single changed byte). Integers are little-
 * endian. Bodies of keys, ciphertexts and plaintexts start with the SHA-256
 * fingerprint of the parameters they belong to, then u32 limb count, u32
 * flags, f64 scale where relevant and the NTT-form residues (each checked
 * below its prime). A secret-key ciphertext still seeded stores (c0, seed);
 * the public key stores (b, seed). The secret key has no format here: see
 * ckks_secret_key_seal() in ckks-keys.h.
 *
 * Deserialisers never trust their input: a short buffer gives
 * CKKS_ERR_TRUNCATED, a wrong magic, length, field or residue
 * CKKS_ERR_FORMAT, another version CKKS_ERR_VERSION, a checksum mismatch
 * CKKS_ERR_CHECKSUM, parameters of another context CKKS_ERR_MISMATCH.
 * Serialisers write exactly *_serialized_size() bytes into the caller's
 * buffer. No function here touches secret-key code.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-cipher.h"

#ifdef __cplusplus
extern "C" {
#endif

struct CkksPublicKey;

size_t ckks_params_serialized_size (const CkksParams *params);
CkksStatus ckks_params_serialize (const CkksParams *params, uint8_t *buf, size_t len);
/* Also validates the parameters (security bound included). */
CkksStatus ckks_params_deserialize (const uint8_t *data, size_t len, CkksParams *out);

size_t ckks_ciphertext_serialized_size (const CkksCiphertext *ct);
CkksStatus ckks_ciphertext_serialize (const CkksCiphertext *ct, uint8_t *buf, size_t len);
/* Into a new ciphertext owned by the caller. */
CkksStatus ckks_ciphertext_deserialize (const CkksContext *ctx, const uint8_t *data,
                                        size_t len, CkksCiphertext **out);
/* Into an existing one (its capacity must hold the limbs): no allocation. */
CkksStatus ckks_ciphertext_deserialize_into (CkksCiphertext *ct, const uint8_t *data,
                                             size_t len);

size_t ckks_plaintext_serialized_size (const CkksPlaintext *pt);
CkksStatus ckks_plaintext_serialize (const CkksPlaintext *pt, uint8_t *buf, size_t len);
CkksStatus ckks_plaintext_deserialize (const CkksContext *ctx, const uint8_t *data,
                                       size_t len, CkksPlaintext **out);

size_t ckks_public_key_serialized_size (const struct CkksPublicKey *pk);
CkksStatus ckks_public_key_serialize (const struct CkksPublicKey *pk, uint8_t *buf,
                                      size_t len);
CkksStatus ckks_public_key_deserialize (const CkksContext *ctx, const uint8_t *data,
                                        size_t len, struct CkksPublicKey **out);

#ifdef __cplusplus
}
#endif
