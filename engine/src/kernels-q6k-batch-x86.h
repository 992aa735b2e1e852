/* kernels-q6k-batch-x86.h: the batch kernel of Q6_K weights against Q8_K
 * activations, shared by the AVX2 and AVX-512 kernel files.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. ggml's CPU backend multiplies a Q6_K matrix with a batch of at
 * least 8 activation rows in its tiled kernel, whose float arithmetic is
 * not that of its single-token product: per (row, token) and super-block
 * the integer sum over the 16 sub-blocks (scale times (quants times
 * activations less 32 times the activation sums)) goes through float once,
 * and the super-blocks are combined as
 *   acc = fma (total * d_w, d_a, acc)
 * (its source writes a product and an add; the compiler fuses them, as
 * the build that made the reference data did: checked against its
 * outputs). This kernel computes that
 * for every token of such a product (kernels-dispatch.c routes by batch
 * size); the row and tile kernels keep the single-token arithmetic.
 *
 * A row's eight tokens share one 8-lane float vector. The including file
 * defines TARGET, includes kernels-x86.h and defines first:
 *   Q6Block: one unpacked super-block, with a member float d;
 *   q6_unpack (w, u): unpacks the Q6_K block w into u;
 *   q6_lanes (u, a): the block against the Q8_K block a as an int32 vector
 *     whose lane total is the super-block's integer sum. */
#pragma once

#ifndef TARGET
#error "define TARGET before including kernels-q6k-batch-x86.h"
#endif

TARGET static inline __attribute__ ((always_inline)) void
q6k_batch_body (const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)
{
  /* the activation scales of block b of each token: a gather from a[0][b].d */
  const __m256i offsets = _mm256_mullo_epi32 (_mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7),
                                              _mm256_set1_epi32 ((int) act_stride));
  const __m256 live = _mm256_castsi256_ps (_mm256_cmpgt_epi32 (_mm256_set1_epi32 (T),
                                                               _mm256_setr_epi32 (0, 1, 2, 3, 4, 5, 6, 7)));
  for (int64_t r = 0; r < n_rows; r++)
    {
      const LmBlockQ6_K *w = (const LmBlockQ6_K *) ((const uint8_t *) W + r * row_bytes);
      __m256 acc = _mm256_setzero_ps ();
      lm_prefetch_row ((const uint8_t *) w + LM_PREFETCH_ROWS * row_bytes, row_bytes);
      for (int64_t b = 0; b < n / LM_QK_K; b++)
        {
          Q6Block u;
          q6_unpack (&w[b], &u);
          __m256i lanes[8];
          #pragma GCC unroll 8
          for (int t = 0; t < 8; t++)
            lanes[t] = t < T ? q6_lanes (&u, (const LmBlockQ8_K *) ((const uint8_t *) act
                                                                   + t * act_stride) + b)
                             : _mm256_setzero_si256 ();
          const float *d0 = &((const LmBlockQ8_K *) act)[b].d;
          __m256 d_a = _mm256_mask_i32gather_ps (_mm256_setzero_ps (), d0, offsets, live, 1);
          __m256 scaled = _mm256_mul_ps (_mm256_cvtepi32_ps (lane_totals8 (lanes)), _mm256_set1_ps (u.d));
          acc = _mm256_fmadd_ps (scaled, d_a, acc);
        }
      float out[8];
      _mm256_storeu_ps (out, acc);
      for (int t = 0; t < T; t++)
        Y[t * y_stride + (size_t) r] = out[t];
    }
}

LM_DEFINE_WIDE_TILE (TARGET, tile_q6_K_batch, q6k_batch_body)
