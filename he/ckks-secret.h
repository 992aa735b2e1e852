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
