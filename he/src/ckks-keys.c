/* ckks-keys.c: secret and public key generation; the secret key is wiped.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "ckks-keys.h"
#include "ckks-objects.h"
#include "ckks-prng.h"
#include "ckks-secret.h"

static void
wipe_free (void *p, size_t len)
{
  if (p)
    OPENSSL_cleanse (p, len);
  ckks_free (p);
}

void
ckks_secret_key_free (CkksSecretKey *sk)
{
  if (!sk)
    return;
  const CkksContext *ctx = sk->ctx;
  size_t words = (size_t) ctx->params.n_moduli * ctx->n * sizeof (uint64_t);
  wipe_free (sk->coeffs, ctx->n);
  wipe_free (sk->s, words);
  ckks_fixed_clear (&sk->s_fixed);
  ckks_fixed_clear (&sk->neg_s);
  OPENSSL_cleanse (sk, sizeof *sk);
  ckks_free (sk);
}


CkksStatus
ckks_secret_key_from_coeffs (const CkksContext *ctx, int8_t *coeffs,
                             CkksSecretKey **out)
{
  CkksSecretKey *sk = ckks_alloc0 (sizeof *sk);
  size_t words = (size_t) ctx->params.n_moduli * ctx->n;
  if (!sk)
    {
      wipe_free (coeffs, ctx->n);
      return CKKS_ERR_NO_MEMORY;
    }
  sk->ctx = ctx;
  sk->coeffs = coeffs;
  sk->s = ckks_alloc (words * sizeof (uint64_t));
  uint64_t *neg = ckks_alloc (words * sizeof (uint64_t));
  CkksStatus st = sk->s && neg ? CKKS_OK : CKKS_ERR_NO_MEMORY;
  if (st == CKKS_OK)
    {
      ckks_small_to_ntt (ctx, coeffs, ctx->params.n_moduli, sk->s);
      for (uint32_t i = 0; i < ctx->params.n_moduli; i++)
        for (size_t k = 0; k < ctx->n; k++)
          neg[i * ctx->n + k] = ckks_neg_mod (sk->s[i * ctx->n + k], ctx->params.moduli[i]);
      st = ckks_fixed_init (&sk->s_fixed, ctx, sk->s, ctx->params.n_moduli);
    }
  if (st == CKKS_OK)
    st = ckks_fixed_init (&sk->neg_s, ctx, neg, ctx->params.n_moduli);
  wipe_free (neg, words * sizeof (uint64_t));
  if (st != CKKS_OK)
    {
      ckks_secret_key_free (sk);
      return st;
    }
  *out = sk;
  return CKKS_OK;
}

CkksStatus
ckks_secret_key_new (const CkksContext *ctx, CkksSecretKey **out)
{
  if (!ctx || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  int8_t *coeffs = ckks_alloc (ctx->n);
  if (!coeffs)
    return CKKS_ERR_NO_MEMORY;
  CkksPrng prng;
  CkksStatus st = ckks_prng_init_random (&prng);
  if (st == CKKS_OK)
    st = ckks_sample_ternary (&prng, coeffs, ctx->n);
  ckks_prng_clear (&prng);
  if (st != CKKS_OK)
    {
      wipe_free (coeffs, ctx->n);
      return st;
    }
  return ckks_secret_key_from_coeffs (ctx, coeffs, out);
}

CkksStatus
ckks_public_key_new (const CkksSecretKey *sk, CkksPublicKey **out)
{
  if (!sk || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  const CkksContext *ctx = sk->ctx;
  uint32_t L = ctx->params.n_moduli;
  size_t n = ctx->n;
  CkksPublicKey *pk;
  CkksStatus st = ckks_public_key_alloc (ctx, &pk);
  if (st != CKKS_OK)
    return st;
  int8_t *e = ckks_alloc (n);
  if (!e)
    st = CKKS_ERR_NO_MEMORY;
  else if (RAND_bytes (pk->seed, sizeof pk->seed) != 1)
    st = CKKS_ERR_RANDOM;
  if (st == CKKS_OK)
    st = ckks_expand_uniform (ctx, pk->seed, L, pk->a);
  CkksPrng prng;
  if (st == CKKS_OK && (st = ckks_prng_init_random (&prng)) == CKKS_OK)
    {
      st = ckks_sample_cbd (&prng, e, n);
      ckks_prng_clear (&prng);
    }
  if (st == CKKS_OK)
    {
      ckks_small_to_ntt (ctx, e, L, pk->b);   /* b = e - a*s */
      for (uint32_t i = 0; i < L; i++)
        {
          uint64_t q = ctx->params.moduli[i];
          uint64_t *b = pk->b + i * n;
          ctx->k.mul_fixed_add (b, b, pk->a + i * n, CKKS_FIXED_W (&sk->neg_s, i, n),
                                CKKS_FIXED_C (&sk->neg_s, i, n), q, n);
        }
      st = ckks_public_key_prepare (pk);
    }
  if (e)
    OPENSSL_cleanse (e, n);
  ckks_free (e);
  if (st != CKKS_OK)
    {
      ckks_public_key_free (pk);
      return st;
    }
  *out = pk;
  return CKKS_OK;
}
