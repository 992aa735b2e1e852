/* test-sampler.c: the sampling chain against hand-computed distributions.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <math.h>

#include "sampler.h"

/* logits ln(1..4): softmax is exactly 0.1, 0.2, 0.3, 0.4 */
static float base_logits[4];

static LmSamplerParams
plain (void)
{
  LmSamplerParams p = lm_sampler_params_greedy ();
  p.temperature = 1.0f;
  return p;
}

static void
expect_probs (LmSamplerParams p, const float *logits, const double *want, int n)
{
  LmSampler *s = lm_sampler_new (&p, n);
  g_assert_nonnull (s);
  float probs[8];
  lm_sampler_probs (s, logits, probs);
  for (int i = 0; i < n; i++)
    g_assert_cmpfloat_with_epsilon (probs[i], want[i], 1e-6);
  lm_sampler_free (s);
}

static void
test_temperature (void)
{
  double t1[] = { 0.1, 0.2, 0.3, 0.4 };
  expect_probs (plain (), base_logits, t1, 4);
  LmSamplerParams p = plain ();
  p.temperature = 0.5f;   /* p^2 renormalised: 1, 4, 9, 16 over 30 */
  double t05[] = { 1 / 30.0, 4 / 30.0, 9 / 30.0, 16 / 30.0 };
  expect_probs (p, base_logits, t05, 4);
}

static void
test_top_k (void)
{
  LmSamplerParams p = plain ();
  p.top_k = 2;
  double want[] = { 0, 0, 3 / 7.0, 4 / 7.0 };
  expect_probs (p, base_logits, want, 4);
  p.top_k = 3;
  p.temperature = 2.0f;   /* sqrt(2), sqrt(3), sqrt(4) renormalised */
  double z = sqrt (2) + sqrt (3) + 2;
  double want2[] = { 0, sqrt (2) / z, sqrt (3) / z, 2 / z };
  expect_probs (p, base_logits, want2, 4);
}

static void
test_top_p (void)
{
  LmSamplerParams p = plain ();
  p.top_p = 0.5f;   /* 0.4 < 0.5, 0.4 + 0.3 >= 0.5: keep two */
  double want[] = { 0, 0, 3 / 7.0, 4 / 7.0 };
  expect_probs (p, base_logits, want, 4);
  p.top_p = 0.35f;  /* the top token alone */
  double want1[] = { 0, 0, 0, 1 };
  expect_probs (p, base_logits, want1, 4);
  p.top_p = 0.95f;  /* 0.4 + 0.3 + 0.2 = 0.9 < 0.95: all four */
  double all[] = { 0.1, 0.2, 0.3, 0.4 };
  expect_probs (p, base_logits, all, 4);
}

static void
test_min_p (void)
{
  LmSamplerParams p = plain ();
  p.min_p = 0.45f;   /* keep p >= 0.18: 0.2, 0.3, 0.4 */
  double want[] = { 0, 2 / 9.0, 3 / 9.0, 4 / 9.0 };
  expect_probs (p, base_logits, want, 4);
  p.min_p = 0.9f;    /* keep p >= 0.36 */
  double want1[] = { 0, 0, 0, 1 };
  expect_probs (p, base_logits, want1, 4);
}

static void
test_combined_filters (void)
{
  LmSamplerParams p = plain ();
  p.top_k = 3;      /* 0.2, 0.3, 0.4 over 0.9; then top-p 0.5 keeps two */
  p.top_p = 0.5f;
  double want[] = { 0, 0, 3 / 7.0, 4 / 7.0 };
  expect_probs (p, base_logits, want, 4);
  p = plain ();
  p.top_p = 0.8f;   /* keeps 0.4, 0.3, 0.2; min-p 0.6 then drops 0.2 (< 0.24) */
  p.min_p = 0.6f;
  expect_probs (p, base_logits, want, 4);
}

/* Without top-k the filters run on a partial heap order; with top-k on a
 * sorted list. Excluding only a -inf token, both must give one distribution. */
static void
test_heap_and_sorted_agree (void)
{
  enum { N = 2000 };
  static float logits[N];
  GRand *rng = g_rand_new_with_seed (99);
  for (int trial = 0; trial < 20; trial++)
    {
      for (int i = 0; i < N; i++)
        logits[i] = (float) g_rand_double_range (rng, -6, 6);
      logits[g_rand_int_range (rng, 0, N)] = -INFINITY;
      logits[g_rand_int_range (rng, 0, N)] = logits[g_rand_int_range (rng, 0, N)];   /* a tie */
      LmSamplerParams a = plain ();
      a.top_p = (float) g_rand_double_range (rng, 0.05, 0.99);
      a.min_p = trial % 2 ? (float) g_rand_double_range (rng, 0.001, 0.5) : 0.0f;
      a.temperature = (float) g_rand_double_range (rng, 0.3, 2.0);
      LmSamplerParams b = a;
      b.top_k = N - 1;
      LmSampler *sa = lm_sampler_new (&a, N), *sb = lm_sampler_new (&b, N);
      static float pa[N], pb[N];
      lm_sampler_probs (sa, logits, pa);
      lm_sampler_probs (sb, logits, pb);
      for (int i = 0; i < N; i++)
        g_assert_cmpfloat_with_epsilon (pa[i], pb[i], 1e-6);
      lm_sampler_free (sa);
      lm_sampler_free (sb);
    }
  g_rand_free (rng);
}

static void
test_repetition_penalty (void)
{
  LmSamplerParams p = plain ();
  p.repeat_penalty = 2.0f;
  p.repeat_last_n = 2;
  float logits[4] = { 2.0f, -1.0f, 1.0f, 0.5f };
  LmSampler *s = lm_sampler_new (&p, 4);
  lm_sampler_accept (s, 3);   /* pushed out of the 2-token window below */
  lm_sampler_accept (s, 0);
  lm_sampler_accept (s, 1);
  lm_sampler_accept (s, 1);   /* a repeat is penalised once */
  lm_sampler_accept (s, 0);
  /* window {1, 0}: 2 -> 1, -1 -> -2, others unchanged */
  double e[] = { exp (1.0), exp (-2.0), exp (1.0), exp (0.5) };
  double z = e[0] + e[1] + e[2] + e[3];
  float probs[4];
  lm_sampler_probs (s, logits, probs);
  for (int i = 0; i < 4; i++)
    g_assert_cmpfloat_with_epsilon (probs[i], e[i] / z, 1e-6);
  lm_sampler_reset (s);   /* history gone */
  lm_sampler_probs (s, logits, probs);
  g_assert_cmpfloat_with_epsilon (probs[0], exp (2.0) / (exp (2.0) + exp (-1.0) + exp (1.0)
                                                         + exp (0.5)), 1e-6);
  lm_sampler_free (s);
}

static void
test_greedy (void)
{
  LmSamplerParams p = lm_sampler_params_greedy ();
  float logits[5] = { 1.0f, 3.0f, NAN, 3.0f, -2.0f };
  LmSampler *s = lm_sampler_new (&p, 5);
  g_assert_cmpint (lm_sampler_sample (s, logits), ==, 1);   /* lowest id on ties */
  float probs[5];
  lm_sampler_probs (s, logits, probs);
  g_assert_cmpfloat (probs[1], ==, 1.0f);
  g_assert_cmpfloat (probs[3], ==, 0.0f);
  lm_sampler_free (s);
  p.temperature = NAN;
  g_assert_null (lm_sampler_new (&p, 5));
  p = lm_sampler_params_greedy ();
  g_assert_null (lm_sampler_new (&p, 0));
}

static void
test_draw_frequencies (void)
{
  LmSamplerParams p = plain ();
  p.seed = 12345;
  LmSampler *s = lm_sampler_new (&p, 4);
  int counts[4] = { 0 };
  const int n = 40000;
  for (int i = 0; i < n; i++)
    counts[lm_sampler_sample (s, base_logits)]++;
  for (int i = 0; i < 4; i++)
    {
      double want = 0.1 * (i + 1), sigma = sqrt (want * (1 - want) / n);
      g_assert_cmpfloat (fabs ((double) counts[i] / n - want), <, 5 * sigma);
    }
  lm_sampler_free (s);
}

static void
test_determinism (void)
{
  LmSamplerParams p = lm_sampler_params_default (7);
  float logits[64];
  for (int i = 0; i < 64; i++)
    logits[i] = (float) sin (i * 0.7) * 3.0f;
  LmSampler *a = lm_sampler_new (&p, 64), *b = lm_sampler_new (&p, 64);
  p.seed = 8;
  LmSampler *c = lm_sampler_new (&p, 64);
  int32_t first[200];
  int differs = 0;
  for (int i = 0; i < 200; i++)
    {
      first[i] = lm_sampler_sample (a, logits);
      g_assert_cmpint (first[i], ==, lm_sampler_sample (b, logits));
      differs += first[i] != lm_sampler_sample (c, logits);
    }
  g_assert_cmpint (differs, >, 0);
  lm_sampler_reset (a);
  for (int i = 0; i < 200; i++)
    g_assert_cmpint (lm_sampler_sample (a, logits), ==, first[i]);
  lm_sampler_free (a);
  lm_sampler_free (b);
  lm_sampler_free (c);
}

/* Reference outputs of splitmix64 and xoshiro256**, from an independent
 * implementation of the published algorithms. */
static void
test_rng_reference (void)
{
  uint64_t s[4];
  lm_rng_seed (s, 0);
  g_assert_cmphex (s[0], ==, 0xe220a8397b1dcdafull);
  lm_rng_seed (s, 42);
  g_assert_cmphex (lm_rng_next (s), ==, 0x15780b2e0c2ec716ull);
  g_assert_cmphex (lm_rng_next (s), ==, 0x6104d9866d113a7eull);
  g_assert_cmphex (lm_rng_next (s), ==, 0xae17533239e499a1ull);
  for (int i = 0; i < 1000; i++)
    {
      double u = lm_rng_uniform (s);
      g_assert_true (u >= 0.0 && u < 1.0);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (int i = 0; i < 4; i++)
    base_logits[i] = logf ((float) (i + 1));
  g_test_add_func ("/engine/sampler/temperature", test_temperature);
  g_test_add_func ("/engine/sampler/top-k", test_top_k);
  g_test_add_func ("/engine/sampler/top-p", test_top_p);
  g_test_add_func ("/engine/sampler/min-p", test_min_p);
  g_test_add_func ("/engine/sampler/combined-filters", test_combined_filters);
  g_test_add_func ("/engine/sampler/heap-and-sorted-agree", test_heap_and_sorted_agree);
  g_test_add_func ("/engine/sampler/repetition-penalty", test_repetition_penalty);
  g_test_add_func ("/engine/sampler/greedy", test_greedy);
  g_test_add_func ("/engine/sampler/draw-frequencies", test_draw_frequencies);
  g_test_add_func ("/engine/sampler/determinism", test_determinism);
  g_test_add_func ("/engine/sampler/rng-reference", test_rng_reference);
  return g_test_run ();
}
