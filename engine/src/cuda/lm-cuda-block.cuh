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

/* Calls f(i, v[i]) once for every i < n, spread over the block's threads in
 * no particular order: 16-byte loads, four in flight per thread, so that one
 * block streams a vocabulary of logits at a useful fraction of the L2
 * bandwidth. For order-free work only (maxima, counts, sums whose rounding
 * may differ from a sequential one). */
template <typename F>
static __device__ void
lm_block_for_each (const float *__restrict__ v, uint32_t n, F f)
{
  uint32_t n4 = ((uintptr_t) v & 15u) == 0 ? n / 4 : 0, step = blockDim.x;
  const float4 *v4 = (const float4 *) v;
  uint32_t i = threadIdx.x;
  for (; i + 3 * step < n4; i += 4 * step)
    {
      float4 a = v4[i], b = v4[i + step], c = v4[i + 2 * step], d = v4[i + 3 * step];
      const float4 q[4] = { a, b, c, d };
#pragma unroll
      for (int j = 0; j < 4; j++)
        {
          uint32_t base = 4 * (i + (uint32_t) j * step);
          f (base, q[j].x);
          f (base + 1, q[j].y);
          f (base + 2, q[j].z);
          f (base + 3, q[j].w);
        }
    }
  for (; i < n4; i += step)
    {
      float4 a = v4[i];
      f (4 * i, a.x);
      f (4 * i + 1, a.y);
      f (4 * i + 2, a.z);
      f (4 * i + 3, a.w);
    }
  for (uint32_t k = 4 * n4 + threadIdx.x; k < n; k += step)
    f (k, v[k]);
}
