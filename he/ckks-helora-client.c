/* ckks-helora-client.c: HE-LoRA client side: encrypt h, decrypt u.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ckks-helora-private.h"
#include "ckks-keys.h"
#include "ckks-secret.h"

typedef CkksStatus (*EncryptValues) (const void *key, const double *re,
                                     size_t count, CkksCiphertext *ct);

static CkksStatus
encrypt_values_sk (const void *key, const double *re, size_t count, CkksCiphertext *ct)
{
  return ckks_encrypt_values_sk (key, re, NULL, count, CKKS_HELORA_CT_SCALE, ct);
}

static CkksStatus
encrypt_values_pk (const void *key, const double *re, size_t count, CkksCiphertext *ct)
{
  return ckks_encrypt_values_pk (key, re, NULL, count, CKKS_HELORA_CT_SCALE, ct);
}

static CkksStatus
encrypt_h (const CkksHeloraLayout *l, const CkksContext *key_ctx, const void *key,
           EncryptValues encrypt, const float *h, CkksCiphertext *const *inputs,
           double *h_factor)
{
  if (!l || !key || !h || !inputs || !h_factor)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (key_ctx != l->ctx)
    return CKKS_ERR_MISMATCH;
  double hmax = 0;
  for (size_t i = 0; i < l->d; i++)
    {
      if (!isfinite (h[i]))
        return CKKS_ERR_INVALID_ARGUMENT;
      hmax = fmax (hmax, fabs ((double) h[i]));
    }
  if (hmax == 0)
    hmax = 1;
  for (size_t k = 0; k < l->chunks; k++)
    if (!inputs[k] || inputs[k]->ctx != l->ctx || inputs[k]->capacity != l->limbs)
      return inputs[k] ? CKKS_ERR_MISMATCH : CKKS_ERR_INVALID_ARGUMENT;
  size_t slots = l->ctx->slots;
  double *z = ckks_alloc (slots * sizeof (double));
  if (!z)
    return CKKS_ERR_NO_MEMORY;
  CkksStatus st = CKKS_OK;
  double inv = 1.0 / hmax;
  for (size_t k = 0; st == CKKS_OK && k < l->chunks; k++)
    {
      size_t len = l->chunk_len, base = k * len;
      if (base + len > l->d)
        len = l->d - base;
      memset (z, 0, slots * sizeof (double));
      for (size_t j = 0; j < len; j++)
        z[j] = h[base + j] * inv;
      for (size_t t = 1; t < l->copies; t++)
        memcpy (z + t * l->chunk_len, z, len * sizeof (double));
      st = encrypt (key, z, l->copies * l->chunk_len, inputs[k]);
    }
  ckks_free (z);
  *h_factor = hmax;
  return st;
}

CkksStatus
ckks_helora_encrypt_sk (const CkksHeloraLayout *layout, const CkksSecretKey *sk,
                        const float *h, CkksCiphertext *const *inputs, double *h_factor)
{
  return encrypt_h (layout, sk ? sk->ctx : NULL, sk, encrypt_values_sk, h, inputs,
                    h_factor);
}

CkksStatus
ckks_helora_encrypt_pk (const CkksHeloraLayout *layout, const CkksPublicKey *pk,
                        const float *h, CkksCiphertext *const *inputs, double *h_factor)
{
  return encrypt_h (layout, pk ? pk->ctx : NULL, pk, encrypt_values_pk, h, inputs,
                    h_factor);
}

/* Results decrypted together: their coefficients (GROUP * N doubles) stay in
 * cache while the segment functionals stream past once per group. */
#define GROUP 8
#define BLOCK 1024

/* u[row] for every row held by results [b0, b0 + count), from their real
 * coefficients, through the precomputed segment functionals. */
static void
functional_sums (const CkksHeloraLayout *l, const double *coeffs, size_t b0, size_t count,
                 const double *factors, double *u)
{
  const CkksContext *ctx = l->ctx;
  size_t n = ctx->n, c = l->copies;
  double acc[GROUP * CKKS_HELORA_MAX_FUNCTIONALS] = { 0 };
  for (size_t k0 = 0; k0 < n; k0 += BLOCK)
    for (size_t t = 0; t < c; t++)
      for (size_t b = 0; b < count && (b0 + b) * c + t < l->r; b++)
        acc[b * c + t] += ctx->k.dot (l->functional + t * n + k0, coeffs + b * n + k0, BLOCK);
  for (size_t b = 0; b < count; b++)
    for (size_t t = 0; t < c && (b0 + b) * c + t < l->r; t++)
      u[(b0 + b) * c + t] = acc[b * c + t] * factors[b];
}

/* u[row] for the rows of result @b by a full decode and slot sums. */
static CkksStatus
decoded_sums (const CkksHeloraLayout *l, const double *coeffs, double scale, size_t b,
              double h_factor, double *u, double *slot_buf)
{
  const CkksContext *ctx = l->ctx;
  CkksStatus st = ckks_real_coeffs_decode (ctx, coeffs, scale, slot_buf, NULL, ctx->slots);
  for (size_t t = 0; st == CKKS_OK && t < l->copies && b * l->copies + t < l->r; t++)
    {
      double sum = 0;
      for (size_t j = 0; j < l->chunk_len; j++)
        sum += slot_buf[t * l->chunk_len + j];
      u[b * l->copies + t] = sum * h_factor;
    }
  return st;
}

CkksStatus
ckks_helora_decrypt (const CkksHeloraLayout *l, const CkksSecretKey *sk,
                     CkksCiphertext *const *outputs, double h_factor, double *u)
{
  if (!l || !sk || !outputs || !u || !(h_factor > 0))
    return CKKS_ERR_INVALID_ARGUMENT;
  if (sk->ctx != l->ctx)
    return CKKS_ERR_MISMATCH;
  const CkksContext *ctx = l->ctx;
  for (size_t b = 0; b < l->n_outputs; b++)
    {
      if (!outputs[b])
        return CKKS_ERR_INVALID_ARGUMENT;
      if (outputs[b]->ctx != ctx)
        return CKKS_ERR_MISMATCH;
    }
  size_t n = ctx->n;
  uint64_t *poly = ckks_alloc ((size_t) ctx->params.n_moduli * n * sizeof (uint64_t));
  double *coeffs = ckks_alloc (GROUP * n * sizeof (double));
  double *slot_buf = ckks_alloc (ctx->slots * sizeof (double));
  CkksStatus st = poly && coeffs && slot_buf ? CKKS_OK : CKKS_ERR_NO_MEMORY;
  for (size_t b0 = 0; st == CKKS_OK && b0 < l->n_outputs; b0 += GROUP)
    {
      size_t count = l->n_outputs - b0 < GROUP ? l->n_outputs - b0 : GROUP;
      double factors[GROUP];
      for (size_t b = 0; st == CKKS_OK && b < count; b++)
        {
          const CkksCiphertext *ct = outputs[b0 + b];
          ckks_decrypt_poly (sk, ct, poly);
          ckks_ntt_to_real_coeffs (ctx, poly, ct->n_limbs, coeffs + b * n);
          factors[b] = h_factor / ct->scale;
          if (!l->functional)
            st = decoded_sums (l, coeffs + b * n, ct->scale, b0 + b, h_factor, u, slot_buf);
        }
      if (st == CKKS_OK && l->functional)
        functional_sums (l, coeffs, b0, count, factors, u);
    }
  ckks_free (poly);
  ckks_free (coeffs);
  ckks_free (slot_buf);
  return st;
}
