/* ts-helora-session-privacy.c: the client's side of the adapter-private mode: request and budget.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-privacy.h"
#include "ckks-serial.h"
#include "ts-helora-ckks.h"
#include "ts-helora-session-private.h"

/* The serialised public key the hello carries: the caller's, or that of
 * the session's own (made for the occasion when it encrypts with sk). */
static GBytes *
public_key_bytes (TsHeloraSession *self, const TsHeloraOptions *options, GError **error)
{
  if (options->private_public_key != NULL)
    return g_bytes_ref (options->private_public_key);
  CkksPublicKey *made = NULL;
  const CkksPublicKey *pk = self->pk;
  if (pk == NULL
      && !ts_helora_ckks_check (ckks_public_key_new (self->sk, &made), "Public key", error))
    return NULL;
  pk = pk != NULL ? pk : made;
  gsize len = ckks_public_key_serialized_size (pk);
  guint8 *buf = g_malloc (len);
  gboolean ok = ts_helora_ckks_check (ckks_public_key_serialize (pk, buf, len),
                                      "Serialising the public key", error);
  ckks_public_key_free (made);
  if (!ok)
    {
      g_free (buf);
      return NULL;
    }
  return g_bytes_new_take (buf, len);
}

/* Puts the private-mode request into @hello: the public key, lambda_s, the
 * DP cost per answer and the split scales its layouts use (build_modules).
 * No secret leaves. */
gboolean
_ts_helora_session_private_request (TsHeloraSession *self, const TsHeloraOptions *options,
                                    TsHeloraHello *hello, GError **error)
{
  if (!options->private_mode)
    return TRUE;
  guint lambda_s = options->private_lambda_s ? options->private_lambda_s
                                             : CKKS_PRIVACY_DEFAULT_LAMBDA;
  /* a flood the layouts cannot hold: said here, before any connection */
  for (guint i = 0; i < self->modules->len; i++)
    {
      const SessionModule *m = &g_array_index (self->modules, SessionModule, i);
      guint max = ckks_privacy_max_lambda (m->layout);
      if (lambda_s > max)
        {
          g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                       "lambda_s = %u does not fit module %s under preset %s: at most %u",
                       lambda_s, m->lm->name, self->preset, max);
          return FALSE;
        }
    }
  hello->public_key = public_key_bytes (self, options, error);
  if (hello->public_key == NULL)
    return FALSE;
  hello->private_mode = TRUE;
  self->private_mode = TRUE;
  hello->split_scales = TRUE;
  hello->lambda_s = (guint16) lambda_s;
  hello->dp = options->private_rho > 0.0;
  hello->rho_per_answer = hello->dp ? options->private_rho : 0.0;
  return TRUE;
}

gboolean
ts_helora_session_privacy_status (TsHeloraSession *self, TsHeloraPrivacyStatus *out,
                                  GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);
  g_return_val_if_fail (out != NULL, FALSE);

  if (self->remote == NULL || !self->private_mode)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_NOT_READY,
                   "Not an adapter-private session with a remote evaluator");
      return FALSE;
    }
  return ts_helora_remote_privacy_status (self->remote, out, error);
}
