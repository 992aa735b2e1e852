/* kernels-attn-x86.h: attention and SwiGLU over vectors of 16 floats, shared
 * by the AVX2 and AVX-512 kernel files.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internal. The including file defines TARGET, the vector types V16 (16
 * floats) and VD16 (16 doubles), the lane-wise primitives below, and the
 * blocking ATTN_QG x ATTN_LC (queries x their 16 output chains run at once):
 *   v_zero, v_set1 (f), v_load (p), v_store (p, v), v_bcast (p): *p in every lane;
 *   v_add, v_sub, v_mul, v_div, v_max (a, b);
 *   v_fma (a, b, c): a * b + c, v_fnma (a, b, c): c - a * b, fused;
 *   v_lt_select (a, b, x, y): x where a < b, else y;
 *   v_exp_scale (j, z, n): j * 2^n from the shifted z, 0 below n = -126,
 *     infinite above 127 (as expf-poly.h);
 *   vd_zero, vd_add (s, e): s + (double) e, vd_inv (s): (float) (1 / s).
 *
 * In the scores and the softmax the lanes are the queries: a vector holds
 * one position's scores for all 16 queries (the queries transposed once,
 * each key value broadcast), so every per-query sum of kernels.h is a
 * sequence of lane-wise operations; in the weighted sum of the values the
 * lanes are 16 values of the head, one vector per output chain. Every lane
 * thus does exactly the operations of kernels-scalar-attn.c. */
#pragma once

#include <math.h>

#include "expf-poly.h"
#include "kernels-private.h"

#ifndef TARGET
#error "define TARGET before including kernels-attn-x86.h"
#endif

#define LANES 16

TARGET static inline __attribute__ ((always_inline)) V16
v_exp (V16 x)
{
  V16 z = v_fma (x, v_set1 (LM_EXP_LOG2E), v_set1 (LM_EXP_SHIFT));
  V16 n = v_sub (z, v_set1 (LM_EXP_SHIFT));
  V16 b = v_fnma (n, v_set1 (LM_EXP_LN2_LO), v_fnma (n, v_set1 (LM_EXP_LN2_HI), x));
  V16 u = v_mul (b, b);
  V16 j = v_fma (v_fma (v_fma (v_set1 (LM_EXP_C5), b, v_set1 (LM_EXP_C4)), u,
                        v_fma (v_set1 (LM_EXP_C3), b, v_set1 (LM_EXP_C2))),
                 u, v_fma (v_set1 (LM_EXP_C1), b, v_set1 (1.0f)));
  return v_exp_scale (j, z, n);
}

TARGET static void
swiglu_x86 (float *gate, const float *up, size_t n)
{
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
    {
      V16 g = v_load (gate + i);
      V16 silu = v_div (g, v_add (v_set1 (1.0f), v_exp (v_sub (v_zero (), g))));
      v_store (gate + i, v_mul (silu, v_load (up + i)));
    }
  for (; i < n; i++)
    gate[i] = lm_silu_poly (gate[i]) * up[i];
}

/* The queries of the call in 16 lanes (the missing ones repeat the first,
 * computed and dropped): their rows, positions and the transposed queries
 * qt[d][lane]. Returns the most positions any lane sees. */
TARGET static uint32_t
gather_queries (const LmAttnQueries *a, float *qt, const float *q[LANES],
                float n_pos[LANES])
{
  uint32_t most = 0;
  for (uint32_t i = 0; i < LANES; i++)
    {
      uint32_t from = i < a->n_q ? i : 0;
      q[i] = a->q[from];
      n_pos[i] = (float) a->n_pos[from];
      most = a->n_pos[from] > most ? a->n_pos[from] : most;
    }
  for (uint32_t d = 0; d < a->hd; d++)
    for (uint32_t i = 0; i < LANES; i++)
      qt[d * LANES + i] = q[i][d];
  return most;
}

/* Chain j of d-lane l summed over the 64-value blocks, combined as
 * (0 + 2) + (1 + 3). */
TARGET static inline __attribute__ ((always_inline)) V16
score_lane (const float *qt, const float *k, uint32_t np, uint32_t l)
{
  V16 c[4] = { v_zero (), v_zero (), v_zero (), v_zero () };
  for (uint32_t i = 0; i < np; i += 64)
    #pragma GCC unroll 4
    for (uint32_t j = 0; j < 4; j++)
      {
        uint32_t d = i + 16 * j + l;
        c[j] = v_fma (v_load (qt + (size_t) d * LANES), v_bcast (k + d), c[j]);
      }
  return v_add (v_add (c[0], c[2]), v_add (c[1], c[3]));
}

/* The 16 queries' scores against key @k: the d-lanes folded in reduce16's
 * order (halves, quarters, pairs), then the last hd % 64 values. */
TARGET static inline __attribute__ ((always_inline)) V16
score (const float *qt, const float *k, uint32_t hd)
{
  const uint32_t np = hd & ~63u;
  V16 t6[4];
  #pragma GCC unroll 4
  for (uint32_t l = 0; l < 4; l++)
    {
      V16 t3 = v_add (score_lane (qt, k, np, 8 + l), score_lane (qt, k, np, l));
      V16 t3_hi = v_add (score_lane (qt, k, np, 12 + l), score_lane (qt, k, np, 4 + l));
      t6[l] = v_add (t3_hi, t3);
    }
  V16 r = v_add (v_add (t6[0], t6[2]), v_add (t6[1], t6[3]));
  for (uint32_t d = np; d < hd; d++)
    r = v_fma (v_load (qt + (size_t) d * LANES), v_bcast (k + d), r);
  return r;
}

/* reduce16 of the 16 vectors x[0..15], lane-wise. */
TARGET static inline __attribute__ ((always_inline)) V16
reduce16_lanes (const float *x, size_t stride)
{
  V16 t6[4];
  #pragma GCC unroll 4
  for (int l = 0; l < 4; l++)
    {
      V16 t3 = v_add (v_load (x + (8 + l) * stride), v_load (x + l * stride));
      V16 t3_hi = v_add (v_load (x + (12 + l) * stride), v_load (x + (4 + l) * stride));
      t6[l] = v_add (t3_hi, t3);
    }
  return v_add (v_add (t6[0], t6[2]), v_add (t6[1], t6[3]));
}

/* The scaled scores of positions [0, n) into the weights P_p, lane-wise
 * (w: one vector per position, room up to a multiple of 16); a lane's
 * positions past its own get 0. */
TARGET static void
softmax_positions (const LmAttnQueries *a, const float *qt, const float n_pos[LANES],
                   uint32_t n, float *w)
{
  const V16 limit = v_load (n_pos), scale = v_set1 (a->scale), none = v_set1 (-INFINITY);
  const uint32_t padded = (n + 15) / 16 * 16;
  V16 max = none;
  for (uint32_t p = 0; p < n; p++)
    {
      V16 s = v_mul (score (qt, a->k + (size_t) p * a->kvd, a->hd), scale);
      s = v_lt_select (v_set1 ((float) p), limit, s, none);
      v_store (w + (size_t) p * LANES, s);
      max = v_max (max, s);
    }
  for (uint32_t p = 0; p < n; p++)
    v_store (w + (size_t) p * LANES, v_exp (v_sub (v_load (w + (size_t) p * LANES), max)));
  for (uint32_t p = n; p < padded; p++)
    v_store (w + (size_t) p * LANES, v_zero ());
  VD16 sum = vd_zero ();
  for (uint32_t p = 0; p < padded; p += 16)
    sum = vd_add (sum, reduce16_lanes (w + (size_t) p * LANES, LANES));
  V16 inv = vd_inv (sum);
  for (uint32_t p = 0; p < n; p++)
    v_store (w + (size_t) p * LANES, v_mul (v_load (w + (size_t) p * LANES), inv));
}

/* Lanes [l0, l0 + ATTN_LC) of the 16 chains of queries [i0, i0 + ATTN_QG)
 * for head values [16c, 16c + 16): lane l takes positions l, l + 16, ...
 * below n (a query's weights past its own positions are 0 and leave its
 * chains as they are), each value vector loaded once for the queries. */
TARGET static inline __attribute__ ((always_inline)) void
weigh_lanes (const LmAttnQueries *a, const float *w, uint32_t i0, uint32_t n, uint32_t c,
             uint32_t l0, float *chains)
{
  V16 acc[ATTN_QG][ATTN_LC];
  #pragma GCC unroll 16
  for (int g = 0; g < ATTN_QG; g++)
    #pragma GCC unroll 16
    for (int m = 0; m < ATTN_LC; m++)
      acc[g][m] = v_zero ();
  const float *v = a->v + (size_t) c * LANES;
  for (uint32_t p = l0; p < n; p += 16)
    #pragma GCC unroll 16
    for (int m = 0; m < ATTN_LC; m++)
      if (m == 0 || p + m < n)
        {
          V16 vv = v_load (v + (size_t) (p + m) * a->kvd);
          #pragma GCC unroll 16
          for (int g = 0; g < ATTN_QG; g++)
            acc[g][m] = v_fma (v_bcast (w + (size_t) (p + m) * LANES + i0 + g), vv, acc[g][m]);
        }
  #pragma GCC unroll 16
  for (int g = 0; g < ATTN_QG; g++)
    #pragma GCC unroll 16
    for (int m = 0; m < ATTN_LC; m++)
      v_store (chains + ((size_t) g * 16 + l0 + m) * LANES, acc[g][m]);
}

/* Chain lane l of query i for head values [16c, 16c + 16) in the order of
 * llama.cpp's single-token dot product: the positions p = l, l + 16, ... in
 * four chains by (p / 16) % 4, combined as (0 + 2) + (1 + 3). */
TARGET static inline __attribute__ ((always_inline)) V16
weigh_lane_one_token (const LmAttnQueries *a, const float *w, uint32_t i, uint32_t n, uint32_t c,
                      uint32_t l)
{
  V16 acc[4] = { v_zero (), v_zero (), v_zero (), v_zero () };
  const float *v = a->v + (size_t) c * LANES;
  for (uint32_t p = l; p < n; p += 16)
    acc[p / 16 % 4] = v_fma (v_bcast (w + (size_t) p * LANES + i), v_load (v + (size_t) p * a->kvd),
                             acc[p / 16 % 4]);
  return v_add (v_add (acc[0], acc[2]), v_add (acc[1], acc[3]));
}

/* weigh_values for a one-token step, query by query. */
TARGET static void
weigh_values_one_token (const LmAttnQueries *a, const float *w, uint32_t i)
{
  float chains[16 * LANES];
  for (uint32_t c = 0; c < a->hd / LANES; c++)
    {
      for (uint32_t l = 0; l < 16; l++)
        v_store (chains + (size_t) l * LANES, weigh_lane_one_token (a, w, i, a->n_pos[i], c, l));
      v_store (a->out[i] + (size_t) c * LANES, reduce16_lanes (chains, LANES));
    }
}

/* out of queries [i0, i0 + ATTN_QG) (those below n_q): per 16 head values
 * their 16 chains, then each query's reduce16 of them. */
TARGET static void
weigh_values (const LmAttnQueries *a, const float *w, uint32_t i0, uint32_t n)
{
  float chains[ATTN_QG * 16 * LANES];
  for (uint32_t c = 0; c < a->hd / LANES; c++)
    {
      for (uint32_t l0 = 0; l0 < 16; l0 += ATTN_LC)
        weigh_lanes (a, w, i0, n, c, l0, chains);
      for (uint32_t g = 0; g < ATTN_QG && i0 + g < a->n_q; g++)
        v_store (a->out[i0 + g] + (size_t) c * LANES,
                 reduce16_lanes (chains + (size_t) g * 16 * LANES, LANES));
    }
}

/* The head's last hd % 16 values, as weigh_values. */
static void
weigh_values_tail (const LmAttnQueries *a, const float *w, uint32_t i)
{
  for (uint32_t d = a->hd / LANES * LANES; d < a->hd; d++)
    {
      float chain[4][16] = { { 0.0f } }, acc[16], t3[8], t6[4];
      const uint32_t chains = a->one_token ? 4 : 1;
      for (uint32_t p = 0; p < a->n_pos[i]; p++)
        {
          float *ch = chain[p / 16 % chains];
          ch[p % 16] = fmaf (w[(size_t) p * LANES + i], a->v[(size_t) p * a->kvd + d], ch[p % 16]);
        }
      for (int l = 0; l < 16; l++)
        acc[l] = a->one_token ? (chain[0][l] + chain[2][l]) + (chain[1][l] + chain[3][l]) : chain[0][l];
      for (int l = 0; l < 8; l++)
        t3[l] = acc[8 + l] + acc[l];
      for (int l = 0; l < 4; l++)
        t6[l] = t3[4 + l] + t3[l];
      a->out[i][d] = (t6[0] + t6[2]) + (t6[1] + t6[3]);
    }
}

TARGET static void
attend_x86 (const LmAttnQueries *a, float *scratch)
{
  const float *q[LANES];
  float n_pos[LANES];
  float *qt = scratch, *w = scratch + (size_t) a->hd * LANES;
  const uint32_t n = gather_queries (a, qt, q, n_pos);

  softmax_positions (a, qt, n_pos, n, w);
  for (uint32_t i = 0; a->one_token && i < a->n_q; i++)
    weigh_values_one_token (a, w, i);
  for (uint32_t i0 = 0; !a->one_token && i0 < a->n_q; i0 += ATTN_QG)
    {
      uint32_t most = 0;
      for (uint32_t g = 0; g < ATTN_QG; g++)
        most = (uint32_t) n_pos[i0 + g] > most ? (uint32_t) n_pos[i0 + g] : most;
      weigh_values (a, w, i0, most);
    }
  for (uint32_t i = 0; a->hd % LANES != 0 && i < a->n_q; i++)
    weigh_values_tail (a, w, i);
}
