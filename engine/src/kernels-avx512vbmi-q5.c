/* kernels-avx512vbmi-q5.c: the AVX-512 kernels of Q5_0 and Q5_1
 * (kernels-q32-avx512.h) for CPUs with VBMI, which take a block's scale and
 * fifth bits from one 8-byte load.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A block starts with its fp16 scale d, (Q5_1) its min, then the 32 fifth
 * bits qh: one qword broadcast per block (block lo's in the low half, hi's
 * in the high half) holds both. The scales are its first words, permuted
 * into place; vpmultishiftqb moves bit j of qh to bit 4 of byte j, and one
 * ternary logic op ors it (bit 4 only) onto the nibbles. This replaces two
 * mask loads, their merge and a masked add; with the scale from the same
 * load, the Q5_0 row kernel streams 896-wide rows 15-20 % faster than
 * kernels-avx512-q4q5.c's (Zen 5, one thread). The quants and scales are
 * the same, so are the results, bit for bit. */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi,avx2,fma,f16c")))

#include "kernels-x86.h"
#include "kernels-q32-kinds.h"
#include "kernels-q32-avx512.h"

/* Word 0 of qword 0 (block lo's scale) for lanes 0-7, word 0 of qword 4
 * (block hi's) for lanes 8-15, as vpermw indices. */
TARGET static inline __attribute__ ((always_inline)) __m512i
scale_words (void)
{
  return _mm512_zextsi256_si512 (_mm256_setr_epi16 (0, 0, 0, 0, 0, 0, 0, 0,
                                                    16, 16, 16, 16, 16, 16, 16, 16));
}

/* For byte j of each qword lane L (0..3 in a half), the start of the 8 bits
 * whose bit 4 is bit 8L + j of qh, qh being at byte qh_offset of the qword
 * (vpmultishiftqb wraps past bit 63; only bit 4 is kept). */
TARGET static inline __attribute__ ((always_inline)) __m512i
fifth_bit_starts (Kind k)
{
  const __m256i j = _mm256_setr_epi8 (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                      16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
                                      30, 31);
  return _mm512_add_epi8 (_mm512_broadcast_i64x4 (j),
                          _mm512_set1_epi8 ((char) (8 * qh_offset (k) - 4)));
}

TARGET static inline __attribute__ ((always_inline)) __m512i
q32_fifth_bits_and_scales (__m512i q, const uint8_t *lo, const uint8_t *hi, Kind k, __m512 *d)
{
  uint64_t first_lo, first_hi;
  memcpy (&first_lo, lo, sizeof first_lo);
  memcpy (&first_hi, hi, sizeof first_hi);
  __m512i firsts = _mm512_mask_set1_epi64 (_mm512_set1_epi64 ((long long) first_lo), 0xF0,
                                           (long long) first_hi);
  *d = _mm512_cvtph_ps (_mm512_castsi512_si256 (_mm512_permutexvar_epi16 (scale_words (), firsts)));
  __m512i fifth = _mm512_multishift_epi64_epi8 (fifth_bit_starts (k), firsts);
  /* q | (fifth & 0x10): the nibbles have bit 4 clear, so this adds 16 */
  return _mm512_ternarylogic_epi32 (q, fifth, _mm512_set1_epi8 (0x10), 0xF8);
}

DEFINE_Q32 (rows_q5_0, tile_q5_0, KIND_Q5_0)
DEFINE_Q32 (rows_q5_1, tile_q5_1, KIND_Q5_1)

void
lm_kernels_fill_avx512vbmi_q5 (LmKernels *k)
{
  q32_install (k, LM_KT_Q5_0, rows_q5_0, tile_q5_0);
  q32_install (k, LM_KT_Q5_1, rows_q5_1, tile_q5_1);
}
