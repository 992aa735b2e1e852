/* quant-q8.c: Q8_0 weight rows and the Q8_0 / Q8_1 / Q8_K activation blocks.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "quant-private.h"

void
lm_dequantize_row_q8_0 (const void *src, float *dst, int64_t n)
{
  const LmBlockQ8_0 *blocks = src;
  for (int64_t b = 0; b < n / LM_QK8_0; b++)
    {
      float d = lm_fp16_to_fp32 (blocks[b].d);
      for (int i = 0; i < LM_QK8_0; i++)
        dst[b * LM_QK8_0 + i] = (float) blocks[b].qs[i] * d;
    }
}

static float
abs_max (const float *x, int n)
{
  float amax = 0.0f;
  for (int i = 0; i < n; i++)
    amax = fmaxf (amax, fabsf (x[i]));
  return amax;
}

/* Q8_0 blocks with d = amax/127. Weights round half away from zero with
 * x * (1/d), as llama-quantize does; activations round half to even with
 * x * (127/amax), as ggml's x86 backend does before an integer dot product. */
static void
quantize_q8_0_blocks (const float *src, LmBlockQ8_0 *dst, int64_t n, int for_activation)
{
  for (int64_t b = 0; b < n / LM_QK8_0; b++)
    {
      const float *x = src + b * LM_QK8_0;
      float amax = abs_max (x, LM_QK8_0);
      float d = amax / 127.0f;
      dst[b].d = lm_fp32_to_fp16 (d);
      if (for_activation)
        {
          float id = amax != 0.0f ? 127.0f / amax : 0.0f;
          for (int i = 0; i < LM_QK8_0; i++)
            dst[b].qs[i] = (int8_t) lm_round_even (x[i] * id);
        }
      else
        {
          float id = d != 0.0f ? 1.0f / d : 0.0f;
          for (int i = 0; i < LM_QK8_0; i++)
            dst[b].qs[i] = (int8_t) roundf (x[i] * id);
        }
    }
}

void
lm_quantize_row_q8_0 (const float *src, void *dst, int64_t n)
{
  quantize_q8_0_blocks (src, dst, n, 0);
}

void
lm_quantize_row_q8_0_act (const float *src, LmBlockQ8_0 *dst, int64_t n)
{
  quantize_q8_0_blocks (src, dst, n, 1);
}

void
lm_quantize_row_q8_1_act (const float *src, LmBlockQ8_1 *dst, int64_t n)
{
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      const float *x = src + b * LM_QK32;
      float amax = abs_max (x, LM_QK32);
      float d = amax / 127.0f;
      float id = amax != 0.0f ? 127.0f / amax : 0.0f;
      int sum = 0;
      for (int i = 0; i < LM_QK32; i++)
        {
          dst[b].qs[i] = (int8_t) lm_round_even (x[i] * id);
          sum += dst[b].qs[i];
        }
      dst[b].d = lm_fp32_to_fp16 (d);
      /* the sum is scaled by the unrounded d, as ggml's x86 backend does */
      dst[b].s = lm_fp32_to_fp16 (d * (float) sum);
    }
}

void
lm_quantize_row_q8_K (const float *src, LmBlockQ8_K *dst, int64_t n)
{
  for (int64_t b = 0; b < n / LM_QK_K; b++)
    {
      const float *x = src + b * LM_QK_K;
      LmBlockQ8_K *y = &dst[b];
      float amax = 0.0f, max = 0.0f;

      for (int i = 0; i < LM_QK_K; i++)
        if (fabsf (x[i]) > amax)
          {
            amax = fabsf (x[i]);
            max = x[i];
          }
      if (amax == 0.0f)
        {
          memset (y, 0, sizeof *y);
          continue;
        }
      float iscale = -127.0f / max;
      for (int i = 0; i < LM_QK_K; i++)
        {
          int v = lm_round_even (iscale * x[i]);
          y->qs[i] = (int8_t) (v < 127 ? v : 127);
        }
      for (int g = 0; g < LM_QK_K / 16; g++)
        {
          int sum = 0;
          for (int i = 0; i < 16; i++)
            sum += y->qs[16 * g + i];
          y->bsums[g] = (int16_t) sum;
        }
      y->d = 1.0f / iscale;
    }
}
