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
 * theta_i, computed in double exactly as lm_rope_table. */
LM_HD void
lm_hd_rope_entry (uint32_t pos, uint32_t i, uint32_t n_rot, float base, int32_t s0,
                  int32_t s1, int32_t s2, int32_t s3, float *c, float *s)
{
  double p = lm_hd_rope_pair_is_text (i, s0, s1, s2, s3) ? pos : 0.0;
  double theta = p * pow ((double) base, -2.0 * i / n_rot);
  *c = (float) cos (theta);
  *s = (float) sin (theta);
}

/* One NEOX pair (a, b) = (x[i], x[i + n_rot/2]) rotated by (c, s). */
LM_HD void
lm_hd_rope_rotate (float *a, float *b, float c, float s)
{
  float x = *a, y = *b;
  *a = x * c - y * s;
  *b = x * s + y * c;
}

/* ---- norms (forward-ops.c): the scale from the double sum of squares ---- */

LM_HD float
lm_hd_rms_scale (double sum_sq, uint32_t n, float eps)
{
  return (float) (1.0 / sqrt (sum_sq / n + eps));
}

LM_HD float
lm_hd_l2_scale (double sum_sq, float eps)
{
  double norm = sqrt (sum_sq);
  return (float) (1.0 / (norm > eps ? norm : eps));
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
