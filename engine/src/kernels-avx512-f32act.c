/* kernels-avx512-f32act.c: AVX-512 products of Q4_0, Q4_1, Q5_0, Q5_1 and
 * Q6_K weights with f32 activations (LM_ACT_F32, "exact activations").
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Without these the exact mode fell back to the scalar decoder (decode a
 * block, then a one-accumulator dot): on the real Qwen2.5 file, whose
 * tensors are mostly Q5_0 and Q6_K, a token took 13 times as long as with
 * 8-bit activations. Each weight is computed as its decoder computes it
 * ((q - offset) * d, q * d + m, d * sc * q), sixteen at a time, and
 * multiplied into the activations with fused multiply-adds; only the
 * summation order differs from the scalar reference. */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))

#include "kernels-x86.h"

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
TARGET static inline __m512
q32_offset_dot (__m512 acc, __m128i q, float offset, __m512 d, const float *x)
{
  __m512 w = _mm512_mul_ps (_mm512_sub_ps (u8x16_to_ps (q), _mm512_set1_ps (offset)), d);
  return _mm512_fmadd_ps (w, _mm512_loadu_ps (x), acc);
}

/* Q4_1 / Q5_1: x[j] = q[j] * d + m. */
TARGET static inline __m512
q32_min_dot (__m512 acc, __m128i q, __m512 d, __m512 m, const float *x)
{
  __m512 w = _mm512_add_ps (_mm512_mul_ps (u8x16_to_ps (q), d), m);
  return _mm512_fmadd_ps (w, _mm512_loadu_ps (x), acc);
}

TARGET static float
dot_q4_0_f32 (const LmBlockQ4_0 *w, const float *x, int64_t nb)
{
  __m512 acc = _mm512_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m128i lo, hi;
      __m512 d = _mm512_set1_ps (fp16 (w[b].d));
      q32_quants (w[b].qs, NULL, &lo, &hi);
      acc = q32_offset_dot (acc, lo, 8.0f, d, x + 32 * b);
      acc = q32_offset_dot (acc, hi, 8.0f, d, x + 32 * b + 16);
    }
  return _mm512_reduce_add_ps (acc);
}

TARGET static float
dot_q5_0_f32 (const LmBlockQ5_0 *w, const float *x, int64_t nb)
{
  __m512 acc = _mm512_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m128i lo, hi;
      __m512 d = _mm512_set1_ps (fp16 (w[b].d));
      q32_quants (w[b].qs, w[b].qh, &lo, &hi);
      acc = q32_offset_dot (acc, lo, 16.0f, d, x + 32 * b);
      acc = q32_offset_dot (acc, hi, 16.0f, d, x + 32 * b + 16);
    }
  return _mm512_reduce_add_ps (acc);
}

TARGET static float
dot_q4_1_f32 (const LmBlockQ4_1 *w, const float *x, int64_t nb)
{
  __m512 acc = _mm512_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m128i lo, hi;
      __m512 d = _mm512_set1_ps (fp16 (w[b].d)), m = _mm512_set1_ps (fp16 (w[b].m));
      q32_quants (w[b].qs, NULL, &lo, &hi);
      acc = q32_min_dot (acc, lo, d, m, x + 32 * b);
      acc = q32_min_dot (acc, hi, d, m, x + 32 * b + 16);
    }
  return _mm512_reduce_add_ps (acc);
}

TARGET static float
dot_q5_1_f32 (const LmBlockQ5_1 *w, const float *x, int64_t nb)
{
  __m512 acc = _mm512_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m128i lo, hi;
      __m512 d = _mm512_set1_ps (fp16 (w[b].d)), m = _mm512_set1_ps (fp16 (w[b].m));
      q32_quants (w[b].qs, w[b].qh, &lo, &hi);
      acc = q32_min_dot (acc, lo, d, m, x + 32 * b);
      acc = q32_min_dot (acc, hi, d, m, x + 32 * b + 16);
    }
  return _mm512_reduce_add_ps (acc);
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
TARGET static inline __m512
q6_dot16 (__m512 acc, __m128i q, float d_sc, const float *x)
{
  __m512 v = _mm512_sub_ps (u8x16_to_ps (q), _mm512_set1_ps (32.0f));
  return _mm512_fmadd_ps (_mm512_mul_ps (_mm512_set1_ps (d_sc), v), _mm512_loadu_ps (x), acc);
}

TARGET static float
dot_q6_K_f32 (const LmBlockQ6_K *w, const float *x, int64_t nb)
{
  __m512 acc = _mm512_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      float d = fp16 (w[b].d);
      for (int half = 0; half < 2; half++)
        {
          __m256i run[4];
          const int8_t *sc = w[b].scales + 8 * half;
          const float *xh = x + 256 * b + 128 * half;
          q6_half_runs (w[b].ql + 64 * half, w[b].qh + 32 * half, run);
          for (int k = 0; k < 4; k++)
            {
              acc = q6_dot16 (acc, _mm256_castsi256_si128 (run[k]), d * sc[2 * k], xh + 32 * k);
              acc = q6_dot16 (acc, _mm256_extracti128_si256 (run[k], 1), d * sc[2 * k + 1],
                              xh + 32 * k + 16);
            }
        }
    }
  return _mm512_reduce_add_ps (acc);
}

LM_DEFINE_ROWS (TARGET, rows_q4_0_f32, dot_q4_0_f32, LmBlockQ4_0, float, LM_QK32)
LM_DEFINE_ROWS (TARGET, rows_q5_0_f32, dot_q5_0_f32, LmBlockQ5_0, float, LM_QK32)
LM_DEFINE_ROWS (TARGET, rows_q4_1_f32, dot_q4_1_f32, LmBlockQ4_1, float, LM_QK32)
LM_DEFINE_ROWS (TARGET, rows_q5_1_f32, dot_q5_1_f32, LmBlockQ5_1, float, LM_QK32)
LM_DEFINE_ROWS (TARGET, rows_q6_K_f32, dot_q6_K_f32, LmBlockQ6_K, float, LM_QK_K)

void
lm_kernels_fill_avx512_f32act (LmKernels *k)
{
  k->f32act[LM_KT_Q4_0] = rows_q4_0_f32;
  k->f32act[LM_KT_Q5_0] = rows_q5_0_f32;
  k->f32act[LM_KT_Q4_1] = rows_q4_1_f32;
  k->f32act[LM_KT_Q5_1] = rows_q5_1_f32;
  k->f32act[LM_KT_Q6_K] = rows_q6_K_f32;
}
