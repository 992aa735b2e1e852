/* lm-cuda-matvec.h: weight products on an NVIDIA GPU (internal, C-callable).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Weights stay on the device in their GGUF block form (FORMAT.md 4.1): a
 * matrix of n_out rows of n_in values of @type is n_out consecutive rows of
 * lm_row_bytes(type, n_in) bytes, exactly as in the file, and the kernels
 * dequantise inside the product. Activations and results are f32 in device
 * memory. Types: F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K.
 *
 * Launches are asynchronous on @stream (a cudaStream_t; NULL: the default
 * stream) and allocate nothing, so they may be captured into a CUDA graph.
 * (The first lm_cuda_matmul of a type, and the first decode product with
 * n_in above 12288, raise their kernel's shared-memory limit once: make
 * those calls outside a capture, e.g. in the prefill before capturing the
 * decode step.)
 * They return LM_ERR_UNSUPPORTED for a type they lack, LM_ERR_SHAPE when
 * n_in is not a multiple of the type's block size (or, for the decode
 * products, when x of n_in floats exceeds a block's shared memory: about
 * 57000 values), LM_ERR_INVALID_ARGUMENT for NULL or misaligned weights, and
 * LM_ERR_DEVICE when the launch fails. Thread-safety: none needed, no state
 * is kept.
 *
 * Alignment: w (and mat_stride) must be a multiple of 8 bytes for Q4_K and
 * Q5_K, 2 for Q8_0, Q6_K, F16 and BF16, 4 for F32 (cudaMalloc and GGUF's
 * 32-byte tensor alignment give this). F32/F16/BF16 rows use 16-byte loads
 * when w, the strides and the row length allow, single values otherwise.
 *
 * Arithmetic: weights are decoded exactly as lm_dequantize_row and
 * multiplied with the f32 activations (fmaf) in a fixed order, so results
 * are deterministic and match the CPU's LM_ACT_F32 mode within float
 * rounding; the _ex calls with LM_CUDA_ACT_Q8 match the CPU's default 8-bit
 * activation mode (LM_ACT_NATIVE) instead. lm-cuda-check.h reproduces every
 * product on the host bit for bit.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"   /* LmTensorType, LmStatus */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *LmCudaStream;

/* How the decode products multiply. */
typedef enum {
  /* f32 activations against the decoded weights (kernels.h LM_ACT_F32);
   * the reference, and what lm_cuda_matvec / lm_cuda_matvec_experts use. */
  LM_CUDA_ACT_F32 = 0,
  /* Q8_0 / Q8_K / Q4_K / Q5_K / Q6_K weights: the activations rounded to
   * 8-bit blocks exactly as the CPU's default LM_ACT_NATIVE mode
   * (lm_quantize_row_q8_K, lm_quantize_row_q8_0_act), integer dot products
   * (dp4a), so results match the CPU's native mode within float rounding;
   * fewer instructions per weight than the f32 path. F32/F16/BF16 weights
   * use f32 activations, as on the CPU. */
  LM_CUDA_ACT_Q8 = 1,
} LmCudaActMode;

/* True for the types the kernels below read. */
bool lm_cuda_matvec_supports (LmTensorType type);

/* Decode: y[o] = sum_i W[o][i] x[i] for o < n_out (@accumulate: y[o] += it). */
LmStatus lm_cuda_matvec (LmCudaStream stream, LmTensorType type, const void *w,
                         uint32_t n_in, uint32_t n_out, const float *x, float *y,
                         bool accumulate);

/* lm_cuda_matvec and lm_cuda_matvec_experts with an explicit activation mode. */
LmStatus lm_cuda_matvec_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type,
                            const void *w, uint32_t n_in, uint32_t n_out, const float *x,
                            float *y, bool accumulate);
LmStatus lm_cuda_matvec_experts_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type,
                                    const void *w, size_t mat_stride, uint32_t n_in,
                                    uint32_t n_out, const int32_t *sel, uint32_t k,
                                    const float *x, size_t x_stride, float *y);

/* Prefill: y[t][o] = sum_i W[o][i] x[t][i] for t < n (rows of n_in and n_out
 * floats). */
LmStatus lm_cuda_matmul (LmCudaStream stream, LmTensorType type, const void *w,
                         uint32_t n_in, uint32_t n_out, const float *x, uint32_t n,
                         float *y);

/* lm_cuda_matmul and lm_cuda_matmul_rows with an explicit activation mode.
 * LM_CUDA_ACT_Q8 with Q8_0 / Q4_K / Q5_K / Q6_K weights: each token's row
 * is rounded to 8-bit blocks as the CPU's LM_ACT_NATIVE mode does (once per
 * block of output rows, in shared memory) and multiplied with integer dot
 * products, per token exactly the float sequence of lm_cuda_matvec_ex
 * (LM_CUDA_ACT_Q8) on that row. Otherwise (LM_CUDA_ACT_F32, or F32 / F16 /
 * BF16 weights, which the CPU multiplies with f32 activations in either
 * mode) the same as lm_cuda_matmul / lm_cuda_matmul_rows. The 8-bit path
 * has the decode products' n_in limit (LM_ERR_SHAPE beyond it). */
LmStatus lm_cuda_matmul_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type,
                            const void *w, uint32_t n_in, uint32_t n_out, const float *x,
                            uint32_t n, float *y);
LmStatus lm_cuda_matmul_rows_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type,
                                 const void *w, size_t mat_stride, uint32_t expert,
                                 uint32_t n_in, uint32_t n_out, const float *x,
                                 const int32_t *x_rows, const int32_t *y_rows, uint32_t n_rows,
                                 float *y);

/* Routed experts, decode: for slot j < k, with e = sel[j] (device memory)
 * the matrix at w + e * mat_stride bytes,
 *   y[j][o] = sum_i W_e[o][i] x_j[i],  x_j = x + j * x_stride floats
 * (x_stride 0: every slot reads the same x). One launch for all k slots;
 * the ids are read on the device, so the launch can sit in a CUDA graph. A
 * negative id gives a zero row y[j]; ids must be below the number of
 * matrices at w (not checked on the device). */
LmStatus lm_cuda_matvec_experts (LmCudaStream stream, LmTensorType type, const void *w,
                                 size_t mat_stride, uint32_t n_in, uint32_t n_out,
                                 const int32_t *sel, uint32_t k, const float *x,
                                 size_t x_stride, float *y);

/* Decode products fused into one launch, for a SwiGLU FFN (dense, shared
 * or routed experts): the gate and up products of one input, and the down
 * product reading SiLU(gate) * up without writing it out.
 *   slot j < k:  y[j] = W_j x_j, with W_j the matrix at
 *                w + sel[j] * mat_stride (sel NULL: w, and k must be 1),
 *                x_j = x + j * x_stride floats (x_stride 0: one x for all),
 *                and with x_up set, x_j[i] replaced by
 *                SiLU(x_j[i]) * x_up_j[i] (the float sequence of
 *                lm_cuda_swiglu, so the result has the same bits);
 *   w_pair set:  the same for a second matrix of the same type and shape,
 *                into y_pair (rows of n_out floats).
 * sel and the vectors are device memory; errors as lm_cuda_matvec_ex. */
typedef struct {
  LmTensorType type;
  const void *w, *w_pair;
  size_t mat_stride;
  const int32_t *sel;
  uint32_t k, n_in, n_out;
  const float *x, *x_up;
  size_t x_stride;
  float *y, *y_pair;
} LmCudaProduct;
LmStatus lm_cuda_matvec_product (LmCudaStream stream, LmCudaActMode mode,
                                 const LmCudaProduct *product);

/* Routed experts, prefill: the matrix at w + expert * mat_stride applied to
 * @n_rows gathered rows, y[y_rows[i]] = W x[x_rows[i]] (rows of n_in and
 * n_out floats; x_rows, y_rows: device memory). */
LmStatus lm_cuda_matmul_rows (LmCudaStream stream, LmTensorType type, const void *w,
                              size_t mat_stride, uint32_t expert, uint32_t n_in,
                              uint32_t n_out, const float *x, const int32_t *x_rows,
                              const int32_t *y_rows, uint32_t n_rows, float *y);

/* Dequantises @n values (a multiple of the block size) at @src into @dst
 * (the embedding lookup): bit-exact with lm_dequantize_row. */
LmStatus lm_cuda_dequantize_row (LmCudaStream stream, LmTensorType type, const void *src,
                                 float *dst, uint32_t n);

#ifdef __cplusplus
}
#endif
