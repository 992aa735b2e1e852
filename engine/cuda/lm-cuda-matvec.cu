/* lm-cuda-matvec.cu: weight products on the GPU, dequantising in the kernels.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The schedules are described in lm-cuda-schedule.cuh; lm-cuda-check.cu
 * runs them on the host. */
#include <cuda_runtime.h>

#include "lm-cuda-matvec.h"
#include "lm-cuda-schedule.cuh"
#include "quant.h"

/* Largest shared-memory block the matvec may ask for (x of n_in floats). */
#define MV_SMEM_DEFAULT (48u * 1024u)

/* ---- decode ---- */

__device__ __forceinline__ float
warp_sum (float v)
{
  for (int offset = LMC_WARP / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync (0xffffffffu, v, offset);
  return v;
}

/* grid (row blocks, slots): slot j reads the matrix w + sel[j] * mat_stride
 * (sel NULL: w), x + j * x_stride, writes y + j * n_out. */
template <class Dec>
__global__ void __launch_bounds__ (LMC_MV_WARPS * LMC_WARP)
matvec_kernel (const uint8_t *w, size_t mat_stride, const int32_t *sel, size_t row_bytes,
               uint32_t n_in, uint32_t n_out, const float *x, size_t x_stride, float *y,
               int accumulate)
{
  extern __shared__ float4 smem_x4[];
  float *sx = reinterpret_cast<float *> (smem_x4);
  const uint32_t slot = blockIdx.y;
  const uint32_t warp = threadIdx.x / LMC_WARP, lane = threadIdx.x % LMC_WARP;
  const uint32_t row0 = (blockIdx.x * LMC_MV_WARPS + warp) * LMC_MV_ROWS;
  float *ys = y + (size_t) slot * n_out;

  const uint8_t *wm = w;
  if (sel != nullptr)
    {
      int32_t e = sel[slot];
      if (e < 0)
        {
          /* no expert in this slot: block-uniform, before any barrier */
          for (uint32_t r = 0; r < LMC_MV_ROWS; r++)
            if (lane == 0 && row0 + r < n_out)
              ys[row0 + r] = 0.0f;
          return;
        }
      wm = w + (size_t) e * mat_stride;
    }

  const float *xs = x + (size_t) slot * x_stride;
  for (uint32_t i = threadIdx.x; i < n_in; i += blockDim.x)
    sx[i] = xs[i];
  __syncthreads ();

  if (row0 >= n_out)
    return;
  int rows = n_out - row0 < LMC_MV_ROWS ? (int) (n_out - row0) : LMC_MV_ROWS;
  float acc[LMC_MV_ROWS];
  lmc_lane_dot<Dec> (wm + (size_t) row0 * row_bytes, row_bytes, rows, sx,
                     lmc_row_units<Dec> (n_in), lane, acc);
  for (int r = 0; r < LMC_MV_ROWS; r++)
    acc[r] = warp_sum (acc[r]);
  if (lane == 0)
    for (int r = 0; r < rows; r++)
      ys[row0 + r] = accumulate ? ys[row0 + r] + acc[r] : acc[r];
}

static LmStatus
launch_status (void)
{
  return cudaGetLastError () == cudaSuccess ? LM_OK : LM_ERR_DEVICE;
}

/* Shape and alignment checks shared by every product; *vector says whether
 * a floating-point type may use its 16-byte form. */
static LmStatus
check_product (LmTensorType type, const void *w, size_t mat_stride, uint32_t n_in,
               size_t *row_bytes, bool *vector)
{
  if (!lm_cuda_matvec_supports (type))
    return LM_ERR_UNSUPPORTED;
  *row_bytes = lm_row_bytes (type, n_in);
  if (n_in == 0 || *row_bytes == 0)
    return LM_ERR_SHAPE;
  uint64_t bits = (uint64_t) (uintptr_t) w | mat_stride | *row_bytes;
  *vector = lmc_fp_vector_ok (type, n_in, bits);
  return lmc_with_decoder (type, *vector, [&] (auto dec) {
    using Dec = decltype (dec);
    return w != nullptr && bits % Dec::ALIGN == 0 ? LM_OK : LM_ERR_INVALID_ARGUMENT;
  });
}

static LmStatus
launch_matvec (cudaStream_t stream, LmTensorType type, const void *w, size_t mat_stride,
               const int32_t *sel, uint32_t n_in, uint32_t n_out, const float *x,
               size_t x_stride, float *y, uint32_t slots, bool accumulate)
{
  size_t row_bytes;
  bool vector;
  LmStatus st = check_product (type, w, mat_stride, n_in, &row_bytes, &vector);
  if (st != LM_OK)
    return st;
  if (n_out == 0 || slots == 0)
    return LM_OK;
  if (x == nullptr || y == nullptr)
    return LM_ERR_INVALID_ARGUMENT;
  size_t smem = (size_t) n_in * sizeof (float);
  uint32_t rows_per_block = LMC_MV_WARPS * LMC_MV_ROWS;
  dim3 grid ((n_out + rows_per_block - 1) / rows_per_block, slots);
  return lmc_with_decoder (type, vector, [&] (auto dec) {
    using Dec = decltype (dec);
    if (smem > MV_SMEM_DEFAULT
        && cudaFuncSetAttribute (matvec_kernel<Dec>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int) smem) != cudaSuccess)
      {
        cudaGetLastError ();
        return LM_ERR_SHAPE;   /* n_in too long for one block's shared memory */
      }
    matvec_kernel<Dec><<<grid, LMC_MV_WARPS * LMC_WARP, smem, stream>>> (
      (const uint8_t *) w, mat_stride, sel, row_bytes, n_in, n_out, x, x_stride, y,
      accumulate ? 1 : 0);
    return launch_status ();
  });
}

/* ---- prefill ---- */

/* grid (row tiles, token tiles). Token t reads x row x_rows[t] (NULL: t) and
 * writes y row y_rows[t] (NULL: t). */
template <class Dec>
__global__ void __launch_bounds__ (LMC_MM_THREADS)
matmul_kernel (const uint8_t *w, size_t row_bytes, uint32_t n_in, uint32_t n_out,
               const float *x, const int32_t *x_rows, const int32_t *y_rows, uint32_t n,
               float *y)
{
  /* +1: the 16 rows (tokens) one warp reads at the same k fall in distinct banks */
  __shared__ float sw[LMC_MM_ROWS][LMC_MM_K + 1];
  __shared__ float sxt[LMC_MM_TOKENS][LMC_MM_K + 1];
  const uint32_t tid = threadIdx.x;
  const uint32_t row_base = blockIdx.x * LMC_MM_ROWS, tok_base = blockIdx.y * LMC_MM_TOKENS;
  const uint32_t tx = tid % 16, ty = tid / 16;   /* rows tx, tx+16; tokens ty, ty+16 */
  constexpr uint32_t units_per_row = LMC_MM_K / Dec::C;
  float acc[2][2] = { { 0.0f, 0.0f }, { 0.0f, 0.0f } };

  for (uint32_t k0 = 0; k0 < n_in; k0 += LMC_MM_K)
    {
      for (uint32_t idx = tid; idx < LMC_MM_ROWS * units_per_row; idx += LMC_MM_THREADS)
        {
          uint32_t r = idx / units_per_row, uu = idx % units_per_row;
          float v[Dec::C];
          lmc_tile_unit<Dec> (w, row_bytes, n_in, n_out, row_base + r, k0, uu, v);
          for (int i = 0; i < Dec::C; i++)
            sw[r][lmc_tile_col<Dec> (k0, uu, i)] = v[i];
        }
      for (uint32_t idx = tid; idx < LMC_MM_TOKENS * LMC_MM_K; idx += LMC_MM_THREADS)
        {
          uint32_t t = idx / LMC_MM_K, kk = idx % LMC_MM_K, tok = tok_base + t;
          float v = 0.0f;
          if (tok < n && k0 + kk < n_in)
            {
              size_t xr = x_rows ? (size_t) x_rows[tok] : tok;
              v = x[xr * n_in + k0 + kk];
            }
          sxt[t][kk] = v;
        }
      __syncthreads ();
      for (int k = 0; k < LMC_MM_K; k++)
        {
          float w0 = sw[tx][k], w1 = sw[tx + 16][k];
          float x0 = sxt[ty][k], x1 = sxt[ty + 16][k];
          acc[0][0] = fmaf (w0, x0, acc[0][0]);
          acc[0][1] = fmaf (w0, x1, acc[0][1]);
          acc[1][0] = fmaf (w1, x0, acc[1][0]);
          acc[1][1] = fmaf (w1, x1, acc[1][1]);
        }
      __syncthreads ();
    }

  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      {
        uint32_t row = row_base + tx + 16 * a, tok = tok_base + ty + 16 * b;
        if (row < n_out && tok < n)
          {
            size_t yr = y_rows ? (size_t) y_rows[tok] : tok;
            y[yr * n_out + row] = acc[a][b];
          }
      }
}

static LmStatus
launch_matmul (cudaStream_t stream, LmTensorType type, const void *w, size_t mat_stride,
               uint32_t n_in, uint32_t n_out, const float *x, const int32_t *x_rows,
               const int32_t *y_rows, uint32_t n, float *y)
{
  size_t row_bytes;
  bool vector;
  LmStatus st = check_product (type, w, mat_stride, n_in, &row_bytes, &vector);
  if (st != LM_OK)
    return st;
  if (n_out == 0 || n == 0)
    return LM_OK;
  if (x == nullptr || y == nullptr)
    return LM_ERR_INVALID_ARGUMENT;
  dim3 grid ((n_out + LMC_MM_ROWS - 1) / LMC_MM_ROWS, (n + LMC_MM_TOKENS - 1) / LMC_MM_TOKENS);
  if (grid.y > 65535)
    return LM_ERR_SHAPE;
  return lmc_with_decoder (type, vector, [&] (auto dec) {
    using Dec = decltype (dec);
    matmul_kernel<Dec><<<grid, LMC_MM_THREADS, 0, stream>>> (
      (const uint8_t *) w, row_bytes, n_in, n_out, x, x_rows, y_rows, n, y);
    return launch_status ();
  });
}

/* ---- the C API ---- */

extern "C" bool
lm_cuda_matvec_supports (LmTensorType type)
{
  switch (type)
    {
    case LM_TYPE_F32:
    case LM_TYPE_F16:
    case LM_TYPE_BF16:
    case LM_TYPE_Q8_0:
    case LM_TYPE_Q4_K:
    case LM_TYPE_Q5_K:
    case LM_TYPE_Q6_K:
      return true;
    default:
      return false;
    }
}

extern "C" LmStatus
lm_cuda_matvec (LmCudaStream stream, LmTensorType type, const void *w, uint32_t n_in,
                uint32_t n_out, const float *x, float *y, bool accumulate)
{
  return launch_matvec ((cudaStream_t) stream, type, w, 0, nullptr, n_in, n_out, x, 0, y, 1,
                        accumulate);
}

extern "C" LmStatus
lm_cuda_matvec_experts (LmCudaStream stream, LmTensorType type, const void *w,
                        size_t mat_stride, uint32_t n_in, uint32_t n_out, const int32_t *sel,
                        uint32_t k, const float *x, size_t x_stride, float *y)
{
  if (k > 0 && sel == nullptr)
    return LM_ERR_INVALID_ARGUMENT;
  return launch_matvec ((cudaStream_t) stream, type, w, mat_stride, sel, n_in, n_out, x,
                        x_stride, y, k, false);
}

extern "C" LmStatus
lm_cuda_matmul (LmCudaStream stream, LmTensorType type, const void *w, uint32_t n_in,
                uint32_t n_out, const float *x, uint32_t n, float *y)
{
  return launch_matmul ((cudaStream_t) stream, type, w, 0, n_in, n_out, x, nullptr, nullptr, n,
                        y);
}

extern "C" LmStatus
lm_cuda_matmul_rows (LmCudaStream stream, LmTensorType type, const void *w, size_t mat_stride,
                     uint32_t expert, uint32_t n_in, uint32_t n_out, const float *x,
                     const int32_t *x_rows, const int32_t *y_rows, uint32_t n_rows, float *y)
{
  if (n_rows > 0 && (x_rows == nullptr || y_rows == nullptr))
    return LM_ERR_INVALID_ARGUMENT;
  const uint8_t *wm = w ? (const uint8_t *) w + (size_t) expert * mat_stride : nullptr;
  return launch_matmul ((cudaStream_t) stream, type, wm, mat_stride, n_in, n_out, x, x_rows,
                        y_rows, n_rows, y);
}
