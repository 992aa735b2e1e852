/* lm-cuda-attn.cu: causal attention over the KV cache, with or without the
 * per-head output gate (lm-cuda-ops.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One block serves one token and one kv head: the query heads that share the
 * kv head (GQA) are handled together, so each K and V row is read once for
 * all of them. The block walks its positions in tiles of TILE rows with a
 * running maximum, as attend_cb in forward-attn.c does with its blocks of
 * scores. Without scratch one block covers all positions of its token
 * (prefill has n * n_head_kv blocks); with scratch (decode) the positions are
 * split into chunks, one block each, and a second kernel combines the
 * partial softmax sums (flash-decoding). The number of chunks depends only on
 * n_ctx, so a captured graph replays at any position.
 */
#include <cuda_runtime.h>
#include <math.h>

#include "lm-cuda-block.cuh"
#include "lm-cuda-launch.cuh"
#include "lm-cuda-math.h"
#include "lm-cuda-ops.h"

#define ATTN_THREADS 256
#define ATTN_WARPS (ATTN_THREADS / 32)
#define TILE LM_ATTN_TILE
#define MAX_GROUP 64       /* query heads per kv head */

typedef struct {
  const float *q, *k_cache, *v_cache;
  bool gated;       /* each query head is followed by its gate */
  uint32_t n_head, n_head_kv, head_dim;
  const uint32_t *pos;
  uint32_t n_splits, chunk;
  float *partial;   /* split form: [t][h][split][head_dim + 2] (acc, max, sum) */
  float *out;
} AttnArgs;

/* Shared memory of a block: q[G][hd], acc[G][hd], w[G][TILE], m[G], l[G], shrink[G]. */
static size_t
attn_smem_bytes (uint32_t group, uint32_t hd)
{
  return sizeof (float) * ((size_t) 2 * group * hd + (size_t) group * TILE + 3 * group);
}

static __global__ void
attn_kernel (AttnArgs a)
{
  lmc_wait_previous ();
  extern __shared__ float smem[];
  uint32_t split = blockIdx.x, kv = blockIdx.y, t = blockIdx.z;
  uint32_t hd = a.head_dim, G = a.n_head / a.n_head_kv, kvd = hd * a.n_head_kv;
  size_t qs = a.gated ? 2 * (size_t) hd : hd;
  float *q = smem, *acc = q + G * hd, *w = acc + G * hd, *m = w + G * TILE, *l = m + G;
  float *shrink = l + G;
  uint32_t lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  uint32_t n_pos = a.pos[0] + t + 1;
  uint32_t start, end;
  lm_hd_attn_range (split, a.chunk, n_pos, &start, &end);
  /* a chunk past the token's positions: the combine does not read it (the
   * whole block leaves, before any barrier) */
  if (start >= end)
    return;
  float scale = 1.0f / sqrtf ((float) hd);

  for (uint32_t i = threadIdx.x; i < G * hd; i += blockDim.x)
    {
      uint32_t g = i / hd, d = i % hd;
      q[i] = a.q[((size_t) t * a.n_head + kv * G + g) * qs + d];
      acc[i] = 0.0f;
    }
  for (uint32_t g = threadIdx.x; g < G; g += blockDim.x)
    {
      m[g] = -INFINITY;
      l[g] = 0.0f;
    }
  __syncthreads ();

  for (uint32_t p0 = start; p0 < end; p0 += TILE)
    {
      uint32_t nb = end - p0 < TILE ? end - p0 : TILE;
      /* scores: one warp per position, every query head of the group */
      for (uint32_t pp = warp; pp < nb; pp += ATTN_WARPS)
        {
          const float *k = a.k_cache + (size_t) (p0 + pp) * kvd + (size_t) kv * hd;
          for (uint32_t g = 0; g < G; g++)
            {
              float dot = 0.0f;
              for (uint32_t d = lane; d < hd; d += 32)
                dot += k[d] * q[g * hd + d];
              dot = lm_warp_sum (dot);
              if (lane == 0)
                w[g * TILE + pp] = dot * scale;
            }
        }
      __syncthreads ();
      /* running maximum and sum per query head: one warp per head */
      for (uint32_t g = warp; g < G; g += ATTN_WARPS)
        {
          float bm = -INFINITY;
          for (uint32_t pp = lane; pp < nb; pp += 32)
            bm = w[g * TILE + pp] > bm ? w[g * TILE + pp] : bm;
          bm = lm_warp_max (bm);
          float mx = m[g] > bm ? m[g] : bm;
          float sh = bm > m[g] ? expf (m[g] - bm) : 1.0f;
          float sum = 0.0f;
          for (uint32_t pp = lane; pp < nb; pp += 32)
            {
              float e = expf (w[g * TILE + pp] - mx);
              w[g * TILE + pp] = e;
              sum += e;
            }
          sum = lm_warp_sum (sum);
          __syncwarp ();
          if (lane == 0)
            {
              l[g] = l[g] * sh + sum;
              m[g] = mx;
              shrink[g] = sh;
            }
        }
      __syncthreads ();
      /* acc = acc * shrink + w V; entry i always belongs to the same thread */
      for (uint32_t i = threadIdx.x; i < G * hd; i += blockDim.x)
        {
          uint32_t g = i / hd, d = i % hd;
          const float *v = a.v_cache + (size_t) p0 * kvd + (size_t) kv * hd + d;
          float s = acc[i] * shrink[g];
          for (uint32_t pp = 0; pp < nb; pp++)
            s += w[g * TILE + pp] * v[(size_t) pp * kvd];
          acc[i] = s;
        }
      __syncthreads ();
    }

  for (uint32_t i = threadIdx.x; i < G * hd; i += blockDim.x)
    {
      uint32_t g = i / hd, d = i % hd, h = kv * G + g;
      size_t th = (size_t) t * a.n_head + h;
      if (a.partial == NULL)
        {
          float gate = a.gated ? a.q[th * qs + hd + d] : 0.0f;
          a.out[th * hd + d] = lm_hd_attn_out (acc[i], l[g], a.gated, gate);
          continue;
        }
      float *p = a.partial + (th * a.n_splits + split) * (hd + 2);
      p[d] = acc[i];
      if (d == 0)
        {
          p[hd] = m[g];
          p[hd + 1] = l[g];
        }
    }
}

/* One block per (query head, token): the chunks' partial sums merged. */
static __global__ void
attn_combine_kernel (AttnArgs a)
{
  lmc_wait_previous ();
  uint32_t h = blockIdx.x, t = blockIdx.y, hd = a.head_dim;
  size_t th = (size_t) t * a.n_head + h, qs = a.gated ? 2 * (size_t) hd : hd;
  const float *p = a.partial + th * a.n_splits * (hd + 2);
  uint32_t n_pos = a.pos[0] + t + 1;
  uint32_t live = lm_hd_attn_live (n_pos, a.chunk, a.n_splits);
  float mx = -INFINITY;
  for (uint32_t s = 0; s < live; s++)
    mx = p[s * (hd + 2) + hd] > mx ? p[s * (hd + 2) + hd] : mx;
  float sum = 0.0f;
  for (uint32_t s = 0; s < live; s++)
    sum += p[s * (hd + 2) + hd + 1] * expf (p[s * (hd + 2) + hd] - mx);
  for (uint32_t d = threadIdx.x; d < hd; d += blockDim.x)
    {
      float acc = 0.0f;
      for (uint32_t s = 0; s < live; s++)
        acc += p[s * (hd + 2) + d] * expf (p[s * (hd + 2) + hd] - mx);
      float gate = a.gated ? a.q[th * qs + hd + d] : 0.0f;
      a.out[th * hd + d] = lm_hd_attn_out (acc, sum, a.gated, gate);
    }
}

static LmStatus
check_shape (uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim, size_t *smem)
{
  if (n_head_kv == 0 || n_head % n_head_kv != 0 || head_dim == 0
      || head_dim > LM_CUDA_MAX_HEAD_DIM || n_head / n_head_kv > MAX_GROUP)
    return LM_ERR_INVALID_ARGUMENT;
  *smem = attn_smem_bytes (n_head / n_head_kv, head_dim);
  if (*smem > 200 * 1024)
    return LM_ERR_INVALID_ARGUMENT;
  if (*smem > 48 * 1024
      && cudaFuncSetAttribute (attn_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               (int) *smem) != cudaSuccess)
    return LM_ERR_DEVICE;
  return LM_OK;
}

extern "C" LmStatus
lm_cuda_attention (LmCudaStream stream, const float *q, bool gated, const float *k_cache,
                   const float *v_cache, uint32_t n_head, uint32_t n_head_kv, uint32_t head_dim,
                   uint32_t n, const uint32_t *pos, uint32_t n_ctx, float *out)
{
  size_t smem;
  LmStatus st = check_shape (n_head, n_head_kv, head_dim, &smem);
  if (st != LM_OK)
    return st;
  if (n == 0 || n_head == 0)
    return LM_OK;
  AttnArgs a = { q, k_cache, v_cache, gated, n_head, n_head_kv, head_dim, pos, 1, n_ctx, NULL,
                 out };
  return lmc_launched (
    lmc_launch (attn_kernel, dim3 (1, n_head_kv, n), ATTN_THREADS, smem, stream, a));
}

extern "C" size_t
lm_cuda_attention_scratch_floats (uint32_t n_head, uint32_t head_dim, uint32_t n, uint32_t n_ctx)
{
  uint32_t chunk;
  return (size_t) n * n_head * lm_hd_attn_splits (n_ctx, &chunk) * (head_dim + 2);
}

extern "C" LmStatus
lm_cuda_attention_split (LmCudaStream stream, const float *q, bool gated, const float *k_cache,
                         const float *v_cache, uint32_t n_head, uint32_t n_head_kv,
                         uint32_t head_dim, uint32_t n, const uint32_t *pos, uint32_t n_ctx,
                         float *scratch, float *out)
{
  size_t smem;
  LmStatus st = check_shape (n_head, n_head_kv, head_dim, &smem);
  if (st != LM_OK)
    return st;
  if (n == 0 || n_head == 0)
    return LM_OK;
  uint32_t chunk, splits = lm_hd_attn_splits (n_ctx, &chunk);
  AttnArgs a = { q, k_cache, v_cache, gated, n_head, n_head_kv, head_dim, pos, splits, chunk,
                 scratch, out };
  LmStatus st_split = lmc_launched (
    lmc_launch (attn_kernel, dim3 (splits, n_head_kv, n), ATTN_THREADS, smem, stream, a));
  if (st_split != LM_OK)
    return st_split;
  return lmc_launched (lmc_launch (attn_combine_kernel, dim3 (n_head, n), 128, 0, stream, a));
}
