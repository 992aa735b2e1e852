/* ts-helora-privacy-eval.c: one client's adapter-private evaluation on a CKKS evaluator.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-helora-privacy-eval.h"

#include "ckks-privacy.h"
#include "ckks-serial.h"
#include "ts-helora-ckks.h"
#include "ts-helora-ckks-evaluator.h"
#include "ts-helora-privacy.h"

struct TsHeloraPrivacyEval {
  gatomicrefcount ref_count;
  TsHeloraEvaluator *evaluator;
  CkksPublicKey *pk;
  TsHeloraPrivacy *priv;
  guint lambda_s;
  CkksHeloraScales scales;     /* the client's: split (72/24) or, older clients, 48/48 */
};

TsHeloraPrivacyEval *
ts_helora_privacy_eval_ref (TsHeloraPrivacyEval *pe)
{
  g_return_val_if_fail (pe != NULL, NULL);

  g_atomic_ref_count_inc (&pe->ref_count);
  return pe;
}

void
ts_helora_privacy_eval_unref (TsHeloraPrivacyEval *pe)
{
  if (pe == NULL || !g_atomic_ref_count_dec (&pe->ref_count))
    return;
  ts_helora_privacy_free (pe->priv);
  ckks_public_key_free (pe->pk);
  ts_helora_evaluator_unref (pe->evaluator);
  g_free (pe);
}

TsHeloraPrivacyEval *
ts_helora_privacy_eval_new (TsHeloraEvaluator *evaluator, const TsHeloraHello *hello,
                            TsPrivacyAccountant *accountant, const char *client_id,
                            GError **error)
{
  g_return_val_if_fail (hello != NULL, NULL);

  const CkksContext *ctx = ts_helora_ckks_evaluator_context (evaluator);
  if (ctx == NULL || (hello->dp && accountant == NULL))
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE,
                   ctx == NULL ? "This evaluator has no adapter-private mode"
                               : "This server keeps no privacy budget (DP unavailable)");
      return NULL;
    }
  gsize len = 0;
  const guint8 *data = hello->public_key ? g_bytes_get_data (hello->public_key, &len) : NULL;
  TsHeloraPrivacyEval *pe = g_new0 (TsHeloraPrivacyEval, 1);
  g_atomic_ref_count_init (&pe->ref_count);
  pe->evaluator = ts_helora_evaluator_ref (evaluator);
  pe->lambda_s = hello->lambda_s;
  pe->scales = hello->split_scales ? CKKS_HELORA_SCALES_PRIVACY : CKKS_HELORA_SCALES_PLAIN;
  if (data == NULL || ckks_public_key_deserialize (ctx, data, len, &pe->pk) != CKKS_OK)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                   "The public key does not parse under these parameters");
      ts_helora_privacy_eval_unref (pe);
      return NULL;
    }
  TsHeloraPrivacyConfig cfg = { .lambda_s = hello->lambda_s, .dp = hello->dp,
                                .rho_per_answer = hello->rho_per_answer, .compact = TRUE };
  g_autoptr (GError) local = NULL;
  pe->priv = ts_helora_privacy_new (&cfg, pe->pk, hello->dp ? accountant : NULL, client_id,
                                    &local);
  if (pe->priv == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS, "%s", local->message);
      ts_helora_privacy_eval_unref (pe);
      return NULL;
    }
  return pe;
}

static const CkksHeloraPlan *
plan_for (TsHeloraPrivacyEval *pe, guint index, double *a_row_norm, GError **error)
{
  return ts_helora_ckks_evaluator_plan (pe->evaluator, index, pe->scales, a_row_norm, error);
}

gboolean
ts_helora_privacy_eval_check_module (TsHeloraPrivacyEval *pe, guint index, guint min_lambda,
                                     GError **error)
{
  g_return_val_if_fail (pe != NULL, FALSE);

  double norm = 0.0;
  const CkksHeloraPlan *plan = plan_for (pe, index, &norm, error);
  if (plan == NULL)
    return FALSE;
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  guint max = ckks_privacy_max_lambda (l);
  if (pe->lambda_s < min_lambda)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                 "This server floods with at least lambda_s = %u bits (asked for %u)",
                 min_lambda, pe->lambda_s);
  else if (pe->lambda_s > max)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                 "lambda_s = %u does not fit module %u (d %zu, r %zu): at most %u with %s "
                 "scales under these parameters", pe->lambda_s, index,
                 ckks_helora_layout_d (l), ckks_helora_layout_r (l), max,
                 pe->scales == CKKS_HELORA_SCALES_PRIVACY ? "split" : "48/48 (an older client's)");
  else
    return TRUE;
  return FALSE;
}

/* Budget refusals travel as their own protocol code; every other failure
 * of the private layers is the server's. */
static void
to_protocol_error (GError **error)
{
  if (error == NULL || *error == NULL || (*error)->domain != TS_PRIVACY_ERROR)
    return;
  guint code = g_error_matches (*error, TS_PRIVACY_ERROR, TS_PRIVACY_ERROR_BUDGET)
                 ? TS_HELORA_ERROR_PRIVACY_BUDGET : TS_HELORA_ERROR_INTERNAL;
  GError *e = g_error_new (TS_HELORA_ERROR, code, "%s", (*error)->message);
  g_clear_error (error);
  *error = e;
}

static gboolean
private_products (const CkksHeloraPlan *plan, double a_row_norm, CkksCiphertext *const *in,
                  gsize n_in, CkksCiphertext *const *out, gsize n_out, gpointer data,
                  GError **error)
{
  TsHeloraPrivacyEval *pe = data;
  return ts_helora_privacy_evaluate (pe->priv, plan, a_row_norm, in, n_in, out, n_out, TRUE,
                                     error);
}

gboolean
ts_helora_privacy_eval_evaluate (TsHeloraPrivacyEval *pe, guint index, GPtrArray *cts,
                                 GPtrArray *results, GError **error)
{
  g_return_val_if_fail (pe != NULL, FALSE);

  gboolean ok = ts_helora_ckks_evaluator_run (pe->evaluator, index, pe->scales, cts, results,
                                              private_products, pe, error);
  to_protocol_error (error);
  return ok;
}

/* The layout of module @index's private plan (NULL with @error). */
static const CkksHeloraLayout *
layout_for (TsHeloraPrivacyEval *pe, guint index, GError **error)
{
  double norm = 0.0;
  const CkksHeloraPlan *plan = plan_for (pe, index, &norm, error);
  return plan != NULL ? ckks_helora_plan_layout (plan) : NULL;
}

gboolean
ts_helora_privacy_eval_refill_one (TsHeloraPrivacyEval *pe, guint index, guint answers,
                                   gboolean *made, GError **error)
{
  g_return_val_if_fail (pe != NULL && made != NULL, FALSE);

  const CkksHeloraLayout *l = layout_for (pe, index, error);
  *made = FALSE;
  gboolean ok = l != NULL
                && ts_helora_privacy_refill_one (pe->priv, l,
                                                 answers * (guint) ckks_helora_layout_n_outputs (l),
                                                 made, error);
  to_protocol_error (error);
  return ok;
}

gboolean
ts_helora_privacy_eval_pool (TsHeloraPrivacyEval *pe, guint index, TsHeloraPadPool *pool)
{
  g_return_val_if_fail (pe != NULL && pool != NULL, FALSE);

  const CkksHeloraLayout *l = layout_for (pe, index, NULL);
  if (l == NULL)
    return FALSE;
  gsize words = (gsize) ckks_helora_layout_limbs (l)
                * ckks_context_ring_degree (ts_helora_ckks_evaluator_context (pe->evaluator));
  pool->pooled = ts_helora_privacy_pooled (pe->priv, l);
  pool->pads_per_answer = (guint) ckks_helora_layout_n_outputs (l);
  pool->pad_bytes = 2 * words * sizeof (guint64);
  return TRUE;
}

void
ts_helora_privacy_eval_take_counts (TsHeloraPrivacyEval *pe, guint64 *from_pool,
                                    guint64 *made_inline)
{
  g_return_if_fail (pe != NULL);

  ts_helora_privacy_take_counts (pe->priv, from_pool, made_inline);
}

gboolean
ts_helora_privacy_eval_prefill (TsHeloraPrivacyEval *pe, guint index, guint count,
                                GError **error)
{
  g_return_val_if_fail (pe != NULL, FALSE);

  double norm = 0.0;
  const CkksHeloraPlan *plan = plan_for (pe, index, &norm, error);
  if (plan == NULL)
    return FALSE;
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  gboolean ok = ts_helora_privacy_prefill (pe->priv, l,
                                           count * (guint) ckks_helora_layout_n_outputs (l),
                                           error);
  to_protocol_error (error);
  return ok;
}
