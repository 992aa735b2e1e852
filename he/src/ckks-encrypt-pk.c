/* ckks-encrypt-pk.c: public-key encryption (no secret-key code).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include <openssl/crypto.h>

#include "ckks-keys.h"
#include "ckks-objects.h"
#include "ckks-prng.h"

/* c0 = b*u + NTT(m + e0), c1 = a*u + NTT(e1), u ternary: three NTTs a limb. */
static CkksStatus
encrypt_pk (const CkksPublicKey *pk, const int64_t *m_coeffs,
            const uint64_t *m_ntt, unsigned lift_bits, CkksCiphertext *ct)
{
  const CkksContext *ctx = pk->ctx;
  size_t n = ctx->n;
  int8_t *small = ckks_alloc (3 * n);
  uint64_t *tmp = ckks_alloc (n * sizeof (uint64_t));
  CkksPrng prng;
  CkksStatus st = CKKS_ERR_NO_MEMORY;
  if (small && tmp && (st = ckks_prng_init_random (&prng)) == CKKS_OK)
    {
      st = ckks_sample_ternary (&prng, small, n);
      if (st == CKKS_OK)
        st = ckks_sample_cbd (&prng, small + n, 2 * n);
      ckks_prng_clear (&prng);
    }
  const int8_t *u = small, *e0 = small + n, *e1 = small + 2 * n;
  for (uint32_t i = 0; st == CKKS_OK && i < ct->n_limbs; i++)
    {
      const CkksNttTables *t = &ctx->ntt[i];
      uint64_t q = t->mod.q, *c0 = ct->c0 + i * n, *c1 = ct->c1 + i * n;
      ctx->k.lift_small (tmp, u, q, n);
      ctx->k.lift_small (c1, e1, q, n);
      if (m_coeffs)
        ckks_message_to_limb (ctx, i, m_coeffs, e0, lift_bits, c0);
      else
        ctx->k.lift_small (c0, e0, q, n);
      ctx->k.ntt_forward (tmp, t, n);
      ctx->k.ntt_forward (c0, t, n);
      ctx->k.ntt_forward (c1, t, n);
      if (m_ntt)
        for (size_t k = 0; k < n; k++)
          c0[k] = ckks_add_mod (c0[k], m_ntt[i * n + k], q);
      ctx->k.mul_fixed_add (c0, c0, tmp, CKKS_FIXED_W (&pk->b_fixed, i, n),
                            CKKS_FIXED_C (&pk->b_fixed, i, n), q, n);
      ctx->k.mul_fixed_add (c1, c1, tmp, CKKS_FIXED_W (&pk->a_fixed, i, n),
                            CKKS_FIXED_C (&pk->a_fixed, i, n), q, n);
    }
  if (small)
    OPENSSL_cleanse (small, 3 * n);
  if (tmp)
    OPENSSL_cleanse (tmp, n * sizeof (uint64_t));
  ckks_free (small);
  ckks_free (tmp);
  ct->seeded = false;
  ct->trace_only = false;
  return st;
}

static CkksStatus
check_ct (const CkksPublicKey *pk, const CkksCiphertext *ct)
{
  if (!pk || !ct)
    return CKKS_ERR_INVALID_ARGUMENT;
  return pk->ctx == ct->ctx ? CKKS_OK : CKKS_ERR_MISMATCH;
}

CkksStatus
ckks_encrypt_pk (const CkksPublicKey *pk, const CkksPlaintext *pt, CkksCiphertext *ct)
{
  CkksStatus st = check_ct (pk, ct);
  if (st != CKKS_OK || !pt)
    return st != CKKS_OK ? st : CKKS_ERR_INVALID_ARGUMENT;
  if (pt->ctx != pk->ctx)
    return CKKS_ERR_MISMATCH;
  if (pt->n_limbs < ct->capacity)
    return CKKS_ERR_LEVEL;
  ct->n_limbs = ct->capacity;
  ct->scale = pt->scale;
  return encrypt_pk (pk, NULL, pt->data, 0, ct);
}

CkksStatus
ckks_encrypt_values_pk (const CkksPublicKey *pk, const double *re, const double *im,
                        size_t count, double scale, CkksCiphertext *ct)
{
  return ckks_encrypt_values_pk_lifted (pk, re, im, count, scale, 0, ct);
}

CkksStatus
ckks_encrypt_values_pk_lifted (const CkksPublicKey *pk, const double *re, const double *im,
                               size_t count, double scale, unsigned lift_bits,
                               CkksCiphertext *ct)
{
  if (lift_bits >= 64)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksStatus st = check_ct (pk, ct);
  if (st != CKKS_OK)
    return st;
  int64_t *m = ckks_alloc (pk->ctx->n * sizeof (int64_t));
  if (!m)
    return CKKS_ERR_NO_MEMORY;
  st = ckks_encode_coeffs (pk->ctx, re, im, count, scale, m);
  if (st == CKKS_OK)
    {
      ct->n_limbs = ct->capacity;
      ct->scale = ldexp (scale, (int) lift_bits);
      st = encrypt_pk (pk, m, NULL, lift_bits, ct);
    }
  ckks_free (m);
  return st;
}

CkksStatus
ckks_public_key_alloc (const CkksContext *ctx, CkksPublicKey **out)
{
  size_t words = (size_t) ctx->params.n_moduli * ctx->n;
  CkksPublicKey *pk = ckks_alloc0 (sizeof *pk);
  if (!pk)
    return CKKS_ERR_NO_MEMORY;
  pk->ctx = ctx;
  pk->a = ckks_alloc (words * sizeof (uint64_t));
  pk->b = ckks_alloc (words * sizeof (uint64_t));
  if (!pk->a || !pk->b)
    {
      ckks_public_key_free (pk);
      return CKKS_ERR_NO_MEMORY;
    }
  *out = pk;
  return CKKS_OK;
}

CkksStatus
ckks_public_key_prepare (CkksPublicKey *pk)
{
  uint32_t L = pk->ctx->params.n_moduli;
  CkksStatus st = ckks_fixed_init (&pk->a_fixed, pk->ctx, pk->a, L);
  return st == CKKS_OK ? ckks_fixed_init (&pk->b_fixed, pk->ctx, pk->b, L) : st;
}

void
ckks_public_key_free (CkksPublicKey *pk)
{
  if (!pk)
    return;
  ckks_free (pk->a);
  ckks_free (pk->b);
  ckks_fixed_clear (&pk->a_fixed);
  ckks_fixed_clear (&pk->b_fixed);
  ckks_free (pk);
}
