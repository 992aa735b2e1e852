/* quant-k.c: the K-quant super-block formats Q4_K, Q5_K and Q6_K.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Decoders evaluate exactly the expressions ggml's to_float does, in the same
 * order, so the results are bit-identical. Encoders are a plain min/max fit
 * (valid, reasonably accurate blocks; llama-quantize searches harder). */
#include <math.h>
#include <string.h>

#include "quant-private.h"

/* One Q4_K (@qh NULL) or Q5_K super-block. */
static void
decode_k4_block (uint16_t d16, uint16_t dmin16, const uint8_t *scales, const uint8_t *qs,
                 const uint8_t *qh, float *y)
{
  float d = lm_fp16_to_fp32 (d16), dmin = lm_fp16_to_fp32 (dmin16);
  for (int g = 0; g < 4; g++)
    {
      const uint8_t *q = qs + 32 * g;
      uint8_t lo_bit = (uint8_t) (1u << (2 * g)), hi_bit = (uint8_t) (2u << (2 * g));
      uint8_t sc, m;
      lm_k4_scale_min (scales, 2 * g, &sc, &m);
      float d1 = d * sc, m1 = dmin * m;
      lm_k4_scale_min (scales, 2 * g + 1, &sc, &m);
      float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; l++)
        y[64 * g + l] = d1 * ((q[l] & 0xF) + (qh && (qh[l] & lo_bit) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; l++)
        y[64 * g + 32 + l] = d2 * ((q[l] >> 4) + (qh && (qh[l] & hi_bit) ? 16 : 0)) - m2;
    }
}

void
lm_dequantize_row_q4_K (const void *src, float *dst, int64_t n)
{
  const LmBlockQ4_K *x = src;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    decode_k4_block (x[b].d, x[b].dmin, x[b].scales, x[b].qs, NULL, dst + b * LM_QK_K);
}

void
lm_dequantize_row_q5_K (const void *src, float *dst, int64_t n)
{
  const LmBlockQ5_K *x = src;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    decode_k4_block (x[b].d, x[b].dmin, x[b].scales, x[b].qs, x[b].qh, dst + b * LM_QK_K);
}

void
lm_dequantize_row_q6_K (const void *src, float *dst, int64_t n)
{
  const LmBlockQ6_K *blocks = src;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      const LmBlockQ6_K *x = &blocks[b];
      float d = lm_fp16_to_fp32 (x->d);
      for (int half = 0; half < 2; half++)
        {
          const uint8_t *ql = x->ql + 64 * half, *qh = x->qh + 32 * half;
          const int8_t *sc = x->scales + 8 * half;
          float *y = dst + b * LM_QK_K + 128 * half;
          for (int l = 0; l < 32; l++)
            {
              int is = l / 16;
              int q0 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) - 32;
              int q1 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
              int q2 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
              int q3 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
              y[l] = d * sc[is] * q0;
              y[l + 32] = d * sc[is + 2] * q1;
              y[l + 64] = d * sc[is + 4] * q2;
              y[l + 96] = d * sc[is + 6] * q3;
            }
        }
    }
}

static int
clamp_int (int v, int lo, int hi)
{
  return v < lo ? lo : v > hi ? hi : v;
}

/* Fits the eight 32-value sub-blocks of one Q4_K/Q5_K super-block as
 * x ~ d*sc_j*q - dmin*m_j with q in [0, qmax]; fills the header and q[256]. */
static void
fit_k4_block (const float *x, int qmax, uint16_t *d_out, uint16_t *dmin_out,
              uint8_t scales[LM_K_SCALE_SIZE], uint8_t q[LM_QK_K])
{
  float scale[8], min[8], max_scale = 0.0f, max_min = 0.0f;
  uint8_t sc[8], m[8];

  for (int j = 0; j < 8; j++)
    {
      float lo = 0.0f, hi = 0.0f;
      for (int l = 0; l < 32; l++)
        {
          lo = fminf (lo, x[32 * j + l]);
          hi = fmaxf (hi, x[32 * j + l]);
        }
      scale[j] = (hi - lo) / (float) qmax;
      min[j] = -lo;
      max_scale = fmaxf (max_scale, scale[j]);
      max_min = fmaxf (max_min, min[j]);
    }
  *d_out = lm_fp32_to_fp16 (max_scale / 63.0f);
  *dmin_out = lm_fp32_to_fp16 (max_min / 63.0f);
  float d = lm_fp16_to_fp32 (*d_out), dmin = lm_fp16_to_fp32 (*dmin_out);
  for (int j = 0; j < 8; j++)
    {
      sc[j] = (uint8_t) (d > 0.0f ? clamp_int ((int) ceilf (scale[j] / d - 0.01f), 0, 63) : 0);
      m[j] = (uint8_t) (dmin > 0.0f ? clamp_int ((int) lroundf (min[j] / dmin), 0, 63) : 0);
      float step = d * sc[j], offset = dmin * m[j];
      for (int l = 0; l < 32; l++)
        q[32 * j + l] = (uint8_t) (step > 0.0f
                                   ? clamp_int ((int) lroundf ((x[32 * j + l] + offset) / step), 0, qmax)
                                   : 0);
    }
  for (int j = 0; j < 4; j++)
    {
      scales[j] = (uint8_t) (sc[j] | ((sc[j + 4] >> 4) << 6));
      scales[j + 4] = (uint8_t) (m[j] | ((m[j + 4] >> 4) << 6));
      scales[j + 8] = (uint8_t) ((sc[j + 4] & 0xF) | ((m[j + 4] & 0xF) << 4));
    }
}

static void
pack_nibbles (const uint8_t q[LM_QK_K], uint8_t qs[LM_QK_K / 2])
{
  for (int g = 0; g < 4; g++)
    for (int l = 0; l < 32; l++)
      qs[32 * g + l] = (uint8_t) ((q[64 * g + l] & 0xF) | ((q[64 * g + 32 + l] & 0xF) << 4));
}

void
lm_quantize_row_q4_K (const float *src, void *dst, int64_t n)
{
  LmBlockQ4_K *blocks = dst;
  uint8_t q[LM_QK_K];
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      LmBlockQ4_K *y = &blocks[b];
      fit_k4_block (src + b * LM_QK_K, 15, &y->d, &y->dmin, y->scales, q);
      pack_nibbles (q, y->qs);
    }
}

void
lm_quantize_row_q5_K (const float *src, void *dst, int64_t n)
{
  LmBlockQ5_K *blocks = dst;
  uint8_t q[LM_QK_K];
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      LmBlockQ5_K *y = &blocks[b];
      fit_k4_block (src + b * LM_QK_K, 31, &y->d, &y->dmin, y->scales, q);
      pack_nibbles (q, y->qs);
      memset (y->qh, 0, sizeof y->qh);
      for (int s = 0; s < 8; s++)
        for (int l = 0; l < 32; l++)
          if (q[32 * s + l] & 16)
            y->qh[l] |= (uint8_t) (1u << s);
    }
}

void
lm_quantize_row_q6_K (const float *src, void *dst, int64_t n)
{
  LmBlockQ6_K *blocks = dst;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      const float *x = src + b * LM_QK_K;
      LmBlockQ6_K *y = &blocks[b];
      float scale[16], max_scale = 0.0f;
      uint8_t u[LM_QK_K];

      for (int s = 0; s < 16; s++)
        {
          float amax = 0.0f;
          for (int l = 0; l < 16; l++)
            amax = fmaxf (amax, fabsf (x[16 * s + l]));
          scale[s] = amax / 31.0f;
          max_scale = fmaxf (max_scale, scale[s]);
        }
      y->d = lm_fp32_to_fp16 (max_scale / 127.0f);
      float d = lm_fp16_to_fp32 (y->d);
      for (int s = 0; s < 16; s++)
        {
          y->scales[s] = (int8_t) (d > 0.0f ? clamp_int ((int) ceilf (scale[s] / d - 0.01f), 0, 127) : 0);
          float step = d * y->scales[s];
          for (int l = 0; l < 16; l++)
            u[16 * s + l] = (uint8_t) (step > 0.0f
                                       ? clamp_int ((int) lroundf (x[16 * s + l] / step), -32, 31) + 32
                                       : 32);
        }
      for (int half = 0; half < 2; half++)
        {
          const uint8_t *v = u + 128 * half;
          for (int l = 0; l < 32; l++)
            {
              y->ql[64 * half + l] = (uint8_t) ((v[l] & 0xF) | ((v[l + 64] & 0xF) << 4));
              y->ql[64 * half + l + 32] = (uint8_t) ((v[l + 32] & 0xF) | ((v[l + 96] & 0xF) << 4));
              y->qh[32 * half + l] = (uint8_t) ((v[l] >> 4) | ((v[l + 32] >> 4) << 2)
                                                | ((v[l + 64] >> 4) << 4) | ((v[l + 96] >> 4) << 6));
            }
        }
    }
}
