/* ckks-cuda-ntt.cu: the negacyclic NTT on the GPU, batched over limbs and
 * polynomials.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Fast path: one kernel per phase (ckks-cuda-ntt.cuh), each block loading a
 * CKKS_CUDA_CHUNK-word chunk into shared memory, running every stage of the
 * phase there, two stages per barrier (each thread a quartet in registers),
 * and writing it back: two passes over memory per transform for
 * N > 4096, one for N = 4096. Reference path (tests): one kernel per stage
 * on global memory. Grid: (blocks per limb, limbs, polynomials).
 * The tables come as __grid_constant__ parameters: indexed by limb in place,
 * never copied to each thread's local memory.
 */
#include "ckks-cuda-kernels.h"
#include "ckks-cuda-launch.cuh"

/* RESCALE: the phase also does rescale's lift (first phase) or finish
 * (forward's last phase), see CkksCuRescaleIo. */
template <bool RESCALE>
__global__ void __launch_bounds__ (CKKS_CUDA_NTT_THREADS)
ntt_phase_kernel (const __grid_constant__ CkksCudaNttView v, uint64_t *data,
                  uint32_t first_limb, size_t stride, const __grid_constant__ CkksCuNttPhase ph,
                  const __grid_constant__ CkksCuRescaleIo io)
{
  __shared__ uint64_t sh[CKKS_CUDA_CHUNK];
  const uint32_t block = blockIdx.x, thread = threadIdx.x;
  const uint32_t limb = first_limb + blockIdx.y;
  /* uniform per block, so no thread misses a barrier below */
  if (block >= ckks_cu_ntt_blocks (v.log_n) || limb >= v.limbs
      || thread >= CKKS_CUDA_NTT_THREADS)
    return;
  uint64_t *a = data + blockIdx.z * stride + ((size_t) blockIdx.y << v.log_n);
  const CkksCuLimbNtt t = ckks_cu_limb_ntt (v, limb, ph.forward);
  if (RESCALE && ph.first_phase)
    ckks_cu_ntt_load_lift_thread (sh, io, blockIdx.z, v.log_n, ph.layout, block, thread, t.q);
  else
    ckks_cu_ntt_load_thread (sh, a, v.log_n, ph.layout, block, thread);
  __syncthreads ();
  for (uint32_t s = 0; s < ph.n_stages; s += ckks_cu_phase_step (ph, s))
    {
      ckks_cu_ntt_step_thread (sh, t, ph, block, thread, s);
      __syncthreads ();
    }
  if (RESCALE && ph.reduce_out)
    ckks_cu_ntt_store_finish_thread (io, sh, blockIdx.z, v.log_n, ph.layout, block, thread,
                                     t.q);
  else
    ckks_cu_ntt_store_thread (a, sh, v.log_n, ph.layout, block, thread, ph.reduce_out, t.q);
}

#define REFERENCE_THREADS 256u

/* One stage on global memory, one thread per butterfly. */
__global__ void
ntt_stage_reference_kernel (const __grid_constant__ CkksCudaNttView v, uint64_t *data,
                            uint32_t first_limb, size_t stride, uint32_t log_half,
                            bool forward)
{
  const uint32_t b = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t limb = first_limb + blockIdx.y;
  if (b >= (1u << (v.log_n - 1)) || limb >= v.limbs)
    return;
  uint64_t *a = data + blockIdx.z * stride + ((size_t) blockIdx.y << v.log_n);
  const CkksCuLimbNtt t = ckks_cu_limb_ntt (v, limb, forward);
  uint32_t x = ckks_cu_butterfly_first (b, log_half);
  ckks_cu_ntt_apply (a + x, a + x + (1u << log_half),
                     ckks_cu_twiddle_index (v.log_n, x, log_half), log_half, t, forward);
}

__global__ void
ntt_reduce_reference_kernel (const __grid_constant__ CkksCudaNttView v, uint64_t *data,
                             uint32_t first_limb, size_t stride)
{
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t limb = first_limb + blockIdx.y;
  if (i >= (1u << v.log_n) || limb >= v.limbs)
    return;
  uint64_t *a = data + blockIdx.z * stride + ((size_t) blockIdx.y << v.log_n);
  a[i] = ckks_cu_reduce_4q (a[i], v.q[limb]);
}

static cudaError_t
ntt_reference (cudaStream_t stream, const CkksCudaNttView &v, uint64_t *data,
               uint32_t first_limb, uint32_t n_limbs, uint32_t count, size_t stride,
               bool forward)
{
  const uint32_t log_n = v.log_n;
  dim3 grid ((1u << (log_n - 1)) / REFERENCE_THREADS, n_limbs, count);
  for (uint32_t s = 0; s < log_n; s++)
    {
      uint32_t log_half = forward ? log_n - 1 - s : s;
      ntt_stage_reference_kernel<<<grid, REFERENCE_THREADS, 0, stream>>> (
        v, data, first_limb, stride, log_half, forward);
      cudaError_t err = cudaGetLastError ();
      if (err != cudaSuccess)
        return err;
    }
  if (!forward)
    return cudaSuccess;
  dim3 rgrid ((1u << log_n) / REFERENCE_THREADS, n_limbs, count);
  ntt_reduce_reference_kernel<<<rgrid, REFERENCE_THREADS, 0, stream>>> (v, data,
                                                                       first_limb, stride);
  return cudaGetLastError ();
}

cudaError_t
ckks_cu_ntt_launch (cudaStream_t stream, const CkksCuTableData &d, uint64_t *data,
                    uint32_t first_limb, uint32_t n_limbs, uint32_t count, size_t stride,
                    bool forward, bool reference)
{
  const CkksCudaNttView &v = d.view;
  if (reference)
    return ntt_reference (stream, v, data, first_limb, n_limbs, count, stride, forward);
  CkksCuNttPhase phases[2];
  uint32_t n_phases = ckks_cu_ntt_plan (v.log_n, forward, phases);
  dim3 grid (ckks_cu_ntt_blocks (v.log_n), n_limbs, count);
  const CkksCuRescaleIo none = {};
  for (uint32_t p = 0; p < n_phases; p++)
    {
      ntt_phase_kernel<false><<<grid, CKKS_CUDA_NTT_THREADS, 0, stream>>> (
        v, data, first_limb, stride, phases[p], none);
      cudaError_t err = cudaGetLastError ();
      if (err != cudaSuccess)
        return err;
    }
  return cudaSuccess;
}

cudaError_t
ckks_cu_ntt_rescale_launch (cudaStream_t stream, const CkksCuTableData &d, uint64_t *scratch,
                            uint32_t limb, uint32_t count, const CkksCuRescaleIo &io)
{
  const CkksCudaNttView &v = d.view;
  CkksCuNttPhase phases[2];
  uint32_t n_phases = ckks_cu_ntt_plan (v.log_n, true, phases);
  dim3 grid (ckks_cu_ntt_blocks (v.log_n), 1, count);
  for (uint32_t p = 0; p < n_phases; p++)
    {
      ntt_phase_kernel<true><<<grid, CKKS_CUDA_NTT_THREADS, 0, stream>>> (
        v, scratch, limb, (size_t) 1 << v.log_n, phases[p], io);
      cudaError_t err = cudaGetLastError ();
      if (err != cudaSuccess)
        return err;
    }
  return cudaSuccess;
}

CkksStatus
ckks_cu_check_batch (const CkksCudaTables *t, const void *data, uint32_t n_limbs,
                     uint32_t count, size_t stride)
{
  if (!t || !data || n_limbs == 0 || n_limbs > t->data.view.limbs || count == 0
      || count > CKKS_CUDA_MAX_BATCH)
    return CKKS_ERR_INVALID_ARGUMENT;
  if (count > 1 && stride < ((size_t) n_limbs << t->data.view.log_n))
    return CKKS_ERR_INVALID_ARGUMENT;
  return CKKS_OK;
}

static CkksStatus
ntt_entry (CkksCudaStream stream, const CkksCudaTables *t, uint64_t *data,
           uint32_t n_limbs, uint32_t count, size_t stride, bool forward, bool reference)
{
  CkksStatus st = ckks_cu_check_batch (t, data, n_limbs, count, stride);
  if (st != CKKS_OK)
    return st;
  cudaError_t err = ckks_cu_ntt_launch ((cudaStream_t) stream, t->data, data, 0, n_limbs,
                                        count, stride, forward, reference);
  return err == cudaSuccess ? CKKS_OK : CKKS_ERR_DEVICE;
}

extern "C" CkksStatus
ckks_cuda_ntt_forward (CkksCudaStream stream, const CkksCudaTables *t, uint64_t *data,
                       uint32_t n_limbs, uint32_t count, size_t stride)
{
  return ntt_entry (stream, t, data, n_limbs, count, stride, true, false);
}

extern "C" CkksStatus
ckks_cuda_ntt_inverse (CkksCudaStream stream, const CkksCudaTables *t, uint64_t *data,
                       uint32_t n_limbs, uint32_t count, size_t stride)
{
  return ntt_entry (stream, t, data, n_limbs, count, stride, false, false);
}

extern "C" CkksStatus
ckks_cuda_ntt_forward_reference (CkksCudaStream stream, const CkksCudaTables *t,
                                 uint64_t *data, uint32_t n_limbs, uint32_t count,
                                 size_t stride)
{
  return ntt_entry (stream, t, data, n_limbs, count, stride, true, true);
}

extern "C" CkksStatus
ckks_cuda_ntt_inverse_reference (CkksCudaStream stream, const CkksCudaTables *t,
                                 uint64_t *data, uint32_t n_limbs, uint32_t count,
                                 size_t stride)
{
  return ntt_entry (stream, t, data, n_limbs, count, stride, false, true);
}
