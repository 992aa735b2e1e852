/* ckks-serial.c: formats of parameters, ciphertexts and plaintexts.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ckks-objects.h"
#include "ckks-serial-io.h"
#include "ckks-serial.h"
#include "ckks-serial-poly.h"

#define FLAG_SEEDED 1u

static size_t
framed (size_t body)
{
  return CKKS_HEADER_BYTES + body + CKKS_CHECKSUM_BYTES;
}

/* ---- parameters ---- */

size_t
ckks_params_serialized_size (const CkksParams *p)
{
  return p && p->n_moduli <= CKKS_MAX_MODULI ? framed (8 + 8 * (size_t) p->n_moduli) : 0;
}

CkksStatus
ckks_params_serialize (const CkksParams *p, uint8_t *buf, size_t len)
{
  if (!p || !buf || p->n_moduli > CKKS_MAX_MODULI || len != ckks_params_serialized_size (p))
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksWriter w = { buf, len };
  ckks_frame_begin (&w, "CKPR", (uint32_t) (8 + 8 * p->n_moduli));
  ckks_put_u32 (&w, p->log_n);
  ckks_put_u32 (&w, p->n_moduli);
  for (uint32_t i = 0; i < p->n_moduli; i++)
    ckks_put_u64 (&w, p->moduli[i]);
  ckks_frame_end (&w, buf);
  return CKKS_OK;
}

CkksStatus
ckks_params_deserialize (const uint8_t *data, size_t len, CkksParams *out)
{
  CkksReader r;
  CkksStatus st = ckks_frame_open (data, len, "CKPR", &r);
  if (st != CKKS_OK || !out)
    return st != CKKS_OK ? st : CKKS_ERR_INVALID_ARGUMENT;
  CkksParams p = { 0 };
  if (!ckks_get_u32 (&r, &p.log_n) || !ckks_get_u32 (&r, &p.n_moduli)
      || p.n_moduli == 0 || p.n_moduli > CKKS_MAX_MODULI || r.left != 8 * (size_t) p.n_moduli)
    return CKKS_ERR_FORMAT;
  for (uint32_t i = 0; i < p.n_moduli; i++)
    ckks_get_u64 (&r, &p.moduli[i]);
  st = ckks_params_validate (&p);
  if (st == CKKS_ERR_INVALID_ARGUMENT)
    return CKKS_ERR_FORMAT;
  if (st == CKKS_OK)
    *out = p;
  return st;
}

/* ---- shared pieces of key, ciphertext and plaintext bodies ---- */

size_t
ckks_poly_serialized_bytes (const CkksContext *ctx, uint32_t n_limbs)
{
  return (size_t) n_limbs * ctx->n * 8;
}

void
ckks_put_poly (CkksWriter *w, const CkksContext *ctx, const uint64_t *poly, uint32_t n_limbs)
{
  size_t words = (size_t) n_limbs * ctx->n;
  for (size_t i = 0; i < words; i++)
    ckks_put_u64 (w, poly[i]);
}

bool
ckks_get_poly (CkksReader *r, const CkksContext *ctx, uint64_t *poly, uint32_t n_limbs)
{
  size_t n = ctx->n;
  if (r->left < ckks_poly_serialized_bytes (ctx, n_limbs))
    return false;
  for (uint32_t i = 0; i < n_limbs; i++)
    {
      uint64_t q = ctx->params.moduli[i];
      for (size_t k = 0; k < n; k++)
        {
          ckks_get_u64 (r, &poly[i * n + k]);
          if (poly[i * n + k] >= q)
            return false;
        }
    }
  return true;
}

/* fingerprint, u32 limbs, u32 flags, f64 scale */
#define OBJECT_HEAD_BYTES (32 + 4 + 4 + 8)

void
ckks_put_object_head (CkksWriter *w, const CkksContext *ctx, uint32_t n_limbs,
                      uint32_t flags, double scale)
{
  uint64_t bits;
  memcpy (&bits, &scale, 8);
  ckks_put_bytes (w, ctx->fingerprint, 32);
  ckks_put_u32 (w, n_limbs);
  ckks_put_u32 (w, flags);
  ckks_put_u64 (w, bits);
}

CkksStatus
ckks_open_object (const uint8_t *data, size_t len, const char magic[4],
                  const CkksContext *ctx, CkksReader *r, CkksObjectHead *head)
{
  CkksStatus st = ckks_frame_open (data, len, magic, r);
  if (st != CKKS_OK)
    return st;
  uint8_t fp[32];
  uint64_t bits;
  if (!ckks_get_bytes (r, fp, 32) || !ckks_get_u32 (r, &head->n_limbs)
      || !ckks_get_u32 (r, &head->flags) || !ckks_get_u64 (r, &bits))
    return CKKS_ERR_FORMAT;
  if (memcmp (fp, ctx->fingerprint, 32) != 0)
    return CKKS_ERR_MISMATCH;
  memcpy (&head->scale, &bits, 8);
  if (head->n_limbs == 0 || head->n_limbs > ctx->params.n_moduli
      || !isfinite (head->scale) || !(head->scale > 0))
    return CKKS_ERR_FORMAT;
  return CKKS_OK;
}

/* ---- ciphertexts ---- */

size_t
ckks_ciphertext_serialized_size (const CkksCiphertext *ct)
{
  if (!ct)
    return 0;
  size_t poly = ckks_poly_serialized_bytes (ct->ctx, ct->n_limbs);
  return framed (OBJECT_HEAD_BYTES + poly + (ct->seeded ? CKKS_SEED_BYTES : poly));
}

CkksStatus
ckks_ciphertext_serialize (const CkksCiphertext *ct, uint8_t *buf, size_t len)
{
  if (!ct || !buf || len != ckks_ciphertext_serialized_size (ct))
    return CKKS_ERR_INVALID_ARGUMENT;
  if (ct->trace_only)
    return CKKS_ERR_MISMATCH;
  CkksWriter w = { buf, len };
  ckks_frame_begin (&w, "CKCT", (uint32_t) (len - framed (0)));
  ckks_put_object_head (&w, ct->ctx, ct->n_limbs, ct->seeded ? FLAG_SEEDED : 0, ct->scale);
  ckks_put_poly (&w, ct->ctx, ct->c0, ct->n_limbs);
  if (ct->seeded)
    ckks_put_bytes (&w, ct->seed, CKKS_SEED_BYTES);
  else
    ckks_put_poly (&w, ct->ctx, ct->c1, ct->n_limbs);
  ckks_frame_end (&w, buf);
  return CKKS_OK;
}

CkksStatus
ckks_ciphertext_deserialize_into (CkksCiphertext *ct, const uint8_t *data, size_t len)
{
  if (!ct)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksReader r;
  CkksObjectHead head = { 0 };
  CkksStatus st = ckks_open_object (data, len, "CKCT", ct->ctx, &r, &head);
  if (st != CKKS_OK)
    return st;
  uint32_t n_limbs = head.n_limbs, flags = head.flags;
  if (flags & ~FLAG_SEEDED)
    return CKKS_ERR_FORMAT;
  if (n_limbs > ct->capacity)
    return CKKS_ERR_LEVEL;
  bool seeded = flags & FLAG_SEEDED;
  size_t poly = ckks_poly_serialized_bytes (ct->ctx, n_limbs);
  if (r.left != poly + (seeded ? CKKS_SEED_BYTES : poly)
      || !ckks_get_poly (&r, ct->ctx, ct->c0, n_limbs))
    return CKKS_ERR_FORMAT;
  if (seeded)
    {
      ckks_get_bytes (&r, ct->seed, CKKS_SEED_BYTES);
      st = ckks_expand_uniform (ct->ctx, ct->seed, n_limbs, ct->c1);
      if (st != CKKS_OK)
        return st;
    }
  else if (!ckks_get_poly (&r, ct->ctx, ct->c1, n_limbs))
    return CKKS_ERR_FORMAT;
  ct->n_limbs = n_limbs;
  ct->scale = head.scale;
  ct->seeded = seeded;
  ct->trace_only = false;
  return CKKS_OK;
}

/* Reads the limb count first so the new object is allocated to fit. */
static CkksStatus
peek_limbs (const CkksContext *ctx, const uint8_t *data, size_t len, const char magic[4],
            uint32_t *n_limbs)
{
  CkksReader r;
  CkksObjectHead head = { 0 };
  CkksStatus st = ckks_open_object (data, len, magic, ctx, &r, &head);
  *n_limbs = head.n_limbs;
  return st;
}

CkksStatus
ckks_ciphertext_deserialize (const CkksContext *ctx, const uint8_t *data, size_t len,
                             CkksCiphertext **out)
{
  if (!ctx || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  uint32_t n_limbs;
  CkksStatus st = peek_limbs (ctx, data, len, "CKCT", &n_limbs);
  CkksCiphertext *ct = NULL;
  if (st == CKKS_OK)
    st = ckks_ciphertext_new (ctx, n_limbs, &ct);
  if (st == CKKS_OK)
    st = ckks_ciphertext_deserialize_into (ct, data, len);
  if (st != CKKS_OK)
    {
      ckks_ciphertext_free (ct);
      return st;
    }
  *out = ct;
  return CKKS_OK;
}

/* ---- plaintexts ---- */

size_t
ckks_plaintext_serialized_size (const CkksPlaintext *pt)
{
  return pt ? framed (OBJECT_HEAD_BYTES + ckks_poly_serialized_bytes (pt->ctx, pt->n_limbs)) : 0;
}

CkksStatus
ckks_plaintext_serialize (const CkksPlaintext *pt, uint8_t *buf, size_t len)
{
  if (!pt || !buf || len != ckks_plaintext_serialized_size (pt))
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksWriter w = { buf, len };
  ckks_frame_begin (&w, "CKPT", (uint32_t) (len - framed (0)));
  ckks_put_object_head (&w, pt->ctx, pt->n_limbs, 0, pt->scale);
  ckks_put_poly (&w, pt->ctx, pt->data, pt->n_limbs);
  ckks_frame_end (&w, buf);
  return CKKS_OK;
}

CkksStatus
ckks_plaintext_deserialize (const CkksContext *ctx, const uint8_t *data, size_t len,
                            CkksPlaintext **out)
{
  if (!ctx || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksReader r;
  CkksObjectHead head = { 0 };
  CkksStatus st = ckks_open_object (data, len, "CKPT", ctx, &r, &head);
  if (st != CKKS_OK)
    return st;
  uint32_t n_limbs = head.n_limbs;
  if (head.flags != 0 || r.left != ckks_poly_serialized_bytes (ctx, n_limbs))
    return CKKS_ERR_FORMAT;
  CkksPlaintext *pt;
  if ((st = ckks_plaintext_new (ctx, n_limbs, &pt)) != CKKS_OK)
    return st;
  if (!ckks_get_poly (&r, ctx, pt->data, n_limbs))
    {
      ckks_plaintext_free (pt);
      return CKKS_ERR_FORMAT;
    }
  pt->scale = head.scale;
  *out = pt;
  return CKKS_OK;
}
