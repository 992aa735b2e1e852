/* kernels-avx2-q4q5.c: AVX2 kernels of the 32-value formats Q4_0, Q5_0 (against
 * Q8_0 activations) and Q4_1, Q5_1 (against Q8_1), rows and prefill tiles.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A block's quants are unpacked unsigned (0..15 or 0..31) so that one maddubs
 * multiplies them with the signed activations, without the sign juggling of
 * a signed product. The offset of Q4_0 / Q5_0 (8 or 16 times the sum of the
 * activations) is subtracted per 32-bit lane from a vector computed once per
 * activation block and call, so each block's integer sum is exact and
 * lane for lane that of a signed product; the min of Q4_1 / Q5_1 enters as
 * m * s, s the activation block's sum (as ggml's x86 backend does). Blocks
 * are combined in one f32 vector per activation row. */
#include <immintrin.h>
#include <string.h>

#include "kernels-private.h"
#include "quant-private.h"

#define TARGET __attribute__ ((target ("avx2,fma,f16c")))

#include "kernels-x86.h"

/* Activation blocks prepared at once: 2048 values (a row longer than that
 * is summed chunk by chunk, identically in the row and tile kernels). */
#define ACT_CHUNK 64

typedef enum { KIND_Q4_0, KIND_Q5_0, KIND_Q4_1, KIND_Q5_1 } Kind;

static inline __attribute__ ((always_inline)) int
kind_has_min (Kind k)
{
  return k == KIND_Q4_1 || k == KIND_Q5_1;
}

static inline __attribute__ ((always_inline)) int
kind_has_qh (Kind k)
{
  return k == KIND_Q5_0 || k == KIND_Q5_1;
}

static inline __attribute__ ((always_inline)) size_t
weight_block_bytes (Kind k)
{
  static const size_t bytes[] = { sizeof (LmBlockQ4_0), sizeof (LmBlockQ5_0),
                                  sizeof (LmBlockQ4_1), sizeof (LmBlockQ5_1) };
  return bytes[k];
}

/* Q8_0 activations for Q4_0 / Q5_0, Q8_1 for Q4_1 / Q5_1. */
static inline __attribute__ ((always_inline)) size_t
act_block_bytes (Kind k)
{
  return kind_has_min (k) ? sizeof (LmBlockQ8_1) : sizeof (LmBlockQ8_0);
}

static inline __attribute__ ((always_inline)) const int8_t *
act_quants (const uint8_t *block, Kind k)
{
  return kind_has_min (k) ? ((const LmBlockQ8_1 *) block)->qs : ((const LmBlockQ8_0 *) block)->qs;
}

/* One activation row's chunk, prepared once per call. */
typedef struct {
  __m256i offset[ACT_CHUNK];   /* Q4_0/Q5_0: 8 or 16 times each lane's activation sum */
  __m256 d[ACT_CHUNK];         /* the scale, in every lane */
  float s[ACT_CHUNK];          /* Q4_1/Q5_1: the block's sum s */
} ActChunk;

TARGET static inline __attribute__ ((always_inline)) void
prepare_chunk (const uint8_t *act, Kind k, int64_t b0, int len, ActChunk *p)
{
  const __m256i ones = _mm256_set1_epi16 (1);
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
          __m256i qa = _mm256_loadu_si256 ((const __m256i *) a->qs);
          p->offset[i] = _mm256_madd_epi16 (_mm256_maddubs_epi16 (offset, qa), ones);
          p->d[i] = _mm256_set1_ps (fp16 (a->d));
        }
    }
}

/* The 32 nibbles of qs[16] in value order: low nibbles, then high ones (the
 * 16 bytes loaded into both halves, the upper one shifted by 4). */
TARGET static inline __m256i
nibbles (const uint8_t *qs)
{
  __m256i both = _mm256_broadcastsi128_si256 (_mm_loadu_si128 ((const __m128i *) qs));
  __m256i shifted = _mm256_srlv_epi32 (both, _mm256_setr_epi32 (0, 0, 0, 0, 4, 4, 4, 4));
  return _mm256_and_si256 (shifted, _mm256_set1_epi8 (0x0F));
}

/* 16 in byte j where bit j of the little-endian word at qh is set. */
TARGET static inline __m256i
fifth_bits (const uint8_t *qh)
{
  const __m256i spread = _mm256_set_epi64x (0x0303030303030303, 0x0202020202020202,
                                            0x0101010101010101, 0);
  const __m256i bit = _mm256_set1_epi64x ((long long) 0x8040201008040201ull);
  /* a broadcast load of the word: no trip through a general register */
  __m256i word = _mm256_broadcastd_epi32 (_mm_loadu_si32 (qh));
  __m256i bytes = _mm256_shuffle_epi8 (word, spread);
  __m256i set = _mm256_cmpeq_epi8 (_mm256_and_si256 (bytes, bit), bit);
  return _mm256_and_si256 (set, _mm256_set1_epi8 (16));
}

/* The fp16 at p (converted from memory, without a general register). */
TARGET static inline float
fp16_at (const uint8_t *p)
{
  return _mm_cvtss_f32 (_mm_cvtph_ps (_mm_loadu_si32 (p)));
}

/* A weight block: unsigned quants, scale (in every lane) and (Q4_1/Q5_1) min. */
TARGET static inline __attribute__ ((always_inline)) __m256i
unpack_block (const uint8_t *block, Kind k, __m256 *d, float *m)
{
  *d = _mm256_set1_ps (fp16_at (block));
  *m = kind_has_min (k) ? fp16 (((const uint16_t *) block)[1]) : 0.0f;
  size_t qh_at = kind_has_min (k) ? 4 : 2;
  size_t qs_at = qh_at + (kind_has_qh (k) ? 4 : 0);
  __m256i q = nibbles (block + qs_at);
  return kind_has_qh (k) ? _mm256_or_si256 (q, fifth_bits (block + qh_at)) : q;
}

/* Adds block i of a chunk of one activation row to that row's accumulators. */
TARGET static inline __attribute__ ((always_inline)) __m256
accumulate (__m256 acc, float *summs, __m256i q, __m256 d, float m, const int8_t *qa,
            const ActChunk *p, int i, Kind k)
{
  __m256i lanes = _mm256_madd_epi16 (_mm256_maddubs_epi16 (q, _mm256_loadu_si256 ((const __m256i *) qa)),
                                     _mm256_set1_epi16 (1));
  if (kind_has_min (k))
    *summs += m * p->s[i];
  else
    lanes = _mm256_sub_epi32 (lanes, p->offset[i]);
  return _mm256_fmadd_ps (_mm256_mul_ps (d, p->d[i]), _mm256_cvtepi32_ps (lanes), acc);
}

/* Row @r of one chunk (blocks c0 .. c0 + len) against @T activation rows:
 * each weight block is unpacked once for all T, and every activation row
 * gets the same operations in the same order for any T (so the row and
 * tile kernels agree bit for bit). */
TARGET static inline __attribute__ ((always_inline)) void
q32_row (const uint8_t *W, size_t row_bytes, int64_t r, const uint8_t *act, size_t act_stride,
         const ActChunk *chunk, int64_t c0, int len, float *Y, size_t y_stride, const int T,
         const Kind k)
{
  const size_t wb = weight_block_bytes (k), ab = act_block_bytes (k);
  const uint8_t *row = W + r * row_bytes, *at = act + (size_t) c0 * ab;
  __m256 acc[LM_TILE_TOKENS];
  float summs[LM_TILE_TOKENS];

  if (c0 == 0)
    lm_prefetch_row (row + LM_PREFETCH_ROWS * row_bytes, row_bytes);
  #pragma GCC unroll 4
  for (int t = 0; t < T; t++)
    {
      acc[t] = _mm256_setzero_ps ();
      summs[t] = 0.0f;
    }
  for (int i = 0; i < len; i++)
    {
      __m256 d;
      float m;
      __m256i q = unpack_block (row + (size_t) (c0 + i) * wb, k, &d, &m);
      #pragma GCC unroll 4
      for (int t = 0; t < T; t++)
        acc[t] = accumulate (acc[t], &summs[t], q, d, m,
                             act_quants (at + t * act_stride + (size_t) i * ab, k), &chunk[t],
                             i, k);
    }
  #pragma GCC unroll 4
  for (int t = 0; t < T; t++)
    {
      float part = hsum256_ps (acc[t]) + summs[t];
      float *y = &Y[t * y_stride + (size_t) r];
      *y = c0 == 0 ? part : *y + part;
    }
}

/* Rows [0, n_rows) against @T activation rows act_stride bytes apart; a row
 * kernel is the case T = 1. (One accumulation chain per row suffices: a block
 * costs more than the latency of its one FMA.) */
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
      for (int64_t r = 0; r < n_rows; r++)
        q32_row (W, row_bytes, r, act, act_stride, chunk, c0, len, Y, y_stride, T, k);
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
  k->native[LM_KT_Q4_0] = rows_q4_0;
  k->native[LM_KT_Q5_0] = rows_q5_0;
  k->native[LM_KT_Q4_1] = rows_q4_1;
  k->native[LM_KT_Q5_1] = rows_q5_1;
  k->native_tile[LM_KT_Q4_0] = tile_q4_0;
  k->native_tile[LM_KT_Q5_0] = tile_q5_0;
  k->native_tile[LM_KT_Q4_1] = tile_q4_1;
  k->native_tile[LM_KT_Q5_1] = tile_q5_1;
  k->quantize_q8_1 = quantize_q8_1;
}
