/* ts-helora-privacy.c: pads pool, DP charge and noise around ckks_privacy_apply.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-helora-privacy.h"

#include <math.h>

#include "ckks-privacy.h"
#include "ts-helora-ckks.h"

struct TsHeloraPrivacy {
  TsHeloraPrivacyConfig config;
  const CkksPublicKey *pk;
  TsPrivacyAccountant *accountant;
  char *client_id;
  GMutex lock;
  GHashTable *pools;       /* layout -> GQueue of CkksCiphertext *, newest last */
  guint64 from_pool;       /* pads taken from a pool, made inline: since the last */
  guint64 made_inline;     /* ts_helora_privacy_take_counts (under lock) */
};

static void
pool_free (gpointer data)
{
  GQueue *q = data;
  g_queue_free_full (q, (GDestroyNotify) ckks_ciphertext_free);
}

TsHeloraPrivacy *
ts_helora_privacy_new (const TsHeloraPrivacyConfig *config, const CkksPublicKey *pk,
                       TsPrivacyAccountant *accountant, const char *client_id, GError **error)
{
  g_return_val_if_fail (config != NULL, NULL);

  if (config == NULL || pk == NULL || client_id == NULL || config->lambda_s > 100
      || (config->dp && (accountant == NULL || !(config->rho_per_answer > 0.0)))
      || !(config->h_bound >= 0.0))
    {
      g_set_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_INVALID,
                   "Invalid adapter-private configuration");
      return NULL;
    }
  TsHeloraPrivacy *p = g_new0 (TsHeloraPrivacy, 1);
  p->config = *config;
  p->pk = pk;
  p->accountant = accountant;
  p->client_id = g_strdup (client_id);
  g_mutex_init (&p->lock);
  p->pools = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, pool_free);
  return p;
}

void
ts_helora_privacy_free (TsHeloraPrivacy *p)
{
  if (p == NULL)
    return;
  g_hash_table_destroy (p->pools);
  g_mutex_clear (&p->lock);
  g_free (p->client_id);
  g_free (p);
}

static GQueue *
pool_for (TsHeloraPrivacy *p, const CkksHeloraLayout *layout)
{
  GQueue *q = g_hash_table_lookup (p->pools, layout);
  if (q == NULL)
    {
      q = g_queue_new ();
      g_hash_table_insert (p->pools, (gpointer) layout, q);
    }
  return q;
}

guint
ts_helora_privacy_pooled (TsHeloraPrivacy *p, const CkksHeloraLayout *layout)
{
  g_return_val_if_fail (p != NULL, 0);

  g_mutex_lock (&p->lock);
  guint n = pool_for (p, layout)->length;
  g_mutex_unlock (&p->lock);
  return n;
}

/* Compact pads are made directly (ckks_privacy_compact_pad_new: half the
 * work of a full pad, and no mask to make). */
static CkksCiphertext *
make_pad (TsHeloraPrivacy *p, const CkksHeloraLayout *layout, GError **error)
{
  CkksCiphertext *pad = NULL;
  CkksStatus st = p->config.compact
                  ? ckks_privacy_compact_pad_new (layout, p->pk, p->config.lambda_s, &pad)
                  : ckks_privacy_pad_new (layout, p->pk, p->config.lambda_s, &pad);
  return ts_helora_ckks_check (st, "Making a privacy pad", error) ? pad : NULL;
}

gboolean
ts_helora_privacy_refill_one (TsHeloraPrivacy *p, const CkksHeloraLayout *layout, guint count,
                              gboolean *made, GError **error)
{
  g_return_val_if_fail (p != NULL && made != NULL, FALSE);

  *made = FALSE;
  if (ts_helora_privacy_pooled (p, layout) >= count)
    return TRUE;
  CkksCiphertext *pad = make_pad (p, layout, error);
  if (pad == NULL)
    return FALSE;
  g_mutex_lock (&p->lock);
  g_queue_push_tail (pool_for (p, layout), pad);
  g_mutex_unlock (&p->lock);
  *made = TRUE;
  return TRUE;
}

gboolean
ts_helora_privacy_prefill (TsHeloraPrivacy *p, const CkksHeloraLayout *layout, guint count,
                           GError **error)
{
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (layout != NULL, FALSE);

  gboolean made = TRUE;
  while (made)
    if (!ts_helora_privacy_refill_one (p, layout, count, &made, error))
      return FALSE;
  return TRUE;
}

void
ts_helora_privacy_take_counts (TsHeloraPrivacy *p, guint64 *from_pool, guint64 *made_inline)
{
  g_return_if_fail (p != NULL && from_pool != NULL && made_inline != NULL);

  g_mutex_lock (&p->lock);
  *from_pool = p->from_pool;
  *made_inline = p->made_inline;
  p->from_pool = p->made_inline = 0;
  g_mutex_unlock (&p->lock);
}

/* Pads are never reused: freed after one answer. */
static void
drop_pads (CkksCiphertext **pads, gsize n)
{
  for (gsize b = 0; pads && b < n; b++)
    ckks_ciphertext_free (pads[b]);
  g_free (pads);
}

/* A pooled pad, or a new one. The newest first: a pad made moments ago by
 * a refill thread may still be in the shared cache (pads are independent
 * and identically distributed, so the order does not matter otherwise). */
static CkksCiphertext *
take_pad (TsHeloraPrivacy *p, const CkksHeloraLayout *layout, GError **error)
{
  g_mutex_lock (&p->lock);
  CkksCiphertext *pad = g_queue_pop_tail (pool_for (p, layout));
  if (pad != NULL)
    p->from_pool++;
  else
    p->made_inline++;
  g_mutex_unlock (&p->lock);
  return pad != NULL ? pad : make_pad (p, layout, error);
}

double
ts_helora_privacy_sigma (TsHeloraPrivacy *p, const CkksHeloraLayout *layout, double a_row_norm)
{
  g_return_val_if_fail (p != NULL, 0);

  if (!p->config.dp)
    return 0.0;
  double h = p->config.h_bound > 0.0 ? p->config.h_bound
                                     : sqrt ((double) ckks_helora_layout_d (layout));
  return ts_privacy_sigma (a_row_norm * h, p->config.rho_per_answer);
}

/* The DP charge and noise of one answer (*noise NULL when DP is off). */
static gboolean
charge_noise (TsHeloraPrivacy *p, const CkksHeloraLayout *layout, double a_row_norm,
              double **noise, GError **error)
{
  gsize r = ckks_helora_layout_r (layout);
  *noise = NULL;
  if (!p->config.dp)
    return TRUE;
  double sigma = ts_helora_privacy_sigma (p, layout, a_row_norm);
  if (!isfinite (sigma))
    {
      g_set_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_INVALID,
                   "Invalid sensitivity for the DP noise");
      return FALSE;
    }
  if (!ts_privacy_accountant_charge (p->accountant, p->client_id, p->config.rho_per_answer,
                                     error))
    return FALSE;
  *noise = g_new (double, r);
  if (ts_helora_ckks_check (ckks_privacy_gaussian (sigma, *noise, r), "DP noise", error))
    return TRUE;
  g_clear_pointer (noise, g_free);
  return FALSE;
}

static CkksCiphertext **
take_pads (TsHeloraPrivacy *p, const CkksHeloraLayout *layout, gsize n, GError **error)
{
  CkksCiphertext **pads = g_new0 (CkksCiphertext *, n ? n : 1);
  for (gsize b = 0; b < n; b++)
    if ((pads[b] = take_pad (p, layout, error)) == NULL)
      {
        drop_pads (pads, n);
        return NULL;
      }
  return pads;
}

gboolean
ts_helora_privacy_protect (TsHeloraPrivacy *p, const CkksHeloraLayout *layout, double a_row_norm,
                           CkksCiphertext *const *outputs, gsize n_outputs, GError **error)
{
  g_return_val_if_fail (p != NULL, FALSE);

  g_autofree double *noise = NULL;
  if (p->config.compact)
    {
      g_set_error (error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_INVALID,
                   "Compact pads are for the fused compact evaluation only");
      return FALSE;
    }
  if (!charge_noise (p, layout, a_row_norm, &noise, error))
    return FALSE;
  CkksCiphertext **pads = take_pads (p, layout, n_outputs, error);
  gboolean ok = pads != NULL
                && ts_helora_ckks_check (ckks_privacy_apply (layout, outputs, n_outputs, pads,
                                                             noise),
                                         "Adapter-private results", error);
  drop_pads (pads, n_outputs);
  return ok;
}

gboolean
ts_helora_privacy_evaluate (TsHeloraPrivacy *p, const CkksHeloraPlan *plan, double a_row_norm,
                            CkksCiphertext *const *inputs, gsize n_inputs,
                            CkksCiphertext *const *outputs, gsize n_outputs, gboolean compact,
                            GError **error)
{
  g_return_val_if_fail (p != NULL, FALSE);
  g_return_val_if_fail (plan != NULL, FALSE);

  const CkksHeloraLayout *layout = ckks_helora_plan_layout (plan);
  g_autofree double *noise = NULL;
  if (!charge_noise (p, layout, a_row_norm, &noise, error))
    return FALSE;
  CkksCiphertext **pads = take_pads (p, layout, n_outputs, error);
  gboolean ok = pads != NULL;
  if (ok)
    ok = ts_helora_ckks_check (compact ? ckks_helora_evaluate_compact_padded (plan, inputs,
                                                                              n_inputs, outputs,
                                                                              n_outputs, pads)
                                       : ckks_helora_evaluate_padded (plan, inputs, n_inputs,
                                                                      outputs, n_outputs, pads),
                               "Evaluating (private)", error);
  if (ok && noise != NULL)
    ok = ts_helora_ckks_check (ckks_privacy_add_noise_masked (layout, outputs, n_outputs, noise),
                               "DP noise", error);
  drop_pads (pads, n_outputs);
  return ok;
}
