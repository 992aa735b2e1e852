/* kernels-avx2-k23.c: AVX2 kernels of Q2_K and Q3_K against Q8_K activations.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The 2-bit fields 2j of the 32 quant bytes of half h are the values
 * 128h + 32j .. 128h + 32j + 31 in order: two sub-blocks of 16, one per
 * 128-bit half of a register, multiplied with maddubs (unsigned quants x
 * signed activations) and then with the two sub-block scales by madd, so a
 * super-block's integer sum is exact. Q3_K's quants are taken as q + 4 (0..7)
 * and 4 * sum_s sc_s bsums_s taken back out; Q2_K's mins enter through the
 * bsums, as ggml's x86 backend does. */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx2,fma,f16c")))

#include "kernels-x86.h"

/* The scales of sub-blocks 2k and 2k + 1, each over one 128-bit half, from
 * the 16 int16 scales @sc16 (dword k holds that pair). */
TARGET static inline __m256i
scale_pair (__m256i sc16, int k)
{
  const __m256i spread = _mm256_setr_epi8 (0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1,
                                           2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3);
  return _mm256_shuffle_epi8 (_mm256_permutevar8x32_epi32 (sc16, _mm256_set1_epi32 (k)), spread);
}

/* The products of the 32 unsigned quants @q with the activations at @a,
 * each 16 scaled by its sub-block's scale (sub-blocks 2k, 2k + 1): 8 int32. */
TARGET static inline __m256i
scaled_products (__m256i q, const int8_t *a, __m256i sc16, int k)
{
  __m256i p = _mm256_maddubs_epi16 (q, _mm256_loadu_si256 ((const __m256i *) a));
  return _mm256_madd_epi16 (p, scale_pair (sc16, k));
}

TARGET static float
dot_q2_K (const LmBlockQ2_K *w, const LmBlockQ8_K *a, int64_t nb)
{
  const __m256i three = _mm256_set1_epi8 (3);
  __m256 acc = _mm256_setzero_ps (), acc_min = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m128i packed = _mm_loadu_si128 ((const __m128i *) w[b].scales);
      __m256i sc16 = _mm256_cvtepu8_epi16 (_mm_and_si128 (packed, _mm_set1_epi8 (0x0F)));
      __m256i sumi = _mm256_setzero_si256 ();
      #pragma GCC unroll 2
      for (int h = 0; h < 2; h++)
        {
          __m256i bits = _mm256_loadu_si256 ((const __m256i *) (w[b].qs + 32 * h));
          #pragma GCC unroll 4
          for (int j = 0; j < 4; j++)
            {
              int s = 8 * h + 2 * j;
              __m256i q = _mm256_and_si256 (_mm256_srli_epi16 (bits, 2 * j), three);
              sumi = _mm256_add_epi32 (sumi, scaled_products (q, a[b].qs + 16 * s, sc16, s / 2));
            }
        }
      __m256i mins = _mm256_cvtepu8_epi16 (_mm_and_si128 (_mm_srli_epi16 (packed, 4),
                                                          _mm_set1_epi8 (0x0F)));
      __m256i summs = _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) a[b].bsums), mins);
      acc = _mm256_fmadd_ps (_mm256_set1_ps (a[b].d * fp16 (w[b].d)), _mm256_cvtepi32_ps (sumi), acc);
      acc_min = _mm256_fmadd_ps (_mm256_set1_ps (a[b].d * fp16 (w[b].dmin)),
                                 _mm256_cvtepi32_ps (summs), acc_min);
    }
  return hsum256_ps (acc) - hsum256_ps (acc_min);
}

/* The 16 signed scales of a Q3_K block as int16, as lm_q3_K_unpack_scales
 * (in registers: no byte stores read back as a vector). */
TARGET static inline __m256i
q3_scales16 (const uint8_t packed[LM_K_SCALE_SIZE])
{
  uint32_t a[3];
  memcpy (a, packed, sizeof a);
  __m128i u = _mm_setr_epi32 ((int) ((a[0] & 0x0f0f0f0fu) | ((a[2] & 0x03030303u) << 4)),
                              (int) ((a[1] & 0x0f0f0f0fu) | (((a[2] >> 2) & 0x03030303u) << 4)),
                              (int) (((a[0] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 4) & 0x03030303u) << 4)),
                              (int) (((a[1] >> 4) & 0x0f0f0f0fu) | (((a[2] >> 6) & 0x03030303u) << 4)));
  return _mm256_cvtepi8_epi16 (_mm_sub_epi8 (u, _mm_set1_epi8 (32)));
}

TARGET static float
dot_q3_K (const LmBlockQ3_K *w, const LmBlockQ8_K *a, int64_t nb)
{
  const __m256i three = _mm256_set1_epi8 (3), four = _mm256_set1_epi8 (4);
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m256i sc16 = q3_scales16 (w[b].scales);
      __m256i hmask = _mm256_loadu_si256 ((const __m256i *) w[b].hmask);
      __m256i sumi = _mm256_setzero_si256 ();
      #pragma GCC unroll 2
      for (int h = 0; h < 2; h++)
        {
          __m256i bits = _mm256_loadu_si256 ((const __m256i *) (w[b].qs + 32 * h));
          #pragma GCC unroll 4
          for (int j = 0; j < 4; j++)
            {
              int s = 8 * h + 2 * j;
              __m256i bit = _mm256_set1_epi8 ((char) (1 << (4 * h + j)));
              __m256i high = _mm256_cmpeq_epi8 (_mm256_and_si256 (hmask, bit), bit);
              __m256i q = _mm256_or_si256 (_mm256_and_si256 (_mm256_srli_epi16 (bits, 2 * j), three),
                                           _mm256_and_si256 (high, four));
              sumi = _mm256_add_epi32 (sumi, scaled_products (q, a[b].qs + 16 * s, sc16, s / 2));
            }
        }
      /* the quants were taken as q + 4: remove 4 * sum_s sc_s * bsums_s */
      __m256i offset = _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) a[b].bsums), sc16);
      sumi = _mm256_sub_epi32 (sumi, _mm256_slli_epi32 (offset, 2));
      acc = _mm256_fmadd_ps (_mm256_set1_ps (fp16 (w[b].d) * a[b].d), _mm256_cvtepi32_ps (sumi), acc);
    }
  return hsum256_ps (acc);
}

LM_DEFINE_ROWS (TARGET, rows_q2_K, dot_q2_K, LmBlockQ2_K, LmBlockQ8_K, LM_QK_K)
LM_DEFINE_ROWS (TARGET, rows_q3_K, dot_q3_K, LmBlockQ3_K, LmBlockQ8_K, LM_QK_K)

void
lm_kernels_fill_avx2_k23 (LmKernels *k)
{
  k->native[LM_KT_Q2_K] = rows_q2_K;
  k->native[LM_KT_Q3_K] = rows_q3_K;
}
