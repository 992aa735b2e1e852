/* kernels-avx2-f32act.c: AVX2 products of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q4_K and Q6_K weights with f32 activations (LM_ACT_F32).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The AVX2 counterpart of kernels-avx512-f32act.c (see there why): each
 * weight is computed as its decoder computes it, eight at a time, and
 * multiplied into the activations with fused multiply-adds. */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx2,fma,f16c")))

#include "kernels-x86.h"
#include "kernels-q32-kinds.h"

#define F32_VEC __m256
#define F32_VEC_ZERO() _mm256_setzero_ps ()
#define F32_VEC_SUM(v) hsum256_ps (v)

/* 8 unsigned bytes (the low 8 of @v) as 8 floats. */
TARGET static inline __m256
u8x8_to_ps (__m128i v)
{
  return _mm256_cvtepi32_ps (_mm256_cvtepu8_epi32 (v));
}

/* 32 bytes whose byte j is 16 where bit j of @bits is set. */
TARGET static inline __m256i
fifth_bits (uint32_t bits)
{
  const __m256i select = _mm256_setr_epi8 (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                           2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m256i bit = _mm256_set1_epi64x ((long long) 0x8040201008040201ULL);
  __m256i spread = _mm256_shuffle_epi8 (_mm256_set1_epi32 ((int) bits), select);
  __m256i set = _mm256_cmpeq_epi8 (_mm256_and_si256 (spread, bit), bit);
  return _mm256_and_si256 (set, _mm256_set1_epi8 (16));
}

/* The 32 quants of a 32-value block in value order (low nibbles, then high
 * ones), plus 16 where bit j of @qh is set. */
TARGET static inline __m256i
q32_quants (const uint8_t *qs, const uint8_t *qh)
{
  __m128i raw = _mm_loadu_si128 ((const __m128i *) qs);
  __m256i q = _mm256_and_si256 (_mm256_set_m128i (_mm_srli_epi16 (raw, 4), raw),
                                _mm256_set1_epi8 (0x0F));
  if (qh != NULL)
    {
      uint32_t bits;
      memcpy (&bits, qh, sizeof bits);
      q = _mm256_add_epi8 (q, fifth_bits (bits));
    }
  return q;
}

/* The 8 bytes of @q at byte offset 8 * @k (0..3) as a 128-bit value. */
TARGET static inline __m128i
eight (__m256i q, int k)
{
  __m128i half = k < 2 ? _mm256_castsi256_si128 (q) : _mm256_extracti128_si256 (q, 1);
  return (k & 1) ? _mm_srli_si128 (half, 8) : half;
}

/* @w times 8 values of each of @T tokens' activations, from value @at. */
TARGET static inline __attribute__ ((always_inline)) void
tokens_fmadd (__m256 *acc, __m256 w, const void *act, size_t act_stride, int64_t at, const int T)
{
  #pragma GCC unroll 8
  for (int t = 0; t < T; t++)
    {
      const float *x = (const float *) ((const uint8_t *) act + t * act_stride) + at;
      acc[t] = _mm256_fmadd_ps (w, _mm256_loadu_ps (x), acc[t]);
    }
}

/* Each format's block function adds block @b of a row times @T tokens'
 * activations (act_stride bytes apart) into @acc, one register per token;
 * f32_tile (kernels-f32act-x86.h) runs them. */

/* A 32-value block: x[j] = (q[j] - offset) * d, or q[j] * d + m for the
 * formats with a minimum. */
TARGET static inline __attribute__ ((always_inline)) void
q32_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, __m256 *acc,
           const int T, const Kind k)
{
  const uint8_t *block = row + (size_t) b * weight_block_bytes (k);
  uint16_t d_bits, m_bits = 0;
  memcpy (&d_bits, block, sizeof d_bits);
  if (kind_has_min (k))
    memcpy (&m_bits, block + 2, sizeof m_bits);
  __m256 d = _mm256_set1_ps (fp16 (d_bits)), m = _mm256_set1_ps (fp16 (m_bits));
  float offset = kind_has_min (k) ? 0.0f : kind_has_qh (k) ? 16.0f : 8.0f;
  __m256i q = q32_quants (block + qs_offset (k), kind_has_qh (k) ? block + qh_offset (k) : NULL);

  for (int j = 0; j < 4; j++)
    {
      __m256 v = u8x8_to_ps (eight (q, j));
      __m256 wv = kind_has_min (k) ? _mm256_add_ps (_mm256_mul_ps (v, d), m)
                                   : _mm256_mul_ps (_mm256_sub_ps (v, _mm256_set1_ps (offset)), d);
      tokens_fmadd (acc, wv, act, act_stride, 32 * b + 8 * j, T);
    }
}

TARGET static inline __attribute__ ((always_inline)) void
q8_0_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, __m256 *acc,
            const int T)
{
  const LmBlockQ8_0 *w = (const LmBlockQ8_0 *) row + b;
  __m256 d = _mm256_set1_ps (fp16 (w->d));

  for (int j = 0; j < 4; j++)
    {
      __m128i q = _mm_loadl_epi64 ((const __m128i *) (w->qs + 8 * j));
      __m256 v = _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_cvtepi8_epi32 (q)), d);
      tokens_fmadd (acc, v, act, act_stride, 32 * b + 8 * j, T);
    }
}

/* 8 values with quants in @q (the low 8 bytes) as d * sc * q - dmin * m. */
TARGET static inline __attribute__ ((always_inline)) __m256
k4_weights8 (__m128i q, float d_sc, float dmin_m)
{
  return _mm256_sub_ps (_mm256_mul_ps (_mm256_set1_ps (d_sc), u8x8_to_ps (q)),
                        _mm256_set1_ps (dmin_m));
}

TARGET static inline __attribute__ ((always_inline)) void
q4_K_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, __m256 *acc,
            const int T)
{
  const LmBlockQ4_K *w = (const LmBlockQ4_K *) row + b;
  uint8_t sm[16];
  float d = fp16 (w->d), dmin = fp16 (w->dmin);

  lm_k4_unpack_scales (w->scales, sm);
  for (int g = 0; g < 4; g++)   /* 32 bytes: sub-blocks 2g (low) and 2g+1 (high) */
    {
      __m256i raw = _mm256_loadu_si256 ((const __m256i *) (w->qs + 32 * g));
      __m256i lo = _mm256_and_si256 (raw, _mm256_set1_epi8 (0x0F));
      __m256i hi = _mm256_and_si256 (_mm256_srli_epi16 (raw, 4), _mm256_set1_epi8 (0x0F));
      int64_t at = 256 * b + 64 * g;
      for (int j = 0; j < 4; j++)
        {
          tokens_fmadd (acc, k4_weights8 (eight (lo, j), d * sm[2 * g], dmin * sm[8 + 2 * g]),
                        act, act_stride, at + 8 * j, T);
          tokens_fmadd (acc, k4_weights8 (eight (hi, j), d * sm[2 * g + 1], dmin * sm[9 + 2 * g]),
                        act, act_stride, at + 32 + 8 * j, T);
        }
    }
}

TARGET static inline __attribute__ ((always_inline)) void
q6_K_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, __m256 *acc,
            const int T)
{
  const __m256i low4 = _mm256_set1_epi8 (0x0F), bits45 = _mm256_set1_epi8 (0x30);
  const LmBlockQ6_K *w = (const LmBlockQ6_K *) row + b;
  float d = fp16 (w->d);

  for (int half = 0; half < 2; half++)
    {
      const uint8_t *ql = w->ql + 64 * half, *qh = w->qh + 32 * half;
      const int8_t *sc = w->scales + 8 * half;
      __m256i a = _mm256_loadu_si256 ((const __m256i *) ql);
      __m256i c = _mm256_loadu_si256 ((const __m256i *) (ql + 32));
      __m256i h = _mm256_loadu_si256 ((const __m256i *) qh);
      __m256i run[4] = {
        _mm256_or_si256 (_mm256_and_si256 (a, low4),
                         _mm256_and_si256 (_mm256_slli_epi16 (h, 4), bits45)),
        _mm256_or_si256 (_mm256_and_si256 (c, low4),
                         _mm256_and_si256 (_mm256_slli_epi16 (h, 2), bits45)),
        _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (a, 4), low4),
                         _mm256_and_si256 (h, bits45)),
        _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (c, 4), low4),
                         _mm256_and_si256 (_mm256_srli_epi16 (h, 2), bits45)),
      };
      int64_t at = 256 * b + 128 * half;
      for (int q = 0; q < 4; q++)
        for (int j = 0; j < 4; j++)
          {
            /* values 32q + 8j ..: sub-block 2q + j / 2 of the half */
            __m256 v = _mm256_sub_ps (u8x8_to_ps (eight (run[q], j)), _mm256_set1_ps (32.0f));
            __m256 wv = _mm256_mul_ps (_mm256_set1_ps (d * sc[2 * q + j / 2]), v);
            tokens_fmadd (acc, wv, act, act_stride, at + 32 * q + 8 * j, T);
          }
    }
}

#include "kernels-f32act-x86.h"

void
lm_kernels_fill_avx2_f32act (LmKernels *k)
{
  f32act_fill (k);
}
