/* ts-key-pair.c: an unlocked CKKS key pair in memory, and sealing it into a key file.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "ts-key-pair.h"

void
ts_key_pair_free (TsKeyPair *pair)
{
  if (pair == NULL)
    return;
  /* Keys before their context: they point into it. */
  ckks_secret_key_free (pair->sk);
  ckks_public_key_free (pair->pk);
  ckks_context_free (pair->ctx);
  g_free (pair->preset);
  g_free (pair);
}

static void
report (TsKeyProgressFunc progress, gpointer user_data, double fraction)
{
  if (progress != NULL)
    progress (fraction, user_data);
}

static gboolean
context_for_params (const CkksParams *params, CkksContext **ctx, GError **error)
{
  return ts_key_check (ckks_context_new (params, ctx), "CKKS parameters", error);
}

TsKeyPair *
ts_key_pair_generate (const char *preset, TsKeyProgressFunc progress, gpointer user_data,
                      GError **error)
{
  g_autoptr (TsKeyPair) pair = g_new0 (TsKeyPair, 1);
  CkksParams params;

  if (preset == NULL || ckks_params_preset (preset, &params) != CKKS_OK)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_INVALID,
                   "Unknown CKKS parameter set “%s”", preset ? preset : "");
      return NULL;
    }
  pair->preset = g_strdup (preset);
  report (progress, user_data, 0.0);
  if (!context_for_params (&params, &pair->ctx, error))
    return NULL;
  report (progress, user_data, 0.4);
  if (!ts_key_check (ckks_secret_key_new (pair->ctx, &pair->sk), "secret key", error))
    return NULL;
  report (progress, user_data, 0.6);
  if (!ts_key_check (ckks_public_key_new (pair->sk, &pair->pk), "public key", error))
    return NULL;
  report (progress, user_data, 1.0);
  return g_steal_pointer (&pair);
}

static GBytes *
serialize_public (const TsKeyPair *pair, GBytes **params_out, GError **error)
{
  const CkksParams *params = ckks_context_params (pair->ctx);
  gsize params_len = ckks_params_serialized_size (params);
  gsize pk_len = ckks_public_key_serialized_size (pair->pk);
  g_autofree guint8 *params_buf = g_malloc (params_len);
  g_autofree guint8 *pk_buf = g_malloc (pk_len);

  if (!ts_key_check (ckks_params_serialize (params, params_buf, params_len), "parameters", error)
      || !ts_key_check (ckks_public_key_serialize (pair->pk, pk_buf, pk_len), "public key", error))
    return NULL;
  *params_out = g_bytes_new_take (g_steal_pointer (&params_buf), params_len);
  return g_bytes_new_take (g_steal_pointer (&pk_buf), pk_len);
}

TsKeyFile *
ts_key_pair_seal (const TsKeyPair *pair, const char *passphrase, const TsScryptParams *kdf,
                  gint64 created, TsKeyProgressFunc progress, gpointer user_data,
                  GError **error)
{
  g_return_val_if_fail (pair != NULL, NULL);

  g_autoptr (TsKeyFile) file = g_new0 (TsKeyFile, 1);
  guint8 key[32];
  guint8 *sealed = NULL;
  size_t sealed_len = 0;
  CkksStatus st;

  if (passphrase == NULL || *passphrase == '\0')
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_INVALID, "The passphrase is empty");
      return NULL;
    }
  file->kdf = kdf != NULL ? *kdf : ts_scrypt_default;
  file->created = created;
  file->preset = g_strdup (pair->preset);
  if (RAND_bytes (file->salt, TS_KEY_SALT_BYTES) != 1)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_FAILED, "The random generator failed");
      return NULL;
    }
  if ((file->public_key = serialize_public (pair, &file->params, error)) == NULL)
    return NULL;
  report (progress, user_data, 0.0);
  if (!ts_key_derive (passphrase, &file->kdf, file->salt, key, error))
    return NULL;
  report (progress, user_data, 0.9);
  st = ckks_secret_key_seal (pair->sk, key, &sealed, &sealed_len);
  OPENSSL_cleanse (key, sizeof key);
  if (!ts_key_check (st, "sealing the secret key", error))
    return NULL;
  /* The sealed blob is ciphertext: nothing to wipe. */
  file->sealed = g_bytes_new_with_free_func (sealed, sealed_len, free, sealed);
  report (progress, user_data, 1.0);
  return g_steal_pointer (&file);
}

GBytes *
ts_key_pair_seal_for_handover (const TsKeyPair *pair, guint8 key_out[32], GError **error)
{
  guint8 *sealed = NULL;
  size_t sealed_len = 0;

  g_return_val_if_fail (pair != NULL, NULL);

  if (RAND_priv_bytes (key_out, 32) != 1)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_FAILED, "The random generator failed");
      return NULL;
    }
  if (!ts_key_check (ckks_secret_key_seal (pair->sk, key_out, &sealed, &sealed_len),
                     "sealing the secret key", error))
    {
      OPENSSL_cleanse (key_out, 32);
      return NULL;
    }
  return g_bytes_new_with_free_func (sealed, sealed_len, free, sealed);
}

static gboolean
load_public (const TsKeyFile *file, TsKeyPair *pair, GError **error)
{
  CkksParams params;
  gsize len;
  const guint8 *data = g_bytes_get_data (file->params, &len);

  if (ckks_params_deserialize (data, len, &params) != CKKS_OK)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_CORRUPT,
                   "The key file's CKKS parameters are not valid");
      return FALSE;
    }
  if (!context_for_params (&params, &pair->ctx, error))
    return FALSE;
  data = g_bytes_get_data (file->public_key, &len);
  if (ckks_public_key_deserialize (pair->ctx, data, len, &pair->pk) != CKKS_OK)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_CORRUPT,
                   "The key file's public key is not valid");
      return FALSE;
    }
  return TRUE;
}

/* Encrypts a few values under the public key and decrypts them with the
 * secret key: a file whose public key was swapped for another one fails. */
static gboolean
pair_consistent (const TsKeyPair *pair)
{
  static const double values[] = { 1.0, -2.5, 3.25, 0.125 };
  double out[G_N_ELEMENTS (values)] = { 0 };
  guint32 limbs = ckks_context_params (pair->ctx)->n_moduli;
  CkksCiphertext *ct = NULL;
  CkksPlaintext *pt = NULL;
  gboolean ok = ckks_ciphertext_new (pair->ctx, limbs, &ct) == CKKS_OK
                && ckks_plaintext_new (pair->ctx, limbs, &pt) == CKKS_OK
                && ckks_encrypt_values_pk (pair->pk, values, NULL, G_N_ELEMENTS (values),
                                           0x1p30, ct) == CKKS_OK
                && ckks_decrypt (pair->sk, ct, pt) == CKKS_OK
                && ckks_decode (pt, out, NULL, G_N_ELEMENTS (values)) == CKKS_OK;

  for (guint i = 0; ok && i < G_N_ELEMENTS (values); i++)
    ok = ABS (out[i] - values[i]) < 1e-3;
  OPENSSL_cleanse (out, sizeof out);
  ckks_plaintext_free (pt);
  ckks_ciphertext_free (ct);
  return ok;
}

TsKeyPair *
ts_key_file_unlock (const TsKeyFile *file, const char *passphrase, TsKeyProgressFunc progress,
                    gpointer user_data, GError **error)
{
  g_autoptr (TsKeyPair) pair = g_new0 (TsKeyPair, 1);
  guint8 key[32];
  gsize len;
  const guint8 *sealed;
  CkksStatus st;

  g_return_val_if_fail (file != NULL, NULL);

  pair->preset = g_strdup (file->preset);
  report (progress, user_data, 0.0);
  if (!load_public (file, pair, error))
    return NULL;
  report (progress, user_data, 0.1);
  if (!ts_key_derive (passphrase != NULL ? passphrase : "", &file->kdf, file->salt, key, error))
    return NULL;
  report (progress, user_data, 0.9);
  sealed = g_bytes_get_data (file->sealed, &len);
  st = ckks_secret_key_unseal (pair->ctx, key, sealed, len, &pair->sk);
  OPENSSL_cleanse (key, sizeof key);
  if (!ts_key_check (st, "The sealed secret key", error))
    return NULL;
  if (!pair_consistent (pair))
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_CORRUPT,
                   "The key file's public key does not belong to its secret key");
      return NULL;
    }
  report (progress, user_data, 1.0);
  return g_steal_pointer (&pair);
}
