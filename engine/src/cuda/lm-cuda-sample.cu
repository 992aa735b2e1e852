/* lm-cuda-sample.cu: sampler.c's chain on the GPU (lm-cuda-ops.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Three launches: the logits are copied into scratch with NaN as -inf, the
 * repetition penalty is applied there once per distinct token of the
 * history, and one block of SAMPLE_THREADS threads picks the token:
 *  - temperature <= 0: argmax (the CPU's two greedy cases, NaN included);
 *  - no top-k, top-p or min-p: softmax over the whole vocabulary in token
 *    order and the CPU's cumulative draw, found with a block-wide scan;
 *  - top-k up to LM_CUDA_SAMPLE_MAX_CAND (the app's default chain), or top-p /
 *    min-p alone on a vocabulary that small: the best candidates by a radix
 *    select on the logit's bits with ties to the lower id, sorted (bitonic)
 *    as by_logit_desc does, then thread 0 runs filter_sorted /
 *    filter_by_heap and the draw over them in the CPU's order, with the
 *    exponentials computed in parallel beforehand;
 *  - otherwise (top-p / min-p alone on a large vocabulary, a larger top-k):
 *    the whole vocabulary sorted the same way (a stable radix sort, so ties
 *    keep the lower id first), and the cut-offs and the draw found with
 *    block-wide scans over the sorted order.
 */
#include <cub/device/device_radix_sort.cuh>
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

static __device__ void draw_all (const float *vals, uint32_t n, double inv_temp, double u,
                                 SampleSmem *sm, int32_t *token);

/* Greedy: the CPU's plain argmax over the raw logits without a penalty,
 * over the sanitised and penalised values with one. */
static __device__ void
greedy (const float *logits, const float *vals, uint32_t n, bool penalised, SampleSmem *sm,
        int32_t *token)
{
  const float *src = penalised ? vals : logits;
  float v = NAN;
  int32_t bi = -1;
  lm_block_for_each (src, n, [&] (uint32_t i, float x) {
    if (bi < 0 || lm_hd_argmax_before (x, (int32_t) i, v, bi))
      {
        v = x;
        bi = (int32_t) i;
      }
  });
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
      /* logits crowd into few bins of the top digits: lanes with the same
       * bin add once, with their count (256: not counted) */
      uint32_t lane = tid & 31u;
      lm_block_for_each (vals, n, [&] (uint32_t, float x) {
        uint32_t key = lm_hd_float_key (x);
        uint32_t bin = (key & mask) == prefix ? (key >> shift) & 255u : 256u;
        uint32_t peers = __match_any_sync (__activemask (), bin);
        if (bin < 256u && lane == (uint32_t) (__ffs (peers) - 1))
          atomicAdd (&sm->hist[bin], (uint32_t) __popc (peers));
      });
      __syncthreads ();
      if (tid == 0)
        sm->digit = lm_hd_radix_digit (sm->hist, &sm->remaining);
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
      lm_block_for_each (vals, n, [&] (uint32_t, float x) { mx = x > mx ? x : mx; });
      mx = lm_block_max (mx, (float *) sm->reduce, -INFINITY);
      double part = 0.0;
      lm_block_for_each (vals, n, [&] (uint32_t, float x) { part += exp ((double) x - mx); });
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
  if (tid == 0)
    *token = sm->id[lm_hd_sample_pick (p.top_p, p.min_p, use_k, sm->v, sm->e1, sm->e2, want, z,
                                       u)];
}

/* ---- the whole vocabulary sorted ---- */

static __global__ void
keys_kernel (const float *vals, uint32_t n, uint32_t *keys, int32_t *ids)
{
  for (size_t i = blockIdx.x * (size_t) blockDim.x + threadIdx.x; i < n;
       i += (size_t) gridDim.x * blockDim.x)
    {
      keys[i] = lm_hd_float_key (vals[i]);
      ids[i] = (int32_t) i;
    }
}

/* The first index of [0, n) at which the running sum of term(i) (in index
 * order) reaches @target (with @strict: exceeds it), or @none. Segments of
 * the order per thread, a block scan of their sums, then the one thread
 * whose segment holds the crossing scans it. */
template <typename Term>
static __device__ uint32_t
first_crossing (uint32_t n, double target, bool strict, uint32_t none, Term term,
                SampleSmem *sm)
{
  uint32_t lo, hi;
  lm_hd_segment (n, blockDim.x, threadIdx.x, &lo, &hi);
  double part = 0.0;
  for (uint32_t i = lo; i < hi; i++)
    part += term (i);
  double incl, excl = block_scan (part, sm->scan, &incl);
  if (threadIdx.x == 0)
    sm->remaining = none;
  __syncthreads ();
  if (lo < hi && !lm_hd_passes (excl, target, strict) && lm_hd_passes (incl, target, strict))
    {
      uint32_t at = hi - 1;
      double cum = excl;
      for (uint32_t i = lo; i < hi; i++)
        if (lm_hd_passes (cum += term (i), target, strict))
          {
            at = i;
            break;
          }
      sm->remaining = at;
    }
  __syncthreads ();
  uint32_t r = sm->remaining;
  __syncthreads ();
  return r;
}

/* Softmax over every token in id order and the cumulative draw. */
static __device__ void
draw_all (const float *vals, uint32_t n, double inv_temp, double u, SampleSmem *sm,
          int32_t *token)
{
  float mx = -INFINITY;
  lm_block_for_each (vals, n, [&] (uint32_t, float x) { mx = x > mx ? x : mx; });
  mx = lm_block_max (mx, (float *) sm->reduce, -INFINITY);
  double part = 0.0;
  lm_block_for_each (vals, n, [&] (uint32_t, float x) {
    part += exp (((double) x - mx) * inv_temp);
  });
  double sum = lm_block_sum (part, sm->reduce);
  auto prob = [&] (uint32_t i) { return exp (((double) vals[i] - mx) * inv_temp) / sum; };
  /* none: rounding left u just above the total */
  uint32_t at = first_crossing (n, u, true, n - 1, prob, sm);
  if (threadIdx.x == 0)
    *token = (int32_t) at;
}

/* filter_sorted (top-k: over the first n_eff) or filter_by_heap, then the
 * draw, over the vocabulary sorted best first (@ids). */
static __global__ void
__launch_bounds__ (SAMPLE_THREADS)
sorted_sample_kernel (LmCudaSampleParams p, const float *vals, const int32_t *ids, uint32_t n_eff,
                      const double *u_dev, int32_t *token)
{
  extern __shared__ double smem_raw[];
  SampleSmem *sm = (SampleSmem *) smem_raw;
  double v0 = vals[ids[0]], u = *u_dev, inv_temp = 1.0 / p.temperature;
  uint32_t at_p = n_eff, n_above = 0;
  if (p.top_p < 1.0f)
    {
      double part = 0.0;
      for (uint32_t i = threadIdx.x; i < n_eff; i += blockDim.x)
        part += exp ((double) vals[ids[i]] - v0);
      double z = lm_block_sum (part, sm->reduce);
      auto prob = [&] (uint32_t i) { return exp ((double) vals[ids[i]] - v0) / z; };
      at_p = first_crossing (n_eff, (double) p.top_p, false, n_eff, prob, sm);
    }
  if (p.min_p > 0.0f)
    {
      /* sorted: the values at or above the floor are a prefix */
      double floor_logit = v0 + log ((double) p.min_p), count = 0.0;
      for (uint32_t i = threadIdx.x; i < n_eff; i += blockDim.x)
        count += (double) vals[ids[i]] >= floor_logit ? 1.0 : 0.0;
      n_above = (uint32_t) lm_block_sum (count, sm->reduce);
    }
  uint32_t kept = lm_hd_sorted_kept (p.top_p, p.min_p, n_eff, at_p, n_above);
  double part = 0.0;
  for (uint32_t i = threadIdx.x; i < kept; i += blockDim.x)
    part += exp (((double) vals[ids[i]] - v0) * inv_temp);
  double sum = lm_block_sum (part, sm->reduce);
  auto prob = [&] (uint32_t i) { return exp (((double) vals[ids[i]] - v0) * inv_temp) / sum; };
  uint32_t at = first_crossing (kept, u, true, kept - 1, prob, sm);
  if (threadIdx.x == 0)
    *token = ids[at];
}

typedef struct {
  float *vals;
  uint32_t *keys, *keys_sorted;
  int32_t *ids, *ids_sorted;
  void *temp;
  size_t temp_bytes, total;
} SampleScratch;

static size_t
align_up (size_t x)
{
  return (x + 255) & ~(size_t) 255;
}

/* Where each array lies in the scratch of @n_vocab (base NULL: sizes only). */
static bool
scratch_layout (void *base, uint32_t n_vocab, SampleScratch *s)
{
  size_t temp = 0;
  if (cub::DeviceRadixSort::SortPairsDescending ((void *) NULL, temp, (const uint32_t *) NULL,
                                                 (uint32_t *) NULL, (const int32_t *) NULL,
                                                 (int32_t *) NULL, (int) n_vocab, 0, 32,
                                                 (cudaStream_t) NULL) != cudaSuccess)
    return false;
  size_t arr = align_up ((size_t) n_vocab * 4), at = 0;
  char *b = (char *) base;
  s->vals = (float *) (b + at);
  at += arr;
  s->keys = (uint32_t *) (b + at);
  at += arr;
  s->keys_sorted = (uint32_t *) (b + at);
  at += arr;
  s->ids = (int32_t *) (b + at);
  at += arr;
  s->ids_sorted = (int32_t *) (b + at);
  at += arr;
  s->temp = b + at;
  s->temp_bytes = temp;
  s->total = at + align_up (temp);
  return true;
}

extern "C" size_t
lm_cuda_sample_scratch_bytes (uint32_t n_vocab)
{
  SampleScratch s;
  return scratch_layout (NULL, n_vocab, &s) ? s.total : 0;
}

extern "C" LmStatus
lm_cuda_sample (LmCudaStream stream, const LmCudaSampleParams *params, const float *logits,
                uint32_t n_vocab, const int32_t *history, const int32_t *history_state,
                const double *u, void *scratch, int32_t *token)
{
  if (n_vocab == 0 || n_vocab > INT32_MAX || isnan (params->temperature)
      || isnan (params->top_p) || isnan (params->min_p) || !(params->repeat_penalty > 0))
    return LM_ERR_INVALID_ARGUMENT;
  SampleScratch sc;
  if (!scratch_layout (scratch, n_vocab, &sc))
    return LM_ERR_DEVICE;
  bool penalty = params->repeat_penalty != 1.0f && history != NULL && history_state != NULL;
  unsigned blocks = (n_vocab + 1023) / 1024 < 1024 ? (n_vocab + 1023) / 1024 : 1024;
  sanitize_kernel<<<blocks, 1024, 0, stream>>> (logits, n_vocab, sc.vals);
  if (penalty)
    penalty_kernel<<<1, 256, 0, stream>>> (history, history_state, n_vocab,
                                           params->repeat_penalty, sc.vals);
  size_t smem = sizeof (SampleSmem);   /* below the 48 KiB needing an opt-in */
  bool use_k = params->top_k > 0 && (uint32_t) params->top_k < n_vocab;
  bool filter = params->top_p < 1.0f || params->min_p > 0.0f;
  bool sorted = params->temperature > 0
                && (use_k ? params->top_k > LM_CUDA_SAMPLE_MAX_CAND
                          : filter && n_vocab > LM_CUDA_SAMPLE_MAX_CAND);
  if (!sorted)
    {
      sample_kernel<<<1, SAMPLE_THREADS, smem, stream>>> (*params, logits, sc.vals, n_vocab,
                                                          penalty ? history_state : NULL, u,
                                                          token);
      return lm_cuda_launched ();
    }
  keys_kernel<<<blocks, 1024, 0, stream>>> (sc.vals, n_vocab, sc.keys, sc.ids);
  if (cub::DeviceRadixSort::SortPairsDescending (sc.temp, sc.temp_bytes, sc.keys, sc.keys_sorted,
                                                 sc.ids, sc.ids_sorted, (int) n_vocab, 0, 32,
                                                 stream) != cudaSuccess)
    return LM_ERR_DEVICE;
  sorted_sample_kernel<<<1, SAMPLE_THREADS, smem, stream>>> (
    *params, sc.vals, sc.ids_sorted, use_k ? (uint32_t) params->top_k : n_vocab, u, token);
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
