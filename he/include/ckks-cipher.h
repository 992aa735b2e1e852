/* ckks-cipher.h: plaintexts, ciphertexts, encoding and key-free operations.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Nothing here touches a secret key: an evaluator links this header's code
 * without any secret-key object. Polynomials are kept in NTT form. A
 * ciphertext or plaintext "at n_limbs" lives modulo q_0 * ... * q_{n_limbs-1};
 * its scale is tracked exactly as a double (rescaling divides by the actual
 * prime, not a power of two).
 *
 * Ownership: *_new returns an object owned by the caller (free with the
 * matching *_free); it keeps a pointer to its context, which must outlive it.
 * Thread-safety: objects are not locked; distinct objects may be used from
 * distinct threads concurrently, and an object only read (an input) may be
 * shared. Every operation allocates its scratch memory per call.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckks-params.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CkksPlaintext CkksPlaintext;
typedef struct CkksCiphertext CkksCiphertext;

CkksStatus ckks_plaintext_new (const CkksContext *ctx, uint32_t n_limbs,
                               CkksPlaintext **out);
void ckks_plaintext_free (CkksPlaintext *pt);
uint32_t ckks_plaintext_limbs (const CkksPlaintext *pt);
double ckks_plaintext_scale (const CkksPlaintext *pt);

/* Encodes @count slot values (re[i] + i*im[i]; @im may be NULL for real
 * values; slots past @count are zero; count <= N/2) at @scale into @pt, at the
 * limb count @pt was created with. CKKS_ERR_SCALE if a coefficient would not
 * fit in 62 bits or the scale is not positive. */
CkksStatus ckks_encode (const double *re, const double *im, size_t count,
                        double scale, CkksPlaintext *pt);

/* Decodes the first @count slots of @pt (CRT over all its limbs); @im may be
 * NULL. */
CkksStatus ckks_decode (const CkksPlaintext *pt, double *re, double *im,
                        size_t count);

CkksStatus ckks_ciphertext_new (const CkksContext *ctx, uint32_t n_limbs,
                                CkksCiphertext **out);
void ckks_ciphertext_free (CkksCiphertext *ct);
uint32_t ckks_ciphertext_limbs (const CkksCiphertext *ct);
double ckks_ciphertext_scale (const CkksCiphertext *ct);
/* True while c1 is still the expansion of a 32-byte seed (fresh secret-key
 * encryption, possibly after level drops): it then serialises as (c0, seed). */
bool ckks_ciphertext_is_seeded (const CkksCiphertext *ct);
/* Copies @src into @dst; both must have the same context and limb count. */
CkksStatus ckks_ciphertext_copy (CkksCiphertext *dst, const CkksCiphertext *src);

/* out = a + b, out = a - b: same limbs and (relative 1e-12) same scale.
 * @out may alias an input. */
CkksStatus ckks_add (CkksCiphertext *out, const CkksCiphertext *a,
                     const CkksCiphertext *b);
CkksStatus ckks_sub (CkksCiphertext *out, const CkksCiphertext *a,
                     const CkksCiphertext *b);
/* out = ct * pt (slot-wise product); pt needs at least ct's limbs; the
 * scales multiply. @out may alias @ct. */
CkksStatus ckks_mul_plain (CkksCiphertext *out, const CkksCiphertext *ct,
                           const CkksPlaintext *pt);
/* out = ct * round(value * scale); out's scale is ct's times @scale. */
CkksStatus ckks_mul_scalar (CkksCiphertext *out, const CkksCiphertext *ct,
                            double value, double scale);
/* Divides by the last prime (rounded), dropping that limb; the scale is
 * divided by that prime exactly. Needs at least two limbs. */
CkksStatus ckks_rescale (CkksCiphertext *ct);
/* Keeps only the first @n_limbs limbs (1 <= n_limbs <= current). */
CkksStatus ckks_drop_limbs (CkksCiphertext *ct, uint32_t n_limbs);

#ifdef __cplusplus
}
#endif
