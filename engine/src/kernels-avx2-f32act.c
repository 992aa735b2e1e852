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

/* A 32-value block: x[j] = (q[j] - offset) * d, or q[j] * d + m when
 * @with_min. */
TARGET static inline __m256
q32_block_dot (__m256 acc, __m256i q, float offset, __m256 d, __m256 m, bool with_min,
               const float *x)
{
  for (int k = 0; k < 4; k++)
    {
      __m256 v = u8x8_to_ps (eight (q, k));
      __m256 w = with_min ? _mm256_add_ps (_mm256_mul_ps (v, d), m)
                          : _mm256_mul_ps (_mm256_sub_ps (v, _mm256_set1_ps (offset)), d);
      acc = _mm256_fmadd_ps (w, _mm256_loadu_ps (x + 8 * k), acc);
    }
  return acc;
}

TARGET static float
dot_q4_0_f32 (const LmBlockQ4_0 *w, const float *x, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    acc = q32_block_dot (acc, q32_quants (w[b].qs, NULL), 8.0f, _mm256_set1_ps (fp16 (w[b].d)),
                         _mm256_setzero_ps (), false, x + 32 * b);
  return hsum256_ps (acc);
}

TARGET static float
dot_q5_0_f32 (const LmBlockQ5_0 *w, const float *x, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    acc = q32_block_dot (acc, q32_quants (w[b].qs, w[b].qh), 16.0f,
                         _mm256_set1_ps (fp16 (w[b].d)), _mm256_setzero_ps (), false, x + 32 * b);
  return hsum256_ps (acc);
}

TARGET static float
dot_q4_1_f32 (const LmBlockQ4_1 *w, const float *x, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    acc = q32_block_dot (acc, q32_quants (w[b].qs, NULL), 0.0f, _mm256_set1_ps (fp16 (w[b].d)),
                         _mm256_set1_ps (fp16 (w[b].m)), true, x + 32 * b);
  return hsum256_ps (acc);
}

TARGET static float
dot_q5_1_f32 (const LmBlockQ5_1 *w, const float *x, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    acc = q32_block_dot (acc, q32_quants (w[b].qs, w[b].qh), 0.0f,
                         _mm256_set1_ps (fp16 (w[b].d)), _mm256_set1_ps (fp16 (w[b].m)), true,
                         x + 32 * b);
  return hsum256_ps (acc);
}

TARGET static float
dot_q8_0_f32 (const LmBlockQ8_0 *w, const float *x, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m256 d = _mm256_set1_ps (fp16 (w[b].d));
      for (int k = 0; k < 4; k++)
        {
          __m128i q = _mm_loadl_epi64 ((const __m128i *) (w[b].qs + 8 * k));
          __m256 v = _mm256_mul_ps (_mm256_cvtepi32_ps (_mm256_cvtepi8_epi32 (q)), d);
          acc = _mm256_fmadd_ps (v, _mm256_loadu_ps (x + 32 * b + 8 * k), acc);
        }
    }
  return hsum256_ps (acc);
}

/* 8 values with quants in @q (the low 8 bytes) as d * sc * q - dmin * m. */
TARGET static inline __m256
k4_dot8 (__m256 acc, __m128i q, float d_sc, float dmin_m, const float *x)
{
  __m256 w = _mm256_sub_ps (_mm256_mul_ps (_mm256_set1_ps (d_sc), u8x8_to_ps (q)),
                            _mm256_set1_ps (dmin_m));
  return _mm256_fmadd_ps (w, _mm256_loadu_ps (x), acc);
}

TARGET static float
dot_q4_K_f32 (const LmBlockQ4_K *w, const float *x, int64_t nb)
{
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      uint8_t sm[16];
      float d = fp16 (w[b].d), dmin = fp16 (w[b].dmin);
      lm_k4_unpack_scales (w[b].scales, sm);
      for (int g = 0; g < 4; g++)   /* 32 bytes: sub-blocks 2g (low) and 2g+1 (high) */
        {
          __m256i raw = _mm256_loadu_si256 ((const __m256i *) (w[b].qs + 32 * g));
          __m256i lo = _mm256_and_si256 (raw, _mm256_set1_epi8 (0x0F));
          __m256i hi = _mm256_and_si256 (_mm256_srli_epi16 (raw, 4), _mm256_set1_epi8 (0x0F));
          const float *xg = x + 256 * b + 64 * g;
          for (int k = 0; k < 4; k++)
            {
              acc = k4_dot8 (acc, eight (lo, k), d * sm[2 * g], dmin * sm[8 + 2 * g], xg + 8 * k);
              acc = k4_dot8 (acc, eight (hi, k), d * sm[2 * g + 1], dmin * sm[9 + 2 * g],
                             xg + 32 + 8 * k);
            }
        }
    }
  return hsum256_ps (acc);
}

TARGET static float
dot_q6_K_f32 (const LmBlockQ6_K *w, const float *x, int64_t nb)
{
  const __m256i low4 = _mm256_set1_epi8 (0x0F), bits45 = _mm256_set1_epi8 (0x30);
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      float d = fp16 (w[b].d);
      for (int half = 0; half < 2; half++)
        {
          const uint8_t *ql = w[b].ql + 64 * half, *qh = w[b].qh + 32 * half;
          const int8_t *sc = w[b].scales + 8 * half;
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
          const float *xh = x + 256 * b + 128 * half;
          for (int r = 0; r < 4; r++)
            for (int k = 0; k < 4; k++)
              {
                /* values 32r + 8k ..: sub-block 2r + k / 2 of the half */
                __m256 v = _mm256_sub_ps (u8x8_to_ps (eight (run[r], k)), _mm256_set1_ps (32.0f));
                __m256 wv = _mm256_mul_ps (_mm256_set1_ps (d * sc[2 * r + k / 2]), v);
                acc = _mm256_fmadd_ps (wv, _mm256_loadu_ps (xh + 32 * r + 8 * k), acc);
              }
        }
    }
  return hsum256_ps (acc);
}

LM_DEFINE_ROWS (TARGET, rows_q4_0_f32, dot_q4_0_f32, LmBlockQ4_0, float, LM_QK32)
LM_DEFINE_ROWS (TARGET, rows_q5_0_f32, dot_q5_0_f32, LmBlockQ5_0, float, LM_QK32)
LM_DEFINE_ROWS (TARGET, rows_q4_1_f32, dot_q4_1_f32, LmBlockQ4_1, float, LM_QK32)
LM_DEFINE_ROWS (TARGET, rows_q5_1_f32, dot_q5_1_f32, LmBlockQ5_1, float, LM_QK32)
LM_DEFINE_ROWS (TARGET, rows_q8_0_f32, dot_q8_0_f32, LmBlockQ8_0, float, LM_QK8_0)
LM_DEFINE_ROWS (TARGET, rows_q4_K_f32, dot_q4_K_f32, LmBlockQ4_K, float, LM_QK_K)
LM_DEFINE_ROWS (TARGET, rows_q6_K_f32, dot_q6_K_f32, LmBlockQ6_K, float, LM_QK_K)

void
lm_kernels_fill_avx2_f32act (LmKernels *k)
{
  k->f32act[LM_KT_Q4_0] = rows_q4_0_f32;
  k->f32act[LM_KT_Q5_0] = rows_q5_0_f32;
  k->f32act[LM_KT_Q4_1] = rows_q4_1_f32;
  k->f32act[LM_KT_Q5_1] = rows_q5_1_f32;
  k->f32act[LM_KT_Q8_0] = rows_q8_0_f32;
  k->f32act[LM_KT_Q4_K] = rows_q4_K_f32;
  k->f32act[LM_KT_Q6_K] = rows_q6_K_f32;
}
