/* ckks-cuda-kernels.h: CKKS arithmetic on device memory (internal, C-callable).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Layout: an RNS polynomial on the device is n_limbs * N uint64_t, limb i at
 * poly + i * N and reduced mod q_i (the context's i-th prime), exactly the
 * CPU layout (ckks-internal.h). A batch is @count such polynomials, the p-th
 * at data + p * stride words (stride >= n_limbs * N). Every kernel gives
 * results bit for bit equal to the CPU scalar backend on the same inputs:
 * all arithmetic is on integers and every output is fully reduced.
 *
 * Launches are asynchronous on @stream (a cudaStream_t; NULL: the default
 * stream) and allocate nothing, so they may be captured into a CUDA graph.
 * They return CKKS_ERR_INVALID_ARGUMENT for shapes they cannot run and
 * CKKS_ERR_DEVICE when the launch fails; a kernel's own failure shows at the
 * next synchronisation.
 *
 * Ownership: a CkksCudaTables belongs to its creator; it keeps no pointer to
 * the context. Thread-safety: tables are read-only after creation and may be
 * used by any number of streams and threads at once.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-params.h"
#include "ckks-status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *CkksCudaStream;

/* A context's per-limb constants in device memory: NTT twiddles (psi_rev,
 * ipsi_rev and their 64-bit Shoup companions), N^-1, the Barrett constants
 * and the garner[i][j] = q_j^-1 mod q_i table of rescale. */
typedef struct CkksCudaTables CkksCudaTables;

/* Uploads the tables of every limb of @ctx (blocking). CKKS_ERR_DEVICE when
 * the GPU is missing or full. */
CkksStatus ckks_cuda_tables_new (const CkksContext *ctx, CkksCudaTables **out);
void ckks_cuda_tables_free (CkksCudaTables *tables);
size_t ckks_cuda_tables_ring_degree (const CkksCudaTables *tables);
uint32_t ckks_cuda_tables_limbs (const CkksCudaTables *tables);

/* Negacyclic NTT of limbs [0, n_limbs) of @count polynomials, in place.
 * Forward: natural order in, bit-reversed evaluation order out (the CPU's
 * ckks_ntt_forward_limb); inverse: the converse, scaled by N^-1. */
CkksStatus ckks_cuda_ntt_forward (CkksCudaStream stream, const CkksCudaTables *t,
                                  uint64_t *data, uint32_t n_limbs, uint32_t count,
                                  size_t stride);
CkksStatus ckks_cuda_ntt_inverse (CkksCudaStream stream, const CkksCudaTables *t,
                                  uint64_t *data, uint32_t n_limbs, uint32_t count,
                                  size_t stride);

/* The same transforms as one plain kernel per stage on global memory: the
 * test reference of the fused kernels above (same results, slower). */
CkksStatus ckks_cuda_ntt_forward_reference (CkksCudaStream stream, const CkksCudaTables *t,
                                            uint64_t *data, uint32_t n_limbs,
                                            uint32_t count, size_t stride);
CkksStatus ckks_cuda_ntt_inverse_reference (CkksCudaStream stream, const CkksCudaTables *t,
                                            uint64_t *data, uint32_t n_limbs,
                                            uint32_t count, size_t stride);

/* out = a + b, limb-wise, over @n_limbs limbs of one polynomial (out may
 * alias a or b). */
CkksStatus ckks_cuda_add (CkksCudaStream stream, const CkksCudaTables *t, uint64_t *out,
                          const uint64_t *a, const uint64_t *b, uint32_t n_limbs);

/* ct x pt with accumulation, the evaluator's inner loop: for each output
 * b < n_out and each input k < n_in,
 *   out0[b] (+)= sum_k a0[k] * w[b][k],  out1[b] (+)= sum_k a1[k] * w[b][k]
 * limb-wise over @n_limbs limbs, with w in the scalar backend's fixed form
 * (value and 64-bit Shoup companion, ckks-objects.h CkksFixed). Pointers:
 * input k's halves at a0 + k * in_stride, a1 + k * in_stride; plaintext
 * (b, k) at w + (b * n_in + k) * pt_stride and its companion at the same
 * offset from w_shoup; output b at out0/out1 + b * out_stride. @add0/@add1
 * (NULL: none) are added to the sums (pads), at the outputs' offsets. One
 * launch computes every output: each thread keeps its sums in registers and
 * writes once. out0/out1 may be add0/add1 (same offsets), never an input or
 * a plaintext. Strides matter only where there is more than one item; each
 * must then be at least n_limbs * N. */
CkksStatus ckks_cuda_mul_plain_accumulate (CkksCudaStream stream, const CkksCudaTables *t,
                                           uint32_t n_limbs,
                                           const uint64_t *a0, const uint64_t *a1,
                                           size_t in_stride, uint32_t n_in,
                                           const uint64_t *w, const uint64_t *w_shoup,
                                           size_t pt_stride, uint32_t n_out,
                                           const uint64_t *add0, const uint64_t *add1,
                                           uint64_t *out0, uint64_t *out1,
                                           size_t out_stride);

/* Rescale of @count polynomials of @n_limbs limbs (NTT form) by the last
 * prime, in place: limbs [0, n_limbs - 1) become round(poly / q_last), as
 * the CPU's ckks_rescale does to each half of a ciphertext. Limb n_limbs - 1
 * is used as workspace and holds no meaningful value afterwards. @scratch:
 * at least count * N words of device memory. n_limbs >= 2. */
CkksStatus ckks_cuda_rescale (CkksCudaStream stream, const CkksCudaTables *t,
                              uint64_t *data, uint32_t n_limbs, uint32_t count,
                              size_t stride, uint64_t *scratch);

#ifdef __cplusplus
}
#endif
