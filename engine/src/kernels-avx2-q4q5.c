/* kernels-avx2-q4q5.c: AVX2 kernels of the 32-value formats Q4_0, Q5_0 (against
 * Q8_0 activations) and Q4_1, Q5_1 (against Q8_1), rows and prefill tiles
 * (kernels-q32-x86.h), and the Q8_1 activation blocks.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx2,fma,f16c")))

#include "kernels-x86.h"

/* 16 in byte j where bit j of the word is set: the word's bytes spread to
 * 8 bytes each, each byte tested for its own bit. */
TARGET static inline __m256i
q32_add_fifth_bits (__m256i q, const uint8_t *qh)
{
  const __m256i spread = _mm256_set_epi64x (0x0303030303030303, 0x0202020202020202,
                                            0x0101010101010101, 0);
  const __m256i bit = _mm256_set1_epi64x ((long long) 0x8040201008040201ull);
  /* a broadcast load of the word: no trip through a general register */
  __m256i word = _mm256_broadcastd_epi32 (_mm_loadu_si32 (qh));
  __m256i bytes = _mm256_shuffle_epi8 (word, spread);
  __m256i set = _mm256_cmpeq_epi8 (_mm256_and_si256 (bytes, bit), bit);
  return _mm256_or_si256 (q, _mm256_and_si256 (set, _mm256_set1_epi8 (16)));
}

/* maddubs, then pairs of int16 to int32 (no saturation: q <= 31). */
TARGET static inline __m256i
q32_products (__m256i q, __m256i a)
{
  return _mm256_madd_epi16 (_mm256_maddubs_epi16 (q, a), _mm256_set1_epi16 (1));
}

TARGET static inline __m256i
q32_bias (__m256i offset, __m256i a)
{
  return q32_products (offset, a);
}

TARGET static inline __m256i
q32_lanes (__m256i q, __m256i a, __m256i bias)
{
  return _mm256_sub_epi32 (q32_products (q, a), bias);
}

#include "kernels-q32-x86.h"

/* ---- the Q8_1 activation blocks (bit-identical to the scalar reference) ---- */

TARGET static inline float
block_abs_max (const __m256 v[4])
{
  const __m256 sign = _mm256_set1_ps (-0.0f);
  __m256 m = _mm256_max_ps (_mm256_max_ps (_mm256_andnot_ps (sign, v[0]), _mm256_andnot_ps (sign, v[1])),
                            _mm256_max_ps (_mm256_andnot_ps (sign, v[2]), _mm256_andnot_ps (sign, v[3])));
  __m128 h = _mm_max_ps (_mm256_castps256_ps128 (m), _mm256_extractf128_ps (m, 1));
  h = _mm_max_ps (h, _mm_movehl_ps (h, h));
  h = _mm_max_ss (h, _mm_movehdup_ps (h));
  return _mm_cvtss_f32 (h);
}

TARGET static void
quantize_q8_1 (const float *x, void *out, int64_t n)
{
  LmBlockQ8_1 *y = out;
  for (int64_t b = 0; b < n / LM_QK32; b++)
    {
      __m256 v[4];
      __m256i q[4];
      for (int i = 0; i < 4; i++)
        v[i] = _mm256_loadu_ps (x + 32 * b + 8 * i);
      float amax = block_abs_max (v);
      float d = amax / 127.0f;
      __m256 id = _mm256_set1_ps (amax != 0.0f ? 127.0f / amax : 0.0f);
      for (int i = 0; i < 4; i++)
        q[i] = _mm256_cvtps_epi32 (_mm256_round_ps (_mm256_mul_ps (v[i], id),
                                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      __m256i sum8 = _mm256_add_epi32 (_mm256_add_epi32 (q[0], q[1]), _mm256_add_epi32 (q[2], q[3]));
      __m128i sum4 = _mm_add_epi32 (_mm256_castsi256_si128 (sum8), _mm256_extracti128_si256 (sum8, 1));
      sum4 = _mm_hadd_epi32 (sum4, sum4);
      sum4 = _mm_hadd_epi32 (sum4, sum4);
      y[b].d = lm_fp32_to_fp16 (d);
      y[b].s = lm_fp32_to_fp16 (d * (float) _mm_cvtsi128_si32 (sum4));
      __m256i p8 = _mm256_packs_epi16 (_mm256_packs_epi32 (q[0], q[1]), _mm256_packs_epi32 (q[2], q[3]));
      p8 = _mm256_permutevar8x32_epi32 (p8, _mm256_setr_epi32 (0, 4, 1, 5, 2, 6, 3, 7));
      _mm256_storeu_si256 ((__m256i *) y[b].qs, p8);
    }
}

void
lm_kernels_fill_avx2_q4q5 (LmKernels *k)
{
  q32_fill (k);
  k->quantize_q8_1 = quantize_q8_1;
}
