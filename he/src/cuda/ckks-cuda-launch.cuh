/* ckks-cuda-launch.cuh: launchers shared by the .cu files of he/src/cuda.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <cuda_runtime.h>

#include "ckks-cuda-tables.cuh"

/* The largest batch (grid z) one launch takes. */
#define CKKS_CUDA_MAX_BATCH 65535u

/* NTT of limbs [first_limb, first_limb + n_limbs) of @count polynomials:
 * limb first_limb + j of polynomial p at data + p * stride + j * N.
 * @reference: one plain kernel per stage instead of the fused phases.
 * Returns the launch's error (cudaGetLastError after each kernel). */
cudaError_t ckks_cu_ntt_launch (cudaStream_t stream, const CkksCuTableData &d,
                                uint64_t *data, uint32_t first_limb, uint32_t n_limbs,
                                uint32_t count, size_t stride, bool forward,
                                bool reference);

/* For each polynomial p < count: scratch + p * N = forward NTT (limb
 * @limb's tables) of the lifted last limb, finished into the destination
 * limb (CkksCuRescaleIo). With one phase (N = 4096) scratch is not used. */
cudaError_t ckks_cu_ntt_rescale_launch (cudaStream_t stream, const CkksCuTableData &d,
                                        uint64_t *scratch, uint32_t limb, uint32_t count,
                                        const CkksCuRescaleIo &io);

/* The shape checks of every batched entry point. */
CkksStatus ckks_cu_check_batch (const CkksCudaTables *t, const void *data,
                                uint32_t n_limbs, uint32_t count, size_t stride);
