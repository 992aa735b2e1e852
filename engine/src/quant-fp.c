/* quant-fp.c: fp16 / bf16 element conversions and F32/F16/BF16 rows.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "quant-private.h"

static uint32_t
float_bits (float f)
{
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return u;
}

static float
bits_float (uint32_t u)
{
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
}

float
lm_fp16_to_fp32 (uint16_t h)
{
  uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;

  if (exponent == 0)
    {
      /* zero or subnormal: mantissa * 2^-24 is exact in f32 */
      float magnitude = (float) mantissa * 0x1p-24f;
      return bits_float (float_bits (magnitude) | sign);
    }
  if (exponent == 31)
    return bits_float (sign | 0x7f800000u | (mantissa << 13));
  return bits_float (sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t
lm_fp32_to_fp16 (float f)
{
  uint32_t x = float_bits (f);
  uint16_t sign = (uint16_t) ((x >> 16) & 0x8000u);

  x &= 0x7fffffffu;
  if (x > 0x7f800000u)                 /* NaN: keep it quiet and non-zero */
    return sign | 0x7e00u | (uint16_t) ((x >> 13) & 0x3ffu);
  if (x >= 0x477ff000u)                /* rounds to >= 65520: infinity */
    return sign | 0x7c00u;
  if (x < 0x38800000u)                 /* below 2^-14: subnormal half */
    {
      /* adding 0.5 lines the half's last bit up with the f32's, and the f32
       * addition rounds to nearest even exactly as the conversion must */
      float shifted = bits_float (x) + 0.5f;
      return sign | (uint16_t) (float_bits (shifted) - 0x3f000000u);
    }
  uint32_t odd = (x >> 13) & 1u;
  x += ((uint32_t) (15 - 127) << 23) + 0xfffu + odd;
  return sign | (uint16_t) (x >> 13);
}

float
lm_bf16_to_fp32 (uint16_t h)
{
  return bits_float ((uint32_t) h << 16);
}

uint16_t
lm_fp32_to_bf16 (float f)
{
  uint32_t x = float_bits (f);

  if ((x & 0x7fffffffu) > 0x7f800000u)  /* NaN: force quiet */
    return (uint16_t) ((x >> 16) | 64u);
  return (uint16_t) ((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

void
lm_dequantize_row_f16 (const void *src, float *dst, int64_t n)
{
  const uint16_t *h = src;
  for (int64_t i = 0; i < n; i++)
    dst[i] = lm_fp16_to_fp32 (h[i]);
}

void
lm_dequantize_row_bf16 (const void *src, float *dst, int64_t n)
{
  const uint16_t *h = src;
  for (int64_t i = 0; i < n; i++)
    dst[i] = lm_bf16_to_fp32 (h[i]);
}

void
lm_quantize_row_f16 (const float *src, void *dst, int64_t n)
{
  uint16_t *h = dst;
  for (int64_t i = 0; i < n; i++)
    h[i] = lm_fp32_to_fp16 (src[i]);
}

void
lm_quantize_row_bf16 (const float *src, void *dst, int64_t n)
{
  uint16_t *h = dst;
  for (int64_t i = 0; i < n; i++)
    h[i] = lm_fp32_to_bf16 (src[i]);
}
