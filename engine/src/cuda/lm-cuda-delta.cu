/* lm-cuda-delta.cu: the Gated DeltaNet delta rule (lm-cuda-ops.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One block per value head runs the CPU's sequential recurrence over the
 * batch's tokens (forward-deltanet.c, delta_step and delta_head_cb), so a
 * prefill gives the numbers of one-token steps. The head's S x S state lives
 * in registers for the whole batch: row r of M is split over TPR adjacent
 * threads, thread (r, part) holding columns part, part + TPR, ... (CPT of
 * them). Per token the block computes M0 k and M0 q from the old state, then
 * d = beta (v - decay M0 k), updates M = decay M + d k^T and outputs
 * o = (decay M0 q + d (k.q)) / sqrt(S), then the gated RMSNorm.
 *
 * q and k heads are L2-normalised: for a batch in place in u first by a
 * separate kernel (each head by exactly one block, as value heads share key
 * heads), for one token by each block in shared memory (a launch less per
 * layer in decode; the same sums in another order, within float rounding).
 */
#include <cuda_runtime.h>
#include <math.h>

#include "lm-cuda-block.cuh"
#include "lm-cuda-launch.cuh"
#include "lm-cuda-math.h"
#include "lm-cuda-ops.h"

#define TPR LM_DELTA_TPR

typedef struct {
  LmCudaDeltaShape shape;
  const float *u;
  size_t u_stride;
  const float *z, *alpha, *beta;
  size_t ab_stride;
  uint32_t n;
  int normalise_qk;   /* q and k not normalised yet: the block does it */
  float *state, *out;
} DeltaArgs;

/* q and k of the current token (S each, shared memory) divided by their
 * L2 norms, as qk_l2_kernel does. */
static __device__ void
normalise_qk (float *q, float *k, uint32_t S, float eps, double *scratch)
{
  double sq = 0.0, sk = 0.0;
  for (uint32_t i = threadIdx.x; i < S; i += blockDim.x)
    {
      sq += (double) q[i] * q[i];
      sk += (double) k[i] * k[i];
    }
  float q_scale = lm_hd_l2_scale (lm_block_sum (sq, scratch), eps);
  float k_scale = lm_hd_l2_scale (lm_block_sum (sk, scratch), eps);
  for (uint32_t i = threadIdx.x; i < S; i += blockDim.x)
    {
      q[i] *= q_scale;
      k[i] *= k_scale;
    }
  __syncthreads ();
}

static __global__ void
qk_l2_kernel (float *u, size_t u_stride, uint32_t S, float eps)
{
  lmc_wait_previous ();
  __shared__ double scratch[32];
  float *x = u + blockIdx.y * u_stride + (size_t) blockIdx.x * S;
  double ss = 0.0;
  for (uint32_t i = threadIdx.x; i < S; i += blockDim.x)
    ss += (double) x[i] * x[i];
  float scale = lm_hd_l2_scale (lm_block_sum (ss, scratch), eps);
  for (uint32_t i = threadIdx.x; i < S; i += blockDim.x)
    x[i] *= scale;
}

/* Shared memory: q, k, v, o of the current token (S each). */
template <int CPT>
static __global__ void
__launch_bounds__ (CPT <= 32 ? 32 * TPR * 4 : 64 * TPR * 4)
delta_kernel (DeltaArgs a)
{
  lmc_wait_previous ();
  extern __shared__ float smem[];
  __shared__ double scratch[32];
  const LmCudaDeltaShape *sh = &a.shape;
  uint32_t S = sh->state, Hv = sh->n_heads, j = blockIdx.x, grp = j % sh->n_groups;
  uint32_t key_dim = S * sh->n_groups, vd = S * Hv;
  float *q = smem, *k = q + S, *v = k + S, *o = v + S;
  uint32_t r = threadIdx.x / TPR, part = threadIdx.x % TPR, lane = threadIdx.x & 31u;
  bool row_ok = r < S;
  float *M = a.state + (size_t) j * S * S;
  float m[CPT];
#pragma unroll
  for (int i = 0; i < CPT; i++)
    {
      uint32_t c = lm_hd_delta_column ((uint32_t) i, part);
      m[i] = row_ok && c < S ? M[(size_t) r * S + c] : 0.0f;
    }
  float scale = 1.0f / sqrtf ((float) S);
  float ssm_a = sh->ssm_a[j], dt_bias = sh->dt_bias[j];

  for (uint32_t t = 0; t < a.n; t++)
    {
      const float *ut = a.u + t * a.u_stride;
      for (uint32_t i = threadIdx.x; i < S; i += blockDim.x)
        {
          q[i] = ut[(size_t) grp * S + i];
          k[i] = ut[key_dim + (size_t) grp * S + i];
          v[i] = ut[2 * (size_t) key_dim + (size_t) j * S + i];
        }
      __syncthreads ();
      if (a.normalise_qk)   /* the same for the whole grid */
        normalise_qk (q, k, S, sh->eps, scratch);
      float decay = lm_hd_delta_decay (ssm_a, a.alpha[t * a.ab_stride + j], dt_bias);
      float beta = lm_hd_sigmoid (a.beta[t * a.ab_stride + j]);
      /* k.q: every warp computes it for itself */
      float kq = 0.0f;
      for (uint32_t c = lane; c < S; c += 32)
        kq += k[c] * q[c];
      kq = lm_warp_sum (kq);
      float mk = 0.0f, mq = 0.0f;
#pragma unroll
      for (int i = 0; i < CPT; i++)
        {
          uint32_t c = lm_hd_delta_column ((uint32_t) i, part);
          if (c < S)
            {
              mk += m[i] * k[c];
              mq += m[i] * q[c];
            }
        }
      for (int off = 1; off < TPR; off <<= 1)
        {
          mk += __shfl_xor_sync (0xffffffffu, mk, off);
          mq += __shfl_xor_sync (0xffffffffu, mq, off);
        }
      float out_r = 0.0f, d = 0.0f;
      if (row_ok)
        d = lm_hd_delta_row (v[r], mk, mq, decay, beta, kq, scale, &out_r);
#pragma unroll
      for (int i = 0; i < CPT; i++)
        {
          uint32_t c = lm_hd_delta_column ((uint32_t) i, part);
          if (row_ok && c < S)
            m[i] = lm_hd_delta_update (m[i], decay, d, k[c]);
        }
      if (row_ok && part == 0)
        o[r] = out_r;
      __syncthreads ();
      /* gated RMSNorm of o over S */
      double ss = 0.0;
      for (uint32_t i = threadIdx.x; i < S; i += blockDim.x)
        ss += (double) (o[i] * o[i]);
      float rs = lm_hd_rms_scale (lm_block_sum (ss, scratch), S, sh->eps);
      const float *zt = a.z + (size_t) t * vd + (size_t) j * S;
      float *ot = a.out + (size_t) t * vd + (size_t) j * S;
      for (uint32_t i = threadIdx.x; i < S; i += blockDim.x)
        ot[i] = o[i] * rs * sh->norm[i] * lm_hd_silu (zt[i]);
      __syncthreads ();   /* q, k, v, o are overwritten by the next token */
    }
#pragma unroll
  for (int i = 0; i < CPT; i++)
    {
      uint32_t c = lm_hd_delta_column ((uint32_t) i, part);
      if (row_ok && c < S)
        M[(size_t) r * S + c] = m[i];
    }
}

extern "C" LmStatus
lm_cuda_delta_rule (LmCudaStream stream, const LmCudaDeltaShape *shape, float *u,
                    size_t u_stride, const float *z, const float *alpha, const float *beta,
                    size_t ab_stride, uint32_t n, float *state, float *out)
{
  uint32_t S = shape->state;
  if (S == 0 || S > LM_CUDA_MAX_STATE || shape->n_groups == 0 || shape->n_heads == 0)
    return LM_ERR_INVALID_ARGUMENT;
  if (n == 0)
    return LM_OK;
  int in_block = n == 1;
  if (!in_block)
    {
      LmStatus st = lmc_launched (lmc_launch (qk_l2_kernel, dim3 (2 * shape->n_groups, n), 128, 0,
                                              stream, u, u_stride, S, shape->eps));
      if (st != LM_OK)
        return st;
    }
  DeltaArgs a = { *shape, u, u_stride, z, alpha, beta, ab_stride, n, in_block, state, out };
  unsigned threads = lm_hd_delta_threads (S);
  size_t smem = 4 * (size_t) S * sizeof (float);
  /* Up to 128: 32 columns per thread in registers; above, 64 (the compiler
   * may keep part of them in local memory: slower, same numbers). */
  if (lm_hd_delta_columns (S) == 32)
    return lmc_launched (lmc_launch (delta_kernel<32>, shape->n_heads, threads, smem, stream, a));
  return lmc_launched (lmc_launch (delta_kernel<64>, shape->n_heads, threads, smem, stream, a));
}
