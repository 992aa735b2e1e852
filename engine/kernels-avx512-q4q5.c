/* kernels-avx512-q4q5.c: AVX-512 (BW/VL) + VNNI kernels of Q4_0, Q5_0, Q4_1
 * and Q5_1 (kernels-q32-x86.h, 256-bit wide): the fifth bits added under a
 * byte mask made from qh, and each lane's sum of four products by one
 * dpbusd that starts from the negated offset products. The integers are
 * those of the AVX2 kernels, and so are the float operations.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

#include "kernels-x86.h"

TARGET static inline __m256i
q32_add_fifth_bits (__m256i q, const uint8_t *qh)
{
  uint32_t word;
  memcpy (&word, qh, sizeof word);
  return _mm256_mask_add_epi8 (q, (__mmask32) word, q, _mm256_set1_epi8 (16));
}

TARGET static inline __m256i
q32_bias (__m256i offset, __m256i a)
{
  return _mm256_sub_epi32 (_mm256_setzero_si256 (),
                           _mm256_dpbusd_epi32 (_mm256_setzero_si256 (), offset, a));
}

TARGET static inline __m256i
q32_lanes (__m256i q, __m256i a, __m256i bias)
{
  return _mm256_dpbusd_epi32 (bias, q, a);
}

#include "kernels-q32-x86.h"

void
lm_kernels_fill_avx512_q4q5 (LmKernels *k)
{
  q32_fill (k);
}
