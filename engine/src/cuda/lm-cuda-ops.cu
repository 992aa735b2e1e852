/* lm-cuda-ops.cu: element-wise and per-row operations (bias rows included),
 * RoPE, KV append, the DeltaNet conv, MoE routing and combine, argmax
 * (lm-cuda-ops.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <cuda_runtime.h>
#include <math.h>

#include "lm-cuda-block.cuh"
#include "lm-cuda-launch.cuh"
#include "lm-cuda-math.h"
#include "lm-cuda-ops.h"

#define ROW_THREADS 256
#define FLAT_THREADS 256
#define FLAT_MAX_BLOCKS 4096

static unsigned
flat_blocks (size_t n)
{
  size_t b = (n + FLAT_THREADS - 1) / FLAT_THREADS;
  return (unsigned) (b < 1 ? 1 : b > FLAT_MAX_BLOCKS ? FLAT_MAX_BLOCKS : b);
}

/* ---- RMSNorm, L2 norm: one block per row, double sums of squares as the CPU
 * (RMSNorm's squares rounded to float first, as lm_rms_norm) ---- */

static __global__ void
rms_norm_kernel (const float *x, size_t x_stride, const float *w, float eps, uint32_t width,
                 float *y, size_t y_stride)
{
  lmc_wait_previous ();
  __shared__ double scratch[32];
  const float *xr = x + blockIdx.x * x_stride;
  float *yr = y + blockIdx.x * y_stride;
  double ss = 0.0;
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x)
    ss += (double) (xr[i] * xr[i]);
  float scale = lm_hd_rms_scale (lm_block_sum (ss, scratch), width, eps);
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x)
    yr[i] = xr[i] * scale * w[i];
}

extern "C" LmStatus
lm_cuda_rms_norm (LmCudaStream stream, const float *x, size_t x_stride, const float *w,
                  float eps, uint32_t n_rows, uint32_t width, float *y, size_t y_stride)
{
  if (n_rows == 0 || width == 0)
    return LM_OK;
  return lmc_launched (lmc_launch (rms_norm_kernel, n_rows, ROW_THREADS, 0, stream, x, x_stride, w,
                                   eps, width, y, y_stride));
}

/* One block per row: the row's sums read the new x back from the block's
 * own writes (each thread reads only what it wrote). */
static __global__ void
add_rms_norm_kernel (float *x, const float *o, const float *w, float eps, uint32_t width,
                     float *y)
{
  lmc_wait_previous ();
  __shared__ double scratch[32];
  float *xr = x + (size_t) blockIdx.x * width;
  const float *orow = o + (size_t) blockIdx.x * width;
  float *yr = y + (size_t) blockIdx.x * width;
  double ss = 0.0;
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x)
    {
      float v = xr[i] + orow[i];
      xr[i] = v;
      ss += (double) (v * v);
    }
  float scale = lm_hd_rms_scale (lm_block_sum (ss, scratch), width, eps);
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x)
    yr[i] = xr[i] * scale * w[i];
}

extern "C" LmStatus
lm_cuda_add_rms_norm (LmCudaStream stream, float *x, const float *o, const float *w, float eps,
                      uint32_t n_rows, uint32_t width, float *y)
{
  if (n_rows == 0 || width == 0)
    return LM_OK;
  return lmc_launched (
    lmc_launch (add_rms_norm_kernel, n_rows, ROW_THREADS, 0, stream, x, o, w, eps, width, y));
}

static __global__ void
l2_norm_kernel (float *x, size_t x_stride, float eps, uint32_t width)
{
  lmc_wait_previous ();
  __shared__ double scratch[32];
  float *xr = x + blockIdx.x * x_stride;
  double ss = 0.0;
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x)
    ss += (double) xr[i] * xr[i];
  float scale = lm_hd_l2_scale (lm_block_sum (ss, scratch), eps);
  for (uint32_t i = threadIdx.x; i < width; i += blockDim.x)
    xr[i] *= scale;
}

extern "C" LmStatus
lm_cuda_l2_norm (LmCudaStream stream, float *x, size_t x_stride, float eps, uint32_t n_rows,
                 uint32_t width)
{
  if (n_rows == 0 || width == 0)
    return LM_OK;
  return lmc_launched (
      lmc_launch (l2_norm_kernel, n_rows, ROW_THREADS, 0, stream, x, x_stride, eps, width));
}

/* ---- element-wise ---- */

static __global__ void
add_kernel (float *x, const float *y, size_t n)
{
  lmc_wait_previous ();
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
       i += (size_t) gridDim.x * blockDim.x)
    x[i] += y[i];
}

extern "C" LmStatus
lm_cuda_add (LmCudaStream stream, float *x, const float *y, size_t n)
{
  if (n == 0)
    return LM_OK;
  return lmc_launched (lmc_launch (add_kernel, flat_blocks (n), FLAT_THREADS, 0, stream, x, y, n));
}

static __global__ void
add_rows_kernel (float *x, const float *row, uint32_t width, size_t n)
{
  lmc_wait_previous ();
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
       i += (size_t) gridDim.x * blockDim.x)
    x[i] += row[i % width];
}

extern "C" LmStatus
lm_cuda_add_rows (LmCudaStream stream, float *x, const float *row, uint32_t n_rows,
                  uint32_t width)
{
  size_t n = (size_t) n_rows * width;
  if (n == 0)
    return LM_OK;
  return lmc_launched (
      lmc_launch (add_rows_kernel, flat_blocks (n), FLAT_THREADS, 0, stream, x, row, width, n));
}

static __global__ void
swiglu_kernel (float *gate, const float *up, size_t n)
{
  lmc_wait_previous ();
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
       i += (size_t) gridDim.x * blockDim.x)
    gate[i] = lm_silu_poly (gate[i]) * up[i];
}

extern "C" LmStatus
lm_cuda_swiglu (LmCudaStream stream, float *gate, const float *up, size_t n)
{
  if (n == 0)
    return LM_OK;
  return lmc_launched (
      lmc_launch (swiglu_kernel, flat_blocks (n), FLAT_THREADS, 0, stream, gate, up, n));
}

/* ---- RoPE: one block per token; the table of its position in shared memory ---- */

static __global__ void
rope_kernel (float *x, size_t token_stride, size_t head_stride, uint32_t n_heads,
             const uint32_t *pos, uint32_t n_rot, float base, int32_t s0, int32_t s1,
             int32_t s2, int32_t s3)
{
  lmc_wait_previous ();
  __shared__ float cs[LM_CUDA_MAX_HEAD_DIM];
  uint32_t t = blockIdx.x, half = n_rot / 2;
  uint32_t p = pos[0] + t;
  for (uint32_t i = threadIdx.x; i < half; i += blockDim.x)
    lm_hd_rope_entry (p, i, n_rot, base, s0, s1, s2, s3, &cs[2 * i], &cs[2 * i + 1]);
  __syncthreads ();
  float *xt = x + t * token_stride;
  for (uint32_t e = threadIdx.x; e < n_heads * half; e += blockDim.x)
    {
      uint32_t h = e / half, i = e % half;
      float *xh = xt + h * head_stride;
      lm_hd_rope_rotate (&xh[i], &xh[i + half], cs[2 * i], cs[2 * i + 1]);
    }
}

extern "C" LmStatus
lm_cuda_rope (LmCudaStream stream, float *x, size_t token_stride, size_t head_stride,
              uint32_t n_heads, uint32_t n_tokens, const uint32_t *pos, uint32_t n_rot,
              float base, const int32_t sections[4])
{
  if (n_rot > LM_CUDA_MAX_HEAD_DIM || n_rot % 2 != 0)
    return LM_ERR_INVALID_ARGUMENT;
  if (n_tokens == 0 || n_heads == 0 || n_rot == 0)
    return LM_OK;
  return lmc_launched (lmc_launch (rope_kernel, n_tokens, 128, 0, stream, x, token_stride,
                                   head_stride, n_heads, pos, n_rot, base, sections[0], sections[1],
                                   sections[2], sections[3]));
}

/* ---- KV append ---- */

static __global__ void
kv_append_kernel (const float *k, const float *v, uint32_t kv_dim, size_t count,
                  const uint32_t *pos, float *k_cache, float *v_cache)
{
  lmc_wait_previous ();
  size_t base = (size_t) pos[0] * kv_dim;
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < count;
       i += (size_t) gridDim.x * blockDim.x)
    {
      k_cache[base + i] = k[i];
      v_cache[base + i] = v[i];
    }
}

extern "C" LmStatus
lm_cuda_kv_append (LmCudaStream stream, const float *k, const float *v, uint32_t kv_dim,
                   uint32_t n, const uint32_t *pos, float *k_cache, float *v_cache)
{
  size_t count = (size_t) n * kv_dim;
  if (count == 0)
    return LM_OK;
  return lmc_launched (lmc_launch (kv_append_kernel, flat_blocks (count), FLAT_THREADS, 0, stream,
                                   k, v, kv_dim, count, pos, k_cache, v_cache));
}

/* ---- causal conv: one thread per channel, sequential over the tokens ---- */

static __global__ void
causal_conv_kernel (const float *in, const float *w, uint32_t K, uint32_t C, uint32_t n,
                    float *state, float *out)
{
  lmc_wait_previous ();
  uint32_t c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= C)
    return;
  for (uint32_t t = 0; t < n; t++)
    {
      float sum = 0.0f;
      for (uint32_t j = 0; j < K; j++)
        {
          int64_t r = (int64_t) t - (K - 1) + j;
          float src = r >= 0 ? in[(size_t) r * C + c]
                             : state[(size_t) ((int64_t) (K - 1) + r) * C + c];
          sum += w[(size_t) c * K + j] * src;
        }
      out[(size_t) t * C + c] = lm_hd_silu (sum);
    }
  /* The saved rows advance; this column is read by no other thread. */
  uint32_t keep = K - 1;
  if (n >= keep)
    for (uint32_t i = 0; i < keep; i++)
      state[(size_t) i * C + c] = in[(size_t) (n - keep + i) * C + c];
  else
    {
      for (uint32_t i = 0; i < keep - n; i++)
        state[(size_t) i * C + c] = state[(size_t) (i + n) * C + c];
      for (uint32_t i = 0; i < n; i++)
        state[(size_t) (keep - n + i) * C + c] = in[(size_t) i * C + c];
    }
}

extern "C" LmStatus
lm_cuda_causal_conv (LmCudaStream stream, const float *in, const float *w, uint32_t K,
                     uint32_t C, uint32_t n, float *state, float *out)
{
  if (K == 0)
    return LM_ERR_INVALID_ARGUMENT;
  if (C == 0 || n == 0)
    return LM_OK;
  return lmc_launched (
      lmc_launch (causal_conv_kernel, (C + 127) / 128, 128, 0, stream, in, w, K, C, n, state, out));
}

/* ---- MoE routing: one warp per token ---- */

#define ROUTE_MAX_K 64

/* The warp's best (logit, expert) by lm_hd_route_before, from each lane's. */
static __device__ __forceinline__ void
route_warp_best (float *best_l, int32_t *best)
{
  for (int off = 16; off > 0; off >>= 1)
    {
      float ol = __shfl_xor_sync (0xffffffffu, *best_l, off);
      int32_t ob = __shfl_xor_sync (0xffffffffu, *best, off);
      if (ob >= 0 && (*best < 0 || lm_hd_route_before (ol, ob, *best_l, *best)))
        {
          *best = ob;
          *best_l = ol;
        }
    }
}

/* The k picked experts of a token and their weights, renormalised. */
static __device__ void
route_store (const int32_t *picked, const float *picked_w, uint32_t k, int32_t *sel, float *w)
{
  float sum = 0.0f;
  for (uint32_t i = 0; i < k; i++)
    sum += picked_w[i];
  float denom = sum > 6.103515625e-5f ? sum : 6.103515625e-5f;
  for (uint32_t i = 0; i < k; i++)
    {
      sel[i] = picked[i];
      w[i] = picked_w[i] / denom;
    }
}

/* The routing of up to ROUTE_CACHE * 32 experts with each lane's logits in
 * registers, loaded once (the general kernel below reads them from memory
 * in each of its k + 2 passes, one load after the other). The same
 * comparisons in the same order, and the choice of lane 0 as there: the
 * same results. */
#define ROUTE_CACHE 8

static __global__ void
moe_route_cached_kernel (const float *logits, uint32_t n_expert, uint32_t k, int32_t *sel,
                         float *w)
{
  lmc_wait_previous ();
  __shared__ float picked_w[ROUTE_MAX_K];
  __shared__ int32_t picked[ROUTE_MAX_K];
  const float *l = logits + (size_t) blockIdx.x * n_expert;
  uint32_t lane = threadIdx.x, taken = 0;   /* bit j: expert lane + 32 j */
  float v[ROUTE_CACHE];
#pragma unroll
  for (int j = 0; j < ROUTE_CACHE; j++)
    {
      uint32_t e = lane + 32u * j;
      v[j] = e < n_expert ? l[e] : 0.0f;
    }
  float max = -INFINITY;
#pragma unroll
  for (int j = 0; j < ROUTE_CACHE; j++)
    if (lane + 32u * j < n_expert)
      max = v[j] > max ? v[j] : max;
  max = lm_warp_max (max);
  float total = 0.0f;
#pragma unroll
  for (int j = 0; j < ROUTE_CACHE; j++)
    if (lane + 32u * j < n_expert)
      total += expf (v[j] - max);
  total = lm_warp_sum (total);
  for (uint32_t i = 0; i < k; i++)
    {
      float best_l = -INFINITY;
      int32_t best = -1;
#pragma unroll
      for (int j = 0; j < ROUTE_CACHE; j++)
        {
          int32_t e = (int32_t) (lane + 32u * j);
          if ((uint32_t) e < n_expert && !(taken & (1u << j))
              && (best < 0 || lm_hd_route_before (v[j], e, best_l, best)))
            {
              best = e;
              best_l = v[j];
            }
        }
      route_warp_best (&best_l, &best);
      best = __shfl_sync (0xffffffffu, best, 0);
      if ((uint32_t) best % 32u == lane)
        taken |= 1u << ((uint32_t) best / 32u);
      if (lane == 0)
        {
          picked[i] = best;
          picked_w[i] = expf (best_l - max) / total;
        }
    }
  __syncwarp ();
  if (lane == 0)
    route_store (picked, picked_w, k, sel + (size_t) blockIdx.x * k, w + (size_t) blockIdx.x * k);
}

static __global__ void
moe_route_kernel (const float *logits, uint32_t n_expert, uint32_t k, int32_t *sel, float *w)
{
  lmc_wait_previous ();
  extern __shared__ unsigned char taken[];   /* n_expert flags */
  __shared__ float picked_w[ROUTE_MAX_K];
  __shared__ int32_t picked[ROUTE_MAX_K];
  const float *l = logits + (size_t) blockIdx.x * n_expert;
  uint32_t lane = threadIdx.x;
  float max = -INFINITY;
  for (uint32_t e = lane; e < n_expert; e += 32)
    {
      taken[e] = 0;
      max = l[e] > max ? l[e] : max;
    }
  max = lm_warp_max (max);
  float total = 0.0f;
  for (uint32_t e = lane; e < n_expert; e += 32)
    total += expf (l[e] - max);
  total = lm_warp_sum (total);
  __syncwarp ();
  for (uint32_t i = 0; i < k; i++)
    {
      float best_l = -INFINITY;
      int32_t best = -1;
      for (uint32_t e = lane; e < n_expert; e += 32)
        if (!taken[e] && (best < 0 || lm_hd_route_before (l[e], (int32_t) e, best_l, best)))
          {
            best = (int32_t) e;
            best_l = l[e];
          }
      route_warp_best (&best_l, &best);
      if (lane == 0)
        {
          taken[best] = 1;
          picked[i] = best;
          picked_w[i] = expf (best_l - max) / total;
        }
      __syncwarp ();
    }
  if (lane == 0)
    route_store (picked, picked_w, k, sel + (size_t) blockIdx.x * k, w + (size_t) blockIdx.x * k);
}

extern "C" LmStatus
lm_cuda_moe_route (LmCudaStream stream, const float *logits, uint32_t n, uint32_t n_expert,
                   uint32_t k, int32_t *sel, float *w)
{
  if (k == 0 || k > ROUTE_MAX_K || k > n_expert || n_expert > 48 * 1024)
    return LM_ERR_INVALID_ARGUMENT;
  if (n == 0)
    return LM_OK;
  if (n_expert <= ROUTE_CACHE * 32)
    return lmc_launched (
      lmc_launch (moe_route_cached_kernel, n, 32, 0, stream, logits, n_expert, k, sel, w));
  return lmc_launched (
    lmc_launch (moe_route_kernel, n, 32, n_expert, stream, logits, n_expert, k, sel, w));
}

/* ---- MoE combine: one block per token and LM_COMBINE_THREADS outputs ----
 * Every block of a token computes the shared expert's gate itself (the
 * same sum in the same order): one multiprocessor per token took 16 us of
 * a decode step on an H200, a tenth of a 35B-A3B layer. */

static __global__ void
moe_combine_kernel (const float *y, const float *w, const float *gate_inp, const float *h,
                    uint32_t k, uint32_t width, float *o)
{
  lmc_wait_previous ();
  __shared__ float scratch[32];
  uint32_t t = blockIdx.x;
  bool shared = gate_inp != NULL;   /* the same for the whole grid: no divergent barrier */
  float gate = 0.0f;
  if (shared)
    {
      const float *ht = h + (size_t) t * width;
      float dot = 0.0f;
      for (uint32_t i = threadIdx.x; i < width; i += blockDim.x)
        dot += gate_inp[i] * ht[i];
      gate = lm_hd_sigmoid (lm_block_sum (dot, scratch));
    }
  const float *yt = y + (size_t) t * k * width, *wt = w + (size_t) t * k;
  float *ot = o + (size_t) t * width;
  uint32_t i = blockIdx.y * blockDim.x + threadIdx.x;
  if (i < width)
    {
      float sum = 0.0f;
      for (uint32_t j = 0; j < k; j++)
        sum += wt[j] * yt[(size_t) j * width + i];
      ot[i] = lm_hd_moe_mix (sum, shared, gate, shared ? ot[i] : 0.0f);
    }
}

extern "C" LmStatus
lm_cuda_moe_combine (LmCudaStream stream, const float *y, const float *w, const float *gate_inp,
                     const float *h, uint32_t n, uint32_t k, uint32_t width, float *o)
{
  if (n == 0 || width == 0)
    return LM_OK;
  dim3 grid (n, (width + LM_COMBINE_THREADS - 1) / LM_COMBINE_THREADS);
  return lmc_launched (lmc_launch (moe_combine_kernel, grid, LM_COMBINE_THREADS, 0, stream, y, w,
                                   gate_inp, h, k, width, o));
}

/* ---- argmax: one block; the order of lm_hd_argmax_before is total ---- */

#define ARGMAX_THREADS 1024

static __global__ void
argmax_kernel (const float *logits, uint32_t n, int32_t *token)
{
  lmc_wait_previous ();
  __shared__ float best_v[32];
  __shared__ int32_t best_i[32];
  float v = NAN;
  int32_t bi = -1;
  lm_block_for_each (logits, n, [&] (uint32_t i, float x) {
    if (bi < 0 || lm_hd_argmax_before (x, (int32_t) i, v, bi))
      {
        v = x;
        bi = (int32_t) i;
      }
  });
  for (int off = 16; off > 0; off >>= 1)
    {
      float ov = __shfl_xor_sync (0xffffffffu, v, off);
      int32_t oi = __shfl_xor_sync (0xffffffffu, bi, off);
      if (oi >= 0 && (bi < 0 || lm_hd_argmax_before (ov, oi, v, bi)))
        {
          v = ov;
          bi = oi;
        }
    }
  uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  if (lane == 0)
    {
      best_v[warp] = v;
      best_i[warp] = bi;
    }
  __syncthreads ();
  if (threadIdx.x == 0)
    {
      for (uint32_t w = 1; w < blockDim.x / 32; w++)
        if (best_i[w] >= 0 && (bi < 0 || lm_hd_argmax_before (best_v[w], best_i[w], v, bi)))
          {
            v = best_v[w];
            bi = best_i[w];
          }
      *token = bi;
    }
}

extern "C" LmStatus
lm_cuda_argmax (LmCudaStream stream, const float *logits, uint32_t n_vocab, int32_t *token)
{
  if (n_vocab == 0 || n_vocab > INT32_MAX)
    return LM_ERR_INVALID_ARGUMENT;
  return lmc_launched (
      lmc_launch (argmax_kernel, 1, ARGMAX_THREADS, 0, stream, logits, n_vocab, token));
}
