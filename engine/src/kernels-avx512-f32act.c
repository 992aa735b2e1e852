/* kernels-avx512-f32act.c: AVX-512 products of Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0, Q4_K and Q6_K weights with f32 activations (LM_ACT_F32, "exact activations").
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Without these the exact mode fell back to the scalar decoder (decode a
 * block, then a one-accumulator dot): on the real Qwen2.5 file, whose
 * tensors are mostly Q5_0 and Q6_K, a token took 13 times as long as with
 * 8-bit activations. Each weight is computed as its decoder computes it
 * ((q - offset) * d, q * d + m, d * sc * q), sixteen at a time, and
 * multiplied into the activations with fused multiply-adds; only the
 * summation order differs from the scalar reference. A prompt's tokens go
 * through tiles of up to eight, which decode each block once for all of
 * them (the chat's first prompt, read with exact activations, was 13 times
 * slower than with 8-bit ones: each token decoded every weight again). */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

#include "kernels-x86.h"
#include "kernels-q32-kinds.h"

#define F32_VEC __m512
#define F32_VEC_ZERO() _mm512_setzero_ps ()
#define F32_VEC_SUM(v) _mm512_reduce_add_ps (v)

/* 16 unsigned bytes as 16 floats. */
TARGET static inline __m512
u8x16_to_ps (__m128i v)
{
  return _mm512_cvtepi32_ps (_mm512_cvtepu8_epi32 (v));
}

/* The 32 quants of a 32-value block, elements 0..15 in @lo and 16..31 in
 * @hi (low nibbles, then high ones), plus 16 where bit j of @qh is set. */
TARGET static inline void
q32_quants (const uint8_t *qs, const uint8_t *qh, __m128i *lo, __m128i *hi)
{
  const __m128i low4 = _mm_set1_epi8 (0x0F);
  __m128i raw = _mm_loadu_si128 ((const __m128i *) qs);

  *lo = _mm_and_si128 (raw, low4);
  *hi = _mm_and_si128 (_mm_srli_epi16 (raw, 4), low4);
  if (qh != NULL)
    {
      uint32_t bits;
      memcpy (&bits, qh, sizeof bits);
      *lo = _mm_mask_add_epi8 (*lo, (__mmask16) (bits & 0xFFFF), *lo, _mm_set1_epi8 (16));
      *hi = _mm_mask_add_epi8 (*hi, (__mmask16) (bits >> 16), *hi, _mm_set1_epi8 (16));
    }
}

/* Q4_0 / Q5_0: x[j] = (q[j] - offset) * d. */
TARGET static inline __attribute__ ((always_inline)) __m512
offset_weights (__m128i q, float offset, __m512 d)
{
  return _mm512_mul_ps (_mm512_sub_ps (u8x16_to_ps (q), _mm512_set1_ps (offset)), d);
}

/* Q4_1 / Q5_1: x[j] = q[j] * d + m. */
TARGET static inline __attribute__ ((always_inline)) __m512
min_weights (__m128i q, __m512 d, __m512 m)
{
  return _mm512_add_ps (_mm512_mul_ps (u8x16_to_ps (q), d), m);
}

/* A 32-value block's weights as its decoder computes them: values 0..15
 * in @lo, 16..31 in @hi. */
TARGET static inline __attribute__ ((always_inline)) void
q32_weights (const uint8_t *block, const Kind k, __m512 *lo, __m512 *hi)
{
  __m128i qlo, qhi;
  uint16_t d_bits, m_bits;
  memcpy (&d_bits, block, sizeof d_bits);
  __m512 d = _mm512_set1_ps (fp16 (d_bits));

  q32_quants (block + qs_offset (k), kind_has_qh (k) ? block + qh_offset (k) : NULL, &qlo, &qhi);
  if (kind_has_min (k))
    {
      memcpy (&m_bits, block + 2, sizeof m_bits);
      __m512 m = _mm512_set1_ps (fp16 (m_bits));
      *lo = min_weights (qlo, d, m);
      *hi = min_weights (qhi, d, m);
    }
  else
    {
      float offset = kind_has_qh (k) ? 16.0f : 8.0f;
      *lo = offset_weights (qlo, offset, d);
      *hi = offset_weights (qhi, offset, d);
    }
}

/* Each format's block function adds block @b of a row times @T tokens'
 * activations (act_stride bytes apart) into @acc, one register per token;
 * f32_tile (kernels-f32act-x86.h) runs them. */

TARGET static inline __attribute__ ((always_inline)) void
q32_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, __m512 *acc,
           const int T, const Kind k)
{
  __m512 lo, hi;
  q32_weights (row + (size_t) b * weight_block_bytes (k), k, &lo, &hi);
  #pragma GCC unroll 8
  for (int t = 0; t < T; t++)
    {
      const float *x = (const float *) ((const uint8_t *) act + t * act_stride) + 32 * b;
      acc[t] = _mm512_fmadd_ps (lo, _mm512_loadu_ps (x), acc[t]);
      acc[t] = _mm512_fmadd_ps (hi, _mm512_loadu_ps (x + 16), acc[t]);
    }
}

/* Q6_K: the four runs of 32 quants (q + 32) of one 128-value half, in
 * value order: run k holds values 32k .. 32k+31. */
TARGET static inline void
q6_half_runs (const uint8_t *ql, const uint8_t *qh, __m256i run[4])
{
  const __m256i low4 = _mm256_set1_epi8 (0x0F), bits45 = _mm256_set1_epi8 (0x30);
  __m256i a = _mm256_loadu_si256 ((const __m256i *) ql);
  __m256i b = _mm256_loadu_si256 ((const __m256i *) (ql + 32));
  __m256i h = _mm256_loadu_si256 ((const __m256i *) qh);

  run[0] = _mm256_or_si256 (_mm256_and_si256 (a, low4),
                            _mm256_and_si256 (_mm256_slli_epi16 (h, 4), bits45));
  run[1] = _mm256_or_si256 (_mm256_and_si256 (b, low4),
                            _mm256_and_si256 (_mm256_slli_epi16 (h, 2), bits45));
  run[2] = _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (a, 4), low4),
                            _mm256_and_si256 (h, bits45));
  run[3] = _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (b, 4), low4),
                            _mm256_and_si256 (_mm256_srli_epi16 (h, 2), bits45));
}

/* 16 values (q + 32 in @q) with scale d * sc, as the decoder: d * sc * (q - 32). */
TARGET static inline __attribute__ ((always_inline)) __m512
q6_weights16 (__m128i q, float d_sc)
{
  __m512 v = _mm512_sub_ps (u8x16_to_ps (q), _mm512_set1_ps (32.0f));
  return _mm512_mul_ps (_mm512_set1_ps (d_sc), v);
}

/* @w times 16 values of each of @T tokens' activations, from value @at. */
TARGET static inline __attribute__ ((always_inline)) void
tokens_fmadd (__m512 *acc, __m512 w, const void *act, size_t act_stride, int64_t at, const int T)
{
  #pragma GCC unroll 8
  for (int t = 0; t < T; t++)
    {
      const float *x = (const float *) ((const uint8_t *) act + t * act_stride) + at;
      acc[t] = _mm512_fmadd_ps (w, _mm512_loadu_ps (x), acc[t]);
    }
}

TARGET static inline __attribute__ ((always_inline)) void
q6_K_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, __m512 *acc,
            const int T)
{
  const LmBlockQ6_K *w = (const LmBlockQ6_K *) row + b;
  float d = fp16 (w->d);

  for (int half = 0; half < 2; half++)
    {
      __m256i run[4];
      const int8_t *sc = w->scales + 8 * half;
      int64_t at = 256 * b + 128 * half;
      q6_half_runs (w->ql + 64 * half, w->qh + 32 * half, run);
      for (int k = 0; k < 4; k++)
        {
          tokens_fmadd (acc, q6_weights16 (_mm256_castsi256_si128 (run[k]), d * sc[2 * k]),
                        act, act_stride, at + 32 * k, T);
          tokens_fmadd (acc, q6_weights16 (_mm256_extracti128_si256 (run[k], 1), d * sc[2 * k + 1]),
                        act, act_stride, at + 32 * k + 16, T);
        }
    }
}

/* 16 int8 -> 16 floats */
TARGET static inline __m512
i8x16_to_ps (__m128i v)
{
  return _mm512_cvtepi32_ps (_mm512_cvtepi8_epi32 (v));
}

/* Q8_0: per block, the 32 products first, then scaled by d. */
TARGET static inline __attribute__ ((always_inline)) void
q8_0_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, __m512 *acc,
            const int T)
{
  const LmBlockQ8_0 *w = (const LmBlockQ8_0 *) row + b;
  __m512 w0 = i8x16_to_ps (_mm_loadu_si128 ((const __m128i *) w->qs));
  __m512 w1 = i8x16_to_ps (_mm_loadu_si128 ((const __m128i *) (w->qs + 16)));
  __m512 d = _mm512_set1_ps (fp16 (w->d));

  #pragma GCC unroll 8
  for (int t = 0; t < T; t++)
    {
      const float *x = (const float *) ((const uint8_t *) act + t * act_stride) + 32 * b;
      __m512 p = _mm512_mul_ps (w0, _mm512_loadu_ps (x));
      p = _mm512_fmadd_ps (w1, _mm512_loadu_ps (x + 16), p);
      acc[t] = _mm512_fmadd_ps (d, p, acc[t]);
    }
}

/* Q4_K: x = d * sc * q - dmin * m, evaluated as in the decoder, 16 values
 * at a time; 32 bytes of qs hold sub-blocks 2g (low nibbles) and 2g + 1
 * (high nibbles). */
TARGET static inline __attribute__ ((always_inline)) void
q4_K_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, __m512 *acc,
            const int T)
{
  const LmBlockQ4_K *w = (const LmBlockQ4_K *) row + b;
  const __m128i low4 = _mm_set1_epi8 (0x0F);
  uint8_t sm[16];
  float d = fp16 (w->d), dmin = fp16 (w->dmin);

  lm_k4_unpack_scales (w->scales, sm);
  for (int g = 0; g < 4; g++)
    for (int part = 0; part < 4; part++)
      {
        int j = 2 * g + part / 2;   /* sub-block of these 16 values */
        __m128i raw = _mm_loadu_si128 ((const __m128i *) (w->qs + 32 * g + 16 * (part & 1)));
        __m128i bytes = _mm_and_si128 (part < 2 ? raw : _mm_srli_epi16 (raw, 4), low4);
        __m512 wv = _mm512_sub_ps (_mm512_mul_ps (_mm512_set1_ps (d * sm[j]), u8x16_to_ps (bytes)),
                                   _mm512_set1_ps (dmin * sm[8 + j]));
        tokens_fmadd (acc, wv, act, act_stride, 256 * b + 64 * g + 16 * part, T);
      }
}

#include "kernels-f32act-x86.h"

void
lm_kernels_fill_avx512_f32act (LmKernels *k)
{
  f32act_fill (k);
}
