/* ckks-helora-compat.h: HE-LoRA token calls that compile against both forms of
 * ckks-helora.h (with and without explicit ciphertext counts).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * _Generic picks the form the header declares; the other branch is never
 * evaluated (the call goes through a variable so that it type-checks).
 * Used by the adapter-private tests and benchmark while both forms are
 * about; once every branch has the counted form, call the functions
 * directly and delete this header. */
#pragma once

#include "ckks-helora.h"
#include "ckks-keys.h"

typedef void (*HeAnyFunc) (void);
typedef CkksStatus (*HeEvalCounted) (const CkksHeloraPlan *, CkksCiphertext *const *, size_t,
                                     CkksCiphertext *const *, size_t);
typedef CkksStatus (*HeEvalPlain) (const CkksHeloraPlan *, CkksCiphertext *const *,
                                   CkksCiphertext *const *);
typedef CkksStatus (*HeEncCounted) (const CkksHeloraLayout *, const CkksSecretKey *,
                                    const float *, CkksCiphertext *const *, size_t, double *);
typedef CkksStatus (*HeEncPlain) (const CkksHeloraLayout *, const CkksSecretKey *,
                                  const float *, CkksCiphertext *const *, double *);
typedef CkksStatus (*HeDecCounted) (const CkksHeloraLayout *, const CkksSecretKey *,
                                    CkksCiphertext *const *, size_t, double, double *);
typedef CkksStatus (*HeDecPlain) (const CkksHeloraLayout *, const CkksSecretKey *,
                                  CkksCiphertext *const *, double, double *);

static inline CkksStatus
he_compat_evaluate (const CkksHeloraPlan *p, CkksCiphertext *const *in, size_t k,
                    CkksCiphertext *const *out, size_t b)
{
  HeAnyFunc f = (HeAnyFunc) ckks_helora_evaluate;
  return _Generic (&ckks_helora_evaluate,
                   HeEvalCounted: ((HeEvalCounted) f) (p, in, k, out, b),
                   default: ((HeEvalPlain) f) (p, in, out));
}

static inline CkksStatus
he_compat_encrypt_sk (const CkksHeloraLayout *l, const CkksSecretKey *sk, const float *h,
                      CkksCiphertext *const *in, size_t k, double *factor)
{
  HeAnyFunc f = (HeAnyFunc) ckks_helora_encrypt_sk;
  return _Generic (&ckks_helora_encrypt_sk,
                   HeEncCounted: ((HeEncCounted) f) (l, sk, h, in, k, factor),
                   default: ((HeEncPlain) f) (l, sk, h, in, factor));
}

static inline CkksStatus
he_compat_decrypt (const CkksHeloraLayout *l, const CkksSecretKey *sk, CkksCiphertext *const *out,
                   size_t b, double factor, double *u)
{
  HeAnyFunc f = (HeAnyFunc) ckks_helora_decrypt;
  return _Generic (&ckks_helora_decrypt,
                   HeDecCounted: ((HeDecCounted) f) (l, sk, out, b, factor, u),
                   default: ((HeDecPlain) f) (l, sk, out, factor, u));
}
