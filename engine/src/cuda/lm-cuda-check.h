/* lm-cuda-check.h: host-side evidence for the GPU product kernels (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The block decoders and reduction schedules of lm-cuda-matvec.cu, compiled
 * as host code: they run without a GPU, so the tests check them here and in
 * CI, and on a GPU the kernels must reproduce the emulations bit for bit.
 * All functions are pure host code on host memory; reentrant. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"   /* LmTensorType, LmStatus */
#include "lm-cuda-matvec.h"   /* LmCudaActMode */

#ifdef __cplusplus
extern "C" {
#endif

/* Decodes @rounds random rows (random bytes: every bit pattern, NaN and Inf
 * scales included) of every supported type with the device decoders, unit by
 * unit and block by block, and compares them bit for bit with
 * lm_dequantize_row; also checks that the units of a block cover each of its
 * positions exactly once. False, with the first difference in @why, if not. */
bool lm_cuda_check_blocks (uint64_t seed, int rounds, char *why, size_t why_len);

/* The float sequence of lm_cuda_matvec_ex / lm_cuda_matvec_experts_ex (sel
 * NULL: one slot of the matrix at w; else slots k, sel[j] < 0 giving zeros)
 * on host memory, the activations of LM_CUDA_ACT_Q8 quantised by the CPU's
 * own lm_quantize_row_q8_K / lm_quantize_row_q8_0_act. Same arguments and
 * errors as the GPU calls. The choice
 * between the 16-byte and scalar forms of F32/F16/BF16 follows the
 * addresses as on the device: give both 16-byte aligned buffers. */
LmStatus lm_cuda_matvec_host (LmCudaActMode mode, LmTensorType type, const void *w, size_t mat_stride,
                              const int32_t *sel, uint32_t k, uint32_t n_in, uint32_t n_out,
                              const float *x, size_t x_stride, float *y, bool accumulate);

/* The float sequence of lm_cuda_matmul (x_rows, y_rows NULL) and
 * lm_cuda_matmul_rows (w already at the expert's matrix) on host memory. */
LmStatus lm_cuda_matmul_host (LmTensorType type, const void *w, uint32_t n_in, uint32_t n_out,
                              const float *x, const int32_t *x_rows, const int32_t *y_rows,
                              uint32_t n, float *y);

/* The float sequence of lm_cuda_matmul_ex / lm_cuda_matmul_rows_ex (w
 * already at the expert's matrix) on host memory: with LM_CUDA_ACT_Q8 and
 * Q8_0 / K-quant weights, each token's row block by row block as the
 * 8-bit prefill kernel runs it (its activations quantised by the CPU's own
 * functions, as in lm_cuda_matvec_host); otherwise lm_cuda_matmul_host. */
LmStatus lm_cuda_matmul_host_ex (LmCudaActMode mode, LmTensorType type, const void *w,
                                 uint32_t n_in, uint32_t n_out, const float *x,
                                 const int32_t *x_rows, const int32_t *y_rows, uint32_t n,
                                 float *y);

#ifdef __cplusplus
}
#endif
