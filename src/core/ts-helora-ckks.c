/* ts-helora-ckks.c: glue between libtensafe-he and the HE-LoRA code: contexts, errors, wire.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-helora-ckks.h"
#include "ts-helora-proto.h"

gboolean
ts_helora_ckks_check (CkksStatus status, const char *what, GError **error)
{
  TsHeloraError code = TS_HELORA_ERROR_INTERNAL;

  if (status == CKKS_OK)
    return TRUE;
  if (status == CKKS_ERR_TRUNCATED || status == CKKS_ERR_FORMAT || status == CKKS_ERR_VERSION
      || status == CKKS_ERR_CHECKSUM || status == CKKS_ERR_MISMATCH)
    code = TS_HELORA_ERROR_BAD_CIPHERTEXT;
  else if (status == CKKS_ERR_INSECURE_PARAMETERS)
    code = TS_HELORA_ERROR_PARAMS;
  g_set_error (error, TS_HELORA_ERROR, code, "%s: %s", what, ckks_status_message (status));
  return FALSE;
}

CkksContext *
ts_helora_ckks_context_new (const char *name, GError **error)
{
  CkksParams params;
  CkksContext *ctx = NULL;

  if (name == NULL)
    name = TS_HELORA_DEFAULT_PRESET;
  if (ckks_params_preset (name, &params) != CKKS_OK)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                   "Unknown CKKS parameter preset '%s'", name);
      return NULL;
    }
  if (!ts_helora_ckks_check (ckks_context_new (&params, &ctx), "CKKS context", error))
    return NULL;
  return ctx;
}

GBytes *
ts_helora_ckks_ciphertext_to_bytes (const CkksCiphertext *ct, GError **error)
{
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE,
               "This build has no ciphertext serialiser yet");
  return NULL;
}

gboolean
ts_helora_ckks_ciphertext_from_bytes (GBytes *bytes, CkksCiphertext *ct, GError **error)
{
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE,
               "This build has no ciphertext serialiser yet");
  return FALSE;
}
