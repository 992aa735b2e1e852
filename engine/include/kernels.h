/* kernels.h: dot products and matrix-vector / matrix-matrix products per tensor type.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Weights are ggml rows: W[n_out][n_in] in the tensor's type, row r at
 * W + r * lm_row_bytes(type, n_in). Activations are f32.
 *
 * Two activation modes:
 *  - LM_ACT_NATIVE (default, what lm_matvec / lm_matmul use): like llama.cpp's
 *    CPU backend, the activation row is first rounded to 8-bit blocks (Q8_0 for
 *    Q4_0/Q5_0/Q8_0 weights, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants;
 *    lm_quantize_row_q8_0_act / lm_quantize_row_q8_1_act / lm_quantize_row_q8_K)
 *    and the dot products are integer (AVX-512 VNNI, AVX2 maddubs).
 *    F32/F16/BF16 weights always use f32 activations.
 *    Matches the "native" goldens of the quantised test models.
 *  - LM_ACT_F32: exact f32 activations against the weights decoded on the fly;
 *    matches the `dequant_f32_*` goldens (slower).
 *
 * Every output element is computed by exactly one thread with one fixed
 * operation order, so results are identical for any thread count, and a token
 * of lm_matmul gets exactly the numbers lm_matvec gives for it (same kernels).
 * Different instruction sets (scalar / AVX2 / AVX-512) agree up to float
 * rounding of the summation order.
 *
 * Thread-safety: all functions are reentrant; the buffers belong to the caller.
 * They do not validate shapes beyond what is documented: n_in must be a
 * multiple of lm_type_block_size(type) and W must hold n_out rows.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "quant.h"
#include "threadpool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LM_ISA_SCALAR = 0,   /* portable C, the reference */
  LM_ISA_AVX2 = 1,     /* AVX2 + FMA + F16C */
  LM_ISA_AVX512 = 2,   /* AVX-512 F/BW/DQ/VL + VNNI */
  LM_ISA_COUNT
} LmIsa;

typedef enum {
  LM_ACT_NATIVE = 0,
  LM_ACT_F32 = 1,
} LmActMode;

typedef struct LmKernels LmKernels;

/* The kernels of @isa, or NULL when this CPU lacks it (chosen via cpuid). */
const LmKernels *lm_kernels_for_isa (LmIsa isa);
/* The fastest kernels this CPU supports; what lm_matvec / lm_matmul use. */
const LmKernels *lm_kernels_best (void);
LmIsa lm_kernels_isa (const LmKernels *kernels);
const char *lm_isa_name (LmIsa isa);

/* y[n_out] = W[n_out][n_in] · x[n_in]; W in `type`, rows contiguous (ggml
 * layout). Threaded over rows with pool (NULL = caller thread). Deterministic:
 * identical results for any thread count. Native activation mode, best ISA. */
void lm_matvec (LmThreadPool *pool, LmTensorType type, const void *W, int64_t n_in,
                int64_t n_out, const float *x, float *y);
/* Y[n_tok][n_out] = X[n_tok][n_in] · W^T, for prefill. Row t of Y equals
 * lm_matvec of row t of X bit for bit, except for the first
 * lm_matmul_batch_tokens() rows. */
void lm_matmul (LmThreadPool *pool, LmTensorType type, const void *W, int64_t n_in,
                int64_t n_out, const float *X, int64_t n_tok, float *Y);

/* The same with explicit kernels and activation mode (tests, benchmarks, and
 * checks against the dequant_f32 goldens). */
void lm_matvec_ex (const LmKernels *kernels, LmActMode mode, LmThreadPool *pool,
                   LmTensorType type, const void *W, int64_t n_in, int64_t n_out,
                   const float *x, float *y);
void lm_matmul_ex (const LmKernels *kernels, LmActMode mode, LmThreadPool *pool,
                   LmTensorType type, const void *W, int64_t n_in, int64_t n_out,
                   const float *X, int64_t n_tok, float *Y);

/* How many leading tokens of an @n_tok product with native activations
 * take @type's batch kernel, whose float order is llama.cpp's for batches
 * (Q4_K: whole groups of 4 tokens; Q6_K: all tokens from 8 on) and not its
 * single-token one; 0 for the other types. */
int64_t lm_matmul_batch_tokens (const LmKernels *kernels, LmTensorType type, int64_t n_tok);

/* Lower level: the activation a weight type is multiplied with in @mode
 * (LM_TYPE_F32, LM_TYPE_Q8_0, LM_ACT_TYPE_Q8_1 or LM_ACT_TYPE_Q8_K), its size
 * for @n values, and the conversion. */
#define LM_ACT_TYPE_Q8_1 ((LmTensorType) 9)    /* GGML_TYPE_Q8_1 */
#define LM_ACT_TYPE_Q8_K ((LmTensorType) 15)   /* GGML_TYPE_Q8_K */
LmTensorType lm_act_type (LmTensorType weight_type, LmActMode mode);
size_t lm_act_row_bytes (LmTensorType weight_type, LmActMode mode, int64_t n);
void lm_quantize_act (const LmKernels *kernels, LmTensorType weight_type, LmActMode mode,
                      const float *x, void *act, int64_t n);
/* y[r] = dot(row r of W, act) for r in [0, n_rows); rows @row_bytes apart;
 * @act prepared by lm_quantize_act for the same type and mode. */
void lm_dot_rows (const LmKernels *kernels, LmTensorType type, LmActMode mode,
                  const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                  int64_t n, float *y);
/* lm_dot_rows for a product one thread computes alone (no other thread of
 * it reading weights at the same time): the same results bit for bit, with
 * the kernel that is faster on a core alone where the ISA has one. */
void lm_dot_rows_alone (const LmKernels *kernels, LmTensorType type, LmActMode mode,
                        const void *W, size_t row_bytes, int64_t n_rows, const void *act,
                        int64_t n, float *y);

/* ---- attention and the gated linear unit ---- */

/* Queries that share one kv head (the heads of a GQA group, of one or more
 * tokens), attended in one pass over that head's cache. */
#define LM_ATTN_QUERIES 16
typedef struct {
  uint32_t n_q;                          /* 1 .. LM_ATTN_QUERIES */
  const float *q[LM_ATTN_QUERIES];       /* hd floats each */
  uint32_t n_pos[LM_ATTN_QUERIES];       /* cached positions each sees (causal), >= 1 */
  float *out[LM_ATTN_QUERIES];           /* hd floats each */
  const float *k, *v;                    /* position p's key and value at p * kvd */
  uint32_t kvd, hd;
  float scale;
  bool one_token;                        /* the step computes one token (decode) */
} LmAttnQueries;

/* out = softmax(scale * q·K) · V for every query, each computed the same
 * way whatever the others in the call and on every ISA, bit for bit: the
 * arithmetic of llama.cpp's CPU attention without flash attention (its
 * AVX-512 build), so that a model's logits can follow llama.cpp's exactly.
 * Lane sums below are reduce16: x_0 + ... + x_15 in the order of GCC's
 * _mm512_reduce_add_ps (halves, quarters, then (0 + 2) + (1 + 3)).
 *  - score s_p = q·k_p: per 64 values, four fused multiply-add chains of 16
 *    lanes (value 64i + 16j + l in chain j, lane l), combined as
 *    (0 + 2) + (1 + 3) and by reduce16; the last hd % 64 products then
 *    chained onto that one by one; times scale;
 *  - e_p = lm_expf_poly (s_p - max s) (expf-poly.h), 0 for p >= n_pos;
 *  - sum = the reduce16 of each 16 positions, added in double;
 *    P_p = e_p * (float) (1 / sum);
 *  - out_d = reduce16 of the 16 chains P_p v_pd + ... over the positions
 *    p = l, l + 16, l + 32, ... of lane l (llama.cpp's batched product);
 *    for one_token, its single-token dot product: each lane's positions
 *    in four chains by (p / 16) % 4, combined as (0 + 2) + (1 + 3), then
 *    reduce16.
 * @scratch holds lm_attend_scratch_floats (largest n_pos, hd) floats. */
size_t lm_attend_scratch_floats (uint32_t max_pos, uint32_t hd);
void lm_attend (const LmKernels *kernels, const LmAttnQueries *a, float *scratch);

/* gate[i] = silu (gate[i]) * up[i], SiLU as lm_silu_poly (expf-poly.h). */
void lm_swiglu (const LmKernels *kernels, float *gate, const float *up, size_t n);

#ifdef __cplusplus
}
#endif
