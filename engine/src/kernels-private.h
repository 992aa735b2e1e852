/* kernels-private.h: the per-ISA kernel table behind kernels.h.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal to libtensafe-engine. Each kernels-<isa>.c fills the entries it
 * accelerates; the rest keep the scalar reference. */
#pragma once

#include "kernels.h"

/* y[r] = dot(row r, act) for r < n_rows; rows row_bytes apart, n values each. */
typedef void (*LmDotRowsFn) (const void *W, size_t row_bytes, int64_t n_rows,
                             const void *act, int64_t n, float *y);
/* Y[t * y_stride + r] = dot(row r, activation row t) for r < n_rows and
 * t < n_tok (2 <= n_tok <= the kernel's width), activation rows act_stride
 * bytes apart; identical to LmDotRowsFn per token. For prefill: each weight
 * block is unpacked once for all n_tok tokens. Tiles narrower than their
 * width matter for routed experts, which see only a few tokens of a prompt
 * each. LM_DEFINE_TILE makes tiles of width LM_TILE_TOKENS; kernels that
 * unpack a block in fewer instructions than they spend per token take more
 * (up to LM_TILE_TOKENS_MAX). */
#define LM_TILE_TOKENS 4
#define LM_TILE_TOKENS_MAX 8
typedef void (*LmDotTileFn) (const void *W, size_t row_bytes, int64_t n_rows,
                             const void *act, size_t act_stride, int64_t n, int n_tok,
                             float *Y, size_t y_stride);

/* Defines the LmDotTileFn @name for the ISA of @target over @body, an
 * always-inline function with @body's arguments and a constant token count
 * last, so that each width is compiled with its loops unrolled. */
#define LM_DEFINE_TILE(target, name, body)                                        \
  target static void name (const void *W, size_t row_bytes, int64_t n_rows,       \
                           const void *act, size_t act_stride, int64_t n,         \
                           int n_tok, float *Y, size_t y_stride)                  \
  {                                                                               \
    switch (n_tok)                                                                \
      {                                                                           \
      case 2:                                                                     \
        body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 2);          \
        break;                                                                    \
      case 3:                                                                     \
        body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride, 3);          \
        break;                                                                    \
      default:                                                                    \
        body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride,              \
              LM_TILE_TOKENS);                                                    \
        break;                                                                    \
      }                                                                           \
  }
/* LM_DEFINE_TILE for tiles of LM_TILE_TOKENS_MAX: a full one in one pass,
 * narrower ones as tiles of up to LM_TILE_TOKENS (each token's arithmetic
 * is its own, so the split changes no result). */
#define LM_DEFINE_WIDE_TILE(target, name, body)                                   \
  LM_DEFINE_TILE (target, name##_narrow, body)                                    \
  target static void name (const void *W, size_t row_bytes, int64_t n_rows,       \
                           const void *act, size_t act_stride, int64_t n,         \
                           int n_tok, float *Y, size_t y_stride)                  \
  {                                                                               \
    if (n_tok == LM_TILE_TOKENS_MAX)                                              \
      {                                                                           \
        body (W, row_bytes, n_rows, act, act_stride, n, Y, y_stride,              \
              LM_TILE_TOKENS_MAX);                                                \
        return;                                                                   \
      }                                                                           \
    for (int t = 0; t < n_tok;)                                                   \
      {                                                                           \
        int w = n_tok - t < LM_TILE_TOKENS ? n_tok - t : LM_TILE_TOKENS;          \
        const uint8_t *a = (const uint8_t *) act + (size_t) t * act_stride;       \
        if (w == 1)                                                               \
          body (W, row_bytes, n_rows, a, act_stride, n, Y + t * y_stride,         \
                y_stride, 1);                                                     \
        else                                                                      \
          name##_narrow (W, row_bytes, n_rows, a, act_stride, n, w,               \
                         Y + t * y_stride, y_stride);                             \
        t += w;                                                                   \
      }                                                                           \
  }
typedef void (*LmActQuantFn) (const float *x, void *act, int64_t n);
typedef void (*LmAttendFn) (const LmAttnQueries *a, float *scratch);
typedef void (*LmSwigluFn) (float *gate, const float *up, size_t n);

typedef enum {
  LM_KT_F32, LM_KT_F16, LM_KT_BF16, LM_KT_Q8_0, LM_KT_Q4_K, LM_KT_Q5_K, LM_KT_Q6_K,
  LM_KT_Q4_0, LM_KT_Q4_1, LM_KT_Q5_0, LM_KT_Q5_1, LM_KT_Q2_K, LM_KT_Q3_K,
  LM_KT_COUNT
} LmKernelType;

struct LmKernels {
  LmIsa isa;
  LmDotRowsFn native[LM_KT_COUNT];   /* against 8-bit activations; NULL for float types */
  /* optional: native's results bit for bit, faster when one thread runs the
   * whole product and slower when another streams memory beside it */
  LmDotRowsFn native_alone[LM_KT_COUNT];
  LmDotRowsFn f32act[LM_KT_COUNT];   /* against f32 activations */
  LmDotTileFn native_tile[LM_KT_COUNT]; /* optional: several tokens at once */
  LmDotTileFn f32act_tile[LM_KT_COUNT]; /* optional: f32act's, LM_TILE_TOKENS_MAX wide */
  uint8_t tile_tokens[LM_KT_COUNT];     /* the width of native_tile */
  /* Optional: a batch kernel with a float order of its own (llama.cpp's
   * for batches of that type), which takes the tokens of a product of at
   * least batch_tokens tokens in whole groups of batch_step, a lone one
   * included, in tiles of up to batch_width; the rest, and smaller
   * products, get the single-token order (native_tile, native). */
  LmDotTileFn batch_tile[LM_KT_COUNT];
  uint8_t batch_width[LM_KT_COUNT];
  uint8_t batch_tokens[LM_KT_COUNT];
  uint8_t batch_step[LM_KT_COUNT];
  LmActQuantFn quantize_q8_0;
  LmActQuantFn quantize_q8_1;
  LmActQuantFn quantize_q8_K;
  LmAttendFn attend;
  LmSwigluFn swiglu;
};

static inline void
lm_set_tile (LmKernels *k, LmKernelType type, LmDotTileFn tile, int width)
{
  k->native_tile[type] = tile;
  k->tile_tokens[type] = (uint8_t) width;
}

/* Sets f32act's row kernel and tile (NULL: none) of @type together: an ISA
 * that replaces a row kernel must not keep the tile of the table it was
 * copied from, whose float order may differ. */
static inline void
lm_set_f32act (LmKernels *k, LmKernelType type, LmDotRowsFn rows, LmDotTileFn tile)
{
  k->f32act[type] = rows;
  k->f32act_tile[type] = tile;
}

static inline void
lm_set_batch_tile (LmKernels *k, LmKernelType type, LmDotTileFn tile, int width, int min_tokens,
                   int step)
{
  k->batch_tile[type] = tile;
  k->batch_width[type] = (uint8_t) width;
  k->batch_tokens[type] = (uint8_t) min_tokens;
  k->batch_step[type] = (uint8_t) step;
}

/* Asks for the row PREFETCH_ROWS ahead into L2. A row loop is a pure stream,
 * but one core's line-fill buffers alone cannot keep enough DRAM reads in
 * flight; prefetches into L2 use its deeper queue (measured: +30-50 % on
 * streamed weights). */
#define LM_PREFETCH_ROWS 4

static inline void
lm_prefetch_row (const uint8_t *row, size_t row_bytes)
{
  for (size_t off = 0; off < row_bytes; off += 64)
    __builtin_prefetch (row + off, 0, 1);
}

/* Defines a row loop @name over @dot (rows of @wtype blocks against @atype
 * activations, @per values per block) for the ISA of @target. */
#define LM_DEFINE_ROWS(target, name, dot, wtype, atype, per)                      \
  target static void name (const void *W, size_t row_bytes, int64_t n_rows,       \
                           const void *act, int64_t n, float *y)                  \
  {                                                                               \
    const uint8_t *w = W;                                                         \
    for (int64_t r = 0; r < n_rows; r++)                                          \
      {                                                                           \
        lm_prefetch_row (w + (r + LM_PREFETCH_ROWS) * row_bytes, row_bytes);      \
        y[r] = dot ((const wtype *) (w + r * row_bytes), (const atype *) act,     \
                    n / (per));                                                   \
      }                                                                           \
  }

/* The row kernel rows_@name and the tile tile_@name (widths up to
 * LM_TILE_TOKENS_MAX) of f32 activations, both from @body, a tile body as
 * LM_DEFINE_TILE takes: one token's arithmetic is the same in both, so a
 * prompt's tokens get the numbers decode gets. */
#define LM_DEFINE_F32ACT(target, name, body)                                      \
  target static void rows_##name (const void *W, size_t row_bytes, int64_t n_rows, \
                                  const void *act, int64_t n, float *y)           \
  {                                                                               \
    body (W, row_bytes, n_rows, act, 0, n, y, 0, 1);                              \
  }                                                                               \
  LM_DEFINE_WIDE_TILE (target, tile_##name, body)

/* -1 when the type has no kernels. */
int lm_kernel_type_index (LmTensorType type);

void lm_kernels_fill_scalar (LmKernels *k);
/* The native kernels of Q4_0/Q4_1/Q5_0/Q5_1/Q2_K/Q3_K (kernels-scalar-lowbit.c,
 * kernels-avx2-q4q5.c, kernels-avx2-k23.c, kernels-avx512-q4q5.c), called by
 * the fills of their ISA. */
void lm_kernels_fill_scalar_lowbit (LmKernels *k);
void lm_kernels_fill_avx2 (LmKernels *k);
void lm_kernels_fill_avx2_q4q5 (LmKernels *k);
void lm_kernels_fill_avx2_k23 (LmKernels *k);
void lm_kernels_fill_avx512 (LmKernels *k);
void lm_kernels_fill_avx512_q4q5 (LmKernels *k);
/* The Q5_0/Q5_1 kernels for CPUs with AVX-512 VBMI (kernels-avx512vbmi-q5.c),
 * over those of lm_kernels_fill_avx512_q4q5. */
void lm_kernels_fill_avx512vbmi_q5 (LmKernels *k);
/* The Q4_K batch kernel with the tokens in the lanes (kernels-avx512-q4k.c). */
void lm_kernels_fill_avx512_q4k (LmKernels *k);
/* Products of quantised weights with f32 activations (kernels-avx512-f32act.c,
 * kernels-avx2-f32act.c). */
void lm_kernels_fill_avx512_f32act (LmKernels *k);
void lm_kernels_fill_avx2_f32act (LmKernels *k);
/* Attention and SwiGLU (kernels-scalar-attn.c, kernels-avx2-attn.c,
 * kernels-avx512-attn.c). */
void lm_kernels_fill_scalar_attn (LmKernels *k);
void lm_kernels_fill_avx2_attn (LmKernels *k);
void lm_kernels_fill_avx512_attn (LmKernels *k);
