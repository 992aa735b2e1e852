/* kernels-f32act-x86.h: the tiles and row kernels of f32 activations
 * (LM_ACT_F32) over an ISA's block functions, for kernels-avx512-f32act.c
 * and kernels-avx2-f32act.c.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. The including file defines TARGET, the vector type F32_VEC with
 * F32_VEC_ZERO () and F32_VEC_SUM (v) (its horizontal sum), and the block
 * functions q32_block, q8_0_block, q4_K_block and q6_K_block: each adds
 * block b of a row times T tokens' activations into one F32_VEC per token.
 * It then calls f32act_fill () from its fill function. */
#pragma once

#include "kernels-q32-kinds.h"

#if !defined(TARGET) || !defined(F32_VEC)
#error "define TARGET and F32_VEC before including kernels-f32act-x86.h"
#endif

/* The first four are the Kind of kernels-q32-kinds.h. */
typedef enum { F32_Q4_0, F32_Q5_0, F32_Q4_1, F32_Q5_1, F32_Q8_0, F32_Q4_K, F32_Q6_K } F32Kind;

static inline __attribute__ ((always_inline)) int64_t
block_values (F32Kind f)
{
  return f == F32_Q4_K || f == F32_Q6_K ? LM_QK_K : LM_QK32;
}

TARGET static inline __attribute__ ((always_inline)) void
add_block (const uint8_t *row, int64_t b, const void *act, size_t act_stride, F32_VEC *acc,
           const int T, const F32Kind f)
{
  switch (f)
    {
    case F32_Q8_0: q8_0_block (row, b, act, act_stride, acc, T); break;
    case F32_Q4_K: q4_K_block (row, b, act, act_stride, acc, T); break;
    case F32_Q6_K: q6_K_block (row, b, act, act_stride, acc, T); break;
    default: q32_block (row, b, act, act_stride, acc, T, (Kind) f); break;
    }
}

/* The product of rows [0, n_rows) with @T activation rows act_stride bytes
 * apart (Y[t * y_stride + r]). Each block is decoded once for all @T
 * tokens, and each token's sum is one register carried over the row's
 * blocks in order, as for a single token (T = 1, the row kernel): a
 * prompt's tokens get decode's numbers, bit for bit. The token loops are
 * unrolled so that the sums stay in registers (kept in memory, a store and
 * a load around every multiply-add, the tiles were 1.7 times slower).
 * Going over the blocks in chunks, so that 8 tokens' activations of a
 * 4864-value row stay in L1, measured no faster. */
TARGET static inline __attribute__ ((always_inline)) void
f32_tile (const void *W, size_t row_bytes, int64_t n_rows, const void *act, size_t act_stride,
          int64_t n, float *Y, size_t y_stride, const int T, const F32Kind f)
{
  const int64_t nb = n / block_values (f);

  for (int64_t r = 0; r < n_rows; r++)
    {
      const uint8_t *row = (const uint8_t *) W + r * row_bytes;
      F32_VEC acc[LM_TILE_TOKENS_MAX];

      lm_prefetch_row (row + LM_PREFETCH_ROWS * row_bytes, row_bytes);
      #pragma GCC unroll 8
      for (int t = 0; t < T; t++)
        acc[t] = F32_VEC_ZERO ();
      for (int64_t b = 0; b < nb; b++)
        add_block (row, b, act, act_stride, acc, T, f);
      #pragma GCC unroll 8
      for (int t = 0; t < T; t++)
        Y[t * y_stride + (size_t) r] = F32_VEC_SUM (acc[t]);
    }
}

/* Each format's tile body, as LM_DEFINE_F32ACT takes it. */
#define F32_BODY(name, kind)                                                             \
  TARGET static inline __attribute__ ((always_inline)) void                              \
  name (const void *W, size_t row_bytes, int64_t n_rows, const void *act,                \
        size_t act_stride, int64_t n, float *Y, size_t y_stride, const int T)            \
  {                                                                                      \
    f32_tile (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, T, kind);           \
  }

F32_BODY (q4_0_f32_body, F32_Q4_0)
F32_BODY (q5_0_f32_body, F32_Q5_0)
F32_BODY (q4_1_f32_body, F32_Q4_1)
F32_BODY (q5_1_f32_body, F32_Q5_1)
F32_BODY (q8_0_f32_body, F32_Q8_0)
F32_BODY (q4_K_f32_body, F32_Q4_K)
F32_BODY (q6_K_f32_body, F32_Q6_K)

LM_DEFINE_F32ACT (TARGET, q4_0_f32, q4_0_f32_body)
LM_DEFINE_F32ACT (TARGET, q5_0_f32, q5_0_f32_body)
LM_DEFINE_F32ACT (TARGET, q4_1_f32, q4_1_f32_body)
LM_DEFINE_F32ACT (TARGET, q5_1_f32, q5_1_f32_body)
LM_DEFINE_F32ACT (TARGET, q8_0_f32, q8_0_f32_body)
LM_DEFINE_F32ACT (TARGET, q4_K_f32, q4_K_f32_body)
LM_DEFINE_F32ACT (TARGET, q6_K_f32, q6_K_f32_body)

static void
f32act_fill (LmKernels *k)
{
  lm_set_f32act (k, LM_KT_Q4_0, rows_q4_0_f32, tile_q4_0_f32);
  lm_set_f32act (k, LM_KT_Q5_0, rows_q5_0_f32, tile_q5_0_f32);
  lm_set_f32act (k, LM_KT_Q4_1, rows_q4_1_f32, tile_q4_1_f32);
  lm_set_f32act (k, LM_KT_Q5_1, rows_q5_1_f32, tile_q5_1_f32);
  lm_set_f32act (k, LM_KT_Q8_0, rows_q8_0_f32, tile_q8_0_f32);
  lm_set_f32act (k, LM_KT_Q4_K, rows_q4_K_f32, tile_q4_K_f32);
  lm_set_f32act (k, LM_KT_Q6_K, rows_q6_K_f32, tile_q6_K_f32);
}
