/* test-privacy-accountant.c: zCDP conversions against the exact Gaussian
 * privacy profile, budgets refused past their end, concurrent clients.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>

#include "ts-privacy-accountant.h"

#include <glib/gstdio.h>

static double
phi (double x)
{
  return 0.5 * erfc (-x / sqrt (2.0));
}

/* The exact delta(epsilon) of one Gaussian release (Balle & Wang 2018). */
static double
gaussian_delta (double sensitivity, double sigma, double epsilon)
{
  double a = sensitivity / (2.0 * sigma), b = epsilon * sigma / sensitivity;
  return phi (a - b) - exp (epsilon) * phi (-a - b);
}

/* epsilon(rho, delta) from the zCDP bound is never below what the exact
 * profile needs, and rho_for_epsilon inverts it. */
static void
test_conversions (void)
{
  static const double rhos[] = { 1e-4, 0.01, 0.1, 0.5, 2.0 };
  static const double deltas[] = { 1e-5, 1e-8 };
  for (size_t i = 0; i < G_N_ELEMENTS (rhos); i++)
    for (size_t j = 0; j < G_N_ELEMENTS (deltas); j++)
      {
        double rho = rhos[i], delta = deltas[j];
        double eps = ts_privacy_epsilon (rho, delta);
        g_assert_cmpfloat (fabs (eps - (rho + 2.0 * sqrt (rho * -log (delta)))), <=, 1e-12 * eps);
        g_assert_cmpfloat (fabs (ts_privacy_rho_for_epsilon (eps, delta) - rho), <=, 1e-9 * rho);
        double sigma = ts_privacy_sigma (3.0, rho);
        g_assert_cmpfloat (fabs (ts_privacy_rho (3.0, sigma) - rho), <=, 1e-12 * rho);
        /* conservative: the exact mechanism meets (eps, delta) */
        g_assert_cmpfloat (gaussian_delta (3.0, sigma, eps), <=, delta);
      }
  g_assert_true (isinf (ts_privacy_epsilon (0.1, 0.0)));
  g_assert_true (isinf (ts_privacy_rho (1.0, 0.0)));
}

static void
test_sensitivity (void)
{
  const float a[] = { 3, 4, 0, 1, 1, 1 };   /* row norms 5 and sqrt(3) */
  g_assert_cmpfloat (fabs (ts_privacy_sensitivity (a, 2, 3, 2.0) - 10.0), <, 1e-12);
}

static void
test_budget (void)
{
  g_assert_null (ts_privacy_accountant_new (0.0, 1e-6));
  g_assert_null (ts_privacy_accountant_new (1.0, 1.0));
  TsPrivacyAccountant *acc = ts_privacy_accountant_new (1.0, 1e-6);
  double rho = ts_privacy_rho_for_epsilon (1.0, 1e-6) / 10.0;
  g_assert_cmpuint (ts_privacy_accountant_remaining (acc, "alice", rho), ==, 10);
  for (int i = 0; i < 10; i++)
    g_assert_true (ts_privacy_accountant_charge (acc, "alice", rho, NULL));
  g_autoptr (GError) error = NULL;
  g_assert_false (ts_privacy_accountant_charge (acc, "alice", rho, &error));
  g_assert_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_BUDGET);
  double spent, eps;
  ts_privacy_accountant_spent (acc, "alice", &spent, &eps);
  g_assert_cmpfloat (fabs (spent - 10 * rho), <=, 1e-12);
  g_assert_cmpfloat (fabs (eps - 1.0), <=, 1e-9);
  g_assert_cmpuint (ts_privacy_accountant_remaining (acc, "alice", rho), ==, 0);
  /* another client has its own budget; a zero charge always fits */
  g_assert_true (ts_privacy_accountant_charge (acc, "bob", rho, NULL));
  g_assert_true (ts_privacy_accountant_charge (acc, "alice", 0.0, NULL));
  g_assert_false (ts_privacy_accountant_charge (acc, "bob", NAN, NULL));
  ts_privacy_accountant_spent (acc, "carol", &spent, &eps);
  g_assert_cmpfloat (spent, ==, 0.0);
  g_assert_cmpfloat (eps, ==, 0.0);
  ts_privacy_accountant_free (acc);
}

typedef struct {
  TsPrivacyAccountant *acc;
  double rho;
  gint accepted;
} Race;

static gpointer
charge_many (gpointer data)
{
  Race *race = data;
  for (int i = 0; i < 50; i++)
    if (ts_privacy_accountant_charge (race->acc, "shared", race->rho, NULL))
      g_atomic_int_inc (&race->accepted);
  return NULL;
}

/* Eight threads charging one client: exactly the budget's worth succeeds. */
static void
test_concurrent (void)
{
  Race race = { ts_privacy_accountant_new (2.0, 1e-5), 0.0, 0 };
  race.rho = ts_privacy_rho_for_epsilon (2.0, 1e-5) / 137.0;
  GThread *threads[8];
  for (int i = 0; i < 8; i++)
    threads[i] = g_thread_new ("charge", charge_many, &race);
  for (int i = 0; i < 8; i++)
    g_thread_join (threads[i]);
  g_assert_cmpint (race.accepted, ==, 137);
  ts_privacy_accountant_free (race.acc);
}

/* Saved and loaded, a budget stays spent (ids with tabs and newlines too);
 * a malformed file is refused. */
static void
test_persistence (void)
{
  g_autofree char *dir = g_dir_make_tmp ("privacy-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "spent", NULL);
  TsPrivacyAccountant *acc = ts_privacy_accountant_new (1.0, 1e-6);
  double rho = ts_privacy_rho_for_epsilon (1.0, 1e-6) / 4.0;
  g_assert_true (ts_privacy_accountant_load (acc, path, NULL));   /* none yet */
  for (int i = 0; i < 3; i++)
    g_assert_true (ts_privacy_accountant_charge (acc, "we\tird\nid", rho, NULL));
  g_assert_true (ts_privacy_accountant_charge (acc, "bob", rho, NULL));
  g_assert_true (ts_privacy_accountant_save (acc, path, NULL));
  ts_privacy_accountant_free (acc);
  acc = ts_privacy_accountant_new (1.0, 1e-6);
  g_assert_true (ts_privacy_accountant_load (acc, path, NULL));
  double spent;
  ts_privacy_accountant_spent (acc, "we\tird\nid", &spent, NULL);
  g_assert_cmpfloat (fabs (spent - 3 * rho), <=, 1e-15);
  g_assert_cmpuint (ts_privacy_accountant_remaining (acc, "we\tird\nid", rho), ==, 1);
  g_assert_cmpuint (ts_privacy_accountant_remaining (acc, "bob", rho), ==, 3);
  ts_privacy_accountant_free (acc);
  g_assert_true (g_file_set_contents (path, "0.5 no tab\n", -1, NULL));
  acc = ts_privacy_accountant_new (1.0, 1e-6);
  g_autoptr (GError) error = NULL;
  g_assert_false (ts_privacy_accountant_load (acc, path, &error));
  g_assert_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_INVALID);
  ts_privacy_accountant_free (acc);
  g_remove (path);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/privacy/conversions", test_conversions);
  g_test_add_func ("/privacy/sensitivity", test_sensitivity);
  g_test_add_func ("/privacy/budget", test_budget);
  g_test_add_func ("/privacy/concurrent", test_concurrent);
  g_test_add_func ("/privacy/persistence", test_persistence);
  return g_test_run ();
}
