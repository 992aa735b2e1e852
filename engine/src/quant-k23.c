/* quant-k23.c: the K-quant super-block formats Q2_K and Q3_K.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Both split a super-block into sixteen sub-blocks of 16; value 16s + l, with
 * s = 8h + 2j + p, is the 2-bit field 2j of qs[32h + 16p + l] (and for Q3_K
 * bit 4h + j of hmask[16p + l]). Decoders evaluate exactly the expressions of
 * ggml's to_float, so the results are bit-identical. Encoders are a plain
 * fit per sub-block (valid, reasonably accurate blocks; llama-quantize
 * searches harder). */
#include <math.h>
#include <string.h>

#include "quant-private.h"

/* Byte index in qs and shift of the 2-bit quant of value i (0..255). */
static inline void
k23_position (int i, int *byte, int *shift)
{
  int s = i / 16, l = i % 16, h = s / 8, j = (s % 8) / 2, p = s % 2;
  *byte = 32 * h + 16 * p + l;
  *shift = 2 * j;
}

void
lm_dequantize_row_q2_K (const void *src, float *dst, int64_t n)
{
  const LmBlockQ2_K *x = src;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      float d = lm_fp16_to_fp32 (x[b].d), dmin = lm_fp16_to_fp32 (x[b].dmin);
      float *y = dst + b * LM_QK_K;
      for (int s = 0; s < 16; s++)
        {
          float dl = d * (float) (x[b].scales[s] & 0xF), ml = dmin * (float) (x[b].scales[s] >> 4);
          for (int l = 0; l < 16; l++)
            {
              int byte, shift;
              k23_position (16 * s + l, &byte, &shift);
              float scaled = dl * (float) ((x[b].qs[byte] >> shift) & 3);
              y[16 * s + l] = scaled - ml;
            }
        }
    }
}

void
lm_dequantize_row_q3_K (const void *src, float *dst, int64_t n)
{
  const LmBlockQ3_K *x = src;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      float d = lm_fp16_to_fp32 (x[b].d);
      int8_t sc[16];
      lm_q3_K_unpack_scales (x[b].scales, sc);
      float *y = dst + b * LM_QK_K;
      for (int s = 0; s < 16; s++)
        {
          float dl = d * (float) sc[s];
          for (int l = 0; l < 16; l++)
            {
              int byte, shift;
              k23_position (16 * s + l, &byte, &shift);
              y[16 * s + l] = dl * (float) lm_q3_K_quant (x[b].qs, x[b].hmask, byte, shift);
            }
        }
    }
}

/* ---- encoders ---- */

static int
clamp_int (int v, int lo, int hi)
{
  return v < lo ? lo : v > hi ? hi : v;
}

static void
put_quant (uint8_t *qs, int i, int q2)
{
  int byte, shift;
  k23_position (i, &byte, &shift);
  qs[byte] |= (uint8_t) ((q2 & 3) << shift);
}

/* Q2_K: x ~ d*sc*q - dmin*m per sub-block, sc and m 4-bit, q in 0..3. */
void
lm_quantize_row_q2_K (const float *src, void *dst, int64_t n)
{
  LmBlockQ2_K *blocks = dst;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      const float *x = src + b * LM_QK_K;
      LmBlockQ2_K *y = &blocks[b];
      float scale[16], min[16], max_scale = 0.0f, max_min = 0.0f;

      for (int s = 0; s < 16; s++)
        {
          float lo = 0.0f, hi = 0.0f;
          for (int l = 0; l < 16; l++)
            {
              lo = fminf (lo, x[16 * s + l]);
              hi = fmaxf (hi, x[16 * s + l]);
            }
          scale[s] = (hi - lo) / 3.0f;
          min[s] = -lo;
          max_scale = fmaxf (max_scale, scale[s]);
          max_min = fmaxf (max_min, min[s]);
        }
      y->d = lm_fp32_to_fp16 (max_scale / 15.0f);
      y->dmin = lm_fp32_to_fp16 (max_min / 15.0f);
      float d = lm_fp16_to_fp32 (y->d), dmin = lm_fp16_to_fp32 (y->dmin);
      memset (y->qs, 0, sizeof y->qs);
      for (int s = 0; s < 16; s++)
        {
          int sc = d > 0.0f ? clamp_int ((int) ceilf (scale[s] / d - 0.01f), 0, 15) : 0;
          int m = dmin > 0.0f ? clamp_int ((int) lroundf (min[s] / dmin), 0, 15) : 0;
          y->scales[s] = (uint8_t) (sc | m << 4);
          float step = d * (float) sc, offset = dmin * (float) m;
          for (int l = 0; l < 16; l++)
            {
              int q = step > 0.0f ? clamp_int ((int) lroundf ((x[16 * s + l] + offset) / step), 0, 3) : 0;
              put_quant (y->qs, 16 * s + l, q);
            }
        }
    }
}

/* Q3_K: x ~ d*sc*q per sub-block, sc signed 6-bit, q in -4..3; each
 * sub-block's extreme value maps to q = -4 (the scale takes its sign). */
void
lm_quantize_row_q3_K (const float *src, void *dst, int64_t n)
{
  LmBlockQ3_K *blocks = dst;
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      const float *x = src + b * LM_QK_K;
      LmBlockQ3_K *y = &blocks[b];
      float scale[16], max_scale = 0.0f;
      uint8_t packed[16];

      for (int s = 0; s < 16; s++)
        {
          float amax = 0.0f, max = 0.0f;
          for (int l = 0; l < 16; l++)
            if (fabsf (x[16 * s + l]) > amax)
              {
                amax = fabsf (x[16 * s + l]);
                max = x[16 * s + l];
              }
          scale[s] = max / -4.0f;
          max_scale = fmaxf (max_scale, amax / 4.0f);
        }
      y->d = lm_fp32_to_fp16 (max_scale / 31.0f);
      float d = lm_fp16_to_fp32 (y->d);
      memset (y->qs, 0, sizeof y->qs);
      memset (y->hmask, 0, sizeof y->hmask);
      memset (y->scales, 0, sizeof y->scales);
      for (int s = 0; s < 16; s++)
        {
          int sc = d > 0.0f ? clamp_int ((int) lroundf (scale[s] / d), -32, 31) : 0;
          packed[s] = (uint8_t) (sc + 32);
          float step = d * (float) sc;
          for (int l = 0; l < 16; l++)
            {
              int q = step != 0.0f ? clamp_int ((int) lroundf (x[16 * s + l] / step), -4, 3) : 0;
              put_quant (y->qs, 16 * s + l, q + 4);
              if (q >= 0)   /* the high bit set means "no -4" */
                y->hmask[16 * (s % 2) + l] |= (uint8_t) (1u << ((s % 8) / 2 + 4 * (s / 8)));
            }
        }
      for (int s = 0; s < 16; s++)
        {
          y->scales[s % 8] |= (uint8_t) ((packed[s] & 0xF) << (s < 8 ? 0 : 4));
          y->scales[8 + s % 4] |= (uint8_t) ((packed[s] >> 4) << (2 * (s / 4)));
        }
    }
}
