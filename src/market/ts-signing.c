/* ts-signing.c: Ed25519 through OpenSSL EVP, and file SHA-256 through GChecksum.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-signing.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

struct _TsSigningKey
{
  EVP_PKEY *pkey;
  gboolean  has_private;
};

G_DEFINE_QUARK (ts-signing-error-quark, ts_signing_error)

static void
set_openssl_error (GError **error, int code, const char *what)
{
  unsigned long e = ERR_get_error ();
  char buf[256] = "unknown error";

  if (e != 0)
    ERR_error_string_n (e, buf, sizeof buf);
  ERR_clear_error ();
  g_set_error (error, TS_SIGNING_ERROR, code, "%s: %s", what, buf);
}

static TsSigningKey *
wrap_pkey (EVP_PKEY *pkey, gboolean has_private)
{
  TsSigningKey *self = g_new0 (TsSigningKey, 1);

  self->pkey = pkey;
  self->has_private = has_private;
  return self;
}

TsSigningKey *
ts_signing_key_generate (GError **error)
{
  EVP_PKEY *pkey = EVP_PKEY_Q_keygen (NULL, NULL, "ED25519");

  if (pkey == NULL)
    {
      set_openssl_error (error, TS_SIGNING_ERROR_KEY, "Cannot generate an Ed25519 key");
      return NULL;
    }
  return wrap_pkey (pkey, TRUE);
}

TsSigningKey *
ts_signing_key_load_private (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autofree char *pem = NULL;
  gsize len = 0;
  BIO *bio;
  EVP_PKEY *pkey;

  if (!g_file_get_contents (path, &pem, &len, error))
    return NULL;
  bio = BIO_new_mem_buf (pem, (int) MIN (len, (gsize) G_MAXINT));
  pkey = PEM_read_bio_PrivateKey (bio, NULL, NULL, NULL);
  BIO_free (bio);
  OPENSSL_cleanse (pem, len);
  if (pkey == NULL || EVP_PKEY_get_id (pkey) != EVP_PKEY_ED25519)
    {
      EVP_PKEY_free (pkey);
      set_openssl_error (error, TS_SIGNING_ERROR_KEY, "Not an Ed25519 private key");
      g_prefix_error (error, "%s: ", path);
      return NULL;
    }
  return wrap_pkey (pkey, TRUE);
}

gboolean
ts_signing_key_save_private (TsSigningKey *self, const char *path, GError **error)
{
  BIO *bio = BIO_new (BIO_s_mem ());
  char *data = NULL;
  long len;
  gboolean ok;

  g_return_val_if_fail (self->has_private, FALSE);
  if (!PEM_write_bio_PrivateKey (bio, self->pkey, NULL, NULL, 0, NULL, NULL))
    {
      BIO_free (bio);
      set_openssl_error (error, TS_SIGNING_ERROR_IO, "Cannot encode the private key");
      return FALSE;
    }
  len = BIO_get_mem_data (bio, &data);
  ok = g_file_set_contents_full (path, data, len, G_FILE_SET_CONTENTS_CONSISTENT,
                                 0600, error);
  OPENSSL_cleanse (data, len);
  BIO_free (bio);
  return ok;
}

TsSigningKey *
ts_signing_key_new_public_base64 (const char *public_b64, GError **error)
{
  g_autofree guchar *raw = NULL;
  gsize len = 0;
  EVP_PKEY *pkey;

  if (public_b64 == NULL || *public_b64 == '\0')
    {
      g_set_error (error, TS_SIGNING_ERROR, TS_SIGNING_ERROR_KEY, "Empty public key");
      return NULL;
    }
  raw = g_base64_decode (public_b64, &len);
  if (len != TS_ED25519_PUBLIC_KEY_LEN)
    {
      g_set_error (error, TS_SIGNING_ERROR, TS_SIGNING_ERROR_KEY,
                   "An Ed25519 public key has %d bytes, not %" G_GSIZE_FORMAT,
                   TS_ED25519_PUBLIC_KEY_LEN, len);
      return NULL;
    }
  pkey = EVP_PKEY_new_raw_public_key (EVP_PKEY_ED25519, NULL, raw, len);
  if (pkey == NULL)
    {
      set_openssl_error (error, TS_SIGNING_ERROR_KEY, "Invalid Ed25519 public key");
      return NULL;
    }
  return wrap_pkey (pkey, FALSE);
}

static gboolean
get_raw_public (TsSigningKey *self, guchar out[TS_ED25519_PUBLIC_KEY_LEN])
{
  size_t len = TS_ED25519_PUBLIC_KEY_LEN;

  return EVP_PKEY_get_raw_public_key (self->pkey, out, &len) == 1
         && len == TS_ED25519_PUBLIC_KEY_LEN;
}

char *
ts_signing_key_get_public_base64 (TsSigningKey *self)
{
  guchar raw[TS_ED25519_PUBLIC_KEY_LEN];

  g_return_val_if_fail (self != NULL, NULL);

  if (!get_raw_public (self, raw))
    return NULL;
  return g_base64_encode (raw, sizeof raw);
}

char *
ts_signing_key_get_id (TsSigningKey *self)
{
  guchar raw[TS_ED25519_PUBLIC_KEY_LEN];
  g_autofree char *hex = NULL;

  g_return_val_if_fail (self != NULL, NULL);

  if (!get_raw_public (self, raw))
    return NULL;
  hex = g_compute_checksum_for_data (G_CHECKSUM_SHA256, raw, sizeof raw);
  return g_strdup_printf ("ed25519:%.16s", hex);
}

void
ts_signing_key_free (TsSigningKey *self)
{
  if (self == NULL)
    return;
  EVP_PKEY_free (self->pkey);
  g_free (self);
}

char *
ts_signing_key_sign (TsSigningKey *self, const void *data, gsize len, GError **error)
{
  EVP_MD_CTX *ctx;
  guchar sig[TS_ED25519_SIGNATURE_LEN];
  size_t sig_len = sizeof sig;
  gboolean ok;

  g_return_val_if_fail (self != NULL, NULL);

  if (!self->has_private)
    {
      g_set_error (error, TS_SIGNING_ERROR, TS_SIGNING_ERROR_KEY,
                   "A public key cannot sign");
      return NULL;
    }
  ctx = EVP_MD_CTX_new ();
  ok = ctx != NULL
       && EVP_DigestSignInit (ctx, NULL, NULL, NULL, self->pkey) == 1
       && EVP_DigestSign (ctx, sig, &sig_len, data, len) == 1;
  EVP_MD_CTX_free (ctx);
  if (!ok)
    {
      set_openssl_error (error, TS_SIGNING_ERROR_SIGNATURE, "Cannot sign");
      return NULL;
    }
  return g_base64_encode (sig, sig_len);
}

gboolean
ts_signing_key_verify (TsSigningKey *self, const void *data, gsize len,
                       const char *signature_b64, GError **error)
{
  g_autofree guchar *sig = NULL;
  gsize sig_len = 0;
  EVP_MD_CTX *ctx;
  int rc;

  g_return_val_if_fail (self != NULL, FALSE);

  if (signature_b64 != NULL && *signature_b64 != '\0')
    sig = g_base64_decode (signature_b64, &sig_len);
  if (sig_len != TS_ED25519_SIGNATURE_LEN)
    {
      g_set_error (error, TS_SIGNING_ERROR, TS_SIGNING_ERROR_SIGNATURE,
                   "Malformed Ed25519 signature (%" G_GSIZE_FORMAT " bytes)", sig_len);
      return FALSE;
    }
  ctx = EVP_MD_CTX_new ();
  rc = ctx != NULL && EVP_DigestVerifyInit (ctx, NULL, NULL, NULL, self->pkey) == 1
       ? EVP_DigestVerify (ctx, sig, sig_len, data, len) : -1;
  EVP_MD_CTX_free (ctx);
  ERR_clear_error ();
  if (rc != 1)
    {
      g_set_error (error, TS_SIGNING_ERROR, TS_SIGNING_ERROR_SIGNATURE,
                   "The Ed25519 signature does not match");
      return FALSE;
    }
  return TRUE;
}

char *
ts_sha256_file (const char *path, goffset *size_out, GCancellable *cancellable,
                GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GFileInputStream) in = g_file_read (file, cancellable, error);
  g_autoptr(GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree guchar *buf = g_malloc (64 * 1024);
  goffset total = 0;
  gssize n;

  if (in == NULL)
    return NULL;
  while ((n = g_input_stream_read (G_INPUT_STREAM (in), buf, 64 * 1024,
                                   cancellable, error)) > 0)
    {
      g_checksum_update (sum, buf, n);
      total += n;
    }
  if (n < 0)
    return NULL;
  if (size_out != NULL)
    *size_out = total;
  return g_strdup (g_checksum_get_string (sum));
}

gboolean
ts_sha256_hex_is_valid (const char *hex)
{
  if (hex == NULL || strlen (hex) != TS_SHA256_HEX_LEN)
    return FALSE;
  for (const char *p = hex; *p; p++)
    if (!g_ascii_isdigit (*p) && !(*p >= 'a' && *p <= 'f'))
      return FALSE;
  return TRUE;
}
