/* ts-helora-session-private-mode.c: the client's request for the adapter-private mode.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-private.h"
#include "ckks-serial.h"
#include "ts-helora-ckks.h"
#include "ts-helora-session-private.h"

/* Puts the private-mode request into @hello: the public key of the
 * session's secret key (made for the occasion when the session encrypts
 * with sk), lambda_s, the DP cost per answer and the split scales its
 * layouts use (build_modules). No secret leaves. */
gboolean
_ts_helora_session_private_request (TsHeloraSession *self, const TsHeloraOptions *options,
                                    TsHeloraHello *hello, GError **error)
{
  if (!options->private_mode)
    return TRUE;
  guint lambda_s = options->private_lambda_s ? options->private_lambda_s
                                             : CKKS_PRIVATE_DEFAULT_LAMBDA;
  /* a flood the layouts cannot hold: said here, before any connection */
  for (guint i = 0; i < self->modules->len; i++)
    {
      const SessionModule *m = &g_array_index (self->modules, SessionModule, i);
      guint max = ckks_private_max_lambda (m->layout);
      if (lambda_s > max)
        {
          g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                       "lambda_s = %u does not fit module %s under preset %s: at most %u",
                       lambda_s, m->lm->name, self->preset, max);
          return FALSE;
        }
    }
  CkksPublicKey *made = NULL;
  const CkksPublicKey *pk = self->pk;
  if (pk == NULL
      && !ts_helora_ckks_check (ckks_public_key_new (self->sk, &made), "Public key", error))
    return FALSE;
  pk = pk != NULL ? pk : made;
  gsize len = ckks_public_key_serialized_size (pk);
  guint8 *buf = g_malloc (len);
  gboolean ok = ts_helora_ckks_check (ckks_public_key_serialize (pk, buf, len),
                                      "Serialising the public key", error);
  ckks_public_key_free (made);
  if (!ok)
    {
      g_free (buf);
      return FALSE;
    }
  hello->private_mode = TRUE;
  hello->public_key = g_bytes_new_take (buf, len);
  hello->split_scales = TRUE;
  hello->lambda_s = (guint16) lambda_s;
  hello->dp = options->private_rho > 0.0;
  hello->rho_per_answer = hello->dp ? options->private_rho : 0.0;
  return TRUE;
}
