/* test-cuda-math.c: the GPU kernels' arithmetic, run on the host, equals the CPU's.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Needs no GPU: lm-cuda-host-check.cu runs the __host__ __device__ functions
 * of engine/cuda/lm-cuda-math.h and replays the kernels' reduction orders.
 * Built only when CUDA is. */
#include <glib.h>
#include <math.h>
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

static void
test_activations (void)
{
  GRand *r = g_rand_new_with_seed (1);
  static const float special[] = { 0.0f, -0.0f, 20.0f, 20.000002f, 19.999998f, -88.0f, 88.0f,
                                   -104.0f, 1e-30f, INFINITY, -INFINITY };
  for (size_t i = 0; i < G_N_ELEMENTS (special); i++)
    {
      assert_same_float (lm_cuda_host_silu (special[i]), lm_silu (special[i]));
      assert_same_float (lm_cuda_host_sigmoid (special[i]), lm_sigmoid (special[i]));
      assert_same_float (lm_cuda_host_softplus (special[i]), lm_softplus (special[i]));
    }
  for (int i = 0; i < 100000; i++)
    {
      float x = rnd (r, -40, 40);
      assert_same_float (lm_cuda_host_silu (x), lm_silu (x));
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
      double ss = 0.0;
      for (uint32_t i = 0; i < n; i++)
        {
          x[i] = trial % 7 == 0 ? rnd (r, -1e-4, 1e-4) : rnd (r, -5, 5);
          ones[i] = 1.0f;
          ss += (double) x[i] * x[i];
        }
      float eps = 1e-6f;
      lm_rms_norm (x, ones, eps, n, y);
      float rs = lm_cuda_host_rms_scale (ss, n, eps);
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
  return g_test_run ();
}
