/* lm-cuda-block.cuh: block-wide reductions and the launch check of the ops.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Only for .cu files. Every thread of the block must call a reduction (they
 * contain __syncthreads()); @scratch is 32 elements of shared memory that
 * the caller does not touch meanwhile.
 */
#pragma once

#include <cuda_runtime.h>

#include "gguf.h"

/* The status of the launches just made: LM_ERR_DEVICE if one failed. */
static inline LmStatus
lm_cuda_launched (void)
{
  return cudaGetLastError () == cudaSuccess ? LM_OK : LM_ERR_DEVICE;
}

template <typename T>
static __device__ __forceinline__ T
lm_warp_sum (T v)
{
  for (int off = 16; off > 0; off >>= 1)
    v += __shfl_xor_sync (0xffffffffu, v, off);
  return v;
}

template <typename T>
static __device__ __forceinline__ T
lm_warp_max (T v)
{
  for (int off = 16; off > 0; off >>= 1)
    {
      T o = __shfl_xor_sync (0xffffffffu, v, off);
      v = o > v ? o : v;
    }
  return v;
}

/* The sum of @v over the block, returned to every thread. blockDim.x must
 * be a multiple of 32. */
template <typename T>
static __device__ T
lm_block_sum (T v, T *scratch)
{
  unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
  v = lm_warp_sum (v);
  __syncthreads ();   /* scratch may still be read by a previous call */
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads ();
  T total = lane < n_warps ? scratch[lane] : (T) 0;
  return lm_warp_sum (total);
}

template <typename T>
static __device__ T
lm_block_max (T v, T *scratch, T lowest)
{
  unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5, n_warps = blockDim.x >> 5;
  v = lm_warp_max (v);
  __syncthreads ();
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads ();
  T m = lane < n_warps ? scratch[lane] : lowest;
  return lm_warp_max (m);
}
