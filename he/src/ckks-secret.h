/* ckks-secret.h: secret-key internals shared by the client-side files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-keys.h"
#include "ckks-objects.h"

/* out (ct's limbs, NTT form) = c0 + c1 * s. */
CkksStatus ckks_decrypt_poly (const CkksSecretKey *sk, const CkksCiphertext *ct,
                              uint64_t *out);
/* Wraps @coeffs (N ternary values, taken over and wiped on failure). */
CkksStatus ckks_secret_key_from_coeffs (const CkksContext *ctx, int8_t *coeffs,
                                        CkksSecretKey **out);
/* As ckks_encrypt_values_sk, the message lifted by 2^@lift_bits before the
 * error is added (ckks_message_to_limb): scale @scale * 2^@lift_bits. */
CkksStatus ckks_encrypt_values_sk_lifted (const CkksSecretKey *sk, const double *re,
                                          const double *im, size_t count, double scale,
                                          unsigned lift_bits, CkksCiphertext *ct);
