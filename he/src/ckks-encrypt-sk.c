/* ckks-encrypt-sk.c: secret-key encryption (seeded a) and decryption.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "ckks-keys.h"
#include "ckks-objects.h"
#include "ckks-prng.h"
#include "ckks-secret.h"

/* c1 = a = expand(seed); c0 = -a*s + NTT(m + e). Exactly one of @m_coeffs
 * (integer coefficients) and @m_ntt (NTT form, at least ct's limbs) is set. */
static CkksStatus
encrypt_sk (const CkksSecretKey *sk, const int64_t *m_coeffs,
            const uint64_t *m_ntt, unsigned lift_bits, CkksCiphertext *ct)
{
  const CkksContext *ctx = sk->ctx;
  size_t n = ctx->n;
  uint32_t L = ct->n_limbs;
  if (RAND_bytes (ct->seed, CKKS_SEED_BYTES) != 1)
    return CKKS_ERR_RANDOM;
  CkksStatus st = ckks_expand_uniform (ctx, ct->seed, L, ct->c1);
  if (st != CKKS_OK)
    return st;
  int8_t *e = ckks_alloc (n);
  CkksPrng prng;
  if (!e)
    st = CKKS_ERR_NO_MEMORY;
  else if ((st = ckks_prng_init_random (&prng)) == CKKS_OK)
    {
      st = ckks_sample_cbd (&prng, e, n);
      ckks_prng_clear (&prng);
    }
  for (uint32_t i = 0; st == CKKS_OK && i < L; i++)
    {
      const CkksNttTables *t = &ctx->ntt[i];
      uint64_t q = t->mod.q, *c0 = ct->c0 + i * n;
      if (m_coeffs)
        ckks_message_to_limb (ctx, i, m_coeffs, e, lift_bits, c0);
      else
        ctx->k.lift_small (c0, e, q, n);
      ctx->k.ntt_forward (c0, t, n);
      if (m_ntt)
        for (size_t k = 0; k < n; k++)
          c0[k] = ckks_add_mod (c0[k], m_ntt[i * n + k], q);
      ctx->k.mul_fixed_add (c0, c0, ct->c1 + i * n, CKKS_FIXED_W (&sk->neg_s, i, n),
                            CKKS_FIXED_C (&sk->neg_s, i, n), q, n);
    }
  if (e)
    OPENSSL_cleanse (e, n);
  ckks_free (e);
  ct->seeded = st == CKKS_OK;
  ct->trace_only = false;
  return st;
}

static CkksStatus
check_ct (const CkksSecretKey *sk, const CkksCiphertext *ct)
{
  if (!sk || !ct)
    return CKKS_ERR_INVALID_ARGUMENT;
  return sk->ctx == ct->ctx ? CKKS_OK : CKKS_ERR_MISMATCH;
}

CkksStatus
ckks_encrypt_sk (const CkksSecretKey *sk, const CkksPlaintext *pt, CkksCiphertext *ct)
{
  CkksStatus st = check_ct (sk, ct);
  if (st != CKKS_OK || !pt)
    return st != CKKS_OK ? st : CKKS_ERR_INVALID_ARGUMENT;
  if (pt->ctx != sk->ctx)
    return CKKS_ERR_MISMATCH;
  if (pt->n_limbs < ct->capacity)
    return CKKS_ERR_LEVEL;
  ct->n_limbs = ct->capacity;
  ct->scale = pt->scale;
  return encrypt_sk (sk, NULL, pt->data, 0, ct);
}

CkksStatus
ckks_encrypt_values_sk (const CkksSecretKey *sk, const double *re, const double *im,
                        size_t count, double scale, CkksCiphertext *ct)
{
  return ckks_encrypt_values_sk_lifted (sk, re, im, count, scale, 0, ct);
}

CkksStatus
ckks_encrypt_values_sk_lifted (const CkksSecretKey *sk, const double *re, const double *im,
                               size_t count, double scale, unsigned lift_bits,
                               CkksCiphertext *ct)
{
  if (lift_bits >= 64)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksStatus st = check_ct (sk, ct);
  if (st != CKKS_OK)
    return st;
  int64_t *m = ckks_alloc (sk->ctx->n * sizeof (int64_t));
  if (!m)
    return CKKS_ERR_NO_MEMORY;
  st = ckks_encode_coeffs (sk->ctx, re, im, count, scale, m);
  if (st == CKKS_OK)
    {
      ct->n_limbs = ct->capacity;
      ct->scale = ldexp (scale, (int) lift_bits);
      st = encrypt_sk (sk, m, NULL, lift_bits, ct);
    }
  ckks_free (m);
  return st;
}

CkksStatus
ckks_decrypt_poly (const CkksSecretKey *sk, const CkksCiphertext *ct, uint64_t *out)
{
  const CkksContext *ctx = sk->ctx;
  size_t n = ctx->n;
  for (uint32_t i = 0; i < ct->n_limbs; i++)
    ctx->k.mul_fixed_add (out + i * n, ct->c0 + i * n, ct->c1 + i * n,
                          CKKS_FIXED_W (&sk->s_fixed, i, n), CKKS_FIXED_C (&sk->s_fixed, i, n),
                          ctx->params.moduli[i], n);
  return CKKS_OK;
}

CkksStatus
ckks_decrypt (const CkksSecretKey *sk, const CkksCiphertext *ct, CkksPlaintext *pt)
{
  CkksStatus st = check_ct (sk, ct);
  if (st != CKKS_OK || !pt)
    return st != CKKS_OK ? st : CKKS_ERR_INVALID_ARGUMENT;
  if (pt->ctx != ct->ctx || ct->trace_only)
    return CKKS_ERR_MISMATCH;
  if (pt->n_limbs < ct->n_limbs)
    return CKKS_ERR_LEVEL;
  ckks_decrypt_poly (sk, ct, pt->data);
  pt->n_limbs = ct->n_limbs;
  pt->scale = ct->scale;
  return CKKS_OK;
}
