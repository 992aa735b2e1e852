/* he-server-privacy.c: the server's adapter-private mode: one privacy
 * accountant (persisted), per-connection private evaluation, pad refills.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The client identity the accountant charges is the SHA-256 of the client's
 * public key: the protocol has no authentication, so a client that makes a
 * new key starts afresh (docs/security.md §3.3 says so; a deployment that
 * needs per-person budgets must authenticate in front of the server). */
#include "he-server-private.h"

#include "ckks-privacy.h"
#include "ts-helora-privacy-eval.h"

gboolean
he_privacy_init (HeServer *server, const HeServerOptions *options, GError **error)
{
  g_mutex_init (&server->privacy_lock);
  server->privacy_min_lambda = options->privacy_min_lambda ? options->privacy_min_lambda
                                                           : CKKS_PRIVACY_DEFAULT_LAMBDA;
  if (server->privacy_min_lambda > CKKS_PRIVACY_MAX_LAMBDA)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "Invalid minimum lambda_s %u (1 to %u)", server->privacy_min_lambda,
                   CKKS_PRIVACY_MAX_LAMBDA);
      return FALSE;
    }
  server->pads = he_pads_new (server->metrics,
                              options->pad_pool_answers ? options->pad_pool_answers
                                                        : HE_SERVER_DEFAULT_PAD_POOL_ANSWERS,
                              options->pad_pool_bytes ? options->pad_pool_bytes
                                                      : HE_SERVER_DEFAULT_PAD_POOL_BYTES,
                              options->pad_refill_idle_ms, error);
  if (server->pads == NULL)
    return FALSE;
  if (options->privacy_epsilon <= 0.0)
    return TRUE;        /* private mode without DP only */
  server->accountant = ts_privacy_accountant_new (options->privacy_epsilon,
                                                  options->privacy_delta);
  if (server->accountant == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "Invalid privacy budget (epsilon %g, delta %g)", options->privacy_epsilon,
                   options->privacy_delta);
      return FALSE;
    }
  server->privacy_state = g_strdup (options->privacy_state);
  return server->privacy_state == NULL
         || ts_privacy_accountant_load (server->accountant, server->privacy_state, error);
}

void
he_privacy_clear (HeServer *server)
{
  g_clear_pointer (&server->pads, he_pads_free);
  g_clear_pointer (&server->accountant, ts_privacy_accountant_free);
  g_clear_pointer (&server->privacy_state, g_free);
  g_mutex_clear (&server->privacy_lock);
}

char *
he_privacy_client_id (const TsHeloraHello *hello)
{
  return g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, hello->public_key);
}

void
he_privacy_status (HeServer *server, const char *client, TsHeloraPrivacyStatus *out)
{
  *out = (TsHeloraPrivacyStatus) { 0 };
  if (server->accountant == NULL)
    return;           /* private mode without DP: nothing is ever charged */
  out->flags = TS_HELORA_PRIVACY_BUDGET;
  ts_privacy_accountant_spent (server->accountant, client, &out->rho_spent, &out->epsilon_spent);
  ts_privacy_accountant_budget (server->accountant, &out->epsilon_budget, &out->delta);
}

TsHeloraPrivacyEval *
he_privacy_open (HeServer *server, TsHeloraEvaluator *evaluator, const TsHeloraHello *hello,
                 GArray *module_map, GError **error)
{
  g_autofree char *client = he_privacy_client_id (hello);
  TsHeloraPrivacyEval *pe = ts_helora_privacy_eval_new (evaluator, hello, server->accountant,
                                                        client, error);
  /* lambda_s checked against the server's floor and every layout, and the
   * first pads made now: a failure is the hello's, not the first token's */
  for (guint i = 0; pe != NULL && i < module_map->len; i++)
    {
      guint index = g_array_index (module_map, guint, i);
      if (!ts_helora_privacy_eval_check_module (pe, index, server->privacy_min_lambda, error)
          || !ts_helora_privacy_eval_prefill (pe, index, 1, error))
        g_clear_pointer (&pe, ts_helora_privacy_eval_unref);
    }
  return pe;
}

gboolean
he_privacy_evaluate (HeServer *server, TsHeloraPrivacyEval *pe, guint index, GPtrArray *cts,
                     GPtrArray *results, GError **error)
{
  gboolean ok = ts_helora_privacy_eval_evaluate (pe, index, cts, results, error);
  guint64 from_pool = 0, made_inline = 0;
  ts_helora_privacy_eval_take_counts (pe, &from_pool, &made_inline);
  he_metrics_count_pads (server->metrics, 0, 0.0, from_pool, made_inline);
  if (from_pool + made_inline > 0)
    he_pads_taken (server->pads, pe, index);
  if (!ok || server->accountant == NULL || server->privacy_state == NULL)
    return ok;
  /* the spent budget survives a restart: saved (atomically) on every charge */
  g_autoptr (GError) save_error = NULL;
  g_mutex_lock (&server->privacy_lock);
  gboolean saved = ts_privacy_accountant_save (server->accountant, server->privacy_state,
                                               &save_error);
  g_mutex_unlock (&server->privacy_lock);
  if (!saved)
    g_warning ("Saving the privacy state: %s", save_error->message);
  return TRUE;
}
