/* ts-privacy-accountant.c: zCDP composition per client, (epsilon, delta) budget.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-privacy-accountant.h"

#include <math.h>
#include <string.h>

G_DEFINE_QUARK (ts-privacy-error-quark, ts_privacy_error)

struct TsPrivacyAccountant {
  GMutex lock;
  double rho_budget, delta;
  GHashTable *spent;     /* client id -> double * (rho) */
};

double
ts_privacy_rho (double sensitivity, double sigma)
{
  if (!(sigma > 0.0) || !(sensitivity >= 0.0))
    return INFINITY;
  return sensitivity * sensitivity / (2.0 * sigma * sigma);
}

double
ts_privacy_sigma (double sensitivity, double rho)
{
  if (!(rho > 0.0) || !(sensitivity >= 0.0))
    return INFINITY;
  return sensitivity / sqrt (2.0 * rho);
}

double
ts_privacy_epsilon (double rho, double delta)
{
  if (!(rho >= 0.0) || !(delta > 0.0 && delta < 1.0))
    return INFINITY;
  return rho + 2.0 * sqrt (rho * log (1.0 / delta));
}

double
ts_privacy_rho_for_epsilon (double epsilon, double delta)
{
  if (!(epsilon > 0.0) || !(delta > 0.0 && delta < 1.0))
    return 0.0;
  /* rho + 2 sqrt(rho L) = eps  ->  sqrt(rho) = sqrt(L + eps) - sqrt(L) */
  double l = log (1.0 / delta), s = sqrt (l + epsilon) - sqrt (l);
  return s * s;
}

double
ts_privacy_sensitivity (const float *a, size_t r, size_t d, double h_bound)
{
  double worst = 0.0;
  for (size_t i = 0; a != NULL && i < r; i++)
    {
      double sum = 0.0;
      for (size_t j = 0; j < d; j++)
        sum += (double) a[i * d + j] * a[i * d + j];
      worst = fmax (worst, sum);
    }
  return sqrt (worst) * h_bound;
}

TsPrivacyAccountant *
ts_privacy_accountant_new (double epsilon, double delta)
{
  if (!(epsilon > 0.0) || !isfinite (epsilon) || !(delta > 0.0 && delta < 1.0))
    return NULL;
  TsPrivacyAccountant *acc = g_new0 (TsPrivacyAccountant, 1);
  g_mutex_init (&acc->lock);
  acc->rho_budget = ts_privacy_rho_for_epsilon (epsilon, delta);
  acc->delta = delta;
  acc->spent = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  return acc;
}

void
ts_privacy_accountant_free (TsPrivacyAccountant *acc)
{
  if (acc == NULL)
    return;
  g_hash_table_destroy (acc->spent);
  g_mutex_clear (&acc->lock);
  g_free (acc);
}

/* The client's rho slot, created at 0. Caller holds the lock. */
static double *
slot (TsPrivacyAccountant *acc, const char *client)
{
  double *rho = g_hash_table_lookup (acc->spent, client);
  if (rho == NULL)
    {
      rho = g_new0 (double, 1);
      g_hash_table_insert (acc->spent, g_strdup (client), rho);
    }
  return rho;
}

gboolean
ts_privacy_accountant_charge (TsPrivacyAccountant *acc, const char *client, double rho,
                              GError **error)
{
  g_return_val_if_fail (acc != NULL, FALSE);

  if (acc == NULL || client == NULL || !(rho >= 0.0) || !isfinite (rho))
    {
      g_set_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_INVALID,
                   "invalid privacy charge");
      return FALSE;
    }
  g_mutex_lock (&acc->lock);
  double *spent = slot (acc, client);
  /* a relative slack of 1e-12 so that n charges of budget/n all fit */
  gboolean ok = *spent + rho <= acc->rho_budget * (1.0 + 1e-12);
  double before = *spent;
  if (ok)
    *spent += rho;
  g_mutex_unlock (&acc->lock);
  if (!ok)
    g_set_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_BUDGET,
                 "privacy budget exhausted for this client: spent epsilon %.4g of %.4g "
                 "(delta %.3g)", ts_privacy_epsilon (before, acc->delta),
                 ts_privacy_epsilon (acc->rho_budget, acc->delta), acc->delta);
  return ok;
}

void
ts_privacy_accountant_spent (TsPrivacyAccountant *acc, const char *client, double *rho,
                             double *epsilon)
{
  g_return_if_fail (acc != NULL);

  double r = 0.0;
  g_mutex_lock (&acc->lock);
  const double *spent = g_hash_table_lookup (acc->spent, client);
  if (spent != NULL)
    r = *spent;
  g_mutex_unlock (&acc->lock);
  if (rho)
    *rho = r;
  if (epsilon)
    *epsilon = r > 0.0 ? ts_privacy_epsilon (r, acc->delta) : 0.0;
}

void
ts_privacy_accountant_budget (TsPrivacyAccountant *acc, double *epsilon, double *delta)
{
  g_return_if_fail (acc != NULL);

  /* both are set once in _new: no lock needed */
  if (epsilon)
    *epsilon = ts_privacy_epsilon (acc->rho_budget, acc->delta);
  if (delta)
    *delta = acc->delta;
}

guint64
ts_privacy_accountant_remaining (TsPrivacyAccountant *acc, const char *client, double rho)
{
  g_return_val_if_fail (acc != NULL, 0);

  double spent;
  ts_privacy_accountant_spent (acc, client, &spent, NULL);
  if (!(rho > 0.0))
    return G_MAXUINT64;
  double left = acc->rho_budget * (1.0 + 1e-12) - spent;
  return left <= 0.0 ? 0 : (guint64) floor (left / rho);
}

gboolean
ts_privacy_accountant_save (TsPrivacyAccountant *acc, const char *path, GError **error)
{
  g_return_val_if_fail (acc != NULL, FALSE);

  g_autoptr (GString) text = g_string_new ("# tensafe privacy accountant: rho spent per client\n");
  g_mutex_lock (&acc->lock);
  GHashTableIter it;
  gpointer key, value;
  g_hash_table_iter_init (&it, acc->spent);
  while (g_hash_table_iter_next (&it, &key, &value))
    {
      g_autofree char *id = g_strescape (key, NULL);
      char num[G_ASCII_DTOSTR_BUF_SIZE];
      g_string_append_printf (text, "%s\t%s\n", g_ascii_dtostr (num, sizeof num, *(double *) value),
                              id);
    }
  g_mutex_unlock (&acc->lock);
  return g_file_set_contents_full (path, text->str, (gssize) text->len,
                                   G_FILE_SET_CONTENTS_CONSISTENT, 0600, error);
}

gboolean
ts_privacy_accountant_load (TsPrivacyAccountant *acc, const char *path, GError **error)
{
  g_return_val_if_fail (acc != NULL, FALSE);

  g_autofree char *text = NULL;
  g_autoptr (GError) local = NULL;
  if (!g_file_get_contents (path, &text, NULL, &local))
    {
      if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        return TRUE;
      g_propagate_error (error, g_steal_pointer (&local));
      return FALSE;
    }
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  g_mutex_lock (&acc->lock);
  gboolean ok = TRUE;
  for (guint i = 0; ok && lines[i]; i++)
    {
      if (lines[i][0] == '\0' || lines[i][0] == '#')
        continue;
      char *tab = strchr (lines[i], '\t'), *end = NULL;
      double rho = tab ? g_ascii_strtod (lines[i], &end) : NAN;
      ok = tab != NULL && end == tab && rho >= 0.0 && isfinite (rho);
      if (ok)
        {
          g_autofree char *id = g_strcompress (tab + 1);
          *slot (acc, id) += rho;
        }
    }
  g_mutex_unlock (&acc->lock);
  if (!ok)
    g_set_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_INVALID,
                 "%s is not a privacy accountant file", path);
  return ok;
}
