/* lm-cuda-matvec.cu: weight products on the GPU, dequantising in the kernels.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The schedules are described in lm-cuda-schedule.cuh; lm-cuda-check.cu
 * runs them on the host. */
#include <cuda_runtime.h>
#include <mutex>

#include "lm-cuda-launch.cuh"
#include "lm-cuda-math.h"
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

/* Activation @i of a product's input: x itself, or with @up the SwiGLU
 * SiLU(x) * up (the float sequence of lm_cuda_swiglu, so the fused form
 * gives the same bits). */
__device__ __forceinline__ float
staged_x (const float *x, const float *up, size_t i)
{
  return up != nullptr ? lm_silu_poly (x[i]) * up[i] : x[i];
}

/* Q8_K activations of one group of 256 (one warp): the signed value of
 * largest magnitude m (first one on ties), iscale = -127 / m,
 * q = min (127, rne (iscale x)), scale 1 / iscale; as lm_quantize_row_q8_K. */
__device__ void
quantize_q8_k_group (const float *x, const float *up, uint8_t *xq, float *dx, uint32_t lane)
{
  float v[8], best = 0.0f, best_val = 0.0f;
  uint32_t best_idx = 0xFFFFFFFFu;
  for (uint32_t i = 0; i < 8; i++)
    {
      uint32_t idx = lane + LMC_WARP * i;
      v[i] = staged_x (x, up, idx);
      if (fabsf (v[i]) > best)
        {
          best = fabsf (v[i]);
          best_val = v[i];
          best_idx = idx;
        }
    }
  for (int offset = LMC_WARP / 2; offset > 0; offset /= 2)
    {
      float ob = __shfl_xor_sync (0xffffffffu, best, offset);
      float ov = __shfl_xor_sync (0xffffffffu, best_val, offset);
      uint32_t oi = __shfl_xor_sync (0xffffffffu, best_idx, offset);
      if (ob > best || (ob == best && oi < best_idx))
        {
          best = ob;
          best_val = ov;
          best_idx = oi;
        }
    }
  if (best == 0.0f)
    {
      for (uint32_t i = 0; i < 8; i++)
        xq[lane + LMC_WARP * i] = 0;
      if (lane == 0)
        *dx = 0.0f;
      return;
    }
  float iscale = -127.0f / best_val;
  for (uint32_t i = 0; i < 8; i++)
    {
      int q = __float2int_rn (__fmul_rn (iscale, v[i]));
      xq[lane + LMC_WARP * i] = (uint8_t) (int8_t) (q < 127 ? q : 127);
    }
  if (lane == 0)
    *dx = 1.0f / iscale;
}

/* Q8_0 activations of one group of 32 (one warp): d = fp16 (amax / 127),
 * q = rne (x * (127 / amax)); as lm_quantize_row_q8_0_act. */
__device__ void
quantize_q8_0_group (const float *x, const float *up, uint8_t *xq, float *dx, uint32_t lane)
{
  float v = staged_x (x, up, lane), amax = fabsf (v);
  for (int offset = LMC_WARP / 2; offset > 0; offset /= 2)
    amax = fmaxf (amax, __shfl_xor_sync (0xffffffffu, amax, offset));
  float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  xq[lane] = (uint8_t) (int8_t) __float2int_rn (__fmul_rn (v, id));
  if (lane == 0)
    *dx = lmc_fp16_to_fp32 (lmc_fp32_to_fp16 (amax / 127.0f));
}

/* Asks L2 for @bytes at @rows, a line per lane at a time: the DRAM latency
 * of a warp's rows then overlaps the staging of x. A hint only: the
 * arithmetic is unchanged. */
__device__ __forceinline__ void
prefetch_rows (const uint8_t *rows, size_t bytes, uint32_t lane)
{
  for (size_t off = (size_t) lane * 128; off < bytes; off += (size_t) LMC_WARP * 128)
    asm volatile ("prefetch.global.L2 [%0];" ::"l"(rows + off));
}

/* Asks L2 for the rows of warp @warp in row block @row_block of W (at wm,
 * rows of row_bytes). */
__device__ __forceinline__ void
prefetch_warp_rows (const uint8_t *wm, size_t row_bytes, uint32_t n_out, uint32_t row_block)
{
  const uint32_t warp = threadIdx.x / LMC_WARP, lane = threadIdx.x % LMC_WARP;
  const uint32_t row0 = (row_block * (blockDim.x / LMC_WARP) + warp) * LMC_MV_ROWS;
  if (row0 < n_out)
    prefetch_rows (wm + (size_t) row0 * row_bytes,
                   (size_t) (n_out - row0 < LMC_MV_ROWS ? n_out - row0 : LMC_MV_ROWS) * row_bytes,
                   lane);
}

/* Row block @row_block of one product y = W x (W at wm, rows of row_bytes,
 * prefetched by the caller): the block stages x in shared memory (Q8: as 8-bit groups and their
 * scales, lm-cuda-schedule.cuh; else f32), then warp w computes its
 * LMC_MV_ROWS rows. Every thread of the block must call it. */
template <class Dec, bool Q8>
__device__ void
matvec_row_block (const uint8_t *wm, size_t row_bytes, uint32_t n_in, uint32_t n_out,
                  const float *xs, const float *xs_up, float *ys, int accumulate,
                  uint32_t row_block)
{
  extern __shared__ float4 smem_x4[];
  const uint32_t warp = threadIdx.x / LMC_WARP, lane = threadIdx.x % LMC_WARP;
  const uint32_t n_warps = blockDim.x / LMC_WARP;
  const uint32_t row0 = (row_block * n_warps + warp) * LMC_MV_ROWS;

  uint8_t *xq = reinterpret_cast<uint8_t *> (smem_x4);
  float *sx = reinterpret_cast<float *> (smem_x4);
  float *dx = reinterpret_cast<float *> (xq + ((size_t) n_in + 15) / 16 * 16);
  if constexpr (Q8)
    {
      for (uint32_t g = warp; g < n_in / Dec::QG; g += n_warps)
        {
          size_t at = (size_t) g * Dec::QG;
          const float *up = xs_up != nullptr ? xs_up + at : nullptr;
          if constexpr (Dec::QG == 256)
            quantize_q8_k_group (xs + at, up, xq + at, dx + g, lane);
          else
            quantize_q8_0_group (xs + at, up, xq + at, dx + g, lane);
        }
    }
  else
    {
      for (uint32_t i = threadIdx.x; i < n_in; i += blockDim.x)
        sx[i] = staged_x (xs, xs_up, i);
    }
  __syncthreads ();

  if (row0 >= n_out)
    return;
  int rows = n_out - row0 < LMC_MV_ROWS ? (int) (n_out - row0) : LMC_MV_ROWS;
  float acc[LMC_MV_ROWS];
  if constexpr (Q8)
    lmc_lane_dot_q8<Dec> (wm + (size_t) row0 * row_bytes, row_bytes, rows, xq, dx,
                          lmc_row_units<Dec> (n_in), lane, acc);
  else
    lmc_lane_dot<Dec> (wm + (size_t) row0 * row_bytes, row_bytes, rows, sx,
                       lmc_row_units<Dec> (n_in), lane, acc);
  for (int r = 0; r < LMC_MV_ROWS; r++)
    acc[r] = warp_sum (acc[r]);
  if (lane == 0)
    for (int r = 0; r < rows; r++)
      ys[row0 + r] = accumulate ? ys[row0 + r] + acc[r] : acc[r];
}

/* A decode launch (LmCudaProduct, with the row length in bytes). */
typedef struct {
  const uint8_t *w, *w_pair;
  size_t mat_stride, row_bytes;
  const int32_t *sel;
  uint32_t k, n_in, n_out;
  const float *x, *x_up;
  size_t x_stride;
  float *y, *y_pair;
  int accumulate;
} MvArgs;

/* grid (row blocks, k or 2k slots): slot j < k reads the matrix
 * w + sel[j] * mat_stride (sel NULL: w), x + j * x_stride, writes
 * y + j * n_out; slot k + j the same from w_pair into y_pair. Q8: the
 * integer path (lm-cuda-schedule.cuh), else f32 activations. */
template <class Dec, bool Q8>
__global__ void __launch_bounds__ (LMC_MV_MAX_WARPS * LMC_WARP)
matvec_kernel (MvArgs a)
{
  const bool pair = blockIdx.y >= a.k;   /* block-uniform */
  const uint32_t slot = blockIdx.y - (pair ? a.k : 0);
  const uint32_t warp = threadIdx.x / LMC_WARP, lane = threadIdx.x % LMC_WARP;
  const uint32_t n_warps = blockDim.x / LMC_WARP;
  const uint32_t row0 = (blockIdx.x * n_warps + warp) * LMC_MV_ROWS;
  const uint32_t n_out = a.n_out;
  const uint8_t *w = pair ? a.w_pair : a.w;
  float *ys = (pair ? a.y_pair : a.y) + (size_t) slot * n_out;

  /* The weights are constant: their DRAM latency overlaps the previous
   * kernel (lm-cuda-launch.cuh); an expert's matrix is known only after. */
  if (a.sel == nullptr)
    prefetch_warp_rows (w, a.row_bytes, n_out, blockIdx.x);
  lmc_wait_previous ();
  const uint8_t *wm = w;
  if (a.sel != nullptr)
    {
      int32_t e = a.sel[slot];
      if (e < 0)
        {
          /* no expert in this slot: block-uniform, before any barrier */
          for (uint32_t r = 0; r < LMC_MV_ROWS; r++)
            if (lane == 0 && row0 + r < n_out)
              ys[row0 + r] = 0.0f;
          return;
        }
      wm = w + (size_t) e * a.mat_stride;
      prefetch_warp_rows (wm, a.row_bytes, n_out, blockIdx.x);
    }
  size_t at = (size_t) slot * a.x_stride;
  matvec_row_block<Dec, Q8> (wm, a.row_bytes, a.n_in, n_out, a.x + at,
                             a.x_up != nullptr ? a.x_up + at : nullptr, ys, a.accumulate,
                             blockIdx.x);
}

/* Prefill with 8-bit activations, grid (tokens, row blocks): token t reads
 * x row x_rows[t] (NULL: t) and writes y row y_rows[t] (NULL: t); each
 * block is one row block of the decode product of that row. Consecutive
 * blocks are the tokens of one row block, so they share its weight rows in
 * the caches. */
template <class Dec>
__global__ void __launch_bounds__ (LMC_MV_MAX_WARPS * LMC_WARP)
matmul_q8_kernel (const uint8_t *w, size_t row_bytes, uint32_t n_in, uint32_t n_out,
                  const float *x, const int32_t *x_rows, const int32_t *y_rows, uint32_t n,
                  float *y)
{
  const uint32_t tok = blockIdx.x;
  if (tok >= n)
    return;   /* block-uniform, before any barrier */
  prefetch_warp_rows (w, row_bytes, n_out, blockIdx.y);
  lmc_wait_previous ();
  size_t xr = x_rows != nullptr ? (size_t) x_rows[tok] : tok;
  size_t yr = y_rows != nullptr ? (size_t) y_rows[tok] : tok;
  matvec_row_block<Dec, true> (w, row_bytes, n_in, n_out, x + xr * n_in, nullptr, y + yr * n_out,
                               0, blockIdx.y);
}

/* The most dynamic shared memory a block of this device may have, after
 * raising @kernel's limit to it. Once per kernel (the first call's device),
 * so that later launches, also inside a stream capture, make no such call. */
template <typename Kernel>
static size_t
opt_in_smem (Kernel kernel, std::once_flag *once, size_t *limit)
{
  std::call_once (*once, [&] () {
    int device = 0, optin = 0;
    if (cudaGetDevice (&device) == cudaSuccess
        && cudaDeviceGetAttribute (&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device)
             == cudaSuccess
        && cudaFuncSetAttribute (kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, optin)
             == cudaSuccess)
      *limit = (size_t) optin;
    else
      {
        cudaGetLastError ();
        *limit = MV_SMEM_DEFAULT;
      }
  });
  return *limit;
}

template <class Dec, bool Q8>
static LmStatus
launch_matvec_kernel (cudaStream_t stream, const MvArgs &a)
{
  size_t smem = Q8 ? lmc_q8_smem_bytes (a.n_in, Dec::QG) : (size_t) a.n_in * sizeof (float);
  uint32_t warps = a.n_out >= LMC_MV_TALL ? LMC_MV_MAX_WARPS : LMC_MV_MAX_WARPS / 2;
  uint32_t rows_per_block = warps * LMC_MV_ROWS;
  dim3 grid ((a.n_out + rows_per_block - 1) / rows_per_block, a.w_pair != nullptr ? 2 * a.k : a.k);
  static std::once_flag once;
  static size_t limit;
  if (smem > MV_SMEM_DEFAULT && smem > opt_in_smem (matvec_kernel<Dec, Q8>, &once, &limit))
    return LM_ERR_SHAPE;   /* n_in too long for one block's shared memory */
  return lmc_launched (
    lmc_launch (matvec_kernel<Dec, Q8>, grid, warps * LMC_WARP, smem, stream, a));
}

static LmStatus
launch_matvec (cudaStream_t stream, LmCudaActMode mode, const LmCudaProduct *p, bool accumulate)
{
  size_t row_bytes;
  bool vector, vector_pair = false;
  LmStatus st = lmc_check_mode_product (mode, p->type, p->w, p->mat_stride, p->n_in, &row_bytes,
                                        &vector);
  if (st == LM_OK && p->w_pair != nullptr)
    st = lmc_check_mode_product (mode, p->type, p->w_pair, p->mat_stride, p->n_in, &row_bytes,
                                 &vector_pair);
  if (st != LM_OK)
    return st;
  if (p->n_out == 0 || p->k == 0)
    return LM_OK;
  if (p->x == nullptr || p->y == nullptr || (p->w_pair != nullptr && p->y_pair == nullptr)
      || (p->k > 1 && p->sel == nullptr))
    return LM_ERR_INVALID_ARGUMENT;
  MvArgs a = { (const uint8_t *) p->w, (const uint8_t *) p->w_pair, p->mat_stride, row_bytes,
               p->sel, p->k, p->n_in, p->n_out, p->x, p->x_up, p->x_stride, p->y, p->y_pair,
               accumulate ? 1 : 0 };
  /* both matrices must take the same decoder (16-byte loads or not) */
  return lmc_with_decoder (p->type, vector && (p->w_pair == nullptr || vector_pair),
                           [&] (auto dec) {
                             using Dec = decltype (dec);
                             if constexpr (Dec::Q8)
                               if (mode == LM_CUDA_ACT_Q8)
                                 return launch_matvec_kernel<Dec, true> (stream, a);
                             return launch_matvec_kernel<Dec, false> (stream, a);
                           });
}

/* The 8-bit prefill (Dec::Q8 types): the decode kernel's row blocks, one
 * block per (token, row block). */
template <class Dec>
static LmStatus
launch_matmul_q8 (cudaStream_t stream, const void *w, size_t row_bytes, uint32_t n_in,
                  uint32_t n_out, const float *x, const int32_t *x_rows, const int32_t *y_rows,
                  uint32_t n, float *y)
{
  size_t smem = lmc_q8_smem_bytes (n_in, Dec::QG);
  uint32_t warps = n_out >= LMC_MV_TALL ? LMC_MV_MAX_WARPS : LMC_MV_MAX_WARPS / 2;
  uint32_t rows_per_block = warps * LMC_MV_ROWS;
  dim3 grid (n, (n_out + rows_per_block - 1) / rows_per_block);
  if (grid.y > 65535)
    return LM_ERR_SHAPE;
  static std::once_flag once;
  static size_t limit;
  if (smem > MV_SMEM_DEFAULT && smem > opt_in_smem (matmul_q8_kernel<Dec>, &once, &limit))
    return LM_ERR_SHAPE;   /* n_in too long for one block's shared memory */
  return lmc_launched (lmc_launch (matmul_q8_kernel<Dec>, grid, warps * LMC_WARP, smem, stream,
                                   (const uint8_t *) w, row_bytes, n_in, n_out, x, x_rows, y_rows,
                                   n, y));
}

/* ---- prefill ---- */

/* grid (row tiles, token tiles); the phases of lm-cuda-schedule.cuh.
 * Dynamic shared memory: MATMUL_SMEM. */
#define MATMUL_SMEM ((size_t) LMC_MM_SMEM_FLOATS * sizeof (float))

template <class Dec>
__global__ void __launch_bounds__ (LMC_MM_THREADS)
matmul_kernel (LmcMatmulArgs args)
{
  lmc_wait_previous ();
  extern __shared__ float4 smem_mm4[];
  float *sw = reinterpret_cast<float *> (smem_mm4);
  float *sxt = sw + LMC_MM_K * LMC_MM_W_STRIDE;
  const uint32_t tid = threadIdx.x;
  const uint32_t row_base = blockIdx.x * LMC_MM_ROWS, tok_base = blockIdx.y * LMC_MM_TOKENS;
  float acc[4][4];
  for (int r = 0; r < 4; r++)
    for (int b = 0; b < 4; b++)
      acc[r][b] = 0.0f;

  for (uint32_t k0 = 0; k0 < args.n_in; k0 += LMC_MM_K)
    {
      lmc_mm_load_w<Dec> (&args, row_base, k0, tid, sw);
      lmc_mm_load_x (&args, tok_base, k0, tid, sxt);
      __syncthreads ();
      lmc_mm_compute (tid, sw, sxt, acc);
      __syncthreads ();
    }
  lmc_mm_store (&args, row_base, tok_base, tid, acc);
}

static LmStatus
launch_matmul (cudaStream_t stream, LmCudaActMode mode, LmTensorType type, const void *w,
               size_t mat_stride, uint32_t n_in, uint32_t n_out, const float *x,
               const int32_t *x_rows, const int32_t *y_rows, uint32_t n, float *y)
{
  size_t row_bytes;
  bool vector;
  LmStatus st = lmc_check_mode_product (mode, type, w, mat_stride, n_in, &row_bytes, &vector);
  if (st != LM_OK)
    return st;
  if (n_out == 0 || n == 0)
    return LM_OK;
  if (x == nullptr || y == nullptr)
    return LM_ERR_INVALID_ARGUMENT;
  if (mode == LM_CUDA_ACT_Q8)
    {
      bool q8 = false;
      st = lmc_with_decoder (type, vector, [&] (auto dec) {
        using Dec = decltype (dec);
        if constexpr (Dec::Q8)
          {
            q8 = true;
            return launch_matmul_q8<Dec> (stream, w, row_bytes, n_in, n_out, x, x_rows, y_rows,
                                          n, y);
          }
        return LM_OK;
      });
      if (q8)
        return st;
    }
  dim3 grid ((n_out + LMC_MM_ROWS - 1) / LMC_MM_ROWS, (n + LMC_MM_TOKENS - 1) / LMC_MM_TOKENS);
  if (grid.y > 65535)
    return LM_ERR_SHAPE;
  return lmc_with_decoder (type, vector, [&] (auto dec) {
    using Dec = decltype (dec);
    static std::once_flag once;
    static size_t limit;
    if (opt_in_smem (matmul_kernel<Dec>, &once, &limit) < MATMUL_SMEM)
      return LM_ERR_DEVICE;
    LmcMatmulArgs args = { (const uint8_t *) w, row_bytes, n_in, n_out, x, x_rows, y_rows, n, y };
    return lmc_launched (
      lmc_launch (matmul_kernel<Dec>, grid, LMC_MM_THREADS, MATMUL_SMEM, stream, args));
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
    case LM_TYPE_Q4_0:
    case LM_TYPE_Q4_1:
    case LM_TYPE_Q5_0:
    case LM_TYPE_Q5_1:
    case LM_TYPE_Q2_K:
    case LM_TYPE_Q3_K:
      return true;
    default:
      return false;
    }
}

extern "C" LmStatus
lm_cuda_matvec_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type, const void *w,
                   uint32_t n_in, uint32_t n_out, const float *x, float *y, bool accumulate)
{
  LmCudaProduct p = { type, w, nullptr, 0, nullptr, 1, n_in, n_out, x, nullptr, 0, y, nullptr };
  return launch_matvec ((cudaStream_t) stream, mode, &p, accumulate);
}

extern "C" LmStatus
lm_cuda_matvec (LmCudaStream stream, LmTensorType type, const void *w, uint32_t n_in,
                uint32_t n_out, const float *x, float *y, bool accumulate)
{
  return lm_cuda_matvec_ex (stream, LM_CUDA_ACT_F32, type, w, n_in, n_out, x, y, accumulate);
}

extern "C" LmStatus
lm_cuda_matvec_experts_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type,
                           const void *w, size_t mat_stride, uint32_t n_in, uint32_t n_out,
                           const int32_t *sel, uint32_t k, const float *x, size_t x_stride,
                           float *y)
{
  if (k > 0 && sel == nullptr)
    return LM_ERR_INVALID_ARGUMENT;
  LmCudaProduct p = { type, w, nullptr, mat_stride, sel, k, n_in, n_out, x, nullptr, x_stride, y,
                      nullptr };
  return launch_matvec ((cudaStream_t) stream, mode, &p, false);
}

extern "C" LmStatus
lm_cuda_matvec_product (LmCudaStream stream, LmCudaActMode mode, const LmCudaProduct *product)
{
  if (product == nullptr)
    return LM_ERR_INVALID_ARGUMENT;
  return launch_matvec ((cudaStream_t) stream, mode, product, false);
}

extern "C" LmStatus
lm_cuda_matvec_experts (LmCudaStream stream, LmTensorType type, const void *w,
                        size_t mat_stride, uint32_t n_in, uint32_t n_out, const int32_t *sel,
                        uint32_t k, const float *x, size_t x_stride, float *y)
{
  return lm_cuda_matvec_experts_ex (stream, LM_CUDA_ACT_F32, type, w, mat_stride, n_in, n_out,
                                    sel, k, x, x_stride, y);
}

extern "C" LmStatus
lm_cuda_matmul_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type, const void *w,
                   uint32_t n_in, uint32_t n_out, const float *x, uint32_t n, float *y)
{
  return launch_matmul ((cudaStream_t) stream, mode, type, w, 0, n_in, n_out, x, nullptr,
                        nullptr, n, y);
}

extern "C" LmStatus
lm_cuda_matmul (LmCudaStream stream, LmTensorType type, const void *w, uint32_t n_in,
                uint32_t n_out, const float *x, uint32_t n, float *y)
{
  return lm_cuda_matmul_ex (stream, LM_CUDA_ACT_F32, type, w, n_in, n_out, x, n, y);
}

extern "C" LmStatus
lm_cuda_matmul_rows_ex (LmCudaStream stream, LmCudaActMode mode, LmTensorType type,
                        const void *w, size_t mat_stride, uint32_t expert, uint32_t n_in,
                        uint32_t n_out, const float *x, const int32_t *x_rows,
                        const int32_t *y_rows, uint32_t n_rows, float *y)
{
  if (n_rows > 0 && (x_rows == nullptr || y_rows == nullptr))
    return LM_ERR_INVALID_ARGUMENT;
  const uint8_t *wm = w ? (const uint8_t *) w + (size_t) expert * mat_stride : nullptr;
  return launch_matmul ((cudaStream_t) stream, mode, type, wm, mat_stride, n_in, n_out, x,
                        x_rows, y_rows, n_rows, y);
}

extern "C" LmStatus
lm_cuda_matmul_rows (LmCudaStream stream, LmTensorType type, const void *w, size_t mat_stride,
                     uint32_t expert, uint32_t n_in, uint32_t n_out, const float *x,
                     const int32_t *x_rows, const int32_t *y_rows, uint32_t n_rows, float *y)
{
  return lm_cuda_matmul_rows_ex (stream, LM_CUDA_ACT_F32, type, w, mat_stride, expert, n_in,
                                 n_out, x, x_rows, y_rows, n_rows, y);
}
