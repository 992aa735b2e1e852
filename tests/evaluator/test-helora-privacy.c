/* test-helora-privacy.c: the evaluator's adapter-private glue on a real
 * CKKS token: pads from the pool, DP noise of the stated sigma, refusal
 * once the client's budget is spent.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>

#include "../he/he-private-token.h"
#include "ckks-privacy.h"
#include "ts-helora-privacy.h"
#include "ts-test-util.h"

static void
token_init (Token *t)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  token_setup (t, rng);
}

/* (u - A·h) / max|h| for the current results. */
static void
errors (Token *t, double *err)
{
  double u[R];
  token_decrypt (t, u);
  for (size_t i = 0; i < R; i++)
    err[i] = (u[i] - t->u_plain[i]) / t->factor;
}

/* DP off: pads only, from the pool; u within the flooding error. */
static void
test_pads_only (void)
{
  Token f;
  token_init (&f);
  double a_row_norm = ts_privacy_sensitivity (f.a, R, D, 1.0);
  TsHeloraPrivacyConfig cfg = { .lambda_s = CKKS_PRIVACY_DEFAULT_LAMBDA };
  g_autoptr (GError) error = NULL;
  TsHeloraPrivacy *p = ts_helora_privacy_new (&cfg, f.pk, NULL, "client", &error);
  g_assert_no_error (error);
  g_assert_true (ts_helora_privacy_prefill (p, f.lay, 2 * (guint) f.b, &error));
  g_assert_cmpuint (ts_helora_privacy_pooled (p, f.lay), ==, 2 * f.b);
  double err[R];
  token_run (&f);
  g_assert_true (ts_helora_privacy_protect (p, f.lay, a_row_norm, f.out, f.b, &error));
  g_assert_cmpuint (ts_helora_privacy_pooled (p, f.lay), ==, f.b);
  errors (&f, err);
  double sd = ckks_privacy_flood_stddev (f.lay, CKKS_PRIVACY_DEFAULT_LAMBDA, ckks_ciphertext_scale (f.out[0]));
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs (err[i]), <, 6.0 * sd);
  g_assert_cmpfloat (ts_helora_privacy_sigma (p, f.lay, a_row_norm), ==, 0.0);
  ts_helora_privacy_free (p);
  token_free (&f);
}

/* The fused path as the evaluator runs it (compact pads, compact results,
 * DP on): u within the noise and the flooding error, the budget charged
 * once per answer, and a refusal evaluates nothing. */
static void
test_fused_compact (void)
{
  Token f;
  token_init (&f);
  double a_row_norm = ts_privacy_sensitivity (f.a, R, D, 1.0);
  /* rho 0.2 at delta 1e-6 is epsilon 3.52: one answer fits in 4, two do not */
  TsPrivacyAccountant *acc = ts_privacy_accountant_new (4.0, 1e-6);
  TsHeloraPrivacyConfig cfg = { .lambda_s = CKKS_PRIVACY_DEFAULT_LAMBDA, .dp = TRUE, .rho_per_answer = 0.2,
                                .compact = TRUE };
  g_autoptr (GError) error = NULL;
  TsHeloraPrivacy *p = ts_helora_privacy_new (&cfg, f.pk, acc, "client", &error);
  g_assert_no_error (error);
  const CkksHeloraLayout *pl = ckks_helora_plan_layout (f.plan);
  g_assert_true (ts_helora_privacy_prefill (p, pl, (guint) f.b, &error));
  g_assert_cmpint (ckks_helora_encrypt_sk (f.lay, f.sk, f.h, f.in, f.k, &f.factor), ==, CKKS_OK);
  g_assert_true (ts_helora_privacy_evaluate (p, f.plan, a_row_norm, f.in, f.k, f.out, f.b, TRUE,
                                             &error));
  g_assert_no_error (error);
  g_assert_cmpuint (ts_helora_privacy_pooled (p, pl), ==, 0);
  double err[R], sigma = ts_helora_privacy_sigma (p, f.lay, a_row_norm);
  double sd = ckks_privacy_flood_stddev (f.lay, CKKS_PRIVACY_DEFAULT_LAMBDA, ckks_ciphertext_scale (f.out[0]));
  errors (&f, err);
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs (err[i]), <, 6.0 * (sigma + sd));
  /* full pads do not go through the compact-only object */
  g_assert_false (ts_helora_privacy_protect (p, f.lay, a_row_norm, f.out, f.b, &error));
  g_clear_error (&error);
  g_assert_true (ts_helora_privacy_prefill (p, pl, (guint) f.b, &error));
  g_assert_false (ts_helora_privacy_evaluate (p, f.plan, a_row_norm, f.in, f.k, f.out, f.b,
                                              TRUE, &error));
  g_assert_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_BUDGET);
  g_assert_cmpuint (ts_helora_privacy_pooled (p, pl), ==, f.b);   /* nothing evaluated */
  ts_helora_privacy_free (p);
  ts_privacy_accountant_free (acc);
  token_free (&f);
}

/* DP on: three answers fit the budget with noise of the stated sigma; the
 * fourth is refused and leaves the results as they were. */
static void
test_dp_budget (void)
{
  Token f;
  token_init (&f);
  double a_row_norm = ts_privacy_sensitivity (f.a, R, D, 1.0);
  TsPrivacyAccountant *acc = ts_privacy_accountant_new (1.0, 1e-6);
  TsHeloraPrivacyConfig cfg = { .lambda_s = CKKS_PRIVACY_DEFAULT_LAMBDA, .dp = TRUE,
                                .rho_per_answer = ts_privacy_rho_for_epsilon (1.0, 1e-6) / 3 };
  g_autoptr (GError) error = NULL;
  TsHeloraPrivacy *p = ts_helora_privacy_new (&cfg, f.pk, acc, "alice", &error);
  g_assert_no_error (error);
  double sigma = ts_helora_privacy_sigma (p, f.lay, a_row_norm);
  g_assert_cmpfloat (fabs (sigma - a_row_norm * sqrt (D) / sqrt (2 * cfg.rho_per_answer)), <,
                     1e-12 * sigma);
  double z2 = 0.0, err[R];
  for (int answer = 0; answer < 3; answer++)
    {
      token_run (&f);
      g_assert_true (ts_helora_privacy_protect (p, f.lay, a_row_norm, f.out, f.b, &error));
      errors (&f, err);
      for (size_t i = 0; i < R; i++)
        z2 += err[i] * err[i] / (sigma * sigma);
    }
  z2 /= 3 * R;   /* chi-square / 96 degrees of freedom: outside 0.4 .. 2.0 below 1e-4 */
  g_test_message ("mean squared z of the DP noise: %.3f", z2);
  g_assert_cmpfloat (z2, >, 0.4);
  g_assert_cmpfloat (z2, <, 2.0);
  token_run (&f);
  g_assert_false (ts_helora_privacy_protect (p, f.lay, a_row_norm, f.out, f.b, &error));
  g_assert_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_BUDGET);
  errors (&f, err);      /* no flood, no noise: only A's 2^-24 quantisation */
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs (err[i]), <, 1e-5);
  double eps;
  ts_privacy_accountant_spent (acc, "alice", NULL, &eps);
  g_assert_cmpfloat (fabs (eps - 1.0), <, 1e-9);
  ts_helora_privacy_free (p);
  ts_privacy_accountant_free (acc);
  token_free (&f);
}

/* Compact pools: pads made directly (trace-only), one at a time by
 * refill_one up to the target and no further, the newest taken first, and
 * the answers' counts say which pads came from the pool and which were
 * made inline because the pool ran dry. */
static void
test_pool_counts (void)
{
  Token f;
  token_init (&f);
  double a_row_norm = ts_privacy_sensitivity (f.a, R, D, 1.0);
  TsHeloraPrivacyConfig cfg = { .lambda_s = CKKS_PRIVACY_DEFAULT_LAMBDA, .compact = TRUE };
  g_autoptr (GError) error = NULL;
  TsHeloraPrivacy *p = ts_helora_privacy_new (&cfg, f.pk, NULL, "client", &error);
  g_assert_no_error (error);
  const CkksHeloraLayout *pl = ckks_helora_plan_layout (f.plan);
  guint target = (guint) f.b + 1;
  gboolean made = FALSE;
  for (guint i = 0; i < target; i++)
    {
      g_assert_true (ts_helora_privacy_refill_one (p, pl, target, &made, &error));
      g_assert_true (made);
      g_assert_cmpuint (ts_helora_privacy_pooled (p, pl), ==, i + 1);
    }
  g_assert_true (ts_helora_privacy_refill_one (p, pl, target, &made, &error));
  g_assert_false (made);
  guint64 from_pool, made_inline;
  g_assert_cmpint (ckks_helora_encrypt_sk (f.lay, f.sk, f.h, f.in, f.k, &f.factor), ==, CKKS_OK);
  for (int answer = 0; answer < 2; answer++)
    {
      g_assert_true (ts_helora_privacy_evaluate (p, f.plan, a_row_norm, f.in, f.k, f.out, f.b,
                                                 TRUE, &error));
      g_assert_no_error (error);
      ts_helora_privacy_take_counts (p, &from_pool, &made_inline);
      /* first answer: all B from the pool; second: one left, B - 1 inline */
      g_assert_cmpuint (from_pool, ==, answer == 0 ? f.b : 1);
      g_assert_cmpuint (made_inline, ==, answer == 0 ? 0 : f.b - 1);
      double err[R], sd = ckks_privacy_flood_stddev (f.lay, CKKS_PRIVACY_DEFAULT_LAMBDA,
                                                     ckks_ciphertext_scale (f.out[0]));
      errors (&f, err);
      for (size_t i = 0; i < R; i++)
        g_assert_cmpfloat (fabs (err[i]), <, 6.0 * sd);
    }
  g_assert_cmpuint (ts_helora_privacy_pooled (p, pl), ==, 0);
  ts_helora_privacy_take_counts (p, &from_pool, &made_inline);
  g_assert_cmpuint (from_pool + made_inline, ==, 0);
  ts_helora_privacy_free (p);
  token_free (&f);
}

static void
test_invalid (void)
{
  Token f;
  token_init (&f);
  TsHeloraPrivacyConfig cfg = { .lambda_s = CKKS_PRIVACY_DEFAULT_LAMBDA, .dp = TRUE, .rho_per_answer = 0.1 };
  g_autoptr (GError) error = NULL;
  g_assert_null (ts_helora_privacy_new (&cfg, f.pk, NULL, "x", &error));   /* DP needs a budget */
  g_assert_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_INVALID);
  token_free (&f);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/helora-private/pads-only", test_pads_only);
  g_test_add_func ("/helora-private/dp-budget", test_dp_budget);
  g_test_add_func ("/helora-private/fused-compact", test_fused_compact);
  g_test_add_func ("/helora-private/pool-counts", test_pool_counts);
  g_test_add_func ("/helora-private/invalid", test_invalid);
  return g_test_run ();
}
