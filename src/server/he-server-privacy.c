/* he-server-privacy.c: the server's adapter-private mode: one privacy
 * accountant (persisted), per-connection private evaluation, pad refills.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The client identity the accountant charges is the SHA-256 of the client's
 * public key: the protocol has no authentication, so a client that makes a
 * new key starts afresh (docs/security.md §3.3 says so; a deployment that
 * needs per-person budgets must authenticate in front of the server). */
#include "he-server-private.h"

#include "ts-helora-private-eval.h"

/* Pads kept ready per module, in answers; refilled after each answer. */
#define HE_PRIVACY_POOL_ANSWERS 2

gboolean
he_privacy_init (HeServer *server, const HeServerOptions *options, GError **error)
{
  g_mutex_init (&server->privacy_lock);
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

TsHeloraPrivateEval *
he_privacy_open (HeServer *server, TsHeloraEvaluator *evaluator, const TsHeloraHello *hello,
                 GArray *module_map, GError **error)
{
  g_autofree char *client = he_privacy_client_id (hello);
  TsHeloraPrivateEval *pe = ts_helora_private_eval_new (evaluator, hello, server->accountant,
                                                        client, error);
  /* the first pads now: a failure here (lambda_s too large for the
   * layout) is the hello's, not the first token's */
  for (guint i = 0; pe != NULL && i < module_map->len; i++)
    if (!ts_helora_private_eval_prefill (pe, g_array_index (module_map, guint, i), 1, error))
      {
        g_clear_pointer (&pe, ts_helora_private_eval_unref);
        if (g_error_matches (*error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL))
          (*error)->code = TS_HELORA_ERROR_PARAMS;    /* lambda_s the layout cannot hold */
      }
  return pe;
}

gboolean
he_privacy_evaluate (HeServer *server, TsHeloraPrivateEval *pe, guint index, GPtrArray *cts,
                     GPtrArray *results, GError **error)
{
  gboolean ok = ts_helora_private_eval_evaluate (pe, index, cts, results, error);
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

void
he_privacy_refill (TsHeloraPrivateEval *pe, GArray *modules, GArray *module_map)
{
  for (guint i = 0; i < modules->len; i++)
    {
      guint16 m = g_array_index (modules, guint16, i);
      g_autoptr (GError) error = NULL;
      if (m < module_map->len
          && !ts_helora_private_eval_prefill (pe, g_array_index (module_map, guint, m),
                                              HE_PRIVACY_POOL_ANSWERS, &error))
        g_warning ("Refilling privacy pads: %s", error->message);
    }
}
