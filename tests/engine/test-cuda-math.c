/* test-cuda-math.c: the GPU kernels' arithmetic, run on the host, equals the CPU's.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Needs no GPU: lm-cuda-host-check.cu runs the __host__ __device__ functions
 * of engine/src/cuda/lm-cuda-math.h and replays the kernels' reduction orders.
 * Built only when CUDA is. */
#include <glib.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward-ops.h"
#include "lm-cuda-host-check.h"
#include "sampler.h"

static float
rnd (GRand *r, double lo, double hi)
{
  return (float) g_rand_double_range (r, lo, hi);
}

static void
assert_same_float (float a, float b)
{
  if (memcmp (&a, &b, sizeof a) != 0)
    g_error ("%.9g and %.9g differ", a, b);
}

/* The CPU's SwiGLU of one element (lm_swiglu). */
static float
cpu_swiglu (float gate, float up)
{
  lm_swiglu (lm_kernels_best (), &gate, &up, 1);
  return gate;
}

static void
test_activations (void)
{
  GRand *r = g_rand_new_with_seed (1);
  static const float special[] = { 0.0f, -0.0f, 20.0f, 20.000002f, 19.999998f, -88.0f, 88.0f,
                                   -104.0f, 1e-30f, INFINITY, -INFINITY };
  for (size_t i = 0; i < G_N_ELEMENTS (special); i++)
    {
      assert_same_float (lm_cuda_host_silu (special[i]), lm_silu (special[i]));
      assert_same_float (lm_cuda_host_swiglu (special[i], 0.75f), cpu_swiglu (special[i], 0.75f));
      assert_same_float (lm_cuda_host_sigmoid (special[i]), lm_sigmoid (special[i]));
      assert_same_float (lm_cuda_host_softplus (special[i]), lm_softplus (special[i]));
    }
  for (int i = 0; i < 100000; i++)
    {
      float x = rnd (r, -40, 40);
      assert_same_float (lm_cuda_host_silu (x), lm_silu (x));
      assert_same_float (lm_cuda_host_swiglu (x, -x / 3.0f), cpu_swiglu (x, -x / 3.0f));
      assert_same_float (lm_cuda_host_sigmoid (x), lm_sigmoid (x));
      assert_same_float (lm_cuda_host_softplus (x), lm_softplus (x));
      float a = rnd (r, -8, 0), al = rnd (r, -10, 10), dt = rnd (r, -3, 3);
      assert_same_float (lm_cuda_host_delta_decay (a, al, dt), expf (a * lm_softplus (al + dt)));
    }
  g_rand_free (r);
}

/* The rotation table and rotation, entry for entry, for the 35B-A3B shape
 * and sections that leave pairs unrotated, deep into a context. */
static void
test_rope (void)
{
  static const int32_t sections[][4] = { { 11, 11, 10, 0 }, { 2, 3, 1, 4 }, { 0, 0, 0, 0 },
                                         { 24, 20, 20, 0 } };
  static const uint32_t n_rots[] = { 8, 16, 64, 128 };
  GRand *r = g_rand_new_with_seed (2);
  for (size_t si = 0; si < G_N_ELEMENTS (sections); si++)
    for (size_t ri = 0; ri < G_N_ELEMENTS (n_rots); ri++)
      for (int trial = 0; trial < 200; trial++)
        {
          uint32_t n_rot = n_rots[ri];
          uint32_t pos = trial < 10 ? (uint32_t) trial : (uint32_t) g_rand_int_range (r, 0, 262144);
          float base = trial % 2 ? 10000000.0f : 10000.0f;
          float cs_cpu[128], cs_gpu[128];
          lm_rope_table (pos, n_rot, base, sections[si], cs_cpu);
          lm_cuda_host_rope_table (pos, n_rot, base, sections[si], cs_gpu);
          g_assert_cmpmem (cs_cpu, n_rot * sizeof (float), cs_gpu, n_rot * sizeof (float));
          float x_cpu[256], x_gpu[256];
          for (int i = 0; i < 256; i++)
            x_cpu[i] = x_gpu[i] = rnd (r, -3, 3);
          lm_rope_apply (x_cpu, n_rot, cs_cpu);
          lm_cuda_host_rope_apply (x_gpu, n_rot, cs_gpu);
          g_assert_cmpmem (x_cpu, sizeof x_cpu, x_gpu, sizeof x_gpu);
        }
  g_rand_free (r);
}

/* The norms' scale: y = x * scale * w of lm_rms_norm with w = 1 gives it back. */
static void
test_norm_scales (void)
{
  GRand *r = g_rand_new_with_seed (3);
  for (int trial = 0; trial < 200; trial++)
    {
      uint32_t n = (uint32_t) g_rand_int_range (r, 1, 2049);
      float *x = g_new (float, n), *y = g_new (float, n), *ones = g_new (float, n);
      double ss = 0.0, ss_float_squares = 0.0;   /* L2 norm / RMSNorm */
      for (uint32_t i = 0; i < n; i++)
        {
          x[i] = trial % 7 == 0 ? rnd (r, -1e-4, 1e-4) : rnd (r, -5, 5);
          ones[i] = 1.0f;
          ss += (double) x[i] * x[i];
          ss_float_squares += (double) (x[i] * x[i]);
        }
      float eps = 1e-6f;
      lm_rms_norm (x, ones, eps, n, y);
      float rs = lm_cuda_host_rms_scale (ss_float_squares, n, eps);
      for (uint32_t i = 0; i < n; i++)
        assert_same_float (y[i], x[i] * rs * 1.0f);
      memcpy (y, x, n * sizeof (float));
      lm_l2_norm (y, eps, n);
      float ls = lm_cuda_host_l2_scale (ss, eps);
      for (uint32_t i = 0; i < n; i++)
        assert_same_float (y[i], x[i] * ls);
      g_free (x);
      g_free (y);
      g_free (ones);
    }
  g_rand_free (r);
}

static void
l2_normalize (float *x, uint32_t n)
{
  lm_l2_norm (x, 1e-6f, n);
}

/* The kernel's order of the delta step against lm_delta_step, token after
 * token on one head (S = 128 as in the 35B-A3B model, and small ones). */
static void
test_delta_step (void)
{
  static const uint32_t sizes[] = { 16, 32, 100, 128, 256 };
  GRand *r = g_rand_new_with_seed (4);
  const LmKernels *kern = lm_kernels_best ();
  for (size_t si = 0; si < G_N_ELEMENTS (sizes); si++)
    {
      uint32_t S = sizes[si];
      float *m_cpu = g_new0 (float, (size_t) S * S), *m_gpu = g_new0 (float, (size_t) S * S);
      float *q = g_new (float, S), *k = g_new (float, S), *v = g_new (float, S);
      float *mk = g_new (float, S), *o_cpu = g_new (float, S), *o_gpu = g_new (float, S);
      double max_err = 0.0;
      for (int t = 0; t < 64; t++)
        {
          for (uint32_t i = 0; i < S; i++)
            {
              q[i] = rnd (r, -1, 1);
              k[i] = rnd (r, -1, 1);
              v[i] = rnd (r, -2, 2);
            }
          l2_normalize (q, S);
          l2_normalize (k, S);
          float decay = expf (rnd (r, -8, 0) * lm_softplus (rnd (r, -4, 4)));
          float beta = lm_sigmoid (rnd (r, -4, 4));
          lm_delta_step (kern, m_cpu, q, k, v, decay, beta, S, mk, o_cpu);
          lm_cuda_host_delta_step (m_gpu, q, k, v, decay, beta, S, o_gpu);
          for (uint32_t i = 0; i < S; i++)
            max_err = fmax (max_err, fabs (o_cpu[i] - o_gpu[i]) / (fabs (o_cpu[i]) + 1e-3));
          for (size_t i = 0; i < (size_t) S * S; i++)
            max_err = fmax (max_err, fabs (m_cpu[i] - m_gpu[i]) / (fabs (m_cpu[i]) + 1e-3));
        }
      g_test_message ("S = %u: largest relative difference %.3g", S, max_err);
      g_assert_cmpfloat (max_err, <, 1e-4);
      g_free (m_cpu);
      g_free (m_gpu);
      g_free (q);
      g_free (k);
      g_free (v);
      g_free (mk);
      g_free (o_cpu);
      g_free (o_gpu);
    }
  g_rand_free (r);
}

/* Routing: the same experts in the same order (ties to the lower index),
 * the same weights within rounding, for 256 experts / 8 used and small sets. */
static void
test_route (void)
{
  GRand *r = g_rand_new_with_seed (5);
  static const uint32_t shapes[][2] = { { 256, 8 }, { 8, 2 }, { 64, 4 }, { 33, 33 }, { 512, 10 } };
  for (size_t si = 0; si < G_N_ELEMENTS (shapes); si++)
    for (int trial = 0; trial < 300; trial++)
      {
        uint32_t ne = shapes[si][0], k = shapes[si][1];
        float logits[512];
        for (uint32_t e = 0; e < ne; e++)
          /* every third trial: few distinct values, so many ties */
          logits[e] = trial % 3 == 0 ? (float) g_rand_int_range (r, -3, 3) : rnd (r, -6, 6);
        int32_t sel_cpu[64], sel_gpu[64];
        float w_cpu[64], w_gpu[64];
        lm_route_token (logits, ne, k, sel_cpu, w_cpu);
        lm_cuda_host_route (logits, ne, k, sel_gpu, w_gpu);
        g_assert_cmpmem (sel_cpu, k * sizeof (int32_t), sel_gpu, k * sizeof (int32_t));
        for (uint32_t i = 0; i < k; i++)
          g_assert_cmpfloat_with_epsilon (w_cpu[i], w_gpu[i], 1e-6f * fmaxf (1.0f, w_cpu[i]));
      }
  g_rand_free (r);
}

/* Greedy: the CPU sampler's token for random logits, ties, -inf, NaN and all NaN. */
static void
test_argmax (void)
{
  GRand *r = g_rand_new_with_seed (6);
  LmSamplerParams gp = lm_sampler_params_greedy ();
  for (int trial = 0; trial < 400; trial++)
    {
      uint32_t n = trial % 4 == 0 ? (uint32_t) g_rand_int_range (r, 1, 40)
                                  : (uint32_t) g_rand_int_range (r, 1000, 40000);
      float *l = g_new (float, n);
      for (uint32_t i = 0; i < n; i++)
        {
          int kind = trial % 5;
          l[i] = kind == 1 ? (float) g_rand_int_range (r, 0, 4) : rnd (r, -20, 20);
          if (kind == 2 && g_rand_int_range (r, 0, 3) == 0)
            l[i] = NAN;
          if (kind == 3)
            l[i] = g_rand_int_range (r, 0, 10) == 0 ? -INFINITY : NAN;
          if (kind == 4 && g_rand_int_range (r, 0, 2) == 0)
            l[i] = -INFINITY;
        }
      LmSampler *s = lm_sampler_new (&gp, (int32_t) n);
      int32_t want = lm_sampler_sample (s, l);
      g_assert_cmpint (lm_cuda_host_argmax (l, n, 1024), ==, want);
      g_assert_cmpint (lm_cuda_host_argmax (l, n, 64), ==, want);
      lm_sampler_free (s);
      g_free (l);
    }
  g_rand_free (r);
}

static void
test_float_key (void)
{
  GRand *r = g_rand_new_with_seed (7);
  static const float special[] = { 0.0f, -0.0f, 1e-45f, -1e-45f, INFINITY, -INFINITY, 1.0f,
                                   -1.0f, 3.4e38f, -3.4e38f };
  for (size_t i = 0; i < G_N_ELEMENTS (special); i++)
    for (size_t j = 0; j < G_N_ELEMENTS (special); j++)
      g_assert_true (lm_cuda_host_key_orders (special[i], special[j]));
  for (int i = 0; i < 100000; i++)
    {
      float a = rnd (r, -100, 100), b = i % 2 ? a : rnd (r, -100, 100);
      g_assert_true (lm_cuda_host_key_orders (a, b));
    }
  g_rand_free (r);
}


/* Asserts |got - want| <= atol + rtol |want| over @n values. */
static void
assert_near (const char *what, const float *got, const double *want, uint32_t n, double rtol,
             double atol)
{
  for (uint32_t i = 0; i < n; i++)
    if (!(fabs (got[i] - want[i]) <= atol + rtol * fabs (want[i])))
      g_error ("%s: value %u is %.9g, expected %.9g", what, i, got[i], want[i]);
}

/* The attention kernel's arithmetic for one head against lm_attend_head,
 * gated and ungated, in one block and in chunks; over one position the
 * output is that position's v (times the sigmoid of the gate), to the bit. */
static void
test_attend (void)
{
  static const uint32_t hds[] = { 64, 128, 256 };
  static const uint32_t n_poss[] = { 1, 2, 63, 64, 65, 200, 1000 };
  const uint32_t n_ctx = 1024, n_kv = 2;
  const LmKernels *kern = lm_kernels_best ();
  GRand *r = g_rand_new_with_seed (9);
  for (size_t hi = 0; hi < G_N_ELEMENTS (hds); hi++)
    {
      uint32_t hd = hds[hi], kvd = hd * n_kv;
      float *k = g_new (float, (size_t) n_ctx * kvd), *v = g_new (float, (size_t) n_ctx * kvd);
      float *q = g_new (float, hd), *gate = g_new (float, hd), *got = g_new (float, hd);
      float *want = g_new (float, hd);
      double *want_d = g_new (double, hd);
      for (size_t i = 0; i < (size_t) n_ctx * kvd; i++)
        {
          k[i] = rnd (r, -1, 1);
          v[i] = rnd (r, -1, 1);
        }
      for (uint32_t d = 0; d < hd; d++)
        {
          q[d] = rnd (r, -3, 3);   /* scores of a few units, as after the q/k norms */
          gate[d] = rnd (r, -4, 4);
        }
      /* the second kv head of the cache: a row stride wider than the head */
      const float *kh = k + hd, *vh = v + hd;
      for (size_t pi = 0; pi < G_N_ELEMENTS (n_poss); pi++)
        for (int gated = 0; gated < 2; gated++)
          {
            uint32_t n_pos = n_poss[pi];
            const float *g = gated ? gate : NULL;
            lm_attend_head (kern, q, g, kh, vh, kvd, n_pos, hd, want);
            for (uint32_t d = 0; d < hd; d++)
              want_d[d] = want[d];
            for (int split = 0; split < 2; split++)
              {
                char what[96];
                snprintf (what, sizeof what, "attention, head %u, %u positions, %s, %s", hd,
                          n_pos, gated ? "gated" : "ungated", split ? "split" : "one block");
                lm_cuda_host_attend (q, g, kh, vh, kvd, n_pos, hd, split ? n_ctx : 0, got);
                assert_near (what, got, want_d, hd, 2e-4, 2e-5);
                if (n_pos == 1)
                  for (uint32_t d = 0; d < hd; d++)
                    assert_same_float (got[d], gated ? vh[d] * lm_sigmoid (gate[d]) : vh[d]);
              }
          }
      g_free (k);
      g_free (v);
      g_free (q);
      g_free (gate);
      g_free (got);
      g_free (want);
      g_free (want_d);
    }
  g_rand_free (r);
}

/* The MoE combine against the sums in double: with the shared expert's
 * sigmoid-gated output, and without one (o = the routed sum; the old o,
 * NaN here, is not read). */
static void
test_moe_combine (void)
{
  static const uint32_t widths[] = { 100, 256, 2048 }, ks[] = { 1, 2, 8 };
  GRand *r = g_rand_new_with_seed (10);
  for (size_t wi = 0; wi < G_N_ELEMENTS (widths); wi++)
    for (size_t ki = 0; ki < G_N_ELEMENTS (ks); ki++)
      {
        uint32_t width = widths[wi], k = ks[ki];
        float *y = g_new (float, (size_t) k * width), *w = g_new (float, k);
        float *gate_inp = g_new (float, width), *h = g_new (float, width);
        float *o = g_new (float, width);
        double *routed = g_new (double, width), *want = g_new (double, width), dot = 0.0;
        for (size_t i = 0; i < (size_t) k * width; i++)
          y[i] = rnd (r, -1, 1);
        for (uint32_t j = 0; j < k; j++)
          w[j] = rnd (r, 0, 1);
        for (uint32_t i = 0; i < width; i++)
          {
            gate_inp[i] = rnd (r, -0.1, 0.1);
            h[i] = rnd (r, -2, 2);
            o[i] = rnd (r, -1, 1);
            dot += (double) gate_inp[i] * h[i];
          }
        double gate = 1.0 / (1.0 + exp (-dot));
        for (uint32_t i = 0; i < width; i++)
          {
            routed[i] = 0.0;
            for (uint32_t j = 0; j < k; j++)
              routed[i] += (double) w[j] * y[(size_t) j * width + i];
            want[i] = routed[i] + gate * o[i];
          }
        lm_cuda_host_moe_combine (y, w, gate_inp, h, k, width, o);
        assert_near ("moe combine, shared expert", o, want, width, 1e-5, 1e-6);
        for (uint32_t i = 0; i < width; i++)
          o[i] = NAN;
        lm_cuda_host_moe_combine (y, w, NULL, NULL, k, width, o);
        assert_near ("moe combine, routed experts only", o, routed, width, 1e-5, 1e-6);
        g_free (y);
        g_free (w);
        g_free (gate_inp);
        g_free (h);
        g_free (o);
        g_free (routed);
        g_free (want);
      }
  g_rand_free (r);
}

/* The split attention's chunks: for every cache size and position, the
 * chunks the combine reads cover positions 0 .. n_pos - 1 exactly once,
 * in order; the others are empty. */
static void
test_attn_schedule (void)
{
  static const uint32_t n_ctxs[] = { 1, 2, 63, 64, 65, 100, 256, 4096, 32768, 32769, 40000,
                                     131072, 262144 };
  GRand *r = g_rand_new_with_seed (8);
  for (size_t ci = 0; ci < G_N_ELEMENTS (n_ctxs); ci++)
    {
      uint32_t n_ctx = n_ctxs[ci], chunk, splits = lm_cuda_host_attn_splits (n_ctx, &chunk);
      g_assert_cmpuint (splits, >=, 1);
      g_assert_cmpuint (splits, <=, 512);
      g_assert_cmpuint (chunk % 64, ==, 0);
      g_assert_cmpuint ((uint64_t) splits * chunk, >=, n_ctx);
      uint32_t n_pos_list[] = { 1, 2, chunk - 1, chunk, chunk + 1, n_ctx, n_ctx - 1, 0, 0, 0 };
      for (int i = 7; i < 10; i++)
        n_pos_list[i] = (uint32_t) g_rand_int_range (r, 1, (gint32) n_ctx + 1);
      for (size_t pi = 0; pi < G_N_ELEMENTS (n_pos_list); pi++)
        {
          uint32_t n_pos = n_pos_list[pi];
          if (n_pos < 1 || n_pos > n_ctx)
            continue;
          uint32_t live = lm_cuda_host_attn_live (n_pos, chunk, splits), next = 0;
          for (uint32_t s = 0; s < splits; s++)
            {
              uint32_t start, end;
              lm_cuda_host_attn_range (s, chunk, n_pos, &start, &end);
              if (s < live)
                {
                  g_assert_cmpuint (start, ==, next);
                  g_assert_cmpuint (end, >, start);
                  next = end;
                }
              else
                g_assert_cmpuint (end, ==, start);
            }
          g_assert_cmpuint (next, ==, n_pos);
        }
    }
  g_rand_free (r);
}

/* The delta rule's threads hold every element of the S x S state exactly
 * once, within the block limits of their kernel form. */
static void
test_delta_schedule (void)
{
  uint32_t tpr = lm_cuda_host_delta_row_threads ();
  for (uint32_t S = 1; S <= 256; S++)
    {
      uint32_t threads = lm_cuda_host_delta_threads (S), cols = lm_cuda_host_delta_columns (S);
      g_assert_cmpuint (threads % 32, ==, 0);
      g_assert_cmpuint (threads, <=, cols == 32 ? 512 : 1024);
      guint8 *seen = g_new0 (guint8, (size_t) S * S);
      for (uint32_t tid = 0; tid < threads; tid++)
        {
          uint32_t row = tid / tpr, part = tid % tpr;
          for (uint32_t i = 0; i < cols; i++)
            {
              uint32_t c = lm_cuda_host_delta_column (i, part);
              if (row < S && c < S)
                seen[(size_t) row * S + c]++;
            }
        }
      for (size_t i = 0; i < (size_t) S * S; i++)
        g_assert_cmpuint (seen[i], ==, 1);
      g_free (seen);
    }
}

typedef struct {
  float v;
  int32_t id;
} Cand;

/* sampler.c's by_logit_desc */
static int
by_logit_desc (const void *a, const void *b)
{
  const Cand *x = a, *y = b;
  if (x->v != y->v)
    return x->v > y->v ? -1 : 1;
  return (x->id > y->id) - (x->id < y->id);
}

static float *
sampler_logits (GRand *r, uint32_t n, int kind)
{
  float *l = g_new (float, n);
  for (uint32_t i = 0; i < n; i++)
    {
      l[i] = rnd (r, -8, 8);
      if (kind == 1)
        l[i] = (float) g_rand_int_range (r, -3, 3);
      if (kind == 2 && g_rand_int_range (r, 0, 9) == 0)
        l[i] = g_rand_int_range (r, 0, 2) ? -INFINITY : -0.0f;
      if (kind == 3)
        l[i] *= 30.0f;
      if (kind == 4)
        l[i] *= 0.01f;
    }
  return l;
}

/* The radix select gives the best candidates in by_logit_desc order,
 * ties to the lower id, with -inf and -0 among them. */
static void
test_select (void)
{
  GRand *r = g_rand_new_with_seed (9);
  static const uint32_t sizes[] = { 5, 1000, 5000, 100000 };
  static const uint32_t wants[] = { 1, 2, 40, 1000, 1024 };
  for (size_t si = 0; si < G_N_ELEMENTS (sizes); si++)
    for (int kind = 0; kind < 5; kind++)
      for (size_t wi = 0; wi < G_N_ELEMENTS (wants); wi++)
        {
          uint32_t n = sizes[si], want = wants[wi] < n ? wants[wi] : n;
          float *l = sampler_logits (r, n, kind), *v = g_new (float, want);
          int32_t *id = g_new (int32_t, want);
          Cand *c = g_new (Cand, n);
          for (uint32_t i = 0; i < n; i++)
            c[i] = (Cand) { l[i], (int32_t) i };
          qsort (c, n, sizeof *c, by_logit_desc);
          lm_cuda_host_select (l, n, want, 1024, v, id);
          for (uint32_t i = 0; i < want; i++)
            {
              g_assert_cmpint (id[i], ==, c[i].id);
              g_assert_true (v[i] == c[i].v);
            }
          g_free (l);
          g_free (v);
          g_free (id);
          g_free (c);
        }
  g_rand_free (r);
}

/* A sampler chain: temperature, top-k (0: off), top-p, min-p. */
typedef struct {
  float temp;
  int32_t top_k;
  float top_p, min_p;
} Chain;

/* The CPU sampler's token for logits @l (n) under @ch with @seed, and in
 * *u the uniform number it drew (the GPU's paths are given the same). */
static int32_t
cpu_sample (const Chain *ch, uint64_t seed, const float *l, uint32_t n, double *u)
{
  LmSamplerParams p = lm_sampler_params_default (seed);
  p.temperature = ch->temp;
  p.top_k = ch->top_k;
  p.top_p = ch->top_p;
  p.min_p = ch->min_p;
  LmSampler *s = lm_sampler_new (&p, (int32_t) n);
  int32_t tok = lm_sampler_sample (s, l);
  lm_sampler_free (s);
  uint64_t st[4];
  lm_rng_seed (st, seed);
  *u = lm_rng_uniform (st);
  return tok;
}

/* The sampler's fast path (select, exponentials, lm_hd_sample_pick) picks
 * the CPU sampler's token with the same uniform number, for the chains it
 * serves: top-k up to 1024, or any filter on a vocabulary that small. */
static void
test_sample_pick (void)
{
  GRand *r = g_rand_new_with_seed (10);
  static const Chain chains[] = {
    { 0.8f, 40, 0.95f, 0.05f }, { 1.0f, 40, 1.0f, 0.0f }, { 0.7f, 1000, 0.9f, 0.0f },
    { 1.3f, 5, 1.0f, 0.2f }, { 1.0f, 0, 0.9f, 0.0f }, { 0.5f, 0, 1.0f, 0.05f },
    { 1.0f, 0, 0.5f, 0.1f }, { 2.0f, 1, 0.9f, 0.0f }, { 1.0f, 0, 0.0f, 0.0f },
  };
  static const uint32_t sizes[] = { 3, 50, 1000, 1024, 20000 };
  for (uint64_t seed = 1; seed <= 8; seed++)
    for (size_t ci = 0; ci < G_N_ELEMENTS (chains); ci++)
      for (size_t si = 0; si < G_N_ELEMENTS (sizes); si++)
        for (int kind = 0; kind < 5; kind++)
          {
            const Chain *ch = &chains[ci];
            uint32_t n = sizes[si];
            bool use_k = ch->top_k > 0 && (uint32_t) ch->top_k < n;
            bool filter = ch->top_p < 1.0f || ch->min_p > 0.0f;
            if (!use_k && (n > 1024 || !filter))
              continue;   /* the sorted path's and the whole-vocabulary draw's cases */
            float *l = sampler_logits (r, n, kind);
            double u;
            int32_t want_tok = cpu_sample (ch, seed, l, n, &u);

            uint32_t want = use_k ? (uint32_t) ch->top_k : n;
            float *v = g_new (float, want);
            int32_t *id = g_new (int32_t, want);
            double *e1 = g_new (double, want), *e2 = g_new (double, want), z = 0.0;
            lm_cuda_host_select (l, n, want, 1024, v, id);
            for (uint32_t i = 0; i < want; i++)
              {
                e1[i] = exp ((double) v[i] - v[0]);
                e2[i] = exp (((double) v[i] - v[0]) * (1.0 / ch->temp));
              }
            for (uint32_t i = 0; i < n; i++)
              z += exp ((double) l[i] - v[0]);
            uint32_t at = lm_cuda_host_sample_pick (ch->top_p, ch->min_p, use_k, v, e1, e2, want,
                                                    z, u);
            if (id[at] != want_tok)
              g_error ("chain %zu (T %g, top-k %d, top-p %g, min-p %g), %u tokens, kind %d, "
                       "seed %" G_GUINT64_FORMAT ", u %.17g: %d, the CPU %d", ci, ch->temp,
                       ch->top_k, ch->top_p, ch->min_p, n, kind, seed, u, id[at], want_tok);
            g_free (l);
            g_free (v);
            g_free (id);
            g_free (e1);
            g_free (e2);
          }
  g_rand_free (r);
}

/* The sampler's sorted path (top-p / min-p alone on a large vocabulary,
 * top-k above the fast path's limit) picks the CPU sampler's token. */
static void
test_sorted_sample (void)
{
  GRand *r = g_rand_new_with_seed (11);
  static const Chain chains[] = {
    { 1.0f, 0, 0.9f, 0.0f }, { 0.8f, 0, 0.95f, 0.05f }, { 1.0f, 0, 1.0f, 0.05f },
    { 1.2f, 0, 0.3f, 0.0f }, { 1.0f, 3000, 1.0f, 0.0f }, { 0.9f, 2000, 0.8f, 0.01f },
    { 1.0f, 0, 0.0f, 0.0f }, { 1.0f, 0, 0.99f, 0.0f },
  };
  static const uint32_t sizes[] = { 1025, 5000, 60000 };
  for (uint64_t seed = 1; seed <= 6; seed++)
    for (size_t ci = 0; ci < G_N_ELEMENTS (chains); ci++)
      for (size_t si = 0; si < G_N_ELEMENTS (sizes); si++)
        for (int kind = 0; kind < 5; kind++)
          {
            const Chain *ch = &chains[ci];
            uint32_t n = sizes[si];
            /* the chains lm_cuda_sample sends this way */
            bool use_k = ch->top_k > 0 && (uint32_t) ch->top_k < n;
            bool filter = ch->top_p < 1.0f || ch->min_p > 0.0f;
            if (!(use_k ? ch->top_k > 1024 : filter && n > 1024))
              continue;
            float *l = sampler_logits (r, n, kind);
            double u;
            int32_t want_tok = cpu_sample (ch, seed, l, n, &u);
            int32_t got = lm_cuda_host_sorted_sample (l, n, ch->top_k, ch->top_p, ch->min_p,
                                                      ch->temp, u, 1024);
            if (got != want_tok)
              g_error ("chain %zu, %u tokens, kind %d, seed %" G_GUINT64_FORMAT
                       ", u %.17g: %d, the CPU %d", ci, n, kind, seed, u, got, want_tok);
            g_free (l);
          }
  g_rand_free (r);
}

/* Sampling from the whole vocabulary in id order (no filter) picks the
 * CPU sampler's token, penalty-free logits with -inf and ties included. */
static void
test_draw_all (void)
{
  GRand *r = g_rand_new_with_seed (12);
  static const uint32_t sizes[] = { 1, 3, 1000, 1025, 60000 };
  static const float temps[] = { 0.3f, 1.0f, 1.7f };
  for (uint64_t seed = 1; seed <= 10; seed++)
    for (size_t si = 0; si < G_N_ELEMENTS (sizes); si++)
      for (size_t ti = 0; ti < G_N_ELEMENTS (temps); ti++)
        for (int kind = 0; kind < 5; kind++)
          {
            uint32_t n = sizes[si];
            float *l = sampler_logits (r, n, kind);
            const Chain all = { temps[ti], 0, 1.0f, 0.0f };
            double u;
            int32_t want_tok = cpu_sample (&all, seed, l, n, &u);
            g_assert_cmpint (lm_cuda_host_draw_all (l, n, temps[ti], u, 1024), ==, want_tok);
            g_free (l);
          }
  g_rand_free (r);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/cuda-math/activations", test_activations);
  g_test_add_func ("/engine/cuda-math/rope", test_rope);
  g_test_add_func ("/engine/cuda-math/norm-scales", test_norm_scales);
  g_test_add_func ("/engine/cuda-math/delta-step", test_delta_step);
  g_test_add_func ("/engine/cuda-math/route", test_route);
  g_test_add_func ("/engine/cuda-math/argmax", test_argmax);
  g_test_add_func ("/engine/cuda-math/float-key", test_float_key);
  g_test_add_func ("/engine/cuda-math/attend", test_attend);
  g_test_add_func ("/engine/cuda-math/moe-combine", test_moe_combine);
  g_test_add_func ("/engine/cuda-math/attn-schedule", test_attn_schedule);
  g_test_add_func ("/engine/cuda-math/delta-schedule", test_delta_schedule);
  g_test_add_func ("/engine/cuda-math/select", test_select);
  g_test_add_func ("/engine/cuda-math/sample-pick", test_sample_pick);
  g_test_add_func ("/engine/cuda-math/sorted-sample", test_sorted_sample);
  g_test_add_func ("/engine/cuda-math/draw-all", test_draw_all);
  return g_test_run ();
}
