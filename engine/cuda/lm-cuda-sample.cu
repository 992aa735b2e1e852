/* lm-cuda-sample.cu: sampler.c's chain on the GPU (lm-cuda-ops.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Three launches: the logits are copied into scratch with NaN as -inf, the
 * repetition penalty is applied there once per distinct token of the
 * history, and one block of SAMPLE_THREADS threads picks the token:
 *  - temperature <= 0: argmax (the CPU's two greedy cases, NaN included);
 *  - no top-k, top-p or min-p: softmax over the whole vocabulary in token
 *    order and the CPU's cumulative draw, found with a block-wide scan;
 *  - otherwise the best `want` candidates (top-k, or LM_CUDA_SAMPLE_MAX_CAND
 *    for top-p / min-p alone) by a radix select on the logit's bits with ties
 *    to the lower id, sorted (bitonic) as by_logit_desc does, then thread 0
 *    runs filter_sorted / filter_by_heap and the draw over them in the CPU's
 *    order with the exponentials computed in parallel beforehand.
 */
#include <cuda_runtime.h>
#include <math.h>

#include "lm-cuda-block.cuh"
#include "lm-cuda-math.h"
#include "lm-cuda-ops.h"

#define SAMPLE_THREADS LM_CUDA_SAMPLE_MAX_CAND

static __global__ void
sanitize_kernel (const float *logits, uint32_t n, float *vals)
{
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
       i += (size_t) gridDim.x * blockDim.x)
    vals[i] = isnan (logits[i]) ? -INFINITY : logits[i];
}

static __global__ void
penalty_kernel (const int32_t *history, const int32_t *history_state, uint32_t n_vocab,
                float penalty, float *vals)
{
  int32_t n_hist = history_state[0];
  for (int32_t i = threadIdx.x; i < n_hist; i += blockDim.x)
    {
      int32_t id = history[i];
      bool first = id >= 0 && (uint32_t) id < n_vocab;
      for (int32_t j = 0; j < i && first; j++)
        first = history[j] != id;
      if (first)
        vals[id] = lm_hd_penalize (vals[id], penalty);
    }
}

/* Prefix sums over the block (blockDim.x == SAMPLE_THREADS): returns the
 * sum of the threads before this one, *incl the sum up to and including it,
 * so that one thread's *incl is bit for bit the next one's return value.
 * @buf: SAMPLE_THREADS elements of shared memory. */
template <typename T>
static __device__ T
block_scan (T v, T *buf, T *incl)
{
  uint32_t tid = threadIdx.x;
  __syncthreads ();
  buf[tid] = v;
  __syncthreads ();
  for (uint32_t off = 1; off < blockDim.x; off <<= 1)
    {
      T add = tid >= off ? buf[tid - off] : (T) 0;
      __syncthreads ();
      buf[tid] += add;
      __syncthreads ();
    }
  *incl = buf[tid];
  T excl = tid > 0 ? buf[tid - 1] : (T) 0;
  __syncthreads ();
  return excl;
}

typedef struct {
  float v[SAMPLE_THREADS];
  int32_t id[SAMPLE_THREADS];
  double e1[SAMPLE_THREADS];   /* exp(v - v0): top-p's softmax at temperature 1 */
  double e2[SAMPLE_THREADS];   /* exp((v - v0) / T): the final softmax */
  double scan[SAMPLE_THREADS];
  uint32_t hist[256];
  uint32_t digit, remaining, n_gt;
  double reduce[32];
} SampleSmem;

/* Greedy: the CPU's plain argmax over the raw logits without a penalty,
 * over the sanitised and penalised values with one. */
static __device__ void
greedy (const float *logits, const float *vals, uint32_t n, bool penalised, SampleSmem *sm,
        int32_t *token)
{
  const float *src = penalised ? vals : logits;
  float v = NAN;
  int32_t bi = -1;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
    if (bi < 0 || lm_hd_argmax_before (src[i], (int32_t) i, v, bi))
      {
        v = src[i];
        bi = (int32_t) i;
      }
  sm->v[threadIdx.x] = v;
  sm->id[threadIdx.x] = bi;
  __syncthreads ();
  if (threadIdx.x == 0)
    {
      for (uint32_t t = 1; t < blockDim.x; t++)
        if (sm->id[t] >= 0 && (bi < 0 || lm_hd_argmax_before (sm->v[t], sm->id[t], v, bi)))
          {
            v = sm->v[t];
            bi = sm->id[t];
          }
      *token = bi;
    }
}

/* Softmax over every token in id order and the cumulative draw. */
static __device__ void
draw_all (const float *vals, uint32_t n, double inv_temp, double u, SampleSmem *sm,
          int32_t *token)
{
  float mx = -INFINITY;
  for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
    mx = vals[i] > mx ? vals[i] : mx;
  mx = lm_block_max (mx, (float *) sm->reduce, -INFINITY);
  uint32_t seg = (n + blockDim.x - 1) / blockDim.x;
  uint32_t lo = threadIdx.x * seg, hi = lo + seg < n ? lo + seg : n;
  double part = 0.0;
  for (uint32_t i = lo; i < hi; i++)
    part += exp (((double) vals[i] - mx) * inv_temp);
  double sum = lm_block_sum (part, sm->reduce);
  double p_seg = 0.0;
  for (uint32_t i = lo; i < hi; i++)
    p_seg += exp (((double) vals[i] - mx) * inv_temp) / sum;
  double incl;
  double cum = block_scan (p_seg, sm->scan, &incl);
  if (threadIdx.x == 0)
    *token = (int32_t) n - 1;   /* rounding left u just above the total */
  __syncthreads ();
  if (lo < hi && u >= cum && u < incl)
    {
      int32_t pick = (int32_t) hi - 1;
      for (uint32_t i = lo; i < hi; i++)
        if (u < (cum += exp (((double) vals[i] - mx) * inv_temp) / sum))
          {
            pick = (int32_t) i;
            break;
          }
      *token = pick;
    }
}

/* The @want best (value desc, id asc) into sm->v / sm->id, sorted. */
static __device__ void
select_best (const float *vals, uint32_t n, uint32_t want, SampleSmem *sm)
{
  uint32_t tid = threadIdx.x, prefix = 0, mask = 0;
  if (tid == 0)
    sm->remaining = want;
  for (int shift = 24; shift >= 0; shift -= 8)
    {
      for (uint32_t b = tid; b < 256; b += blockDim.x)
        sm->hist[b] = 0;
      __syncthreads ();
      for (uint32_t i = tid; i < n; i += blockDim.x)
        {
          uint32_t key = lm_hd_float_key (vals[i]);
          if ((key & mask) == prefix)
            atomicAdd (&sm->hist[(key >> shift) & 255u], 1u);
        }
      __syncthreads ();
      if (tid == 0)
        {
          uint32_t rem = sm->remaining, b = 255;
          while (b > 0 && sm->hist[b] < rem)
            rem -= sm->hist[b--];
          sm->digit = b;
          sm->remaining = rem;
        }
      __syncthreads ();
      prefix |= sm->digit << shift;
      mask |= 255u << shift;
    }
  /* keys above the threshold: any order; equal ones: the lowest ids */
  uint32_t need_eq = sm->remaining, n_gt = want - need_eq;
  if (tid == 0)
    sm->n_gt = 0;
  sm->v[tid] = -INFINITY;
  sm->id[tid] = INT32_MAX;
  __syncthreads ();
  uint32_t seg = (n + blockDim.x - 1) / blockDim.x;
  uint32_t lo = tid * seg, hi = lo + seg < n ? lo + seg : n;
  uint32_t n_eq = 0;
  for (uint32_t i = lo; i < hi; i++)
    {
      uint32_t key = lm_hd_float_key (vals[i]);
      if (key > prefix)
        {
          uint32_t slot = atomicAdd (&sm->n_gt, 1u);
          if (slot < n_gt)
            {
              sm->v[slot] = vals[i];
              sm->id[slot] = (int32_t) i;
            }
        }
      else if (key == prefix)
        n_eq++;
    }
  double incl;
  uint32_t rank = (uint32_t) block_scan ((double) n_eq, sm->scan, &incl);
  for (uint32_t i = lo; i < hi && rank < need_eq; i++)
    if (lm_hd_float_key (vals[i]) == prefix)
      {
        sm->v[n_gt + rank] = vals[i];
        sm->id[n_gt + rank] = (int32_t) i;
        rank++;
      }
  __syncthreads ();
  /* bitonic sort, best first */
  for (uint32_t size = 2; size <= blockDim.x; size <<= 1)
    for (uint32_t stride = size / 2; stride > 0; stride >>= 1)
      {
        uint32_t j = tid ^ stride;
        if (j > tid)
          {
            bool best_first = (tid & size) == 0;
            bool swap = best_first ? lm_hd_route_before (sm->v[j], sm->id[j], sm->v[tid], sm->id[tid])
                                   : lm_hd_route_before (sm->v[tid], sm->id[tid], sm->v[j], sm->id[j]);
            if (swap)
              {
                float tv = sm->v[tid];
                int32_t ti = sm->id[tid];
                sm->v[tid] = sm->v[j];
                sm->id[tid] = sm->id[j];
                sm->v[j] = tv;
                sm->id[j] = ti;
              }
          }
        __syncthreads ();
      }
}

static __global__ void
__launch_bounds__ (SAMPLE_THREADS)
sample_kernel (LmCudaSampleParams p, const float *logits, const float *vals, uint32_t n,
               const int32_t *history_state, const double *u_dev, int32_t *token)
{
  extern __shared__ double smem_raw[];
  SampleSmem *sm = (SampleSmem *) smem_raw;
  bool penalised = p.repeat_penalty != 1.0f && history_state != NULL && history_state[0] > 0;
  if (p.temperature <= 0)
    {
      greedy (logits, vals, n, penalised, sm, token);
      return;
    }
  double inv_temp = 1.0 / p.temperature, u = *u_dev;
  bool filter = p.top_p < 1.0f || p.min_p > 0.0f;
  bool use_k = p.top_k > 0 && (uint32_t) p.top_k < n;
  if (!use_k && !filter)
    {
      draw_all (vals, n, inv_temp, u, sm, token);
      return;
    }
  uint32_t want = use_k ? (uint32_t) p.top_k : n < SAMPLE_THREADS ? n : SAMPLE_THREADS;
  /* filter_by_heap's z: over every token, before the selection */
  double z = 0.0;
  if (!use_k && p.top_p < 1.0f)
    {
      float mx = -INFINITY;
      for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
        mx = vals[i] > mx ? vals[i] : mx;
      mx = lm_block_max (mx, (float *) sm->reduce, -INFINITY);
      double part = 0.0;
      for (uint32_t i = threadIdx.x; i < n; i += blockDim.x)
        part += exp ((double) vals[i] - mx);
      z = lm_block_sum (part, sm->reduce);
    }
  select_best (vals, n, want, sm);
  uint32_t tid = threadIdx.x;
  double v0 = sm->v[0];
  if (tid < want)
    {
      sm->e1[tid] = exp ((double) sm->v[tid] - v0);
      sm->e2[tid] = exp (((double) sm->v[tid] - v0) * inv_temp);
    }
  __syncthreads ();
  if (tid != 0)
    return;
  uint32_t kept = want;
  if (use_k)
    {
      if (p.top_p < 1.0f)
        {
          double sum = 0.0, cum = 0.0;
          for (uint32_t i = 0; i < kept; i++)
            sum += sm->e1[i];
          for (uint32_t i = 0; i < kept; i++)
            if ((cum += sm->e1[i] / sum) >= p.top_p)
              {
                kept = i + 1;
                break;
              }
        }
      if (p.min_p > 0.0f)
        {
          double floor_logit = v0 + log ((double) p.min_p);
          uint32_t keep = 1;
          while (keep < kept && (double) sm->v[keep] >= floor_logit)
            keep++;
          kept = keep;
        }
    }
  else
    {
      double floor_logit = p.min_p > 0.0f ? v0 + log ((double) p.min_p) : -INFINITY, cum = 0.0;
      uint32_t k = 0;
      while (k < want)
        {
          if (k > 0 && (double) sm->v[k] < floor_logit)
            break;
          k++;
          if (p.top_p < 1.0f && (cum += sm->e1[k - 1] / z) >= p.top_p)
            break;
        }
      kept = k;
    }
  double sum = 0.0, cum = 0.0;
  for (uint32_t i = 0; i < kept; i++)
    sum += sm->e2[i];
  for (uint32_t i = 0; i < kept; i++)
    if (u < (cum += sm->e2[i] / sum))
      {
        *token = sm->id[i];
        return;
      }
  *token = sm->id[kept - 1];
}

extern "C" LmStatus
lm_cuda_sample (LmCudaStream stream, const LmCudaSampleParams *params, const float *logits,
                uint32_t n_vocab, const int32_t *history, const int32_t *history_state,
                const double *u, float *scratch, int32_t *token)
{
  if (n_vocab == 0 || n_vocab > INT32_MAX || isnan (params->temperature)
      || isnan (params->top_p) || isnan (params->min_p) || !(params->repeat_penalty > 0)
      || (params->top_k > LM_CUDA_SAMPLE_MAX_CAND && (uint32_t) params->top_k < n_vocab))
    return LM_ERR_INVALID_ARGUMENT;
  bool penalty = params->repeat_penalty != 1.0f && history != NULL && history_state != NULL;
  sanitize_kernel<<<(n_vocab + 1023) / 1024 < 1024 ? (n_vocab + 1023) / 1024 : 1024, 1024, 0,
                    stream>>> (logits, n_vocab, scratch);
  if (penalty)
    penalty_kernel<<<1, 256, 0, stream>>> (history, history_state, n_vocab,
                                           params->repeat_penalty, scratch);
  size_t smem = sizeof (SampleSmem);   /* below the 48 KiB needing an opt-in */
  sample_kernel<<<1, SAMPLE_THREADS, smem, stream>>> (*params, logits, scratch, n_vocab,
                                                      penalty ? history_state : NULL, u, token);
  return lm_cuda_launched ();
}

static __global__ void
accept_kernel (const int32_t *token, uint32_t n_vocab, int32_t repeat_last_n, int32_t *history,
               int32_t *history_state)
{
  int32_t id = *token;
  if (repeat_last_n <= 0 || id < 0 || (uint32_t) id >= n_vocab)
    return;
  int32_t n_hist = history_state[0], at = history_state[1];
  history[at] = id;
  history_state[1] = (at + 1) % repeat_last_n;
  history_state[0] = n_hist < repeat_last_n ? n_hist + 1 : n_hist;
}

extern "C" LmStatus
lm_cuda_sample_accept (LmCudaStream stream, const int32_t *token, uint32_t n_vocab,
                       int32_t repeat_last_n, int32_t *history, int32_t *history_state)
{
  accept_kernel<<<1, 1, 0, stream>>> (token, n_vocab, repeat_last_n, history, history_state);
  return lm_cuda_launched ();
}
