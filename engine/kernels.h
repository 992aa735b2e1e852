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
 * lm_matvec of row t of X bit for bit. */
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

#ifdef __cplusplus
}
#endif
