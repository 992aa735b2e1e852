/* test-helora-private.c: the evaluator's adapter-private glue on a real
 * CKKS token: pads from the pool, DP noise of the stated sigma, refusal
 * once the client's budget is spent.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>

#include "ckks-helora-compat.h"
#include "ckks-private.h"
#include "ts-helora-private.h"
#include "ts-test-util.h"

#define D 512
#define R 16

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  CkksPublicKey *pk;
  CkksHeloraPlan *plan;
  const CkksHeloraLayout *lay;
  CkksCiphertext **in, **out;
  size_t k, b;
  float a[R * D], h[D];
  double u_plain[R], a_row_norm;
} Fixture;

static void
fixture_init (Fixture *f)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  CkksParams p;
  g_assert_cmpint (ckks_params_preset ("fast", &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&p, &f->ctx), ==, CKKS_OK);
  g_assert_cmpint (ckks_secret_key_new (f->ctx, &f->sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_public_key_new (f->sk, &f->pk), ==, CKKS_OK);
  for (size_t i = 0; i < R * D; i++)
    f->a[i] = (float) g_rand_double_range (rng, -0.05, 0.05);
  for (size_t j = 0; j < D; j++)
    f->h[j] = (float) g_rand_double_range (rng, -2.0, 2.0);
  for (size_t i = 0; i < R; i++)
    {
      f->u_plain[i] = 0.0;
      for (size_t j = 0; j < D; j++)
        f->u_plain[i] += (double) f->a[i * D + j] * f->h[j];
    }
  f->a_row_norm = ts_privacy_sensitivity (f->a, R, D, 1.0);
  g_assert_cmpint (ckks_helora_plan_new (f->ctx, D, R, f->a, &f->plan), ==, CKKS_OK);
  f->lay = ckks_helora_plan_layout (f->plan);
  f->k = ckks_helora_layout_n_inputs (f->lay);
  f->b = ckks_helora_layout_n_outputs (f->lay);
  g_assert_cmpint (ckks_helora_ciphertexts_new (f->lay, f->k, &f->in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (f->lay, f->b, &f->out), ==, CKKS_OK);
}

static void
fixture_clear (Fixture *f)
{
  ckks_helora_ciphertexts_free (f->in, f->k);
  ckks_helora_ciphertexts_free (f->out, f->b);
  ckks_helora_plan_free (f->plan);
  ckks_public_key_free (f->pk);
  ckks_secret_key_free (f->sk);
  ckks_context_free (f->ctx);
}

/* Encrypts h, evaluates; *factor: max|h|. */
static void
evaluate (Fixture *f, double *factor)
{
  g_assert_cmpint (he_compat_encrypt_sk (f->lay, f->sk, f->h, f->in, f->k, factor), ==, CKKS_OK);
  g_assert_cmpint (he_compat_evaluate (f->plan, f->in, f->k, f->out, f->b), ==, CKKS_OK);
}

/* (u - A·h) / max|h| for the current results. */
static void
errors (Fixture *f, double factor, double *err)
{
  double u[R];
  g_assert_cmpint (he_compat_decrypt (f->lay, f->sk, f->out, f->b, factor, u), ==, CKKS_OK);
  for (size_t i = 0; i < R; i++)
    err[i] = (u[i] - f->u_plain[i]) / factor;
}

/* DP off: pads only, from the pool; u within the flooding error. */
static void
test_pads_only (void)
{
  Fixture f;
  fixture_init (&f);
  TsHeloraPrivateConfig cfg = { .lambda_s = 16 };
  g_autoptr (GError) error = NULL;
  TsHeloraPrivate *p = ts_helora_private_new (&cfg, f.pk, NULL, "client", &error);
  g_assert_no_error (error);
  g_assert_true (ts_helora_private_prefill (p, f.lay, 2 * (guint) f.b, &error));
  g_assert_cmpuint (ts_helora_private_pooled (p, f.lay), ==, 2 * f.b);
  double factor, err[R];
  evaluate (&f, &factor);
  g_assert_true (ts_helora_private_protect (p, f.lay, f.a_row_norm, f.out, f.b, &error));
  g_assert_cmpuint (ts_helora_private_pooled (p, f.lay), ==, f.b);
  errors (&f, factor, err);
  double sd = ckks_private_flood_stddev (f.lay, 16, ckks_ciphertext_scale (f.out[0]));
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs (err[i]), <, 6.0 * sd);
  g_assert_cmpfloat (ts_helora_private_sigma (p, f.lay, f.a_row_norm), ==, 0.0);
  ts_helora_private_free (p);
  fixture_clear (&f);
}

/* DP on: three answers fit the budget with noise of the stated sigma; the
 * fourth is refused and leaves the results as they were. */
static void
test_dp_budget (void)
{
  Fixture f;
  fixture_init (&f);
  TsPrivacyAccountant *acc = ts_privacy_accountant_new (1.0, 1e-6);
  TsHeloraPrivateConfig cfg = { .lambda_s = 8, .dp = TRUE,
                                .rho_per_answer = ts_privacy_rho_for_epsilon (1.0, 1e-6) / 3 };
  g_autoptr (GError) error = NULL;
  TsHeloraPrivate *p = ts_helora_private_new (&cfg, f.pk, acc, "alice", &error);
  g_assert_no_error (error);
  double sigma = ts_helora_private_sigma (p, f.lay, f.a_row_norm);
  g_assert_cmpfloat (fabs (sigma - f.a_row_norm * sqrt (D) / sqrt (2 * cfg.rho_per_answer)), <,
                     1e-12 * sigma);
  double z2 = 0.0, factor, err[R];
  for (int answer = 0; answer < 3; answer++)
    {
      evaluate (&f, &factor);
      g_assert_true (ts_helora_private_protect (p, f.lay, f.a_row_norm, f.out, f.b, &error));
      errors (&f, factor, err);
      for (size_t i = 0; i < R; i++)
        z2 += err[i] * err[i] / (sigma * sigma);
    }
  z2 /= 3 * R;   /* chi-square / 48 degrees of freedom: outside 0.4 .. 2.0 below 1e-4 */
  g_test_message ("mean squared z of the DP noise: %.3f", z2);
  g_assert_cmpfloat (z2, >, 0.4);
  g_assert_cmpfloat (z2, <, 2.0);
  evaluate (&f, &factor);
  g_assert_false (ts_helora_private_protect (p, f.lay, f.a_row_norm, f.out, f.b, &error));
  g_assert_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_BUDGET);
  errors (&f, factor, err);
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs (err[i]), <, 1e-9);
  double eps;
  ts_privacy_accountant_spent (acc, "alice", NULL, &eps);
  g_assert_cmpfloat (fabs (eps - 1.0), <, 1e-9);
  ts_helora_private_free (p);
  ts_privacy_accountant_free (acc);
  fixture_clear (&f);
}

static void
test_invalid (void)
{
  Fixture f;
  fixture_init (&f);
  TsHeloraPrivateConfig cfg = { .lambda_s = 16, .dp = TRUE, .rho_per_answer = 0.1 };
  g_autoptr (GError) error = NULL;
  g_assert_null (ts_helora_private_new (&cfg, f.pk, NULL, "x", &error));   /* DP needs a budget */
  g_assert_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_INVALID);
  fixture_clear (&f);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/helora-private/pads-only", test_pads_only);
  g_test_add_func ("/helora-private/dp-budget", test_dp_budget);
  g_test_add_func ("/helora-private/invalid", test_invalid);
  return g_test_run ();
}
