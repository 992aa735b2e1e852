/* lm-cuda-host-check.cu: the kernels' arithmetic on the host (lm-cuda-host-check.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "lm-cuda-host-check.h"
#include "lm-cuda-math.h"

extern "C" float
lm_cuda_host_silu (float x)
{
  return lm_hd_silu (x);
}

extern "C" float
lm_cuda_host_sigmoid (float x)
{
  return lm_hd_sigmoid (x);
}

extern "C" float
lm_cuda_host_softplus (float x)
{
  return lm_hd_softplus (x);
}

extern "C" void
lm_cuda_host_rope_table (uint32_t pos, uint32_t n_rot, float base, const int32_t sections[4],
                         float *cs)
{
  for (uint32_t i = 0; i < n_rot / 2; i++)
    lm_hd_rope_entry (pos, i, n_rot, base, sections[0], sections[1], sections[2], sections[3],
                      &cs[2 * i], &cs[2 * i + 1]);
}

extern "C" void
lm_cuda_host_rope_apply (float *x, uint32_t n_rot, const float *cs)
{
  uint32_t half = n_rot / 2;
  for (uint32_t i = 0; i < half; i++)
    lm_hd_rope_rotate (&x[i], &x[i + half], cs[2 * i], cs[2 * i + 1]);
}

extern "C" float
lm_cuda_host_rms_scale (double sum_sq, uint32_t n, float eps)
{
  return lm_hd_rms_scale (sum_sq, n, eps);
}

extern "C" float
lm_cuda_host_l2_scale (double sum_sq, float eps)
{
  return lm_hd_l2_scale (sum_sq, eps);
}

extern "C" float
lm_cuda_host_delta_decay (float ssm_a, float alpha, float dt_bias)
{
  return lm_hd_delta_decay (ssm_a, alpha, dt_bias);
}

#define TPR 4   /* as in lm-cuda-delta.cu */

/* The butterfly of __shfl_xor_sync over @width lanes of @v (in place). */
static void
butterfly_sum (float *v, uint32_t width)
{
  for (uint32_t off = 1; off < width; off <<= 1)
    {
      float next[32];
      for (uint32_t i = 0; i < width; i++)
        next[i] = v[i] + v[i ^ off];
      memcpy (v, next, width * sizeof (float));
    }
}

extern "C" void
lm_cuda_host_delta_step (float *M, const float *q, const float *k, const float *v, float decay,
                         float beta, uint32_t S, float *o)
{
  float lanes[32];
  for (uint32_t lane = 0; lane < 32; lane++)
    {
      lanes[lane] = 0.0f;
      for (uint32_t c = lane; c < S; c += 32)
        lanes[lane] += k[c] * q[c];
    }
  /* the kernel's shuffles run offsets 16, 8, .. 1; the sum is symmetric in
   * the lanes only up to rounding, so replay that order */
  for (uint32_t off = 16; off > 0; off >>= 1)
    {
      float next[32];
      for (uint32_t i = 0; i < 32; i++)
        next[i] = lanes[i] + lanes[i ^ off];
      memcpy (lanes, next, sizeof next);
    }
  float kq = lanes[0], scale = 1.0f / sqrtf ((float) S);
  for (uint32_t r = 0; r < S; r++)
    {
      float *row = M + (size_t) r * S;
      float mk[TPR], mq[TPR];
      for (uint32_t part = 0; part < TPR; part++)
        {
          mk[part] = mq[part] = 0.0f;
          for (uint32_t c = part; c < S; c += TPR)
            {
              mk[part] += row[c] * k[c];
              mq[part] += row[c] * q[c];
            }
        }
      butterfly_sum (mk, TPR);
      butterfly_sum (mq, TPR);
      float d = lm_hd_delta_row (v[r], mk[0], mq[0], decay, beta, kq, scale, &o[r]);
      for (uint32_t c = 0; c < S; c++)
        row[c] = lm_hd_delta_update (row[c], decay, d, k[c]);
    }
}

/* Folds candidate (l, e) into (best_l, best) with the routing order. */
static void
route_fold (float l, int32_t e, float *best_l, int32_t *best)
{
  if (e >= 0 && (*best < 0 || lm_hd_route_before (l, e, *best_l, *best)))
    {
      *best = e;
      *best_l = l;
    }
}

extern "C" void
lm_cuda_host_route (const float *logits, uint32_t n_expert, uint32_t k, int32_t *sel, float *w)
{
  float lane_max[32], lane_sum[32];
  for (uint32_t lane = 0; lane < 32; lane++)
    {
      lane_max[lane] = -INFINITY;
      for (uint32_t e = lane; e < n_expert; e += 32)
        lane_max[lane] = logits[e] > lane_max[lane] ? logits[e] : lane_max[lane];
    }
  float max = -INFINITY;
  for (uint32_t lane = 0; lane < 32; lane++)
    max = lane_max[lane] > max ? lane_max[lane] : max;
  for (uint32_t lane = 0; lane < 32; lane++)
    {
      lane_sum[lane] = 0.0f;
      for (uint32_t e = lane; e < n_expert; e += 32)
        lane_sum[lane] += expf (logits[e] - max);
    }
  for (uint32_t off = 16; off > 0; off >>= 1)
    {
      float next[32];
      for (uint32_t i = 0; i < 32; i++)
        next[i] = lane_sum[i] + lane_sum[i ^ off];
      memcpy (lane_sum, next, sizeof next);
    }
  float total = lane_sum[0], picked = 0.0f;
  for (uint32_t i = 0; i < k; i++)
    {
      float bl[32];
      int32_t b[32];
      for (uint32_t lane = 0; lane < 32; lane++)
        {
          bl[lane] = -INFINITY;
          b[lane] = -1;
          for (uint32_t e = lane; e < n_expert; e += 32)
            {
              bool taken = false;
              for (uint32_t j = 0; j < i; j++)
                taken |= sel[j] == (int32_t) e;
              if (!taken)
                route_fold (logits[e], (int32_t) e, &bl[lane], &b[lane]);
            }
        }
      for (uint32_t off = 16; off > 0; off >>= 1)
        {
          float nl[32];
          int32_t nb[32];
          for (uint32_t lane = 0; lane < 32; lane++)
            {
              nl[lane] = bl[lane];
              nb[lane] = b[lane];
              route_fold (bl[lane ^ off], b[lane ^ off], &nl[lane], &nb[lane]);
            }
          memcpy (bl, nl, sizeof nl);
          memcpy (b, nb, sizeof nb);
        }
      sel[i] = b[0];
      w[i] = expf (bl[0] - max) / total;
      picked += w[i];
    }
  float denom = picked > 6.103515625e-5f ? picked : 6.103515625e-5f;
  for (uint32_t i = 0; i < k; i++)
    w[i] /= denom;
}

static void
argmax_fold (float v, int32_t i, float *best_v, int32_t *best)
{
  if (i >= 0 && (*best < 0 || lm_hd_argmax_before (v, i, *best_v, *best)))
    {
      *best = i;
      *best_v = v;
    }
}

extern "C" int32_t
lm_cuda_host_argmax (const float *logits, uint32_t n, uint32_t n_threads)
{
  float wv = NAN;
  int32_t wi = -1;
  for (uint32_t warp = 0; warp * 32 < n_threads; warp++)
    {
      float v[32];
      int32_t b[32];
      for (uint32_t lane = 0; lane < 32; lane++)
        {
          v[lane] = NAN;
          b[lane] = -1;
          for (uint32_t i = warp * 32 + lane; i < n; i += n_threads)
            argmax_fold (logits[i], (int32_t) i, &v[lane], &b[lane]);
        }
      for (uint32_t off = 16; off > 0; off >>= 1)
        {
          float nv[32];
          int32_t nb[32];
          for (uint32_t lane = 0; lane < 32; lane++)
            {
              nv[lane] = v[lane];
              nb[lane] = b[lane];
              argmax_fold (v[lane ^ off], b[lane ^ off], &nv[lane], &nb[lane]);
            }
          memcpy (v, nv, sizeof nv);
          memcpy (b, nb, sizeof nb);
        }
      argmax_fold (v[0], b[0], &wv, &wi);
    }
  return wi;
}

extern "C" bool
lm_cuda_host_key_orders (float a, float b)
{
  bool lt = a < b, key_lt = lm_hd_float_key (a) < lm_hd_float_key (b);
  bool eq = a == b, key_eq = lm_hd_float_key (a) == lm_hd_float_key (b);
  return lt == key_lt && eq == key_eq;
}
