/* lm-cuda-host-check.cu: the kernels' arithmetic on the host (lm-cuda-host-check.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lm-cuda-host-check.h"
#include "lm-cuda-math.h"

extern "C" float
lm_cuda_host_silu (float x)
{
  return lm_hd_silu (x);
}

extern "C" float
lm_cuda_host_swiglu (float gate, float up)
{
  return lm_silu_poly (gate) * up;
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

#define TPR LM_DELTA_TPR

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

/* The butterfly of a warp's __shfl_xor_sync sum at offsets 16, 8, .. 1 (in
 * place): lane 0 ends with the kernel's sum, in the kernel's order. */
static void
warp_sum_down (float v[32])
{
  for (uint32_t off = 16; off > 0; off >>= 1)
    {
      float next[32];
      for (uint32_t i = 0; i < 32; i++)
        next[i] = v[i] + v[i ^ off];
      memcpy (v, next, sizeof next);
    }
}

/* The same butterfly over (value, index) pairs: each lane keeps its own
 * pair and merges its partner's with @fold, as the kernel's shuffles do. */
static void
warp_fold_down (float v[32], int32_t b[32], void (*fold) (float, int32_t, float *, int32_t *))
{
  for (uint32_t off = 16; off > 0; off >>= 1)
    {
      float nv[32];
      int32_t nb[32];
      for (uint32_t lane = 0; lane < 32; lane++)
        {
          nv[lane] = v[lane];
          nb[lane] = b[lane];
          fold (v[lane ^ off], b[lane ^ off], &nv[lane], &nb[lane]);
        }
      memcpy (v, nv, sizeof nv);
      memcpy (b, nb, sizeof nb);
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
  warp_sum_down (lanes);
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
  warp_sum_down (lane_sum);
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
      warp_fold_down (bl, b, route_fold);
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
      warp_fold_down (v, b, argmax_fold);
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

/* attn_kernel for one head over positions [start, end): the unnormalised
 * sum *acc[hd], the running maximum *m and the weights' total *l. */
static void
attend_range (const float *q, const float *k_cache, const float *v_cache, uint32_t kvd,
              uint32_t hd, uint32_t start, uint32_t end, float *acc, float *m_out, float *l_out)
{
  float scale = 1.0f / sqrtf ((float) hd), m = -INFINITY, l = 0.0f, w[LM_ATTN_TILE];
  for (uint32_t d = 0; d < hd; d++)
    acc[d] = 0.0f;
  for (uint32_t p0 = start; p0 < end; p0 += LM_ATTN_TILE)
    {
      uint32_t nb = end - p0 < LM_ATTN_TILE ? end - p0 : LM_ATTN_TILE;
      float lanes[32], bm = -INFINITY;
      for (uint32_t pp = 0; pp < nb; pp++)
        {
          const float *k = k_cache + (size_t) (p0 + pp) * kvd;
          for (uint32_t lane = 0; lane < 32; lane++)
            {
              lanes[lane] = 0.0f;
              for (uint32_t d = lane; d < hd; d += 32)
                lanes[lane] += k[d] * q[d];
            }
          warp_sum_down (lanes);
          w[pp] = lanes[0] * scale;
          bm = w[pp] > bm ? w[pp] : bm;
        }
      float mx = m > bm ? m : bm, sh = bm > m ? expf (m - bm) : 1.0f;
      for (uint32_t lane = 0; lane < 32; lane++)
        {
          lanes[lane] = 0.0f;
          for (uint32_t pp = lane; pp < nb; pp += 32)
            lanes[lane] += w[pp] = expf (w[pp] - mx);
        }
      warp_sum_down (lanes);
      l = l * sh + lanes[0];
      m = mx;
      for (uint32_t d = 0; d < hd; d++)
        {
          const float *v = v_cache + (size_t) p0 * kvd + d;
          float s = acc[d] * sh;
          for (uint32_t pp = 0; pp < nb; pp++)
            s += w[pp] * v[(size_t) pp * kvd];
          acc[d] = s;
        }
    }
  *m_out = m;
  *l_out = l;
}

extern "C" void
lm_cuda_host_attend (const float *q, const float *gate, const float *k_cache,
                     const float *v_cache, uint32_t kvd, uint32_t n_pos, uint32_t hd,
                     uint32_t n_ctx, float *out)
{
  bool gated = gate != NULL;
  float m, l;
  if (n_ctx == 0)
    {
      attend_range (q, k_cache, v_cache, kvd, hd, 0, n_pos, out, &m, &l);
      for (uint32_t d = 0; d < hd; d++)
        out[d] = lm_hd_attn_out (out[d], l, gated, gated ? gate[d] : 0.0f);
      return;
    }
  uint32_t chunk, splits = lm_hd_attn_splits (n_ctx, &chunk);
  uint32_t live = lm_hd_attn_live (n_pos, chunk, splits);
  float *acc = (float *) malloc ((size_t) live * hd * sizeof (float));
  float *ms = (float *) malloc (live * sizeof (float)), *ls = (float *) malloc (live * sizeof (float));
  for (uint32_t sp = 0; sp < live; sp++)
    {
      uint32_t start, end;
      lm_hd_attn_range (sp, chunk, n_pos, &start, &end);
      attend_range (q, k_cache, v_cache, kvd, hd, start, end, acc + (size_t) sp * hd, &ms[sp],
                    &ls[sp]);
    }
  float mx = -INFINITY, sum = 0.0f;
  for (uint32_t sp = 0; sp < live; sp++)
    mx = ms[sp] > mx ? ms[sp] : mx;
  for (uint32_t sp = 0; sp < live; sp++)
    sum += ls[sp] * expf (ms[sp] - mx);
  for (uint32_t d = 0; d < hd; d++)
    {
      float a = 0.0f;
      for (uint32_t sp = 0; sp < live; sp++)
        a += acc[(size_t) sp * hd + d] * expf (ms[sp] - mx);
      out[d] = lm_hd_attn_out (a, sum, gated, gated ? gate[d] : 0.0f);
    }
  free (acc);
  free (ms);
  free (ls);
}

extern "C" void
lm_cuda_host_moe_combine (const float *y, const float *w, const float *gate_inp, const float *h,
                          uint32_t k, uint32_t width, float *o)
{
  bool shared = gate_inp != NULL;
  float gate = 0.0f;
  if (shared)
    {
      /* lm_block_sum: each warp's butterfly, then one over the warps' sums */
      float warps[32] = { 0 };
      for (uint32_t warp = 0; warp < LM_COMBINE_THREADS / 32; warp++)
        {
          float lanes[32];
          for (uint32_t lane = 0; lane < 32; lane++)
            {
              lanes[lane] = 0.0f;
              for (uint32_t i = warp * 32 + lane; i < width; i += LM_COMBINE_THREADS)
                lanes[lane] += gate_inp[i] * h[i];
            }
          warp_sum_down (lanes);
          warps[warp] = lanes[0];
        }
      warp_sum_down (warps);
      gate = lm_hd_sigmoid (warps[0]);
    }
  for (uint32_t i = 0; i < width; i++)
    {
      float sum = 0.0f;
      for (uint32_t j = 0; j < k; j++)
        sum += w[j] * y[(size_t) j * width + i];
      o[i] = lm_hd_moe_mix (sum, shared, gate, shared ? o[i] : 0.0f);
    }
}

extern "C" uint32_t
lm_cuda_host_attn_splits (uint32_t n_ctx, uint32_t *chunk)
{
  return lm_hd_attn_splits (n_ctx, chunk);
}

extern "C" void
lm_cuda_host_attn_range (uint32_t split, uint32_t chunk, uint32_t n_pos, uint32_t *start,
                         uint32_t *end)
{
  lm_hd_attn_range (split, chunk, n_pos, start, end);
}

extern "C" uint32_t
lm_cuda_host_attn_live (uint32_t n_pos, uint32_t chunk, uint32_t n_splits)
{
  return lm_hd_attn_live (n_pos, chunk, n_splits);
}

extern "C" uint32_t
lm_cuda_host_delta_threads (uint32_t S)
{
  return lm_hd_delta_threads (S);
}

extern "C" uint32_t
lm_cuda_host_delta_columns (uint32_t S)
{
  return lm_hd_delta_columns (S);
}

extern "C" uint32_t
lm_cuda_host_delta_column (uint32_t i, uint32_t part)
{
  return lm_hd_delta_column (i, part);
}

extern "C" uint32_t
lm_cuda_host_delta_row_threads (void)
{
  return LM_DELTA_TPR;
}

typedef struct {
  float v;
  int32_t id;
} Cand;

static int
cand_order (const void *a, const void *b)
{
  const Cand *x = (const Cand *) a, *y = (const Cand *) b;
  if (lm_hd_route_before (x->v, x->id, y->v, y->id))
    return -1;
  return lm_hd_route_before (y->v, y->id, x->v, x->id) ? 1 : 0;
}

extern "C" void
lm_cuda_host_select (const float *vals, uint32_t n, uint32_t want, uint32_t n_threads, float *v,
                     int32_t *id)
{
  uint32_t prefix = 0, mask = 0, remaining = want;
  for (int shift = 24; shift >= 0; shift -= 8)
    {
      uint32_t hist[256] = { 0 };
      for (uint32_t i = 0; i < n; i++)
        {
          uint32_t key = lm_hd_float_key (vals[i]);
          if ((key & mask) == prefix)
            hist[(key >> shift) & 255u]++;
        }
      prefix |= lm_hd_radix_digit (hist, &remaining) << shift;
      mask |= 255u << shift;
    }
  uint32_t need_eq = remaining, n_gt = want - need_eq, gt = 0, eq = 0;
  Cand *c = (Cand *) calloc (want > 0 ? want : 1, sizeof (Cand));
  /* keys above: in any order (here the threads' order); equal: the segments in order */
  uint32_t seg = (n + n_threads - 1) / n_threads;
  for (uint32_t t = 0; t < n_threads; t++)
    for (uint32_t i = t * seg; i < n && i < (t + 1) * seg; i++)
      {
        uint32_t key = lm_hd_float_key (vals[i]);
        if (key > prefix && gt < n_gt)
          c[gt++] = (Cand) { vals[i], (int32_t) i };
        else if (key == prefix && eq < need_eq)
          c[n_gt + eq++] = (Cand) { vals[i], (int32_t) i };
      }
  qsort (c, want, sizeof *c, cand_order);
  for (uint32_t i = 0; i < want; i++)
    {
      v[i] = c[i].v;
      id[i] = c[i].id;
    }
  free (c);
}

extern "C" uint32_t
lm_cuda_host_sample_pick (float top_p, float min_p, bool use_k, const float *v, const double *e1,
                          const double *e2, uint32_t want, double z, double u)
{
  return lm_hd_sample_pick (top_p, min_p, use_k, v, e1, e2, want, z, u);
}

typedef struct {
  const float *vals;
  const int32_t *ids;
  double v0, scale, norm;   /* term(i) = exp((v - v0) * scale) / norm */
} Terms;

static double
term_at (const Terms *t, uint32_t i)
{
  return exp (((double) t->vals[t->ids[i]] - t->v0) * t->scale) / t->norm;
}

/* first_crossing of lm-cuda-sample.cu, thread by thread. */
static uint32_t
host_first_crossing (uint32_t n, double target, bool strict, uint32_t none, const Terms *t,
                     uint32_t n_threads)
{
  double excl = 0.0;
  for (uint32_t th = 0; th < n_threads; th++)
    {
      uint32_t lo, hi;
      lm_hd_segment (n, n_threads, th, &lo, &hi);
      double part = 0.0;
      for (uint32_t i = lo; i < hi; i++)
        part += term_at (t, i);
      double incl = excl + part;
      if (lo < hi && !lm_hd_passes (excl, target, strict) && lm_hd_passes (incl, target, strict))
        {
          double cum = excl;
          for (uint32_t i = lo; i < hi; i++)
            if (lm_hd_passes (cum += term_at (t, i), target, strict))
              return i;
          return hi - 1;
        }
      excl = incl;
    }
  return none;
}

extern "C" int32_t
lm_cuda_host_sorted_sample (const float *vals, uint32_t n, int32_t top_k, float top_p,
                            float min_p, float temperature, double u, uint32_t n_threads)
{
  Cand *c = (Cand *) calloc (n, sizeof (Cand));
  for (uint32_t i = 0; i < n; i++)
    c[i] = (Cand) { vals[i], (int32_t) i };
  qsort (c, n, sizeof *c, cand_order);
  int32_t *ids = (int32_t *) calloc (n, sizeof (int32_t));
  for (uint32_t i = 0; i < n; i++)
    ids[i] = c[i].id;
  free (c);
  uint32_t n_eff = top_k > 0 && (uint32_t) top_k < n ? (uint32_t) top_k : n;
  double v0 = vals[ids[0]];
  uint32_t at_p = n_eff, n_above = 0;
  if (top_p < 1.0f)
    {
      Terms t = { vals, ids, v0, 1.0, 1.0 };
      double z = 0.0;
      for (uint32_t i = 0; i < n_eff; i++)
        z += term_at (&t, i);
      t.norm = z;
      at_p = host_first_crossing (n_eff, (double) top_p, false, n_eff, &t, n_threads);
    }
  if (min_p > 0.0f)
    {
      double floor_logit = v0 + log ((double) min_p);
      for (uint32_t i = 0; i < n_eff; i++)
        n_above += (double) vals[ids[i]] >= floor_logit;
    }
  uint32_t kept = lm_hd_sorted_kept (top_p, min_p, n_eff, at_p, n_above);
  Terms t = { vals, ids, v0, 1.0 / temperature, 1.0 };
  double sum = 0.0;
  for (uint32_t i = 0; i < kept; i++)
    sum += term_at (&t, i);
  t.norm = sum;
  int32_t token = ids[host_first_crossing (kept, u, true, kept - 1, &t, n_threads)];
  free (ids);
  return token;
}

extern "C" int32_t
lm_cuda_host_draw_all (const float *vals, uint32_t n, float temperature, double u,
                       uint32_t n_threads)
{
  int32_t *ids = (int32_t *) calloc (n, sizeof (int32_t));
  float mx = -INFINITY;
  for (uint32_t i = 0; i < n; i++)
    {
      ids[i] = (int32_t) i;
      mx = vals[i] > mx ? vals[i] : mx;
    }
  Terms t = { vals, ids, mx, 1.0 / temperature, 1.0 };
  double sum = 0.0;
  for (uint32_t i = 0; i < n; i++)
    sum += term_at (&t, i);
  t.norm = sum;
  int32_t token = (int32_t) host_first_crossing (n, u, true, n - 1, &t, n_threads);
  free (ids);
  return token;
}
