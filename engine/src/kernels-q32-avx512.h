/* kernels-q32-avx512.h: the AVX-512 (BW/VL) + VNNI row and tile kernels of
 * Q4_0, Q5_0, Q4_1 and Q5_1, 512 bits wide, for kernels-avx512-q4q5.c and
 * kernels-avx512vbmi-q5.c.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. Each 512-bit register holds two (weight row, activation row)
 * pairs of one block side by side, in the 8-lane layout of the AVX2 kernels
 * (kernels-q32-x86.h): in a tile, one weight block (in both halves) against
 * the blocks of two tokens; in a row kernel, the blocks of two weight rows
 * against one token (in both halves). Every pair thus gets the integers and
 * the float operations of the AVX2 kernels, lane for lane, and the results
 * equal theirs bit for bit, with half the instructions per pair:
 *  - the quants are unpacked unsigned (0..15 or 0..31) and each lane's sum
 *    of four products is one dpbusd, which for Q4_0 / Q5_0 starts from the
 *    negated offset products (made once per activation block and call);
 *  - a block's 8 lanes enter the pair's f32 accumulator as
 *    fma (d_w * d_a, lanes, acc), the min of Q4_1 / Q5_1 as m * s.
 *
 * The including file defines TARGET, includes kernels-x86.h and
 * kernels-q32-kinds.h first, and defines after it, for its ISA,
 *   q32_fifth_bits_and_scales (q, lo, hi, k, d): for the kinds with fifth
 *     bits (Q5_0, Q5_1), q with 16 added in byte j of the low half where
 *     bit j of block lo's qh is set (of the high half: block hi's), and in
 *     *d block lo's scale in the low half's lanes, block hi's in the high
 *     half's. */
#pragma once

#include <string.h>

#ifndef TARGET
#error "define TARGET before including kernels-q32-avx512.h"
#endif

TARGET static inline __attribute__ ((always_inline)) __m512i
q32_fifth_bits_and_scales (__m512i q, const uint8_t *lo, const uint8_t *hi, Kind k, __m512 *d);

/* The tiles take up to 8 tokens: a block is unpacked in about as many
 * instructions as two tokens take (measured, Q5_0 896x4864 on Zen 5:
 * 4 -> 8 tokens, 49 -> 41 us per token). Activation rows sit side by side,
 * tokens 2p and 2p+1 in pair p (a lone last token in both halves). */
#define TILE_TOKENS 8
#define PAIRS (TILE_TOKENS / 2)

/* The blocks of two activation rows (or one twice) of a chunk. */
typedef struct {
  __m512i qs[ACT_CHUNK];       /* the two rows' quants */
  __m512i bias[ACT_CHUNK];     /* Q4_0/Q5_0: -(offset * quants) per lane */
  __m512 d[ACT_CHUNK];         /* the scales, each in its half */
  float s[2][ACT_CHUNK];       /* Q4_1/Q5_1: the blocks' sums */
} PairChunk;

TARGET static inline __attribute__ ((always_inline)) __m512
halves_ps (float lo, float hi)
{
  return _mm512_insertf32x8 (_mm512_castps256_ps512 (_mm256_set1_ps (lo)), _mm256_set1_ps (hi), 1);
}

TARGET static inline __attribute__ ((always_inline)) void
prepare_pair (const uint8_t *act0, const uint8_t *act1, Kind k, int64_t b0, int len,
              PairChunk *p)
{
  const __m512i offset = _mm512_set1_epi8 (k == KIND_Q4_0 ? 8 : 16);
  const size_t ab = act_block_bytes (k);
  for (int i = 0; i < len; i++)
    {
      const uint8_t *a0 = act0 + (size_t) (b0 + i) * ab, *a1 = act1 + (size_t) (b0 + i) * ab;
      __m512i qs = _mm512_inserti64x4 (
        _mm512_castsi256_si512 (_mm256_loadu_si256 ((const __m256i *) act_quants (a0, k))),
        _mm256_loadu_si256 ((const __m256i *) act_quants (a1, k)), 1);
      p->qs[i] = qs;
      p->d[i] = halves_ps (act_scale (a0, k), act_scale (a1, k));
      if (kind_has_min (k))
        {
          p->s[0][i] = act_sum (a0, k);
          p->s[1][i] = act_sum (a1, k);
        }
      else
        p->bias[i] = _mm512_sub_epi32 (_mm512_setzero_si512 (),
                                       _mm512_dpbusd_epi32 (_mm512_setzero_si512 (), offset, qs));
    }
}

/* The nibbles in value order (low nibbles, then high ones) of the qs[16] in
 * both 128-bit lanes of each half, the upper lane shifted by 4. */
TARGET static inline __attribute__ ((always_inline)) __m512i
nibbles_of (__m512i both)
{
  __m512i shifted = _mm512_srlv_epi64 (both, _mm512_setr_epi64 (0, 0, 4, 4, 0, 0, 4, 4));
  return _mm512_and_si512 (shifted, _mm512_set1_epi8 (0x0F));
}

/* The fp16 at lo in the low half's lanes and at hi in the high half's. */
TARGET static inline __attribute__ ((always_inline)) __m512
scale_halves (const uint8_t *lo, const uint8_t *hi)
{
  uint16_t a, b;
  memcpy (&a, lo, sizeof a);
  memcpy (&b, hi, sizeof b);
  return _mm512_cvtph_ps (_mm256_mask_set1_epi16 (_mm256_set1_epi16 ((short) a), 0xFF00, (short) b));
}

/* One weight block in both halves (a tile's row): unsigned quants, the
 * scale in every lane and (Q4_1/Q5_1) the min. */
TARGET static inline __attribute__ ((always_inline)) __m512i
unpack_twice (const uint8_t *block, Kind k, __m512 *d, float *m)
{
  *m = weight_min (block, k);
  __m512i q = nibbles_of (_mm512_broadcast_i32x4 (_mm_loadu_si128 ((const __m128i *) (block + qs_offset (k)))));
  if (kind_has_qh (k))
    return q32_fifth_bits_and_scales (q, block, block, k, d);
  uint16_t h;
  memcpy (&h, block, sizeof h);
  *d = _mm512_cvtph_ps (_mm256_set1_epi16 ((short) h));
  return q;
}

/* Blocks lo and hi, one per half (a pair of rows), as unpack_twice. */
TARGET static inline __attribute__ ((always_inline)) __m512i
unpack_pair (const uint8_t *lo, const uint8_t *hi, Kind k, __m512 *d, float m[2])
{
  m[0] = weight_min (lo, k);
  m[1] = weight_min (hi, k);
  __m512i both = _mm512_broadcast_i32x4 (_mm_loadu_si128 ((const __m128i *) (lo + qs_offset (k))));
  both = _mm512_mask_broadcast_i32x4 (both, 0xFF00,
                                      _mm_loadu_si128 ((const __m128i *) (hi + qs_offset (k))));
  __m512i q = nibbles_of (both);
  if (kind_has_qh (k))
    return q32_fifth_bits_and_scales (q, lo, hi, k, d);
  *d = scale_halves (lo, hi);
  return q;
}

/* One block of two pairs into their accumulator (halves: pairs). */
TARGET static inline __attribute__ ((always_inline)) __m512
accumulate (__m512 acc, __m512i q, __m512 d, const PairChunk *p, int i, Kind k)
{
  __m512i lanes = _mm512_dpbusd_epi32 (kind_has_min (k) ? _mm512_setzero_si512 () : p->bias[i],
                                       q, p->qs[i]);
  return _mm512_fmadd_ps (_mm512_mul_ps (d, p->d[i]), _mm512_cvtepi32_ps (lanes), acc);
}

/* The low and high halves' sums, each as hsum256_ps adds them. */
TARGET static inline __attribute__ ((always_inline)) float
low_sum (__m512 acc)
{
  return hsum256_ps (_mm512_castps512_ps256 (acc));
}

TARGET static inline __attribute__ ((always_inline)) float
high_sum (__m512 acc)
{
  return hsum256_ps (_mm512_extractf32x8_ps (acc, 1));
}

/* Stores a chunk's sum: the first chunk writes, later ones add. */
static inline __attribute__ ((always_inline)) void
put (float *y, float part, int64_t c0)
{
  *y = c0 == 0 ? part : *y + part;
}

/* Row r of one chunk (blocks c0 .. c0 + len) against the @T activation rows
 * in @P pairs: each weight block is unpacked once, into both halves, for
 * all of them. */
TARGET static inline __attribute__ ((always_inline)) void
tile_row (const uint8_t *W, size_t row_bytes, int64_t r, const PairChunk *pairs, int64_t c0,
          int len, float *Y, size_t y_stride, const int P, int T, const Kind k)
{
  const uint8_t *row = W + r * row_bytes;
  __m512 acc[PAIRS];
  float summs[2 * PAIRS];

  if (c0 == 0)
    lm_prefetch_row (row + Q32_PREFETCH_ROWS * row_bytes, row_bytes);
  #pragma GCC unroll 4
  for (int p = 0; p < P; p++)
    {
      acc[p] = _mm512_setzero_ps ();
      summs[2 * p] = summs[2 * p + 1] = 0.0f;
    }
  for (int i = 0; i < len; i++)
    {
      const uint8_t *block = row + (size_t) (c0 + i) * weight_block_bytes (k);
      __m512 d;
      float m[2];
      __m512i q = unpack_twice (block, k, &d, &m[0]);
      #pragma GCC unroll 4
      for (int p = 0; p < P; p++)
        {
          acc[p] = accumulate (acc[p], q, d, &pairs[p], i, k);
          if (kind_has_min (k))
            {
              summs[2 * p] += m[0] * pairs[p].s[0][i];
              summs[2 * p + 1] += m[0] * pairs[p].s[1][i];
            }
        }
    }
  #pragma GCC unroll 4
  for (int p = 0; p < P; p++)
    {
      put (&Y[2 * p * y_stride + (size_t) r], low_sum (acc[p]) + summs[2 * p], c0);
      if (2 * p + 1 < T)
        put (&Y[(2 * p + 1) * y_stride + (size_t) r], high_sum (acc[p]) + summs[2 * p + 1], c0);
    }
}

/* Rows r and r+1 of one chunk against one activation row (in both halves
 * of @pair), the rows in one register. */
TARGET static inline __attribute__ ((always_inline)) void
row_pair (const uint8_t *W, size_t row_bytes, int64_t r, const PairChunk *pair, int64_t c0,
          int len, float *y, const Kind k)
{
  const uint8_t *row = W + r * row_bytes;
  __m512 acc = _mm512_setzero_ps ();
  float summs[2] = { 0.0f, 0.0f };

  if (c0 == 0)
    {
      lm_prefetch_row (row + Q32_PREFETCH_ROWS * row_bytes, row_bytes);
      lm_prefetch_row (row + (Q32_PREFETCH_ROWS + 1) * row_bytes, row_bytes);
    }
  for (int i = 0; i < len; i++)
    {
      const uint8_t *lo = row + (size_t) (c0 + i) * weight_block_bytes (k);
      __m512 d;
      float m[2];
      __m512i q = unpack_pair (lo, lo + row_bytes, k, &d, m);
      acc = accumulate (acc, q, d, pair, i, k);
      if (kind_has_min (k))
        {
          summs[0] += m[0] * pair->s[0][i];
          summs[1] += m[1] * pair->s[0][i];
        }
    }
  put (&y[r], low_sum (acc) + summs[0], c0);
  put (&y[r + 1], high_sum (acc) + summs[1], c0);
}

/* Rows [0, n_rows) against one activation row, in chunks. */
TARGET static inline __attribute__ ((always_inline)) void
q32_rows (const void *W, size_t row_bytes, int64_t n_rows, const void *act, int64_t n,
          float *y, const Kind k)
{
  PairChunk pair;
  const int64_t nb = n / LM_QK32;

  for (int64_t c0 = 0; c0 < nb; c0 += ACT_CHUNK)
    {
      const int len = nb - c0 < ACT_CHUNK ? (int) (nb - c0) : ACT_CHUNK;
      prepare_pair (act, act, k, c0, len, &pair);
      int64_t r = 0;
      for (; r + 2 <= n_rows; r += 2)
        row_pair (W, row_bytes, r, &pair, c0, len, y, k);
      if (r < n_rows)
        tile_row (W, row_bytes, r, &pair, c0, len, y, 0, 1, 1, k);
    }
}

/* Rows [0, n_rows) against @T activation rows act_stride bytes apart, in
 * P = ceil(T / 2) pairs. */
TARGET static inline __attribute__ ((always_inline)) void
q32_tile (const void *W, size_t row_bytes, int64_t n_rows, const void *act, size_t act_stride,
          int64_t n, float *Y, size_t y_stride, const int P, int T, const Kind k)
{
  PairChunk pairs[PAIRS];
  const int64_t nb = n / LM_QK32;
  const uint8_t *a = act;

  for (int64_t c0 = 0; c0 < nb; c0 += ACT_CHUNK)
    {
      const int len = nb - c0 < ACT_CHUNK ? (int) (nb - c0) : ACT_CHUNK;
      #pragma GCC unroll 4
      for (int p = 0; p < P; p++)
        prepare_pair (a + 2 * p * act_stride, a + (2 * p + 1 < T ? 2 * p + 1 : 2 * p) * act_stride,
                      k, c0, len, &pairs[p]);
      for (int64_t r = 0; r < n_rows; r++)
        tile_row (W, row_bytes, r, pairs, c0, len, Y, y_stride, P, T, k);
    }
}

/* The row kernel @rows and the tile @tile (one instance per number of pairs). */
#define DEFINE_Q32(rows, tile, kind)                                                     \
  TARGET static void rows (const void *W, size_t row_bytes, int64_t n_rows,              \
                           const void *act, int64_t n, float *y)                         \
  {                                                                                      \
    q32_rows (W, row_bytes, n_rows, act, n, y, kind);                                    \
  }                                                                                      \
  TARGET static void tile (const void *W, size_t row_bytes, int64_t n_rows,              \
                           const void *act, size_t act_stride, int64_t n, int n_tok,     \
                           float *Y, size_t y_stride)                                    \
  {                                                                                      \
    switch ((n_tok + 1) / 2)                                                             \
      {                                                                                  \
      case 1:                                                                            \
        q32_tile (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 1, n_tok, kind); \
        break;                                                                           \
      case 2:                                                                            \
        q32_tile (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 2, n_tok, kind); \
        break;                                                                           \
      case 3:                                                                            \
        q32_tile (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 3, n_tok, kind); \
        break;                                                                           \
      default:                                                                           \
        q32_tile (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, PAIRS, n_tok,   \
                  kind);                                                                 \
        break;                                                                           \
      }                                                                                  \
  }

/* Installs a kind's row kernel and tile in @k. */
static inline void
q32_install (LmKernels *k, int kernel_type, LmDotRowsFn rows, LmDotTileFn tile)
{
  k->native[kernel_type] = rows;
  lm_set_tile (k, kernel_type, tile, TILE_TOKENS);
}
