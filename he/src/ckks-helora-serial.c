/* ckks-helora-serial.c: the compact HE-LoRA result format (evaluator and
 * client side, no secret-key code).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ckks-helora-private.h"
#include "ckks-serial-poly.h"

void
ckks_helora_c0_sums (const CkksHeloraLayout *l, const CkksCiphertext *ct, uint32_t i,
                     uint64_t *sums)
{
  const CkksContext *ctx = l->ctx;
  size_t g = 2 * l->copies;
  if (ct->trace_only)
    for (size_t beta = 0; beta < g; beta++)
      sums[beta] = ct->c0[i * ctx->n + beta * l->span];
  else
    ckks_block_sums (ct->c0 + i * ctx->n, g, l->span, &ctx->ntt[i].mod, sums);
}

static size_t
sums_words (const CkksHeloraLayout *l)
{
  return (size_t) l->limbs * 2 * l->copies;
}

size_t
ckks_helora_result_serialized_size (const CkksHeloraLayout *l)
{
  if (!l || !l->trace_w)
    return 0;
  return CKKS_HEADER_BYTES + 48 + 8 * sums_words (l)
         + ckks_poly_serialized_bytes (l->ctx, l->limbs) + CKKS_CHECKSUM_BYTES;
}

CkksStatus
ckks_helora_result_serialize (const CkksHeloraLayout *l, const CkksCiphertext *ct,
                              uint8_t *buf, size_t len)
{
  if (!l || !ct || !buf || len == 0 || len != ckks_helora_result_serialized_size (l))
    return CKKS_ERR_INVALID_ARGUMENT;
  if (ct->ctx != l->ctx)
    return CKKS_ERR_MISMATCH;
  if (ct->n_limbs != l->limbs)
    return CKKS_ERR_LEVEL;
  const CkksContext *ctx = l->ctx;
  size_t g = 2 * l->copies;
  CkksWriter w = { buf, len };
  ckks_frame_begin (&w, "CKHR", (uint32_t) (len - CKKS_HEADER_BYTES - CKKS_CHECKSUM_BYTES));
  ckks_put_object_head (&w, ctx, l->limbs, (uint32_t) g, ct->scale);
  for (uint32_t i = 0; i < l->limbs; i++)
    {
      uint64_t sums[2 * CKKS_HELORA_MAX_TRACE_COPIES];
      ckks_helora_c0_sums (l, ct, i, sums);
      for (size_t beta = 0; beta < g; beta++)
        ckks_put_u64 (&w, sums[beta]);
    }
  ckks_put_poly (&w, ctx, ct->c1, l->limbs);
  ckks_frame_end (&w, buf);
  return CKKS_OK;
}

CkksStatus
ckks_helora_result_deserialize_into (const CkksHeloraLayout *l, CkksCiphertext *ct,
                                     const uint8_t *data, size_t len)
{
  if (!l || !ct)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (!l->trace_w || ct->ctx != l->ctx)
    return CKKS_ERR_MISMATCH;
  if (ct->capacity < l->limbs)
    return CKKS_ERR_LEVEL;
  const CkksContext *ctx = l->ctx;
  size_t g = 2 * l->copies, n = ctx->n;
  CkksReader r;
  CkksObjectHead head = { 0 };
  CkksStatus st = ckks_open_object (data, len, "CKHR", ctx, &r, &head);
  if (st != CKKS_OK)
    return st;
  if (head.n_limbs != l->limbs || head.flags != g
      || r.left != 8 * sums_words (l) + ckks_poly_serialized_bytes (ctx, l->limbs))
    return CKKS_ERR_FORMAT;
  /* a trace-only c0 carries each block sum in the block's first value; the
   * rest is never read */
  for (uint32_t i = 0; i < l->limbs; i++)
    for (size_t beta = 0; beta < g; beta++)
      {
        uint64_t v = 0;
        if (!ckks_get_u64 (&r, &v) || v >= ctx->params.moduli[i])
          return CKKS_ERR_FORMAT;
        ct->c0[i * n + beta * l->span] = v;
      }
  if (!ckks_get_poly (&r, ctx, ct->c1, l->limbs))
    return CKKS_ERR_FORMAT;
  ct->n_limbs = l->limbs;
  ct->scale = head.scale;
  ct->seeded = false;
  ct->trace_only = true;
  return CKKS_OK;
}
