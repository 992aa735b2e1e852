/* ts-key-file.c: the sealed CKKS key file: format and passphrase KDF.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>

#include "ts-key-file.h"
#include "ts-write-atomic.h"

#define MAGIC "TSKV"
#define PUBLIC_MAGIC "TSPK"
#define KDF_SCRYPT 1
#define CHECKSUM_BYTES 32
#define MAX_FILE_BYTES (64u << 20)   /* far above any key of the presets */
#define MAX_PRESET_NAME 64
/* Magic, version, KDF id and costs, salt, creation time. */
#define HEADER_BYTES (4 + 4 + 16 + TS_KEY_SALT_BYTES + 8)

const TsScryptParams ts_scrypt_default = { .log2_n = 15, .r = 8, .p = 1 };

G_DEFINE_QUARK (ts-key-error-quark, ts_key_error)

void
ts_key_file_free (TsKeyFile *file)
{
  if (file == NULL)
    return;
  g_free (file->preset);
  g_clear_pointer (&file->params, g_bytes_unref);
  g_clear_pointer (&file->public_key, g_bytes_unref);
  g_clear_pointer (&file->sealed, g_bytes_unref);
  g_free (file);
}

/* Costs a reader accepts: what the vault itself writes (ts_scrypt_default:
 * 32 MiB, a few hundred ms) with a margin of four, no more, so that a
 * hostile file cannot make an unlock cost gigabytes or minutes (the old
 * bounds let one file ask for 4 GiB). Cheaper costs (tests) down to N = 2^10. */
#define KDF_MAX_MEMORY_BYTES (4 * ((guint64) 128 * 8 << 15))
#define KDF_MAX_WORK (4 * ((guint64) 8 << 15))    /* N r p, in scrypt's block mixes */

static guint64
kdf_memory_bytes (const TsScryptParams *kdf)
{
  return (guint64) 128 * kdf->r << kdf->log2_n;
}

static gboolean
kdf_params_sane (const TsScryptParams *kdf)
{
  return kdf->log2_n >= 10 && kdf->log2_n <= 20 && kdf->r >= 1 && kdf->r <= 32
         && kdf->p >= 1 && kdf->p <= 16 && kdf_memory_bytes (kdf) <= KDF_MAX_MEMORY_BYTES
         && ((guint64) kdf->r * kdf->p << kdf->log2_n) <= KDF_MAX_WORK;
}

/* ---- Serialisation ---------------------------------------------------- */

static void
put_u32 (GByteArray *out, guint32 v)
{
  guint32 le = GUINT32_TO_LE (v);
  g_byte_array_append (out, (const guint8 *) &le, 4);
}

static void
put_blob (GByteArray *out, const void *data, gsize len)
{
  put_u32 (out, (guint32) len);
  g_byte_array_append (out, data, (guint) len);
}

static void
put_bytes (GByteArray *out, GBytes *bytes)
{
  gsize len;
  const guint8 *data = g_bytes_get_data (bytes, &len);
  put_blob (out, data, len);
}

GBytes *
ts_key_file_serialize (const TsKeyFile *file)
{
  g_return_val_if_fail (file != NULL, NULL);

  GByteArray *out = g_byte_array_new ();
  guint16 version = GUINT16_TO_LE (TS_KEY_FILE_VERSION), zero = 0;
  gint64 created = GINT64_TO_LE (file->created);
  guint8 sum[CHECKSUM_BYTES];

  g_byte_array_append (out, (const guint8 *) MAGIC, 4);
  g_byte_array_append (out, (const guint8 *) &version, 2);
  g_byte_array_append (out, (const guint8 *) &zero, 2);
  put_u32 (out, KDF_SCRYPT);
  put_u32 (out, file->kdf.log2_n);
  put_u32 (out, file->kdf.r);
  put_u32 (out, file->kdf.p);
  g_byte_array_append (out, file->salt, TS_KEY_SALT_BYTES);
  g_byte_array_append (out, (const guint8 *) &created, 8);
  put_blob (out, file->preset, strlen (file->preset));
  put_bytes (out, file->params);
  put_bytes (out, file->public_key);
  put_bytes (out, file->sealed);
  EVP_Digest (out->data, out->len, sum, NULL, EVP_sha256 (), NULL);
  g_byte_array_append (out, sum, CHECKSUM_BYTES);
  return g_byte_array_free_to_bytes (out);
}

GBytes *
ts_key_file_export_public (const TsKeyFile *file)
{
  g_return_val_if_fail (file != NULL, NULL);

  GByteArray *out = g_byte_array_new ();
  guint16 version = GUINT16_TO_LE (TS_KEY_FILE_VERSION), zero = 0;
  guint8 sum[CHECKSUM_BYTES];

  g_byte_array_append (out, (const guint8 *) PUBLIC_MAGIC, 4);
  g_byte_array_append (out, (const guint8 *) &version, 2);
  g_byte_array_append (out, (const guint8 *) &zero, 2);
  put_blob (out, file->preset, strlen (file->preset));
  put_bytes (out, file->params);
  put_bytes (out, file->public_key);
  EVP_Digest (out->data, out->len, sum, NULL, EVP_sha256 (), NULL);
  g_byte_array_append (out, sum, CHECKSUM_BYTES);
  return g_byte_array_free_to_bytes (out);
}

/* ---- Parsing ---------------------------------------------------------- */

typedef struct {
  const guint8 *p;
  gsize left;
} Reader;

static gboolean
take (Reader *r, gsize n, const guint8 **out)
{
  if (r->left < n)
    return FALSE;
  *out = r->p;
  r->p += n;
  r->left -= n;
  return TRUE;
}

static gboolean
get_u32 (Reader *r, guint32 *v)
{
  const guint8 *p;

  if (!take (r, 4, &p))
    return FALSE;
  *v = (guint32) p[0] | (guint32) p[1] << 8 | (guint32) p[2] << 16 | (guint32) p[3] << 24;
  return TRUE;
}

static gboolean
get_blob (Reader *r, gsize max, GBytes **out)
{
  guint32 len;
  const guint8 *p;

  if (!get_u32 (r, &len) || len == 0 || len > max || !take (r, len, &p))
    return FALSE;
  *out = g_bytes_new (p, len);
  return TRUE;
}

static gboolean
corrupt (GError **error, const char *why)
{
  g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_CORRUPT,
               "The key file is damaged (%s); it was not loaded", why);
  return FALSE;
}

/* Header up to and including the creation time. */
static gboolean
parse_header (Reader *r, TsKeyFile *file, GError **error)
{
  const guint8 *magic, *version, *salt, *created;
  guint32 kdf_id;

  if (!take (r, 4, &magic) || memcmp (magic, MAGIC, 4) != 0)
    return corrupt (error, "not a key file");
  if (!take (r, 4, &version))
    return corrupt (error, "truncated");
  if (version[0] != TS_KEY_FILE_VERSION || version[1] != 0)
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_VERSION,
                   "The key file has format version %u, which this version cannot read",
                   version[0] | version[1] << 8);
      return FALSE;
    }
  if (!get_u32 (r, &kdf_id) || !get_u32 (r, &file->kdf.log2_n) || !get_u32 (r, &file->kdf.r)
      || !get_u32 (r, &file->kdf.p) || !take (r, TS_KEY_SALT_BYTES, &salt)
      || !take (r, 8, &created))
    return corrupt (error, "truncated");
  if (kdf_id != KDF_SCRYPT)
    return corrupt (error, "unknown key derivation");
  if (!kdf_params_sane (&file->kdf))
    {
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_CORRUPT,
                   "The key file asks for a key-derivation cost this version never writes "
                   "(scrypt N = 2^%u, r = %u, p = %u); it was not loaded (at most %u MiB "
                   "and four times the default work are accepted)",
                   file->kdf.log2_n, file->kdf.r, file->kdf.p,
                   (guint) (KDF_MAX_MEMORY_BYTES >> 20));
      return FALSE;
    }
  memcpy (file->salt, salt, TS_KEY_SALT_BYTES);
  memcpy (&file->created, created, 8);
  file->created = GINT64_FROM_LE (file->created);
  return TRUE;
}

static gboolean
parse_body (Reader *r, TsKeyFile *file, GError **error)
{
  g_autoptr (GBytes) preset = NULL;
  gsize preset_len;
  const char *name;

  if (!get_blob (r, MAX_PRESET_NAME, &preset) || !get_blob (r, r->left, &file->params)
      || !get_blob (r, r->left, &file->public_key) || !get_blob (r, r->left, &file->sealed))
    return corrupt (error, "truncated");
  if (r->left != 0)
    return corrupt (error, "trailing bytes");
  name = g_bytes_get_data (preset, &preset_len);
  if (memchr (name, '\0', preset_len) != NULL || !g_utf8_validate (name, (gssize) preset_len, NULL))
    return corrupt (error, "bad preset name");
  file->preset = g_strndup (name, preset_len);
  return TRUE;
}

/* The lengths of the four blobs must add up to the file's size exactly: a
 * cheap test that catches every truncation before anything is hashed. */
static gboolean
framing_ok (const guint8 *data, gsize len)
{
  Reader r = { data, len };
  const guint8 *skip;

  if (len < HEADER_BYTES + CHECKSUM_BYTES || !take (&r, HEADER_BYTES, &skip))
    return FALSE;
  for (guint i = 0; i < 4; i++)
    {
      guint32 blob;
      if (!get_u32 (&r, &blob) || !take (&r, blob, &skip))
        return FALSE;
    }
  return r.left == CHECKSUM_BYTES;
}

/* Then the checksum: no field of a damaged file is looked at. */
static gboolean
checksum_ok (const guint8 *data, gsize len, GError **error)
{
  guint8 sum[CHECKSUM_BYTES];

  if (len < 4 || memcmp (data, MAGIC, 4) != 0)
    return corrupt (error, "not a key file");
  if (len > MAX_FILE_BYTES || !framing_ok (data, len))
    return corrupt (error, "truncated or wrong size");
  EVP_Digest (data, len - CHECKSUM_BYTES, sum, NULL, EVP_sha256 (), NULL);
  if (CRYPTO_memcmp (sum, data + len - CHECKSUM_BYTES, CHECKSUM_BYTES) != 0)
    return corrupt (error, "checksum mismatch");
  return TRUE;
}

TsKeyFile *
ts_key_file_parse (const guint8 *data, gsize len, GError **error)
{
  g_return_val_if_fail (data != NULL || len == 0, NULL);

  g_autoptr (TsKeyFile) file = g_new0 (TsKeyFile, 1);
  Reader r;

  if (!checksum_ok (data, len, error))
    return NULL;
  r = (Reader) { data, len - CHECKSUM_BYTES };
  if (!parse_header (&r, file, error) || !parse_body (&r, file, error))
    return NULL;
  return g_steal_pointer (&file);
}

TsKeyFile *
ts_key_file_load (const char *path, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autofree guint8 *data = NULL;
  g_autoptr (GError) local = NULL;
  gsize len;

  if (!g_file_get_contents (path, (char **) &data, &len, &local))
    {
      if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_NOT_FOUND, "There is no key yet");
      else
        g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_FAILED, "%s", local->message);
      return NULL;
    }
  return ts_key_file_parse (data, len, error);
}

gboolean
ts_key_file_save (const TsKeyFile *file, const char *path, GError **error)
{
  g_return_val_if_fail (file != NULL, FALSE);

  g_autoptr (GBytes) bytes = ts_key_file_serialize (file);
  gsize len;
  const void *data = g_bytes_get_data (bytes, &len);

  return ts_write_atomic (path, data, len, error);
}

/* ---- Fingerprint ------------------------------------------------------ */

void
ts_key_file_fingerprint (const TsKeyFile *file, guint8 out[TS_KEY_FINGERPRINT_BYTES])
{
  g_return_if_fail (file != NULL);

  EVP_MD_CTX *md = EVP_MD_CTX_new ();
  gsize len;
  const void *data;

  EVP_DigestInit_ex (md, EVP_sha256 (), NULL);
  data = g_bytes_get_data (file->params, &len);
  EVP_DigestUpdate (md, data, len);
  data = g_bytes_get_data (file->public_key, &len);
  EVP_DigestUpdate (md, data, len);
  EVP_DigestFinal_ex (md, out, NULL);
  EVP_MD_CTX_free (md);
}

char *
ts_key_file_fingerprint_hex (const TsKeyFile *file)
{
  g_return_val_if_fail (file != NULL, NULL);

  guint8 fp[TS_KEY_FINGERPRINT_BYTES];
  GString *out = g_string_new (NULL);

  ts_key_file_fingerprint (file, fp);
  for (guint i = 0; i < TS_KEY_FINGERPRINT_BYTES; i++)
    g_string_append_printf (out, "%s%02X", i > 0 && i % 2 == 0 ? " " : "", fp[i]);
  return g_string_free (out, FALSE);
}

/* ---- Key derivation --------------------------------------------------- */

gboolean
ts_key_derive (const char *passphrase, const TsScryptParams *kdf,
               const guint8 salt[TS_KEY_SALT_BYTES], guint8 out[32], GError **error)
{
  g_return_val_if_fail (kdf != NULL, FALSE);

  EVP_KDF *algo = EVP_KDF_fetch (NULL, "SCRYPT", NULL);
  EVP_KDF_CTX *ctx = algo != NULL ? EVP_KDF_CTX_new (algo) : NULL;
  guint64 n = (guint64) 1 << kdf->log2_n;
  /* scrypt needs 128·r·N bytes; allow that with room to spare. */
  guint64 maxmem = 256 * (guint64) kdf->r * n + (1u << 20);
  guint32 r = kdf->r, p = kdf->p;
  OSSL_PARAM params[] = {
    OSSL_PARAM_construct_octet_string (OSSL_KDF_PARAM_PASSWORD, (void *) passphrase,
                                       strlen (passphrase)),
    OSSL_PARAM_construct_octet_string (OSSL_KDF_PARAM_SALT, (void *) salt, TS_KEY_SALT_BYTES),
    OSSL_PARAM_construct_uint64 (OSSL_KDF_PARAM_SCRYPT_N, &n),
    OSSL_PARAM_construct_uint32 (OSSL_KDF_PARAM_SCRYPT_R, &r),
    OSSL_PARAM_construct_uint32 (OSSL_KDF_PARAM_SCRYPT_P, &p),
    OSSL_PARAM_construct_uint64 (OSSL_KDF_PARAM_SCRYPT_MAXMEM, &maxmem),
    OSSL_PARAM_construct_end (),
  };
  gboolean ok = ctx != NULL && kdf_params_sane (kdf)
                && EVP_KDF_derive (ctx, out, 32, params) == 1;

  EVP_KDF_CTX_free (ctx);
  EVP_KDF_free (algo);
  if (!ok)
    {
      OPENSSL_cleanse (out, 32);
      g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_FAILED,
                   "Could not derive a key from the passphrase (scrypt failed)");
    }
  return ok;
}

gboolean
ts_key_check (CkksStatus status, const char *what, GError **error)
{
  if (status == CKKS_OK)
    return TRUE;
  if (status == CKKS_ERR_AUTH)
    g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_WRONG_PASSPHRASE,
                 "The passphrase is not correct");
  else
    g_set_error (error, TS_KEY_ERROR,
                 status == CKKS_ERR_INVALID_ARGUMENT ? TS_KEY_ERROR_INVALID
                 : status == CKKS_ERR_FORMAT || status == CKKS_ERR_TRUNCATED
                   || status == CKKS_ERR_CHECKSUM || status == CKKS_ERR_MISMATCH
                   || status == CKKS_ERR_VERSION ? TS_KEY_ERROR_CORRUPT
                 : TS_KEY_ERROR_FAILED,
                 "%s: %s", what, ckks_status_message (status));
  return FALSE;
}
