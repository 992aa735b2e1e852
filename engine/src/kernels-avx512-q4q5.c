/* kernels-avx512-q4q5.c: AVX-512 (BW/VL) + VNNI kernels of Q4_0, Q5_0, Q4_1
 * and Q5_1, rows and prefill tiles, 512 bits wide (kernels-q32-avx512.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The fifth bits of Q5_0 / Q5_1 are added under a byte mask loaded from qh.
 * Where the CPU has VBMI, kernels-avx512vbmi-q5.c replaces the Q5 kernels
 * with ones that take them from the block's first 8 bytes in a vector. */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

#include "kernels-x86.h"
#include "kernels-q32-kinds.h"
#include "kernels-q32-avx512.h"

/* 16 added to byte j of q where bit j of the word at qh is set, per half;
 * lo and hi: the words of the low and high halves. */
TARGET static inline __attribute__ ((always_inline)) __m512i
add_fifth_bits (__m512i q, const uint8_t *qh_lo, const uint8_t *qh_hi)
{
  uint32_t lo, hi;
  memcpy (&lo, qh_lo, sizeof lo);
  memcpy (&hi, qh_hi, sizeof hi);
  __mmask64 mask = _mm512_kunpackd (_cvtu32_mask32 (hi), _cvtu32_mask32 (lo));
  return _mm512_mask_add_epi8 (q, mask, q, _mm512_set1_epi8 (16));
}

/* The fifth bits under a mask, the scales as scale_halves loads them. */
TARGET static inline __attribute__ ((always_inline)) __m512i
q32_fifth_bits_and_scales (__m512i q, const uint8_t *lo, const uint8_t *hi, Kind k, __m512 *d)
{
  *d = scale_halves (lo, hi);
  return add_fifth_bits (q, lo + qh_offset (k), hi + qh_offset (k));
}

DEFINE_Q32 (rows_q4_0, tile_q4_0, KIND_Q4_0)
DEFINE_Q32 (rows_q5_0, tile_q5_0, KIND_Q5_0)
DEFINE_Q32 (rows_q4_1, tile_q4_1, KIND_Q4_1)
DEFINE_Q32 (rows_q5_1, tile_q5_1, KIND_Q5_1)

void
lm_kernels_fill_avx512_q4q5 (LmKernels *k)
{
  q32_install (k, LM_KT_Q4_0, rows_q4_0, tile_q4_0);
  q32_install (k, LM_KT_Q5_0, rows_q5_0, tile_q5_0);
  q32_install (k, LM_KT_Q4_1, rows_q4_1, tile_q4_1);
  q32_install (k, LM_KT_Q5_1, rows_q5_1, tile_q5_1);
}
