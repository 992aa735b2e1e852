/* ckks-eval.c: ciphertext objects and the key-free operations.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ckks-objects.h"

CkksStatus
ckks_ciphertext_new (const CkksContext *ctx, uint32_t n_limbs, CkksCiphertext **out)
{
  if (!ctx || !out || n_limbs == 0 || n_limbs > ctx->params.n_moduli)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksCiphertext *ct = ckks_alloc0 (sizeof *ct);
  if (!ct)
    return CKKS_ERR_NO_MEMORY;
  size_t words = (size_t) n_limbs * ctx->n;
  ct->ctx = ctx;
  ct->n_limbs = ct->capacity = n_limbs;
  ct->scale = 1.0;
  ct->c0 = ckks_alloc0 (words * sizeof (uint64_t));
  ct->c1 = ckks_alloc0 (words * sizeof (uint64_t));
  if (!ct->c0 || !ct->c1)
    {
      ckks_ciphertext_free (ct);
      return CKKS_ERR_NO_MEMORY;
    }
  *out = ct;
  return CKKS_OK;
}

void
ckks_ciphertext_free (CkksCiphertext *ct)
{
  if (!ct)
    return;
  ckks_free (ct->c0);
  ckks_free (ct->c1);
  ckks_free (ct);
}

uint32_t
ckks_ciphertext_limbs (const CkksCiphertext *ct)
{
  return ct->n_limbs;
}

double
ckks_ciphertext_scale (const CkksCiphertext *ct)
{
  return ct->scale;
}

bool
ckks_ciphertext_is_seeded (const CkksCiphertext *ct)
{
  return ct->seeded;
}

/* Checks that @out can hold a result of @n_limbs limbs of @ctx. */
static CkksStatus
check_out (const CkksCiphertext *out, const CkksContext *ctx, uint32_t n_limbs)
{
  if (!out)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (out->ctx != ctx)
    return CKKS_ERR_MISMATCH;
  return out->capacity >= n_limbs ? CKKS_OK : CKKS_ERR_LEVEL;
}

CkksStatus
ckks_ciphertext_copy (CkksCiphertext *dst, const CkksCiphertext *src)
{
  if (!src)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksStatus st = check_out (dst, src->ctx, src->n_limbs);
  if (st != CKKS_OK || dst == src)
    return st;
  size_t words = (size_t) src->n_limbs * src->ctx->n;
  memcpy (dst->c0, src->c0, words * sizeof (uint64_t));
  memcpy (dst->c1, src->c1, words * sizeof (uint64_t));
  dst->n_limbs = src->n_limbs;
  dst->scale = src->scale;
  dst->seeded = src->seeded;
  dst->trace_only = src->trace_only;
  memcpy (dst->seed, src->seed, CKKS_SEED_BYTES);
  return CKKS_OK;
}

static CkksStatus
add_sub (CkksCiphertext *out, const CkksCiphertext *a, const CkksCiphertext *b,
         bool subtract)
{
  if (!a || !b)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (a->ctx != b->ctx || a->trace_only || b->trace_only)
    return CKKS_ERR_MISMATCH;
  if (a->n_limbs != b->n_limbs)
    return CKKS_ERR_LEVEL;
  if (!ckks_same_scale (a->scale, b->scale))
    return CKKS_ERR_SCALE;
  CkksStatus st = check_out (out, a->ctx, a->n_limbs);
  if (st != CKKS_OK)
    return st;
  const CkksContext *ctx = a->ctx;
  size_t n = ctx->n;
  for (uint32_t i = 0; i < a->n_limbs; i++)
    {
      uint64_t q = ctx->params.moduli[i];
      for (int part = 0; part < 2; part++)
        {
          const uint64_t *x = (part ? a->c1 : a->c0) + i * n;
          const uint64_t *y = (part ? b->c1 : b->c0) + i * n;
          uint64_t *z = (part ? out->c1 : out->c0) + i * n;
          if (subtract)
            for (size_t k = 0; k < n; k++)
              z[k] = ckks_sub_mod (x[k], y[k], q);
          else
            for (size_t k = 0; k < n; k++)
              z[k] = ckks_add_mod (x[k], y[k], q);
        }
    }
  out->n_limbs = a->n_limbs;
  out->scale = a->scale;
  out->seeded = false;
  out->trace_only = false;
  return CKKS_OK;
}

CkksStatus
ckks_add (CkksCiphertext *out, const CkksCiphertext *a, const CkksCiphertext *b)
{
  return add_sub (out, a, b, false);
}

CkksStatus
ckks_sub (CkksCiphertext *out, const CkksCiphertext *a, const CkksCiphertext *b)
{
  return add_sub (out, a, b, true);
}

CkksStatus
ckks_mul_plain (CkksCiphertext *out, const CkksCiphertext *ct, const CkksPlaintext *pt)
{
  if (!ct || !pt)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (ct->ctx != pt->ctx || ct->trace_only)
    return CKKS_ERR_MISMATCH;
  if (pt->n_limbs < ct->n_limbs)
    return CKKS_ERR_LEVEL;
  CkksStatus st = check_out (out, ct->ctx, ct->n_limbs);
  if (st != CKKS_OK)
    return st;
  double scale = ct->scale * pt->scale;
  if (!isfinite (scale))
    return CKKS_ERR_SCALE;
  const CkksContext *ctx = ct->ctx;
  size_t n = ctx->n;
  for (uint32_t i = 0; i < ct->n_limbs; i++)
    {
      const CkksModulus *m = &ctx->ntt[i].mod;
      const uint64_t *w = pt->data + i * n;
      for (size_t k = 0; k < n; k++)
        {
          out->c0[i * n + k] = ckks_mul_mod (ct->c0[i * n + k], w[k], m);
          out->c1[i * n + k] = ckks_mul_mod (ct->c1[i * n + k], w[k], m);
        }
    }
  out->n_limbs = ct->n_limbs;
  out->scale = scale;
  out->seeded = false;
  out->trace_only = false;
  return CKKS_OK;
}

CkksStatus
ckks_mul_scalar (CkksCiphertext *out, const CkksCiphertext *ct, double value,
                 double scale)
{
  if (!ct)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (ct->trace_only)
    return CKKS_ERR_MISMATCH;
  double c = nearbyint (value * scale);
  double new_scale = ct->scale * scale;
  if (!(scale > 0) || !(fabs (c) < 4611686018427387904.0) || !isfinite (new_scale))
    return CKKS_ERR_SCALE;
  CkksStatus st = check_out (out, ct->ctx, ct->n_limbs);
  if (st != CKKS_OK)
    return st;
  const CkksContext *ctx = ct->ctx;
  size_t n = ctx->n;
  for (uint32_t i = 0; i < ct->n_limbs; i++)
    {
      const CkksModulus *m = &ctx->ntt[i].mod;
      uint64_t w = ckks_reduce_i64 ((int64_t) c, m), ws = ckks_shoup_precompute (w, m->q);
      for (size_t k = 0; k < n; k++)
        {
          out->c0[i * n + k] = ckks_mul_shoup (ct->c0[i * n + k], w, ws, m->q);
          out->c1[i * n + k] = ckks_mul_shoup (ct->c1[i * n + k], w, ws, m->q);
        }
    }
  out->n_limbs = ct->n_limbs;
  out->scale = new_scale;
  out->seeded = false;
  out->trace_only = false;
  return CKKS_OK;
}

/* poly (n_limbs limbs, NTT form) = round(poly / q_last), one limb fewer. */
static void
rescale_poly (const CkksContext *ctx, uint64_t *poly, uint32_t n_limbs,
              uint64_t *last, uint64_t *tmp)
{
  size_t n = ctx->n;
  uint32_t l = n_limbs - 1;
  uint64_t ql = ctx->params.moduli[l], half = ql >> 1;
  memcpy (last, poly + l * n, n * sizeof (uint64_t));
  ctx->k.ntt_inverse (last, &ctx->ntt[l], n);
  for (size_t k = 0; k < n; k++)
    last[k] = ckks_add_mod (last[k], half, ql);
  for (uint32_t i = 0; i < l; i++)
    {
      const CkksModulus *m = &ctx->ntt[i].mod;
      uint64_t half_i = ckks_barrett_reduce_128 (half, m);
      for (size_t k = 0; k < n; k++)
        tmp[k] = ckks_sub_mod (ckks_barrett_reduce_128 (last[k], m), half_i, m->q);
      ctx->k.ntt_forward (tmp, &ctx->ntt[i], n);
      uint64_t inv = ctx->garner[i][l], inv_s = ctx->garner_shoup[i][l];
      uint64_t *p = poly + i * n;
      for (size_t k = 0; k < n; k++)
        p[k] = ckks_mul_shoup (ckks_sub_mod (p[k], tmp[k], m->q), inv, inv_s, m->q);
    }
}

CkksStatus
ckks_rescale (CkksCiphertext *ct)
{
  if (!ct)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (ct->trace_only)
    return CKKS_ERR_MISMATCH;
  if (ct->n_limbs < 2)
    return CKKS_ERR_LEVEL;
  const CkksContext *ctx = ct->ctx;
  uint64_t *scratch = ckks_alloc (2 * ctx->n * sizeof (uint64_t));
  if (!scratch)
    return CKKS_ERR_NO_MEMORY;
  rescale_poly (ctx, ct->c0, ct->n_limbs, scratch, scratch + ctx->n);
  rescale_poly (ctx, ct->c1, ct->n_limbs, scratch, scratch + ctx->n);
  ckks_free (scratch);
  ct->scale /= (double) ctx->params.moduli[ct->n_limbs - 1];
  ct->n_limbs--;
  ct->seeded = false;
  return CKKS_OK;
}

CkksStatus
ckks_drop_limbs (CkksCiphertext *ct, uint32_t n_limbs)
{
  if (!ct || n_limbs == 0)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (ct->trace_only)
    return CKKS_ERR_MISMATCH;
  if (n_limbs > ct->n_limbs)
    return CKKS_ERR_LEVEL;
  /* limb i of a seeded c1 depends only on (seed, i): the seed stays valid */
  ct->n_limbs = n_limbs;
  return CKKS_OK;
}
