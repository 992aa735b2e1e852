/* ts-helora-ckks.c: glue between libtensafe-he and the HE-LoRA code: contexts, errors, wire.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-serial.h"
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
  g_return_val_if_fail (ct != NULL, NULL);

  gsize len = ckks_ciphertext_serialized_size (ct);
  guint8 *buf = g_malloc (len);

  if (!ts_helora_ckks_check (ckks_ciphertext_serialize (ct, buf, len), "Serialising a ciphertext", error))
    {
      g_free (buf);
      return NULL;
    }
  return g_bytes_new_take (buf, len);
}

gboolean
ts_helora_ckks_ciphertext_from_bytes (GBytes *bytes, CkksCiphertext *ct, guint limbs,
                                      GError **error)
{
  g_return_val_if_fail (bytes != NULL, FALSE);
  g_return_val_if_fail (ct != NULL, FALSE);

  gsize len = 0;
  const guint8 *data = g_bytes_get_data (bytes, &len);

  if (!ts_helora_ckks_check (ckks_ciphertext_deserialize_into (ct, data, len),
                             "Ciphertext", error))
    return FALSE;
  if (ckks_ciphertext_limbs (ct) != limbs)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_BAD_CIPHERTEXT,
                   "Ciphertext has %u limbs, expected %u", ckks_ciphertext_limbs (ct), limbs);
      return FALSE;
    }
  return TRUE;
}

GBytes *
ts_helora_ckks_result_to_bytes (const CkksHeloraLayout *layout, const CkksCiphertext *ct,
                                GError **error)
{
  g_return_val_if_fail (layout != NULL, NULL);
  g_return_val_if_fail (ct != NULL, NULL);

  gsize len = ckks_helora_result_serialized_size (layout);
  guint8 *buf;

  if (len == 0)
    return ts_helora_ckks_ciphertext_to_bytes (ct, error);
  buf = g_malloc (len);
  if (!ts_helora_ckks_check (ckks_helora_result_serialize (layout, ct, buf, len),
                             "Serialising a result", error))
    {
      g_free (buf);
      return NULL;
    }
  return g_bytes_new_take (buf, len);
}

gboolean
ts_helora_ckks_result_from_bytes (const CkksHeloraLayout *layout, GBytes *bytes,
                                  CkksCiphertext *ct, GError **error)
{
  g_return_val_if_fail (layout != NULL, FALSE);
  g_return_val_if_fail (bytes != NULL, FALSE);
  g_return_val_if_fail (ct != NULL, FALSE);

  gsize len = 0;
  const guint8 *data = g_bytes_get_data (bytes, &len);

  if (ckks_helora_result_serialized_size (layout) == 0)
    return ts_helora_ckks_ciphertext_from_bytes (bytes, ct, ckks_helora_layout_limbs (layout),
                                                 error);
  return ts_helora_ckks_check (ckks_helora_result_deserialize_into (layout, ct, data, len),
                               "Result", error);
}
