/* kernels-q4k-x86.h: the row and tile kernels of Q4_K weights against Q8_K
 * activations, shared by the AVX2 and AVX-512 kernel files.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. The float arithmetic is that of ggml's x86 CPU backend, which
 * by default multiplies Q4_K weights in its repacked (8 rows interleaved)
 * form: per (row, token) the integer sums (scale times quants times
 * activations, and the mins times the activation sums) go through float as
 *   acc     = fma (total, d_w * d_a, acc)
 *   acc_min = fma (mins, dmin_w * d_a, acc_min)
 * and the result is acc - acc_min. Its single-token kernel (the row kernel
 * here) takes one such step per super-block; its batch kernel (the tile
 * here, for the tokens of a product in whole groups of 4, the rest going
 * token by token) one per two sub-blocks (on AVX-512 the same steps run
 * in kernels-avx512-q4k.c, with the tokens in the lanes). Other float
 * orders round differently in the last bits, which Qwen2.5's outlier
 * channels turn into different 8-bit activations a few layers on.
 *
 * Eight (row, token) pairs share one 8-lane float vector: a tile's tokens
 * for one row, or a row kernel's eight rows for one token. The including
 * file defines TARGET, includes kernels-x86.h and defines first:
 *   K4Block: one unpacked super-block, with members float d, dmin;
 *   k4_unpack_q4 (w, u): unpacks the Q4_K block w into u;
 *   k4_integers (u, a, sumi, mins): the block against the Q8_K block a as
 *     two int32 vectors whose lane totals are the sub-block sum and the
 *     mins times the activation sums;
 *   k4_group_lanes (u, a, g): as sumi, for sub-blocks 2g and 2g+1 alone;
 *   k4_min_lanes (u, a): lane j the min of sub-block j times its
 *     activation sum;
 * or, for a batch kernel of its own (kernels-avx512-q4k.c), defines
 * Q4K_BATCH_ELSEWHERE and leaves out the last two. */
#pragma once

#ifndef TARGET
#error "define TARGET before including kernels-q4k-x86.h"
#endif

/* The fma steps of one super-block for 8 lanes of integer vectors. */
TARGET static inline __attribute__ ((always_inline)) void
q4k_combine (const __m256i sumi[8], const __m256i mins[8], __m256 d_w, __m256 dmin_w, __m256 d_a,
             __m256 *acc, __m256 *acc_min)
{
  *acc = _mm256_fmadd_ps (_mm256_cvtepi32_ps (lane_totals8 (sumi)), _mm256_mul_ps (d_w, d_a), *acc);
  *acc_min = _mm256_fmadd_ps (_mm256_cvtepi32_ps (lane_totals8 (mins)), _mm256_mul_ps (dmin_w, d_a),
                              *acc_min);
}

#ifndef Q4K_BATCH_ELSEWHERE
/* The mins of sub-blocks 2g and 2g+1 times the activation sums, for
 * g = 0..3 (out[g], lanes: tokens), from the 8 tokens' k4_min_lanes. */
TARGET static inline __attribute__ ((always_inline)) void
q4k_group_mins (const __m256i m[8], __m256i out[4])
{
  /* per pair of tokens: t g0, t' g0, t g1, t' g1, t g2, t' g2, t g3, t' g3 */
  const __m256i order = _mm256_setr_epi32 (0, 2, 1, 3, 4, 6, 5, 7);
  __m256i p[4];
  for (int i = 0; i < 4; i++)
    p[i] = _mm256_permutevar8x32_epi32 (_mm256_hadd_epi32 (m[2 * i], m[2 * i + 1]), order);
  /* tokens 0-3 and 4-7 of groups 0 and 2 (lo), 1 and 3 (hi) */
  __m256i lo03 = _mm256_unpacklo_epi64 (p[0], p[1]), hi03 = _mm256_unpackhi_epi64 (p[0], p[1]);
  __m256i lo47 = _mm256_unpacklo_epi64 (p[2], p[3]), hi47 = _mm256_unpackhi_epi64 (p[2], p[3]);
  out[0] = _mm256_permute2x128_si256 (lo03, lo47, 0x20);
  out[2] = _mm256_permute2x128_si256 (lo03, lo47, 0x31);
  out[1] = _mm256_permute2x128_si256 (hi03, hi47, 0x20);
  out[3] = _mm256_permute2x128_si256 (hi03, hi47, 0x31);
}
#endif

/* The activation scales of block b of the @T tokens, a gather from a[0][b].d
 * (0 in the lanes past T). */
TARGET static inline __attribute__ ((always_inline)) __m256
q4k_act_scales (const void *act, size_t act_stride, int64_t b, const int T)
{
  const __m256i lane = _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i offsets = _mm256_mullo_epi32 (lane, _mm256_set1_epi32 ((int) act_stride));
  const __m256 live = _mm256_castsi256_ps (_mm256_cmpgt_epi32 (_mm256_set1_epi32 (T), lane));
  const float *d0 = &((const LmBlockQ8_K *) act)[b].d;
  return _mm256_mask_i32gather_ps (_mm256_setzero_ps (), d0, offsets, live, 1);
}

/* Rows [0, n_rows) against @T (up to 4) activation rows in the
 * single-token order, each (row, token)'s acc in lane t and acc_min in lane
 * 4 + t of one vector: one horizontal sum per block instead of two. */
TARGET static inline __attribute__ ((always_inline)) void
q4k_tile_body4 (const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)
{
  for (int64_t r = 0; r < n_rows; r++)
    {
      const LmBlockQ4_K *w = (const LmBlockQ4_K *) ((const uint8_t *) W + r * row_bytes);
      __m256 acc = _mm256_setzero_ps ();
      lm_prefetch_row ((const uint8_t *) w + LM_PREFETCH_ROWS * row_bytes, row_bytes);
      for (int64_t b = 0; b < n / LM_QK_K; b++)
        {
          K4Block u;
          k4_unpack_q4 (&w[b], &u);
          __m256i v[8];
          #pragma GCC unroll 4
          for (int t = 0; t < 4; t++)
            if (t < T)
              k4_integers (&u, (const LmBlockQ8_K *) ((const uint8_t *) act + t * act_stride) + b,
                           &v[t], &v[4 + t]);
            else
              v[t] = v[4 + t] = _mm256_setzero_si256 ();
          __m256 d_a = q4k_act_scales (act, act_stride, b, T);
          __m256 scale = _mm256_mul_ps (_mm256_setr_m128 (_mm_set1_ps (u.d), _mm_set1_ps (u.dmin)),
                                        _mm256_permute2f128_ps (d_a, d_a, 0x00));
          acc = _mm256_fmadd_ps (_mm256_cvtepi32_ps (lane_totals8 (v)), scale, acc);
        }
      float out[4];
      _mm_storeu_ps (out, _mm_sub_ps (_mm256_castps256_ps128 (acc), _mm256_extractf128_ps (acc, 1)));
      for (int t = 0; t < T; t++)
        Y[t * y_stride + (size_t) r] = out[t];
    }
}

/* Rows [0, n_rows) against @T activation rows (lanes: tokens) in the
 * single-token order (the row kernel's, token by token), each weight block
 * unpacked once: for products below the batch kernel's size and the
 * tokens past its last whole group. */
TARGET static inline __attribute__ ((always_inline)) void
q4k_tile_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,
               size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)
{
  if (T <= 4)
    {
      q4k_tile_body4 (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, T);
      return;
    }
  for (int64_t r = 0; r < n_rows; r++)
    {
      const LmBlockQ4_K *w = (const LmBlockQ4_K *) ((const uint8_t *) W + r * row_bytes);
      __m256 acc = _mm256_setzero_ps (), acc_min = _mm256_setzero_ps ();
      lm_prefetch_row ((const uint8_t *) w + LM_PREFETCH_ROWS * row_bytes, row_bytes);
      for (int64_t b = 0; b < n / LM_QK_K; b++)
        {
          K4Block u;
          k4_unpack_q4 (&w[b], &u);
          __m256i sumi[8], mins[8];
          #pragma GCC unroll 8
          for (int t = 0; t < 8; t++)
            if (t < T)
              k4_integers (&u, (const LmBlockQ8_K *) ((const uint8_t *) act + t * act_stride) + b,
                           &sumi[t], &mins[t]);
            else
              sumi[t] = mins[t] = _mm256_setzero_si256 ();
          q4k_combine (sumi, mins, _mm256_set1_ps (u.d), _mm256_set1_ps (u.dmin),
                       q4k_act_scales (act, act_stride, b, T), &acc, &acc_min);
        }
      float out[8];
      _mm256_storeu_ps (out, _mm256_sub_ps (acc, acc_min));
      for (int t = 0; t < T; t++)
        Y[t * y_stride + (size_t) r] = out[t];
    }
}

LM_DEFINE_WIDE_TILE (TARGET, tile_q4_K, q4k_tile_body)

#ifndef Q4K_BATCH_ELSEWHERE
/* Rows [0, n_rows) against @T activation rows (lanes: tokens), in the float
 * order of ggml's repacked batch kernel: each super-block in four steps of
 * two sub-blocks (64 values), each step's integer sums once through float. */
TARGET static inline __attribute__ ((always_inline)) void
q4k_batch_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)
{
  for (int64_t r = 0; r < n_rows; r++)
    {
      const LmBlockQ4_K *w = (const LmBlockQ4_K *) ((const uint8_t *) W + r * row_bytes);
      __m256 acc = _mm256_setzero_ps (), acc_min = _mm256_setzero_ps ();
      lm_prefetch_row ((const uint8_t *) w + LM_PREFETCH_ROWS * row_bytes, row_bytes);
      for (int64_t b = 0; b < n / LM_QK_K; b++)
        {
          K4Block u;
          k4_unpack_q4 (&w[b], &u);
          __m256i m[8], mins[4];
          #pragma GCC unroll 8
          for (int t = 0; t < 8; t++)
            m[t] = t < T ? k4_min_lanes (&u, (const LmBlockQ8_K *) ((const uint8_t *) act
                                                                   + t * act_stride) + b)
                         : _mm256_setzero_si256 ();
          q4k_group_mins (m, mins);
          __m256 d_a = q4k_act_scales (act, act_stride, b, T);
          __m256 d = _mm256_mul_ps (_mm256_set1_ps (u.d), d_a);
          __m256 dmin = _mm256_mul_ps (_mm256_set1_ps (u.dmin), d_a);
          #pragma GCC unroll 4
          for (int g = 0; g < 4; g++)
            {
              __m256i lanes[8];
              #pragma GCC unroll 8
              for (int t = 0; t < 8; t++)
                lanes[t] = t < T ? k4_group_lanes (&u, (const LmBlockQ8_K *) ((const uint8_t *) act
                                                                              + t * act_stride) + b, g)
                                 : _mm256_setzero_si256 ();
              acc = _mm256_fmadd_ps (_mm256_cvtepi32_ps (lane_totals8 (lanes)), d, acc);
              acc_min = _mm256_fmadd_ps (_mm256_cvtepi32_ps (mins[g]), dmin, acc_min);
            }
        }
      float out[8];
      _mm256_storeu_ps (out, _mm256_sub_ps (acc, acc_min));
      for (int t = 0; t < T; t++)
        Y[t * y_stride + (size_t) r] = out[t];
    }
}

LM_DEFINE_WIDE_TILE (TARGET, tile_q4_K_batch, q4k_batch_body)
#endif

/* Rows [r0, r0 + R) against one activation row (lanes: rows). */
TARGET static inline __attribute__ ((always_inline)) void
q4k_row_group (const uint8_t *W, size_t row_bytes, int64_t r0, int R, const LmBlockQ8_K *a,
               int64_t nb, float *y)
{
  __m256 acc = _mm256_setzero_ps (), acc_min = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m256i sumi[8], mins[8];
      float d_w[8] = { 0 }, dmin_w[8] = { 0 };
      /* the next group's block b, spread over the loop as the one-row
       * kernels prefetch: a burst of the next group's whole rows at the
       * start kept fewer reads in flight (AVX-512, 2048 x 4096: 190-205
       * against 152-158 us, the one-row kernel before the llama.cpp order
       * 155) */
      #pragma GCC unroll 8
      for (int j = 0; j < 8; j++)
        {
          const uint8_t *next = W + (r0 + 8 + j) * row_bytes + (size_t) b * sizeof (LmBlockQ4_K);
          __builtin_prefetch (next, 0, 1);
          __builtin_prefetch (next + 64, 0, 1);
          __builtin_prefetch (next + sizeof (LmBlockQ4_K) - 1, 0, 1);
        }
      #pragma GCC unroll 8
      for (int j = 0; j < 8; j++)
        if (j < R)
          {
            K4Block u;
            k4_unpack_q4 ((const LmBlockQ4_K *) (W + (r0 + j) * row_bytes) + b, &u);
            k4_integers (&u, &a[b], &sumi[j], &mins[j]);
            d_w[j] = u.d;
            dmin_w[j] = u.dmin;
          }
        else
          sumi[j] = mins[j] = _mm256_setzero_si256 ();
      q4k_combine (sumi, mins, _mm256_loadu_ps (d_w), _mm256_loadu_ps (dmin_w),
                   _mm256_set1_ps (a[b].d), &acc, &acc_min);
    }
  float out[8];
  _mm256_storeu_ps (out, _mm256_sub_ps (acc, acc_min));
  for (int j = 0; j < R; j++)
    y[r0 + j] = out[j];
}

/* Rows [r0, r0 + R) (R <= 4) against one activation row: row j's sum in
 * lane j and its mins in lane 4 + j of one vector, one fma per block for
 * both. Each lane's arithmetic is q4k_row_group ()'s for that row, so the
 * results are the same; with 8 integer vectors live instead of 16 it fits
 * AVX2's 16 registers, where the 8-row group spilled (30 % slower than the
 * one-row kernel before the llama.cpp order). */
TARGET static inline __attribute__ ((always_inline)) void
q4k_row_group4 (const uint8_t *W, size_t row_bytes, int64_t r0, int R, const LmBlockQ8_K *a,
                int64_t nb, float *y)
{
  __m256 acc = _mm256_setzero_ps ();
  for (int64_t b = 0; b < nb; b++)
    {
      __m256i v[8];
      float scale_w[8] = { 0 };
      #pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        {
          const uint8_t *next = W + (r0 + 4 + j) * row_bytes + (size_t) b * sizeof (LmBlockQ4_K);
          __builtin_prefetch (next, 0, 1);
          __builtin_prefetch (next + 64, 0, 1);
          __builtin_prefetch (next + sizeof (LmBlockQ4_K) - 1, 0, 1);
        }
      #pragma GCC unroll 4
      for (int j = 0; j < 4; j++)
        if (j < R)
          {
            K4Block u;
            k4_unpack_q4 ((const LmBlockQ4_K *) (W + (r0 + j) * row_bytes) + b, &u);
            k4_integers (&u, &a[b], &v[j], &v[4 + j]);
            scale_w[j] = u.d;
            scale_w[4 + j] = u.dmin;
          }
        else
          v[j] = v[4 + j] = _mm256_setzero_si256 ();
      __m256 scale = _mm256_mul_ps (_mm256_loadu_ps (scale_w), _mm256_set1_ps (a[b].d));
      acc = _mm256_fmadd_ps (_mm256_cvtepi32_ps (lane_totals8 (v)), scale, acc);
    }
  float out[4];
  _mm_storeu_ps (out, _mm_sub_ps (_mm256_castps256_ps128 (acc), _mm256_extractf128_ps (acc, 1)));
  for (int j = 0; j < R; j++)
    y[r0 + j] = out[j];
}

/* Q4K_ROW_GROUP (defined by the including file; 8 when not): rows taken
 * together by the row kernel. */
#ifndef Q4K_ROW_GROUP
#define Q4K_ROW_GROUP 8
#endif

TARGET static void
rows_q4_K (const void *W, size_t row_bytes, int64_t n_rows, const void *act, int64_t n, float *y)
{
  int64_t r = 0;
#if Q4K_ROW_GROUP == 4
  for (; r + 4 <= n_rows; r += 4)
    q4k_row_group4 (W, row_bytes, r, 4, act, n / LM_QK_K, y);
  if (r < n_rows)
    q4k_row_group4 (W, row_bytes, r, (int) (n_rows - r), act, n / LM_QK_K, y);
#else
  for (; r + 8 <= n_rows; r += 8)
    q4k_row_group (W, row_bytes, r, 8, act, n / LM_QK_K, y);
  if (r < n_rows)
    q4k_row_group (W, row_bytes, r, (int) (n_rows - r), act, n / LM_QK_K, y);
#endif
}
