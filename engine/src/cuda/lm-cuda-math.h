/* lm-cuda-math.h: the per-element arithmetic of the GPU layer operations.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each function here is the formula of one CPU function (forward-ops.c,
 * forward-ffn.c, forward-deltanet.c, sampler.c), written once for both the
 * host and the device so that the kernels and the CPU agree by construction.
 * lm-cuda-host-check.cu runs them on the host against the CPU functions
 * (test engine-cuda-math), which needs no GPU.
 *
 * Only for .cu files (nvcc); no state.
 */
#pragma once

#include <math.h>
#include <stdint.h>

#define LM_HD static __host__ __device__ __forceinline__

/* The polynomial exponential and SiLU of the CPU's SwiGLU (expf-poly.h). */
#define LM_EXPF_FN LM_HD
#include "expf-poly.h"

/* ---- activations (forward-ops.c) ---- */

LM_HD float
lm_hd_silu (float x)
{
  return x / (1.0f + expf (-x));
}

LM_HD float
lm_hd_sigmoid (float x)
{
  return 1.0f / (1.0f + expf (-x));
}

LM_HD float
lm_hd_softplus (float x)
{
  return x > 20.0f ? x : log1pf (expf (x));
}

/* ---- RoPE table (forward-ops.c, lm_rope_table) ---- */

/* Whether pair @i follows the text position (t, h or w section) rather than
 * the fourth (e) component, which is 0 for text. */
LM_HD bool
lm_hd_rope_pair_is_text (uint32_t i, int32_t s0, int32_t s1, int32_t s2, int32_t s3)
{
  int32_t total = s0 + s1 + s2 + s3;
  if (total <= 0)
    return true;
  int32_t sector = (int32_t) (i % (uint32_t) total);
  if (sector % 3 == 0 && sector < 3 * s0)
    return true;
  if (sector % 3 == 1 && sector < 3 * s1)
    return true;
  if (sector % 3 == 2 && sector < 3 * s2)
    return true;
  return false;
}

/* Entry @i (< n_rot / 2) of the rotation table at @pos: cos and sin of
 * theta_i, the position advanced by i float multiplications by theta_scale,
 * as lm_rope_table (on the host exactly; the device's sine and cosine are
 * its own, correctly rounded from double, and may differ from the C
 * library's cosf and sinf in the last bit). */
LM_HD void
lm_hd_rope_entry (uint32_t pos, uint32_t i, uint32_t n_rot, float base, int32_t s0,
                  int32_t s1, int32_t s2, int32_t s3, float *c, float *s)
{
  const float theta_scale = (float) pow ((double) base, (double) (-2.0f / (float) n_rot));
  float theta = (float) pos;
  for (uint32_t k = 0; k < i; k++)
    theta *= theta_scale;
  int text = lm_hd_rope_pair_is_text (i, s0, s1, s2, s3);
#ifdef __CUDA_ARCH__
  /* cos and sin in double, rounded once: within an ulp of the CPU's */
  double t = text ? theta : 0.0;
  *c = (float) cos (t);
  *s = (float) sin (t);
#else
  /* the host does what the CPU table does (C library cosf, sinf) */
  float t = text ? theta : 0.0f;
  *c = cosf (t);
  *s = sinf (t);
#endif
}

/* One NEOX pair (a, b) = (x[i], x[i + n_rot/2]) rotated by (c, s), with the
 * fused multiply-adds of lm_rope_apply. */
LM_HD void
lm_hd_rope_rotate (float *a, float *b, float c, float s)
{
  float x = *a, y = *b;
  *a = fmaf (x, c, -(y * s));
  *b = fmaf (x, s, y * c);
}

/* ---- norms (forward-ops.c): the scale from the double sum of squares ---- */

/* As lm_rms_norm: the mean rounded to float, the scale computed in float
 * (ggml's rounding, which the CPU follows). */
LM_HD float
lm_hd_rms_scale (double sum_sq, uint32_t n, float eps)
{
  float mean = (float) (sum_sq / n);
  return 1.0f / sqrtf (mean + eps);
}

LM_HD float
lm_hd_l2_scale (double sum_sq, float eps)
{
  double norm = sqrt (sum_sq);
  return (float) (1.0 / (norm > eps ? norm : eps));
}

/* ---- attention output and MoE mix (forward-attn.c, forward-ffn.c) ---- */

/* One output value of an attention head from its softmax-weighted sum @acc
 * and the weights' total @sum, times sigmoid(@gate) in gated attention. */
LM_HD float
lm_hd_attn_out (float acc, float sum, bool gated, float gate)
{
  return gated ? acc / sum * lm_hd_sigmoid (gate) : acc / sum;
}

/* One output value of a MoE layer: the sum of the weighted routed outputs,
 * plus the shared expert's output @o times its gate where there is one. */
LM_HD float
lm_hd_moe_mix (float routed, bool shared, float gate, float o)
{
  return shared ? routed + gate * o : routed;
}

/* ---- Gated DeltaNet (forward-deltanet.c) ---- */

/* The decay exp(g) of head j's state for one token: g = a softplus(alpha + dt_bias). */
LM_HD float
lm_hd_delta_decay (float ssm_a, float alpha, float dt_bias)
{
  return expf (ssm_a * lm_hd_softplus (alpha + dt_bias));
}

/* Row r of the delta step, given mk = M0[r].k and mq = M0[r].q of the old
 * state: d = beta (v - decay mk), and o[r] = (decay mq + d (k.q)) / sqrt(S).
 * Returns d; *o gets the output. */
LM_HD float
lm_hd_delta_row (float v, float mk, float mq, float decay, float beta, float kq, float scale,
                 float *o)
{
  float d = beta * (v - decay * mk);
  *o = (decay * mq + d * kq) * scale;
  return d;
}

/* The state update of one element: M[r][c] = decay M[r][c] + d k[c]. */
LM_HD float
lm_hd_delta_update (float m, float decay, float d, float k)
{
  return decay * m + d * k;
}

/* ---- ordering (forward-ffn.c route_token, sampler.c) ---- */

/* Expert (la, a) is chosen before (lb, b): higher logit, then lower index. */
LM_HD bool
lm_hd_route_before (float la, int32_t a, float lb, int32_t b)
{
  return la > lb || (la == lb && a < b);
}

/* The greedy sampler's order: larger logit wins, lower index on ties; NaN
 * never wins against a number, and among NaNs the higher index wins (what
 * the CPU's scan does when every logit is NaN). A total order, so any
 * reduction tree gives the CPU's answer. */
LM_HD bool
lm_hd_argmax_before (float va, int32_t a, float vb, int32_t b)
{
  bool na = va != va, nb = vb != vb;
  if (na || nb)
    return na && nb ? a > b : nb;
  return va > vb || (va == vb && a < b);
}

/* CTRL-style repetition penalty of one logit. */
LM_HD float
lm_hd_penalize (float logit, float penalty)
{
  return logit > 0 ? logit / penalty : logit * penalty;
}

/* An unsigned key that orders floats as numbers (-0 and +0 alike; NaN is
 * replaced by the callers before). */
LM_HD uint32_t
lm_hd_float_key (float v)
{
  union { float f; uint32_t u; } x;
  x.f = v == 0.0f ? 0.0f : v;
  return (x.u & 0x80000000u) ? ~x.u : (x.u | 0x80000000u);
}

/* ---- schedules: which positions, columns and candidates each block handles ---- */

#define LM_ATTN_TILE 64          /* positions per shared-memory tile */
#define LM_ATTN_CHUNK_MIN 64     /* positions per chunk of the split form, at least */
#define LM_ATTN_MAX_SPLITS 512

/* The chunks of the split attention for a cache of @n_ctx positions: their
 * count, and *chunk positions each (a multiple of the tile). Depends only on
 * n_ctx, so a captured graph is valid at every position. */
LM_HD uint32_t
lm_hd_attn_splits (uint32_t n_ctx, uint32_t *chunk)
{
  uint32_t splits = (n_ctx + LM_ATTN_CHUNK_MIN - 1) / LM_ATTN_CHUNK_MIN;
  splits = splits < 1 ? 1 : splits > LM_ATTN_MAX_SPLITS ? LM_ATTN_MAX_SPLITS : splits;
  uint32_t c = (n_ctx + splits - 1) / splits;
  *chunk = (c + LM_ATTN_TILE - 1) / LM_ATTN_TILE * LM_ATTN_TILE;
  return splits;
}

/* Positions [*start, *end) of chunk @split for a token seeing @n_pos of them
 * (empty when the chunk lies past them). */
LM_HD void
lm_hd_attn_range (uint32_t split, uint32_t chunk, uint32_t n_pos, uint32_t *start, uint32_t *end)
{
  uint64_t s = (uint64_t) split * chunk, e = s + chunk;
  *start = (uint32_t) (s < n_pos ? s : n_pos);
  *end = (uint32_t) (e < n_pos ? e : n_pos);
}

/* How many chunks hold positions below @n_pos: the ones the combine reads. */
LM_HD uint32_t
lm_hd_attn_live (uint32_t n_pos, uint32_t chunk, uint32_t n_splits)
{
  uint32_t live = (n_pos + chunk - 1) / chunk;
  return live < n_splits ? live : n_splits;
}

#define LM_COMBINE_THREADS 256   /* per token of the MoE combine: its gate's dot product */

#define LM_DELTA_TPR 4   /* threads per state row: adjacent lanes of one warp */

/* Threads of a delta-rule block (whole warps) and the state columns each
 * thread keeps (32 in registers up to S = 128, else 64). */
LM_HD uint32_t
lm_hd_delta_threads (uint32_t S)
{
  return (S * LM_DELTA_TPR + 31) / 32 * 32;
}

LM_HD uint32_t
lm_hd_delta_columns (uint32_t S)
{
  return S <= 32 * LM_DELTA_TPR ? 32 : 64;
}

/* Column of the state row that slot @i of thread part @part holds
 * (interleaved, so the row's threads read neighbouring addresses). */
LM_HD uint32_t
lm_hd_delta_column (uint32_t i, uint32_t part)
{
  return i * LM_DELTA_TPR + part;
}

/* One step of the radix select: the digit (bin of @hist, from the top) in
 * which the *remaining-th largest key lies; *remaining becomes its rank
 * inside that bin. */
LM_HD uint32_t
lm_hd_radix_digit (const uint32_t *hist, uint32_t *remaining)
{
  uint32_t rem = *remaining, b = 255;
  while (b > 0 && hist[b] < rem)
    rem -= hist[b--];
  *remaining = rem;
  return b;
}

/* The sequential part of the sampler over the @want best candidates sorted
 * best first (values @v), given e1[i] = exp(v_i - v_0) and
 * e2[i] = exp((v_i - v_0) / T): filter_sorted's top-p and min-p (@use_k:
 * after top-k) or filter_by_heap's (@z: the sum of exp(v - v_0) over the
 * whole vocabulary), then the draw with @u. Returns the index of the
 * chosen candidate. */
LM_HD uint32_t
lm_hd_sample_pick (float top_p, float min_p, bool use_k, const float *v, const double *e1,
                   const double *e2, uint32_t want, double z, double u)
{
  uint32_t kept = want;
  double v0 = v[0];
  if (use_k)
    {
      if (top_p < 1.0f)
        {
          double sum = 0.0, cum = 0.0;
          for (uint32_t i = 0; i < kept; i++)
            sum += e1[i];
          for (uint32_t i = 0; i < kept; i++)
            if ((cum += e1[i] / sum) >= top_p)
              {
                kept = i + 1;
                break;
              }
        }
      if (min_p > 0.0f)
        {
          double floor_logit = v0 + log ((double) min_p);
          uint32_t keep = 1;
          while (keep < kept && (double) v[keep] >= floor_logit)
            keep++;
          kept = keep;
        }
    }
  else
    {
      double floor_logit = min_p > 0.0f ? v0 + log ((double) min_p) : -INFINITY, cum = 0.0;
      uint32_t k = 0;
      while (k < want)
        {
          if (k > 0 && (double) v[k] < floor_logit)
            break;
          k++;
          if (top_p < 1.0f && (cum += e1[k - 1] / z) >= top_p)
            break;
        }
      kept = k;
    }
  double sum = 0.0, cum = 0.0;
  for (uint32_t i = 0; i < kept; i++)
    sum += e2[i];
  for (uint32_t i = 0; i < kept; i++)
    if (u < (cum += e2[i] / sum))
      return i;
  return kept - 1;
}

/* The sorted path of the sampler. Thread @t's contiguous segment of the
 * order [0, n) among @n_threads. */
LM_HD void
lm_hd_segment (uint32_t n, uint32_t n_threads, uint32_t t, uint32_t *lo, uint32_t *hi)
{
  uint32_t seg = (n + n_threads - 1) / n_threads;
  uint64_t a = (uint64_t) t * seg, b = a + seg;
  *lo = (uint32_t) (a < n ? a : n);
  *hi = (uint32_t) (b < n ? b : n);
}

/* Whether a running sum @cum has reached @target: top-p's cum >= top_p,
 * or with @strict the draw's u < cum. */
LM_HD bool
lm_hd_passes (double cum, double target, bool strict)
{
  return strict ? target < cum : cum >= target;
}

/* How many of the sorted candidates stay: top-p stops after its first
 * crossing @at_p (n_eff if none), min-p keeps the @n_above values at or
 * above its floor (at least one); the smaller wins, as in filter_sorted
 * and filter_by_heap. */
LM_HD uint32_t
lm_hd_sorted_kept (float top_p, float min_p, uint32_t n_eff, uint32_t at_p, uint32_t n_above)
{
  uint32_t kept = n_eff;
  if (top_p < 1.0f)
    kept = top_p <= 0.0f ? 1 : at_p < n_eff ? at_p + 1 : n_eff;
  if (min_p > 0.0f)
    {
      uint32_t keep = n_above < 1 ? 1 : n_above;
      kept = keep < kept ? keep : kept;
    }
  return kept;
}
