/* ckks-cuda-elementwise.cu: add, ct x pt with accumulation and rescale on
 * the GPU. Add and ct x pt: one thread per coefficient, the per-coefficient
 * work in ckks-cuda-elementwise.cuh. Rescale: an inverse NTT of the last
 * limb, then per other limb one forward NTT with the lift fused into its
 * loads and the subtraction and q_last^-1 into its stores.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-cuda-elementwise.cuh"
#include "ckks-cuda-kernels.h"
#include "ckks-cuda-launch.cuh"

#define ELEMENT_THREADS 256u

static dim3
element_grid (size_t elements, uint32_t count)
{
  return dim3 ((unsigned) ((elements + ELEMENT_THREADS - 1) / ELEMENT_THREADS), count);
}

__global__ void
add_kernel (const __grid_constant__ CkksCudaNttView v, uint64_t *out, const uint64_t *a,
            const uint64_t *b, uint32_t n_limbs)
{
  const size_t e = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= ((size_t) n_limbs << v.log_n))
    return;
  out[e] = ckks_cu_add_mod (a[e], b[e], v.q[e >> v.log_n]);
}

extern "C" CkksStatus
ckks_cuda_add (CkksCudaStream stream, const CkksCudaTables *t, uint64_t *out,
               const uint64_t *a, const uint64_t *b, uint32_t n_limbs)
{
  CkksStatus st = ckks_cu_check_batch (t, out, n_limbs, 1, 0);
  if (st != CKKS_OK || !a || !b)
    return st != CKKS_OK ? st : CKKS_ERR_INVALID_ARGUMENT;
  size_t elements = (size_t) n_limbs << t->data.view.log_n;
  add_kernel<<<element_grid (elements, 1), ELEMENT_THREADS, 0, (cudaStream_t) stream>>> (
    t->data.view, out, a, b, n_limbs);
  return cudaGetLastError () == cudaSuccess ? CKKS_OK : CKKS_ERR_DEVICE;
}

__global__ void
mul_plain_accumulate_kernel (const __grid_constant__ CkksCuMpaArgs args)
{
  const size_t e = (size_t) blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= ((size_t) args.n_limbs << args.log_n))
    return;
  ckks_cu_mpa_element (args, e, blockIdx.y);
}

extern "C" CkksStatus
ckks_cuda_mul_plain_accumulate (CkksCudaStream stream, const CkksCudaTables *t,
                                uint32_t n_limbs, const uint64_t *a0, const uint64_t *a1,
                                size_t in_stride, uint32_t n_in, const uint64_t *w,
                                const uint64_t *w_shoup, size_t pt_stride, uint32_t n_out,
                                const uint64_t *add0, const uint64_t *add1, uint64_t *out0,
                                uint64_t *out1, size_t out_stride)
{
  if (!t || !a0 || !a1 || !w || !w_shoup || !out0 || !out1 || n_in == 0 || n_out == 0
      || n_limbs == 0 || n_limbs > t->data.view.limbs)
    return CKKS_ERR_INVALID_ARGUMENT;
  const size_t words = (size_t) n_limbs << t->data.view.log_n;
  if ((n_in > 1 && in_stride < words) || ((size_t) n_in * n_out > 1 && pt_stride < words)
      || (n_out > 1 && out_stride < words))
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksCuMpaArgs args = {};
  args.a0 = a0;
  args.a1 = a1;
  args.in_stride = in_stride;
  args.n_in = n_in;
  args.w = w;
  args.w_shoup = w_shoup;
  args.pt_stride = pt_stride;
  args.n_out = n_out;
  args.add0 = add0;
  args.add1 = add1;
  args.out0 = out0;
  args.out1 = out1;
  args.out_stride = out_stride;
  args.log_n = t->data.view.log_n;
  args.n_limbs = n_limbs;
  for (uint32_t i = 0; i < n_limbs; i++)
    args.q[i] = t->data.view.q[i];
  /* grid y: groups of outputs, so that a few outputs still fill the GPU */
  const uint32_t groups = ckks_cu_mpa_groups (n_out);
  mul_plain_accumulate_kernel<<<element_grid (words, groups), ELEMENT_THREADS, 0,
                                (cudaStream_t) stream>>> (args);
  return cudaGetLastError () == cudaSuccess ? CKKS_OK : CKKS_ERR_DEVICE;
}

extern "C" CkksStatus
ckks_cuda_rescale (CkksCudaStream stream, const CkksCudaTables *t, uint64_t *data,
                   uint32_t n_limbs, uint32_t count, size_t stride, uint64_t *scratch)
{
  CkksStatus st = ckks_cu_check_batch (t, data, n_limbs, count, stride);
  if (st != CKKS_OK || n_limbs < 2 || !scratch)
    return st != CKKS_OK ? st : CKKS_ERR_INVALID_ARGUMENT;
  cudaStream_t s = (cudaStream_t) stream;
  const CkksCuTableData &d = t->data;
  const uint32_t log_n = d.view.log_n, l = n_limbs - 1;
  const size_t n = (size_t) 1 << log_n;
  uint64_t *last = data + l * n;
  /* the last limb is consumed: transformed in place */
  cudaError_t err = ckks_cu_ntt_launch (s, d, last, l, 1, count, stride, false, false);
  /* then per other limb i, one fused forward transform: lift the last limb
   * to q_i on load, subtract and multiply by q_last^-1 on store */
  for (uint32_t i = 0; i < l && err == cudaSuccess; i++)
    {
      CkksCuRescaleIo io = ckks_cu_rescale_io (d, data, n_limbs, stride, i);
      err = ckks_cu_ntt_rescale_launch (s, d, scratch, i, count, io);
    }
  return err == cudaSuccess ? CKKS_OK : CKKS_ERR_DEVICE;
}
