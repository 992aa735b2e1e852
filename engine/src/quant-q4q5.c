/* quant-q4q5.c: the 32-value block formats Q4_0, Q4_1, Q5_0 and Q5_1.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Decoders evaluate exactly the expressions of ggml's to_float (a product, then
 * for Q4_1/Q5_1 a separate addition of the min), so the results are
 * bit-identical. Encoders are ggml's reference ones: the scale from the
 * block's extreme value(s), quants truncated after adding a half. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "quant-private.h"

/* Quant j (0..31) of a block: its nibble, plus the fifth bit from @qh (the
 * little-endian word of a Q5 block; 0 for Q4). */
static inline int
nibble_quant (const uint8_t *qs, uint32_t qh, int j)
{
  int nibble = j < 16 ? qs[j] & 0xF : qs[j - 16] >> 4;
  return nibble | (int) (((qh >> j) & 1u) << 4);
}

static inline uint32_t
load_qh (const uint8_t qh[4])
{
  return (uint32_t) qh[0] | (uint32_t) qh[1] << 8 | (uint32_t) qh[2] << 16
         | (uint32_t) qh[3] << 24;
}

void
lm_dequantize_row_q4_0 (const void *src, float *dst, int64_t n)
{
  const LmBlockQ4_0 *x = src;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      float d = lm_fp16_to_fp32 (x[b].d);
      for (int j = 0; j < LM_QK32; j++)
        dst[b * LM_QK32 + j] = (float) (nibble_quant (x[b].qs, 0, j) - 8) * d;
    }
}

void
lm_dequantize_row_q4_1 (const void *src, float *dst, int64_t n)
{
  const LmBlockQ4_1 *x = src;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      float d = lm_fp16_to_fp32 (x[b].d), m = lm_fp16_to_fp32 (x[b].m);
      for (int j = 0; j < LM_QK32; j++)
        {
          float scaled = (float) nibble_quant (x[b].qs, 0, j) * d;
          dst[b * LM_QK32 + j] = scaled + m;
        }
    }
}

void
lm_dequantize_row_q5_0 (const void *src, float *dst, int64_t n)
{
  const LmBlockQ5_0 *x = src;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      float d = lm_fp16_to_fp32 (x[b].d);
      uint32_t qh = load_qh (x[b].qh);
      for (int j = 0; j < LM_QK32; j++)
        dst[b * LM_QK32 + j] = (float) (nibble_quant (x[b].qs, qh, j) - 16) * d;
    }
}

void
lm_dequantize_row_q5_1 (const void *src, float *dst, int64_t n)
{
  const LmBlockQ5_1 *x = src;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      float d = lm_fp16_to_fp32 (x[b].d), m = lm_fp16_to_fp32 (x[b].m);
      uint32_t qh = load_qh (x[b].qh);
      for (int j = 0; j < LM_QK32; j++)
        {
          float scaled = (float) nibble_quant (x[b].qs, qh, j) * d;
          dst[b * LM_QK32 + j] = scaled + m;
        }
    }
}

/* ---- encoders ---- */

/* The element of largest magnitude, the first one on ties (sign kept). */
static float
signed_abs_max (const float *x)
{
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < LM_QK32; j++)
    if (amax < fabsf (x[j]))
      {
        amax = fabsf (x[j]);
        max = x[j];
      }
  return max;
}

static void
min_max (const float *x, float *min, float *max)
{
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < LM_QK32; j++)
    {
      *min = fminf (*min, x[j]);
      *max = fmaxf (*max, x[j]);
    }
}

/* Packs 32 quants of 4 or 5 bits: nibbles into qs, fifth bits into *qh_word. */
static void
pack_quants (const int q[LM_QK32], uint8_t qs[LM_QK32 / 2], uint32_t *qh_word)
{
  uint32_t qh = 0;
  for (int j = 0; j < LM_QK32 / 2; j++)
    qs[j] = (uint8_t) ((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
  for (int j = 0; j < LM_QK32; j++)
    qh |= (uint32_t) ((q[j] >> 4) & 1) << j;
  *qh_word = qh;
}

static void
store_qh (uint8_t qh[4], uint32_t word)
{
  for (int k = 0; k < 4; k++)
    qh[k] = (uint8_t) (word >> (8 * k));
}

/* Symmetric blocks (Q4_0, Q5_0): d = max / -half, q = min(top, trunc(x/d + half + 0.5)). */
static void
fit_symmetric (const float *x, int half, uint16_t *d_out, int q[LM_QK32])
{
  float d = signed_abs_max (x) / (float) -half;
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  *d_out = lm_fp32_to_fp16 (d);
  for (int j = 0; j < LM_QK32; j++)
    {
      int v = (int) (x[j] * id + ((float) half + 0.5f));   /* truncates */
      q[j] = v < 2 * half - 1 ? v : 2 * half - 1;
    }
}

/* Blocks with a min (Q4_1, Q5_1): d = (max - min) / top, q = min(top, trunc((x - min)/d + 0.5)). */
static void
fit_with_min (const float *x, int top, uint16_t *d_out, uint16_t *m_out, int q[LM_QK32])
{
  float min, max;
  min_max (x, &min, &max);
  float d = (max - min) / (float) top;
  float id = d != 0.0f ? 1.0f / d : 0.0f;
  *d_out = lm_fp32_to_fp16 (d);
  *m_out = lm_fp32_to_fp16 (min);
  for (int j = 0; j < LM_QK32; j++)
    {
      int v = (int) ((x[j] - min) * id + 0.5f);
      q[j] = v < top ? v : top;
    }
}

void
lm_quantize_row_q4_0 (const float *src, void *dst, int64_t n)
{
  LmBlockQ4_0 *y = dst;
  int q[LM_QK32];
  uint32_t unused;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      fit_symmetric (src + b * LM_QK32, 8, &y[b].d, q);
      pack_quants (q, y[b].qs, &unused);
    }
}

void
lm_quantize_row_q4_1 (const float *src, void *dst, int64_t n)
{
  LmBlockQ4_1 *y = dst;
  int q[LM_QK32];
  uint32_t unused;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      fit_with_min (src + b * LM_QK32, 15, &y[b].d, &y[b].m, q);
      pack_quants (q, y[b].qs, &unused);
    }
}

void
lm_quantize_row_q5_0 (const float *src, void *dst, int64_t n)
{
  LmBlockQ5_0 *y = dst;
  int q[LM_QK32];
  uint32_t qh;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      fit_symmetric (src + b * LM_QK32, 16, &y[b].d, q);
      pack_quants (q, y[b].qs, &qh);
      store_qh (y[b].qh, qh);
    }
}

void
lm_quantize_row_q5_1 (const float *src, void *dst, int64_t n)
{
  LmBlockQ5_1 *y = dst;
  int q[LM_QK32];
  uint32_t qh;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      fit_with_min (src + b * LM_QK32, 31, &y[b].d, &y[b].m, q);
      pack_quants (q, y[b].qs, &qh);
      store_qh (y[b].qh, qh);
    }
}
