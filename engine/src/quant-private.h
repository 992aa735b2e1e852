/* quant-private.h: per-type row codecs behind lm_dequantize_row / lm_quantize_row.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal to libtensafe-engine. Every function handles @n values (a multiple of
 * the type's block size, checked by the caller) and is thread-safe for disjoint
 * outputs. */
#pragma once

#include "quant.h"

void lm_dequantize_row_f16 (const void *src, float *dst, int64_t n);
void lm_dequantize_row_bf16 (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q4_0 (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q4_1 (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q5_0 (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q5_1 (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q8_0 (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q2_K (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q3_K (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q4_K (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q5_K (const void *src, float *dst, int64_t n);
void lm_dequantize_row_q6_K (const void *src, float *dst, int64_t n);

void lm_quantize_row_f16 (const float *src, void *dst, int64_t n);
void lm_quantize_row_bf16 (const float *src, void *dst, int64_t n);
void lm_quantize_row_q4_0 (const float *src, void *dst, int64_t n);
void lm_quantize_row_q4_1 (const float *src, void *dst, int64_t n);
void lm_quantize_row_q5_0 (const float *src, void *dst, int64_t n);
void lm_quantize_row_q5_1 (const float *src, void *dst, int64_t n);
void lm_quantize_row_q8_0 (const float *src, void *dst, int64_t n);
void lm_quantize_row_q2_K (const float *src, void *dst, int64_t n);
void lm_quantize_row_q3_K (const float *src, void *dst, int64_t n);
void lm_quantize_row_q4_K (const float *src, void *dst, int64_t n);
void lm_quantize_row_q5_K (const float *src, void *dst, int64_t n);
void lm_quantize_row_q6_K (const float *src, void *dst, int64_t n);

/* The 6-bit scale and min of sub-block @j (0..7) of a Q4_K / Q5_K block. */
static inline void
lm_k4_scale_min (const uint8_t *scales, int j, uint8_t *sc, uint8_t *m)
{
  if (j < 4)
    {
      *sc = scales[j] & 63;
      *m = scales[j + 4] & 63;
    }
  else
    {
      *sc = (uint8_t) ((scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4));
      *m = (uint8_t) ((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
    }
}

/* All eight 6-bit scales (out[0..7]) and mins (out[8..15]) of a Q4_K / Q5_K
 * block at once, with word-wide masks instead of eight lm_k4_scale_min calls. */
static inline void
lm_k4_unpack_scales (const uint8_t packed[LM_K_SCALE_SIZE], uint8_t out[16])
{
  uint32_t s[3], u[4];
  __builtin_memcpy (s, packed, sizeof s);
  u[0] = s[0] & 0x3f3f3f3fu;                                               /* sc 0..3 */
  u[1] = (s[2] & 0x0f0f0f0fu) | (((s[0] >> 6) & 0x03030303u) << 4);        /* sc 4..7 */
  u[2] = s[1] & 0x3f3f3f3fu;                                               /* m 0..3 */
  u[3] = ((s[2] >> 4) & 0x0f0f0f0fu) | (((s[1] >> 6) & 0x03030303u) << 4); /* m 4..7 */
  __builtin_memcpy (out, u, sizeof u);
}

/* The sixteen signed 6-bit scales (sc - 32) of a Q3_K block: low nibbles of
 * bytes 0..7 (scales 0..7) and their high nibbles (8..15), each with a 2-bit
 * pair of bytes 8..11 above it (pair s / 4 of byte 8 + s % 4); word-wide. */
static inline void
lm_q3_K_unpack_scales (const uint8_t packed[LM_K_SCALE_SIZE], int8_t out[16])
{
  uint32_t a[3], u[4];
  uint8_t v[16];
  __builtin_memcpy (a, packed, sizeof a);
  u[0] = (a[0] & 0x0f0f0f0fu) | ((a[2] & 0x03030303u) << 4);
  u[1] = (a[1] & 0x0f0f0f0fu) | (((a[2] >> 2) & 0x03030303u) << 4);
  u[2] = ((a[0] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 4) & 0x03030303u) << 4);
  u[3] = ((a[1] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 6) & 0x03030303u) << 4);
  __builtin_memcpy (v, u, sizeof v);
  for (int s = 0; s < 16; s++)
    out[s] = (int8_t) (v[s] - 32);
}

/* The signed quant (-4..3) of a Q3_K block whose 2-bit field is at bit
 * @shift of qs[@byte] (byte = 32h + 16p + l, shift = 2j): its high bit is
 * bit 4h + j of hmask[16p + l], and a clear bit means minus 4. */
static inline int
lm_q3_K_quant (const uint8_t *qs, const uint8_t *hmask, int byte, int shift)
{
  int high = (hmask[byte % 32] >> (4 * (byte / 32) + shift / 2)) & 1;
  return ((qs[byte] >> shift) & 3) - (high ? 0 : 4);
}

/* Round to nearest, ties to even, for |x| < 2^22 (the rounding of ggml's
 * nearest_int and of _mm256_round_ps in the default mode). */
static inline int
lm_round_even (float x)
{
  /* adding 1.5 * 2^23 leaves the rounded integer in the low mantissa bits */
  float shifted = x + 12582912.0f;
  int32_t bits;
  __builtin_memcpy (&bits, &shifted, sizeof bits);
  return (bits & 0x007fffff) - 0x00400000;
}
