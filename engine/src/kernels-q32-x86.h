/* kernels-q32-x86.h: the 256-bit row and tile kernels of Q4_0, Q5_0 (against
 * Q8_0 activations) and Q4_1, Q5_1 (against Q8_1), of the AVX2 kernel file;
 * the AVX-512 ones (kernels-avx512-q4q5.c) do the same per lane, 512 bits
 * wide.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. The including file defines TARGET, includes kernels-x86.h and
 * defines three primitives for its ISA first:
 *   q32_add_fifth_bits (q, qh): q with 16 added in byte j where bit j of the
 *     little-endian word at qh is set;
 *   q32_bias (offset, a): what q32_lanes takes to subtract offset * a, per
 *     32-bit lane (offset: the byte 8 or 16 in every lane);
 *   q32_lanes (q, a, bias): the sums of q * a over each lane's 4 bytes
 *     (q unsigned, a signed), minus the offset products of bias.
 * A block's quants are unpacked unsigned (0..15 or 0..31), so one unsigned
 * by signed product covers them without the sign juggling of a signed one;
 * the offset of Q4_0 / Q5_0 is taken out per lane with a vector made once
 * per activation block and call, so each block's integer sum is exact and
 * lane for lane that of a signed product (the same integers on every ISA);
 * the min of Q4_1 / Q5_1 enters as m * s, s the activation block's sum (as
 * ggml's x86 backend does). Blocks are combined in one f32 vector per
 * activation row. */
#pragma once

#include <string.h>

#include "kernels-q32-kinds.h"

#ifndef TARGET
#error "define TARGET before including kernels-q32-x86.h"
#endif

/* The 32 nibbles of qs[16] in value order: low nibbles, then high ones (the
 * 16 bytes loaded into both halves, the upper one shifted by 4). */
TARGET static inline __m256i
nibbles (const uint8_t *qs)
{
  __m256i both = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) qs));
  __m256i shifted = _mm256_srlv_epi32 (both, _mm256_setr_epi32 (0, 0, 0, 0, 4, 4, 4, 4));
  return _mm256_and_si256 (shifted, _mm256_set1_epi8 (0x0F));
}

/* One activation row's chunk, prepared once per call. */
typedef struct {
  __m256i bias[ACT_CHUNK];     /* Q4_0/Q5_0: q32_bias of the offset (8 or 16) */
  __m256 d[ACT_CHUNK];         /* the scale, in every lane */
  float s[ACT_CHUNK];          /* Q4_1/Q5_1: the block's sum s */
} ActChunk;

TARGET static inline __attribute__ ((always_inline)) void
prepare_chunk (const uint8_t *act, Kind k, int64_t b0, int len, ActChunk *p)
{
  const __m256i offset = _mm256_set1_epi8 (k == KIND_Q4_0 ? 8 : 16);
  for (int i = 0; i < len; i++)
    {
      const uint8_t *block = act + (size_t) (b0 + i) * act_block_bytes (k);
      if (kind_has_min (k))
        {
          const LmBlockQ8_1 *a = (const LmBlockQ8_1 *) block;
          p->d[i] = _mm256_set1_ps (fp16 (a->d));
          p->s[i] = fp16 (a->s);
        }
      else
        {
          const LmBlockQ8_0 *a = (const LmBlockQ8_0 *) block;
          p->bias[i] = q32_bias (offset, _mm256_loadu_si256 ((const __m256i *) a->qs));
          p->d[i] = _mm256_set1_ps (fp16 (a->d));
        }
    }
}

/* A weight block: unsigned quants, scale (in every lane) and (Q4_1/Q5_1) min. */
TARGET static inline __attribute__ ((always_inline)) __m256i
unpack_block (const uint8_t *block, Kind k, __m256 *d, float *m)
{
  *d = _mm256_set1_ps (fp16_at (block));
  *m = weight_min (block, k);
  __m256i q = nibbles (block + qs_offset (k));
  return kind_has_qh (k) ? q32_add_fifth_bits (q, block + qh_offset (k)) : q;
}

/* Adds block i of a chunk of one activation row to that row's accumulators. */
TARGET static inline __attribute__ ((always_inline)) __m256
accumulate (__m256 acc, float *summs, __m256i q, __m256 d, float m, const int8_t *qa,
            const ActChunk *p, int i, Kind k)
{
  __m256i a = _mm256_loadu_si256 ((const __m256i *) qa);
  __m256i lanes;
  if (kind_has_min (k))
    {
      lanes = q32_lanes (q, a, _mm256_setzero_si256 ());
      *summs += m * p->s[i];
    }
  else
    lanes = q32_lanes (q, a, p->bias[i]);
  return _mm256_fmadd_ps (_mm256_mul_ps (d, p->d[i]), _mm256_cvtepi32_ps (lanes), acc);
}

/* Rows [r0, r0 + R) of one chunk (blocks c0 .. c0 + len) against @T
 * activation rows: each weight block is unpacked once for all T, and every
 * (row, activation row) pair gets the same operations in the same order for
 * any R and T (so the row and tile kernels agree bit for bit). */
TARGET static inline __attribute__ ((always_inline)) void
q32_rows (const uint8_t *W, size_t row_bytes, int64_t r0, const uint8_t *act, size_t act_stride,
          const ActChunk *chunk, int64_t c0, int len, float *Y, size_t y_stride, const int R,
          const int T, const Kind k)
{
  const size_t wb = weight_block_bytes (k), ab = act_block_bytes (k);
  const uint8_t *at = act + (size_t) c0 * ab;
  __m256 acc[2][LM_TILE_TOKENS];
  float summs[2][LM_TILE_TOKENS];

  #pragma GCC unroll 2
  for (int j = 0; j < R; j++)
    {
      const uint8_t *row = W + (r0 + j) * row_bytes;
      if (c0 == 0)
        lm_prefetch_row (row + Q32_PREFETCH_ROWS * row_bytes, row_bytes);
      #pragma GCC unroll 4
      for (int t = 0; t < T; t++)
        {
          acc[j][t] = _mm256_setzero_ps ();
          summs[j][t] = 0.0f;
        }
    }
  for (int i = 0; i < len; i++)
    #pragma GCC unroll 2
    for (int j = 0; j < R; j++)
      {
        __m256 d;
        float m;
        __m256i q = unpack_block (W + (r0 + j) * row_bytes + (size_t) (c0 + i) * wb, k, &d, &m);
        #pragma GCC unroll 4
        for (int t = 0; t < T; t++)
          acc[j][t] = accumulate (acc[j][t], &summs[j][t], q, d, m,
                                  act_quants (at + t * act_stride + (size_t) i * ab, k),
                                  &chunk[t], i, k);
      }
  #pragma GCC unroll 2
  for (int j = 0; j < R; j++)
    #pragma GCC unroll 4
    for (int t = 0; t < T; t++)
      {
        float part = hsum256_ps (acc[j][t]) + summs[j][t];
        float *y = &Y[t * y_stride + (size_t) (r0 + j)];
        *y = c0 == 0 ? part : *y + part;
      }
}

/* Rows [0, n_rows) against @T activation rows act_stride bytes apart; a row
 * kernel is the case T = 1, which takes rows in pairs: two independent
 * accumulation chains, as the tokens of a tile are. */
TARGET static inline __attribute__ ((always_inline)) void
q32_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act, size_t act_stride,
          int64_t n, float *Y, size_t y_stride, const int T, const Kind k)
{
  ActChunk chunk[LM_TILE_TOKENS];
  const int64_t nb = n / LM_QK32;

  for (int64_t c0 = 0; c0 < nb; c0 += ACT_CHUNK)
    {
      const int len = nb - c0 < ACT_CHUNK ? (int) (nb - c0) : ACT_CHUNK;
      #pragma GCC unroll 4
      for (int t = 0; t < T; t++)
        prepare_chunk ((const uint8_t *) act + t * act_stride, k, c0, len, &chunk[t]);
      int64_t r = 0;
      if (T == 1)
        for (; r + 2 <= n_rows; r += 2)
          q32_rows (W, row_bytes, r, act, act_stride, chunk, c0, len, Y, y_stride, 2, 1, k);
      for (; r < n_rows; r++)
        q32_rows (W, row_bytes, r, act, act_stride, chunk, c0, len, Y, y_stride, 1, T, k);
    }
}

#define DEFINE_Q32(rows, tile, kind)                                                     \
  TARGET static void rows (const void *W, size_t row_bytes, int64_t n_rows,              \
                           const void *act, int64_t n, float *y)                         \
  {                                                                                      \
    q32_body (W, row_bytes, n_rows, act, 0, n, y, 0, 1, kind);                           \
  }                                                                                      \
  TARGET static inline __attribute__ ((always_inline)) void                              \
  tile##_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,         \
               size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)     \
  {                                                                                      \
    q32_body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, T, kind);           \
  }                                                                                      \
  LM_DEFINE_TILE (TARGET, tile, tile##_body)

DEFINE_Q32 (rows_q4_0, tile_q4_0, KIND_Q4_0)
DEFINE_Q32 (rows_q5_0, tile_q5_0, KIND_Q5_0)
DEFINE_Q32 (rows_q4_1, tile_q4_1, KIND_Q4_1)
DEFINE_Q32 (rows_q5_1, tile_q5_1, KIND_Q5_1)

static void
q32_fill (LmKernels *k)
{
  k->native[LM_KT_Q4_0] = rows_q4_0;
  k->native[LM_KT_Q5_0] = rows_q5_0;
  k->native[LM_KT_Q4_1] = rows_q4_1;
  k->native[LM_KT_Q5_1] = rows_q5_1;
  lm_set_tile (k, LM_KT_Q4_0, tile_q4_0, LM_TILE_TOKENS);
  lm_set_tile (k, LM_KT_Q5_0, tile_q5_0, LM_TILE_TOKENS);
  lm_set_tile (k, LM_KT_Q4_1, tile_q4_1, LM_TILE_TOKENS);
  lm_set_tile (k, LM_KT_Q5_1, tile_q5_1, LM_TILE_TOKENS);
}
