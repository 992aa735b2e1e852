/* ckks-serial-pk.c: the public key format (b, seed of a).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-keys.h"
#include "ckks-serial-poly.h"
#include "ckks-serial.h"

size_t
ckks_public_key_serialized_size (const CkksPublicKey *pk)
{
  if (!pk)
    return 0;
  return CKKS_HEADER_BYTES + 48 + CKKS_SEED_BYTES
         + ckks_poly_serialized_bytes (pk->ctx, pk->ctx->params.n_moduli)
         + CKKS_CHECKSUM_BYTES;
}

CkksStatus
ckks_public_key_serialize (const CkksPublicKey *pk, uint8_t *buf, size_t len)
{
  if (!pk || !buf || len != ckks_public_key_serialized_size (pk))
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksWriter w = { buf, len };
  uint32_t L = pk->ctx->params.n_moduli;
  ckks_frame_begin (&w, "CKPK", (uint32_t) (len - CKKS_HEADER_BYTES - CKKS_CHECKSUM_BYTES));
  ckks_put_object_head (&w, pk->ctx, L, 0, 1.0);
  ckks_put_bytes (&w, pk->seed, CKKS_SEED_BYTES);
  ckks_put_poly (&w, pk->ctx, pk->b, L);
  ckks_frame_end (&w, buf);
  return CKKS_OK;
}

CkksStatus
ckks_public_key_deserialize (const CkksContext *ctx, const uint8_t *data, size_t len,
                             CkksPublicKey **out)
{
  if (!ctx || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksReader r;
  CkksObjectHead head = { 0 };
  CkksStatus st = ckks_open_object (data, len, "CKPK", ctx, &r, &head);
  if (st != CKKS_OK)
    return st;
  uint32_t L = ctx->params.n_moduli;
  if (head.n_limbs != L || head.flags != 0 || head.scale != 1.0
      || r.left != CKKS_SEED_BYTES + ckks_poly_serialized_bytes (ctx, L))
    return CKKS_ERR_FORMAT;
  CkksPublicKey *pk;
  if ((st = ckks_public_key_alloc (ctx, &pk)) != CKKS_OK)
    return st;
  ckks_get_bytes (&r, pk->seed, CKKS_SEED_BYTES);
  if (!ckks_get_poly (&r, ctx, pk->b, L))
    st = CKKS_ERR_FORMAT;
  if (st == CKKS_OK)
    st = ckks_expand_uniform (ctx, pk->seed, L, pk->a);
  if (st != CKKS_OK)
    {
      ckks_public_key_free (pk);
      return st;
    }
  if ((st = ckks_public_key_prepare (pk)) != CKKS_OK)
    {
      ckks_public_key_free (pk);
      return st;
    }
  *out = pk;
  return CKKS_OK;
}
