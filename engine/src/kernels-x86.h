/* kernels-x86.h: 256-bit helpers shared by the AVX2 and AVX-512 kernel files.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. The including file defines TARGET (its target attribute) first;
 * each inclusion compiles these helpers for that ISA. */
#pragma once

#include <immintrin.h>

#include "quant.h"

#ifndef TARGET
#error "define TARGET before including kernels-x86.h"
#endif

TARGET static inline float
hsum256_ps (__m256 v)
{
  __m128 s = _mm_add_ps (_mm256_castps256_ps128 (v), _mm256_extractf128_ps (v, 1));
  s = _mm_add_ps (s, _mm_movehl_ps (s, s));
  s = _mm_add_ss (s, _mm_movehdup_ps (s));
  return _mm_cvtss_f32 (s);
}

TARGET static inline float
fp16 (uint16_t h)
{
  return _cvtsh_ss (h);
}

/* m_j * (bsums[2j] + bsums[2j+1]) as 8 int32 lanes, from the unpacked
 * scales/mins of a Q4_K/Q5_K block (mins in sm[8..15]). */
TARGET static inline __m256i
k4_min_products (const uint8_t sm[16], const int16_t *bsums)
{
  __m128i m = _mm_loadl_epi64 ((const __m128i *) (sm + 8));
  __m256i m16 = _mm256_cvtepu8_epi16 (_mm_unpacklo_epi8 (m, m));
  return _mm256_madd_epi16 (_mm256_loadu_si256 ((const __m256i *) bsums), m16);
}

static inline float
same_f32 (float f)
{
  return f;
}

/* The totals of eight int32 vectors, v[i]'s in lane i (integer adds: exact
 * in any order). */
TARGET static inline __m256i
lane_totals8 (const __m256i v[8])
{
  __m256i v01 = _mm256_hadd_epi32 (v[0], v[1]), v23 = _mm256_hadd_epi32 (v[2], v[3]);
  __m256i v45 = _mm256_hadd_epi32 (v[4], v[5]), v67 = _mm256_hadd_epi32 (v[6], v[7]);
  /* per 128-bit half: the partial totals of v0..v3 and of v4..v7 */
  __m256i v0123 = _mm256_hadd_epi32 (v01, v23), v4567 = _mm256_hadd_epi32 (v45, v67);
  return _mm256_add_epi32 (_mm256_permute2x128_si256 (v0123, v4567, 0x20),
                           _mm256_permute2x128_si256 (v0123, v4567, 0x31));
}
