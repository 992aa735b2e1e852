/* ckks-poly.c: RNS polynomial conversions (reduction, NTT, CRT, seeds).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include <openssl/crypto.h>

#include "ckks-objects.h"
#include "ckks-prng.h"

void
ckks_coeffs_to_ntt (const CkksContext *ctx, const int64_t *coeffs,
                    uint32_t n_limbs, uint64_t *dst)
{
  size_t n = ctx->n;
  for (uint32_t i = 0; i < n_limbs; i++)
    {
      const CkksNttTables *t = &ctx->ntt[i];
      uint64_t *d = ckks_limb (dst, i, n);
      ctx->k.reduce_signed (d, coeffs, NULL, &t->mod, n);
      ctx->k.ntt_forward (d, t, n);
    }
}

void
ckks_message_to_limb (const CkksContext *ctx, uint32_t i, const int64_t *m, const int8_t *e,
                      unsigned lift_bits, uint64_t *out)
{
  const CkksModulus *mod = &ctx->ntt[i].mod;
  size_t n = ctx->n;
  if (lift_bits == 0)
    {
      ctx->k.reduce_signed (out, m, e, mod, n);
      return;
    }
  ctx->k.reduce_signed (out, m, NULL, mod, n);
  uint64_t w = ckks_barrett_reduce_128 ((ckks_u128) 1 << lift_bits, mod);
  uint64_t ws = ckks_shoup_precompute (w, mod->q);
  for (size_t k = 0; k < n; k++)
    {
      uint64_t x = ckks_mul_shoup (out[k], w, ws, mod->q);
      out[k] = e ? ckks_add_mod (x, ckks_lift_small (e[k], mod->q), mod->q) : x;
    }
}

void
ckks_small_to_ntt (const CkksContext *ctx, const int8_t *coeffs,
                   uint32_t n_limbs, uint64_t *dst)
{
  size_t n = ctx->n;
  for (uint32_t i = 0; i < n_limbs; i++)
    {
      const CkksNttTables *t = &ctx->ntt[i];
      uint64_t *d = ckks_limb (dst, i, n);
      for (size_t k = 0; k < n; k++)
        d[k] = ckks_lift_small (coeffs[k], t->mod.q);
      ctx->k.ntt_forward (d, t, n);
    }
}

/* Value of a little-endian multiword integer as a double. */
static double
words_to_double (const uint64_t *w, size_t len)
{
  double v = 0;
  for (size_t i = len; i-- > 0;)
    v = v * 18446744073709551616.0 + (double) w[i];
  return v;
}

/* w = w * m + a over @len words. */
static void
words_mul_add (uint64_t *w, size_t len, uint64_t m, uint64_t a)
{
  uint64_t carry = a;
  for (size_t i = 0; i < len; i++)
    {
      ckks_u128 t = (ckks_u128) w[i] * m + carry;
      w[i] = (uint64_t) t;
      carry = (uint64_t) (t >> 64);
    }
}

/* Returns a >= b. */
static bool
words_ge (const uint64_t *a, const uint64_t *b, size_t len)
{
  for (size_t i = len; i-- > 0;)
    if (a[i] != b[i])
      return a[i] > b[i];
  return true;
}

/* a = b - a (b >= a). */
static void
words_rsub (uint64_t *a, const uint64_t *b, size_t len)
{
  uint64_t borrow = 0;
  for (size_t i = 0; i < len; i++)
    {
      ckks_u128 t = (ckks_u128) b[i] - a[i] - borrow;
      a[i] = (uint64_t) t;
      borrow = (uint64_t) (t >> 64) ? 1 : 0;
    }
}

/* Mixed-radix (Garner) digits of coefficient k, then its centred value. */
static double
crt_multiword (const CkksContext *ctx, const uint64_t *poly, size_t n, uint32_t L,
               size_t k, const uint64_t *q_words, const uint64_t *half_words)
{
  uint64_t v[CKKS_MAX_MODULI], x[CKKS_MAX_MODULI + 1] = { 0 };
  for (uint32_t i = 0; i < L; i++)
    {
      const CkksModulus *m = &ctx->ntt[i].mod;
      uint64_t t = poly[i * n + k];
      for (uint32_t j = 0; j < i; j++)
        {
          uint64_t vj = v[j] >= m->q ? ckks_barrett_reduce_128 (v[j], m) : v[j];
          t = ckks_mul_shoup (ckks_sub_mod (t, vj, m->q), ctx->garner[i][j],
                              ctx->garner_shoup[i][j], m->q);
        }
      v[i] = t;
    }
  for (uint32_t i = L; i-- > 0;)
    words_mul_add (x, L, i + 1 < L ? ctx->params.moduli[i] : 0, v[i]);
  if (words_ge (x, half_words, L))
    {
      words_rsub (x, q_words, L);
      return -words_to_double (x, L);
    }
  return words_to_double (x, L);
}

void
ckks_ntt_to_real_coeffs (const CkksContext *ctx, uint64_t *poly,
                         uint32_t n_limbs, double *out)
{
  size_t n = ctx->n;
  for (uint32_t i = 0; i < n_limbs; i++)
    ctx->k.ntt_inverse (ckks_limb (poly, i, n), &ctx->ntt[i], n);
  ckks_crt_to_real (ctx, poly, n, n_limbs, n, out);
}

void
ckks_crt_to_real (const CkksContext *ctx, const uint64_t *poly, size_t n,
                  uint32_t n_limbs, size_t count, double *out)
{
  const uint64_t q0 = ctx->params.moduli[0];
  if (n_limbs == 1)
    {
      for (size_t k = 0; k < count; k++)
        out[k] = poly[k] > q0 / 2 ? -(double) (q0 - poly[k]) : (double) poly[k];
      return;
    }
  if (n_limbs == 2)
    {
      size_t vec = count & ~(size_t) 7;
      ctx->k.crt2 (poly, poly + n, out, &ctx->crt2, vec);
      if (vec < count)
        ckks_crt2_scalar (poly + vec, poly + n + vec, out + vec, &ctx->crt2, count - vec);
      return;
    }
  uint64_t q_words[CKKS_MAX_MODULI + 1] = { 1 }, half_words[CKKS_MAX_MODULI + 1];
  for (uint32_t i = 0; i < n_limbs; i++)
    words_mul_add (q_words, n_limbs, ctx->params.moduli[i], 0);
  /* half = ceil(Q / 2): Q is odd, so (Q + 1) / 2 */
  uint64_t carry = 0;
  for (size_t i = n_limbs; i-- > 0;)
    {
      half_words[i] = (q_words[i] >> 1) | (carry << 63);
      carry = q_words[i] & 1;
    }
  words_mul_add (half_words, n_limbs, 1, 1);
  for (size_t k = 0; k < count; k++)
    out[k] = crt_multiword (ctx, poly, n, n_limbs, k, q_words, half_words);
}

CkksStatus
ckks_expand_uniform (const CkksContext *ctx, const uint8_t seed[CKKS_SEED_BYTES],
                     uint32_t n_limbs, uint64_t *dst)
{
  for (uint32_t i = 0; i < n_limbs; i++)
    {
      CkksPrng prng;
      CkksStatus st = ckks_prng_init_seed (&prng, seed, i);
      if (st == CKKS_OK)
        st = ckks_sample_uniform_mod (&prng, ctx->params.moduli[i],
                                      ckks_limb (dst, i, ctx->n), ctx->n);
      ckks_prng_clear (&prng);
      if (st != CKKS_OK)
        return st;
    }
  return CKKS_OK;
}

CkksStatus
ckks_fixed_init (CkksFixed *f, const CkksContext *ctx, const uint64_t *poly, uint32_t n_limbs)
{
  size_t n = ctx->n, words = (size_t) n_limbs * n;
  f->w = ckks_alloc (words * sizeof (uint64_t));
  f->comp = ctx->k.fixed_has_companion ? ckks_alloc (words * sizeof (uint64_t)) : NULL;
  f->words = words;
  if (!f->w || (ctx->k.fixed_has_companion && !f->comp))
    {
      ckks_fixed_clear (f);
      return CKKS_ERR_NO_MEMORY;
    }
  for (uint32_t i = 0; i < n_limbs; i++)
    ctx->k.fixed_prepare (f->w + i * n, f->comp ? f->comp + i * n : NULL, poly + i * n,
                          ctx->params.moduli[i], n);
  return CKKS_OK;
}

void
ckks_fixed_clear (CkksFixed *f)
{
  if (f->w)
    OPENSSL_cleanse (f->w, f->words * sizeof (uint64_t));
  if (f->comp)
    OPENSSL_cleanse (f->comp, f->words * sizeof (uint64_t));
  ckks_free (f->w);
  ckks_free (f->comp);
  f->w = f->comp = NULL;
}

bool
ckks_same_scale (double a, double b)
{
  return fabs (a - b) <= 1e-12 * fmax (fabs (a), fabs (b));
}

void
ckks_fixed_block_sums (const CkksContext *ctx, const uint64_t *a, const uint64_t *w,
                       const uint64_t *w_shoup, uint32_t limb, size_t blocks, size_t span,
                       uint64_t *scratch, uint64_t *sums)
{
  const CkksModulus *m = &ctx->ntt[limb].mod;
  if (ctx->k.mul_fixed_block_sums)
    {
      ctx->k.mul_fixed_block_sums (a, w, w_shoup, m, blocks, span, sums);
      return;
    }
  ctx->k.mul_fixed (scratch, a, w, w_shoup, m->q, blocks * span);
  ckks_block_sums (scratch, blocks, span, m, sums);
}

void
ckks_block_sums (const uint64_t *values, size_t blocks, size_t span, const CkksModulus *m,
                 uint64_t *sums)
{
  for (size_t beta = 0; beta < blocks; beta++)
    {
      const uint64_t *blk = values + beta * span;
      uint64_t acc = 0;
      for (size_t p = 0; p < span; p += 4096)   /* 4096 values below 2^52 fit in 64 bits */
        {
          uint64_t part = 0;
          for (size_t j = p; j < span && j < p + 4096; j++)
            part += blk[j];
          acc = ckks_add_mod (acc, ckks_barrett_reduce_64 (part, m), m->q);
        }
      sums[beta] = acc;
    }
}
