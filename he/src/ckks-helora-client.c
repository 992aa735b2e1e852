/* ckks-helora-client.c: HE-LoRA client side: encrypt h, decrypt u.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ckks-helora-private.h"
#include "ckks-keys.h"
#include "ckks-secret.h"

/* Encodes at 2^48 (the int64 rounding path; finer is pointless for a
 * float h through a double FFT) and lifts to the layout's 2^in_bits. */
typedef CkksStatus (*EncryptValues) (const void *key, const double *re, size_t count,
                                     double scale, unsigned lift_bits, CkksCiphertext *ct);

static CkksStatus
encrypt_values_sk (const void *key, const double *re, size_t count, double scale,
                   unsigned lift_bits, CkksCiphertext *ct)
{
  return ckks_encrypt_values_sk_lifted (key, re, NULL, count, scale, lift_bits, ct);
}

static CkksStatus
encrypt_values_pk (const void *key, const double *re, size_t count, double scale,
                   unsigned lift_bits, CkksCiphertext *ct)
{
  return ckks_encrypt_values_pk_lifted (key, re, NULL, count, scale, lift_bits, ct);
}

static CkksStatus
encrypt_h (const CkksHeloraLayout *l, const CkksContext *key_ctx, const void *key,
           EncryptValues encrypt, const float *h, CkksCiphertext *const *inputs,
           size_t n_inputs, double *h_factor)
{
  if (!l || !key || !h || !inputs || !h_factor || n_inputs != l->chunks)
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
  unsigned encode_bits = l->in_bits < CKKS_HELORA_ENCODE_BITS ? l->in_bits
                                                              : CKKS_HELORA_ENCODE_BITS;
  double scale = ldexp (1.0, (int) encode_bits);
  for (size_t k = 0; st == CKKS_OK && k < l->chunks; k++)
    {
      size_t len = l->chunk_len, base = k * len;
      if (base + len > l->d)
        len = l->d - base;
      memset (z, 0, slots * sizeof (double));
      for (size_t j = 0; j < len; j++)
        {
          double v = h[base + j] * inv;
          for (size_t t = 0; t < l->copies; t++)
            z[ckks_helora_slot (l, t, j)] = v;
        }
      st = encrypt (key, z, slots, scale, l->in_bits - encode_bits, inputs[k]);
    }
  ckks_free (z);
  *h_factor = hmax;
  return st;
}

CkksStatus
ckks_helora_encrypt_sk (const CkksHeloraLayout *layout, const CkksSecretKey *sk,
                        const float *h, CkksCiphertext *const *inputs, size_t n_inputs,
                        double *h_factor)
{
  return encrypt_h (layout, sk ? sk->ctx : NULL, sk, encrypt_values_sk, h, inputs,
                    n_inputs, h_factor);
}

CkksStatus
ckks_helora_encrypt_pk (const CkksHeloraLayout *layout, const CkksPublicKey *pk,
                        const float *h, CkksCiphertext *const *inputs, size_t n_inputs,
                        double *h_factor)
{
  return encrypt_h (layout, pk ? pk->ctx : NULL, pk, encrypt_values_pk, h, inputs,
                    n_inputs, h_factor);
}

static double
trace_dot (const double *m, const double *angles, size_t g)
{
  double s = 0;
  for (size_t kappa = 0; kappa < g; kappa++)
    s += m[kappa] * angles[kappa];
  return s;
}

/* u for the rows of result @b from its decryption @poly (NTT form, limbs
 * of the layout) through the trace: per limb, the sums B_beta of the 2c
 * contiguous blocks of L' NTT values (block beta holds the evaluations at
 * psi^e, e = 2 bitrev(beta) + 1 mod 4c), then the coefficients m_{L' kappa}
 * = sum_beta W[kappa][beta] B_beta, CRT, and the segment sums
 * Re S_t = (L' / scale) sum_kappa m_{L' kappa} cos(pi 5^t L' kappa / N),
 * and with the complex packing Im S_t, the same sum with sin: the slots
 * of a segment are the values at zeta^(5^t h), h = 1 mod 4c, and summing
 * them leaves L' sum_kappa m_{L' kappa} zeta^(5^t L' kappa), whose real and
 * imaginary parts these are. */
static void
trace_sums (const CkksHeloraLayout *l, const CkksSecretKey *sk, const CkksCiphertext *ct,
            uint64_t *poly, size_t b, double h_factor, double *u)
{
  const CkksContext *ctx = l->ctx;
  size_t g = 2 * l->copies, n = ctx->n;
  uint64_t res[2 * CKKS_HELORA_MAX_TRACE_COPIES * CKKS_MAX_MODULI];
  double m[2 * CKKS_HELORA_MAX_TRACE_COPIES];
  for (uint32_t i = 0; i < l->limbs; i++)
    {
      const CkksModulus *mod = &ctx->ntt[i].mod;
      uint64_t sums[2 * CKKS_HELORA_MAX_TRACE_COPIES], c0_sums[2 * CKKS_HELORA_MAX_TRACE_COPIES];
      /* block sums of c0 + c1 s = those of c0 plus those of c1 s */
      ckks_fixed_block_sums (ctx, ct->c1 + i * n, CKKS_FIXED_W (&sk->s_fixed, i, n),
                             CKKS_FIXED_C (&sk->s_fixed, i, n), i, g, l->span, poly, sums);
      ckks_helora_c0_sums (l, ct, i, c0_sums);
      for (size_t beta = 0; beta < g; beta++)
        sums[beta] = ckks_add_mod (sums[beta], c0_sums[beta], mod->q);
      const uint64_t *w = l->trace_w + (size_t) i * g * g;
      for (size_t kappa = 0; kappa < g; kappa++)
        {
          uint64_t acc = 0;
          for (size_t beta = 0; beta < g; beta++)
            acc = ckks_add_mod (acc, ckks_mul_mod (w[kappa * g + beta], sums[beta], mod), mod->q);
          res[i * g + kappa] = acc;
        }
    }
  ckks_crt_to_real (ctx, res, g, l->limbs, g, m);
  double factor = (double) l->span / ct->scale * h_factor;
  size_t first = b * l->rows_per_output;
  for (size_t t = 0; t < l->copies && first + t < l->r; t++)
    u[first + t] = trace_dot (m, l->trace_re + t * g, g) * factor;
  for (size_t t = 0; l->trace_im && t < l->copies && first + l->copies + t < l->r; t++)
    u[first + l->copies + t] = trace_dot (m, l->trace_im + t * g, g) * factor;
}

/* u for the rows of result @b by a full decode and slot sums. */
static CkksStatus
decoded_sums (const CkksHeloraLayout *l, uint64_t *poly, double scale, size_t b,
              double h_factor, double *u, double *coeffs, double *slot_buf)
{
  const CkksContext *ctx = l->ctx;
  ckks_ntt_to_real_coeffs (ctx, poly, l->limbs, coeffs);
  CkksStatus st = ckks_real_coeffs_decode (ctx, coeffs, scale, slot_buf, NULL, ctx->slots);
  for (size_t t = 0; st == CKKS_OK && t < l->copies && b * l->copies + t < l->r; t++)
    {
      double sum = 0;
      for (size_t j = 0; j < l->chunk_len; j++)
        sum += slot_buf[ckks_helora_slot (l, t, j)];
      u[b * l->copies + t] = sum * h_factor;
    }
  return st;
}

CkksStatus
ckks_helora_decrypt_part (const CkksHeloraLayout *l, const CkksSecretKey *sk,
                          CkksCiphertext *const *outputs, size_t n_outputs, size_t first,
                          size_t count, double h_factor, double *u)
{
  if (!l || !sk || !outputs || !u || !(h_factor > 0) || n_outputs != l->n_outputs
      || first > n_outputs || count > n_outputs - first)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (sk->ctx != l->ctx)
    return CKKS_ERR_MISMATCH;
  const CkksContext *ctx = l->ctx;
  for (size_t b = first; b < first + count; b++)
    {
      if (!outputs[b])
        return CKKS_ERR_INVALID_ARGUMENT;
      if (outputs[b]->ctx != ctx)
        return CKKS_ERR_MISMATCH;
    }
  size_t n = ctx->n;
  uint64_t *poly = ckks_alloc ((size_t) ctx->params.n_moduli * n * sizeof (uint64_t));
  double *coeffs = l->trace_w ? NULL : ckks_alloc (n * sizeof (double));
  double *slot_buf = l->trace_w ? NULL : ckks_alloc (ctx->slots * sizeof (double));
  CkksStatus st = poly && (l->trace_w || (coeffs && slot_buf)) ? CKKS_OK : CKKS_ERR_NO_MEMORY;
  for (size_t b = first; st == CKKS_OK && b < first + count; b++)
    {
      const CkksCiphertext *ct = outputs[b];
      if (ct->n_limbs < l->limbs)
        {
          st = CKKS_ERR_LEVEL;
          break;
        }
      if (ct->trace_only && !l->trace_w)
        {
          st = CKKS_ERR_MISMATCH;
          break;
        }
      if (l->trace_w)
        trace_sums (l, sk, ct, poly, b, h_factor, u);
      else
        {
          ckks_decrypt_poly (sk, ct, poly);
          st = decoded_sums (l, poly, ct->scale, b, h_factor, u, coeffs, slot_buf);
        }
    }
  ckks_free (poly);
  ckks_free (coeffs);
  ckks_free (slot_buf);
  return st;
}

CkksStatus
ckks_helora_decrypt (const CkksHeloraLayout *l, const CkksSecretKey *sk,
                     CkksCiphertext *const *outputs, size_t n_outputs, double h_factor,
                     double *u)
{
  return ckks_helora_decrypt_part (l, sk, outputs, n_outputs, 0, n_outputs, h_factor, u);
}
