/* test-key-file.c: the sealed key file: round trip, wrong passphrase, damage, atomic writes.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ts-key-file.h"
#include "ts-key-pair.h"
#include "ts-test-util.h"
#include "ts-write-atomic-private.h"

#define PASSPHRASE "correct horse battery staple"
/* A cheap scrypt cost keeps the many unlock attempts quick. */
static const TsScryptParams cheap_kdf = { .log2_n = 10, .r = 8, .p = 1 };

static const double values[] = { 0.5, -1.25, 3.0, 7.75, -0.001 };

typedef struct {
  TsKeyPair *pair;
  GBytes *file_bytes;        /* sealed with cheap_kdf and PASSPHRASE */
} Shared;

static Shared shared;

static void
shared_init (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyFile) file = NULL;

  shared.pair = ts_key_pair_generate ("fast", NULL, NULL, &error);
  g_assert_no_error (error);
  file = ts_key_pair_seal (shared.pair, PASSPHRASE, &cheap_kdf, 1700000000, NULL, NULL, &error);
  g_assert_no_error (error);
  shared.file_bytes = ts_key_file_serialize (file);
}

static GBytes *
serialize_pk (const TsKeyPair *pair)
{
  gsize len = ckks_public_key_serialized_size (pair->pk);
  guint8 *buf = g_malloc (len);

  g_assert_cmpint (ckks_public_key_serialize (pair->pk, buf, len), ==, CKKS_OK);
  return g_bytes_new_take (buf, len);
}

/* Encrypts the test values under @sk and decrypts them with @other. */
static void
assert_decrypts (const TsKeyPair *sealer, const TsKeyPair *opener)
{
  guint32 limbs = ckks_context_params (sealer->ctx)->n_moduli;
  CkksCiphertext *ct = NULL, *ct2 = NULL;
  CkksPlaintext *pt = NULL;
  double out[G_N_ELEMENTS (values)];
  gsize len;
  g_autofree guint8 *buf = NULL;

  g_assert_cmpint (ckks_ciphertext_new (sealer->ctx, limbs, &ct), ==, CKKS_OK);
  g_assert_cmpint (ckks_encrypt_values_sk (sealer->sk, values, NULL, G_N_ELEMENTS (values),
                                           0x1p40, ct), ==, CKKS_OK);
  /* Carry the ciphertext over to the other context as a remote party would. */
  len = ckks_ciphertext_serialized_size (ct);
  buf = g_malloc (len);
  g_assert_cmpint (ckks_ciphertext_serialize (ct, buf, len), ==, CKKS_OK);
  g_assert_cmpint (ckks_ciphertext_deserialize (opener->ctx, buf, len, &ct2), ==, CKKS_OK);
  g_assert_cmpint (ckks_plaintext_new (opener->ctx, limbs, &pt), ==, CKKS_OK);
  g_assert_cmpint (ckks_decrypt (opener->sk, ct2, pt), ==, CKKS_OK);
  g_assert_cmpint (ckks_decode (pt, out, NULL, G_N_ELEMENTS (values)), ==, CKKS_OK);
  for (guint i = 0; i < G_N_ELEMENTS (values); i++)
    g_assert_cmpfloat_with_epsilon (out[i], values[i], 1e-6);
  ckks_plaintext_free (pt);
  ckks_ciphertext_free (ct2);
  ckks_ciphertext_free (ct);
}

static TsKeyFile *
parse_shared (void)
{
  g_autoptr (GError) error = NULL;
  gsize len;
  const guint8 *data = g_bytes_get_data (shared.file_bytes, &len);
  TsKeyFile *file = ts_key_file_parse (data, len, &error);

  g_assert_no_error (error);
  return file;
}

static void
test_round_trip (void)
{
  g_autoptr (TsKeyFile) file = parse_shared ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyPair) opened = NULL;
  g_autoptr (GBytes) pk = serialize_pk (shared.pair);
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree char *hex = NULL, *upper = NULL;
  g_autoptr (GString) expected = g_string_new (NULL);
  gsize len;
  const guint8 *data;

  g_assert_cmpstr (file->preset, ==, "fast");
  g_assert_cmpint (file->created, ==, 1700000000);
  g_assert_true (g_bytes_equal (file->public_key, pk));

  opened = ts_key_file_unlock (file, PASSPHRASE, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_decrypts (shared.pair, opened);

  /* Fingerprint: SHA-256 over the serialised parameters and public key. */
  data = g_bytes_get_data (file->params, &len);
  g_checksum_update (sum, data, (gssize) len);
  data = g_bytes_get_data (pk, &len);
  g_checksum_update (sum, data, (gssize) len);
  upper = g_ascii_strup (g_checksum_get_string (sum), -1);
  for (guint i = 0; i < 64; i += 4)
    g_string_append_printf (expected, "%s%.4s", i ? " " : "", upper + i);
  hex = ts_key_file_fingerprint_hex (file);
  g_assert_cmpstr (hex, ==, expected->str);
}

/* The real cost: N = 2^15, r = 8, p = 1. */
static void
test_default_kdf (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyFile) file = NULL;
  g_autoptr (TsKeyPair) opened = NULL;
  gint64 start;

  file = ts_key_pair_seal (shared.pair, PASSPHRASE, NULL, 0, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (file->kdf.log2_n, ==, 15);
  g_assert_cmpuint (file->kdf.r, ==, 8);
  g_assert_cmpuint (file->kdf.p, ==, 1);
  start = g_get_monotonic_time ();
  opened = ts_key_file_unlock (file, PASSPHRASE, NULL, NULL, &error);
  g_assert_no_error (error);
  g_test_message ("unlock with the default scrypt cost: %.0f ms",
                  (g_get_monotonic_time () - start) / 1000.0);
  assert_decrypts (shared.pair, opened);
}

static void
test_wrong_passphrase (void)
{
  g_autoptr (TsKeyFile) file = parse_shared ();
  static const char *const wrong[] = { "", "correct horse battery stapl",
                                       "correct horse battery staple ", "Correct horse battery staple" };

  for (guint i = 0; i < G_N_ELEMENTS (wrong); i++)
    {
      g_autoptr (GError) error = NULL;
      TsKeyPair *opened = ts_key_file_unlock (file, wrong[i], NULL, NULL, &error);
      g_assert_null (opened);
      g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_WRONG_PASSPHRASE);
    }
}

static void
test_seal_refuses_empty_passphrase (void)
{
  g_autoptr (GError) error = NULL;
  TsKeyFile *file = ts_key_pair_seal (shared.pair, "", &cheap_kdf, 0, NULL, NULL, &error);

  g_assert_null (file);
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_INVALID);
}

static void
assert_corrupt (const guint8 *data, gsize len)
{
  g_autoptr (GError) error = NULL;
  TsKeyFile *file = ts_key_file_parse (data, len, &error);

  g_assert_null (file);
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_CORRUPT);
}

static void
test_every_truncation (void)
{
  gsize len;
  const guint8 *data = g_bytes_get_data (shared.file_bytes, &len);
  g_autofree guint8 *copy = g_memdup2 (data, len);

  /* A copy per length would be slow; a heap copy of the whole still makes
   * any read past the cut visible to ASan only partly, so also check the
   * exact-size copies of the short prefixes. */
  for (gsize cut = 0; cut < len; cut++)
    assert_corrupt (copy, cut);
  for (gsize cut = 0; cut < 512; cut++)
    {
      g_autofree guint8 *prefix = g_memdup2 (data, cut);
      assert_corrupt (prefix, cut);
    }
  /* Extra bytes at the end are damage too. */
  g_autofree guint8 *longer = g_malloc0 (len + 1);
  memcpy (longer, data, len);
  assert_corrupt (longer, len + 1);
}

static void
flip_and_check (guint8 *copy, gsize len, gsize at, guint8 mask)
{
  copy[at] ^= mask;
  assert_corrupt (copy, len);
  copy[at] ^= mask;
}

static void
test_bit_flips (void)
{
  gsize len;
  const guint8 *data = g_bytes_get_data (shared.file_bytes, &len);
  g_autofree guint8 *copy = g_memdup2 (data, len);
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());

  /* Every byte of the header, parameters and the sealed key at the end
   * (hashing the whole file each time: every byte would take minutes). */
  for (gsize at = 0; at < MIN (len, 1024); at++)
    flip_and_check (copy, len, at, (guint8) (1u << (at % 8)));
  for (gsize at = len > 4096 ? len - 4096 : 0; at < len; at++)
    flip_and_check (copy, len, at, (guint8) (1u << (at % 8)));
  for (guint i = 0; i < 512; i++)
    flip_and_check (copy, len, (gsize) g_rand_int_range (rng, 0, (gint32) len), 0x40);
}

/* Offsets of the public key and the sealed key, from the documented layout. */
static void
locate_blobs (const guint8 *data, gsize len, gsize *pk_at, gsize *sealed_at)
{
  g_autoptr (TsKeyFile) file = parse_shared ();
  gsize pk_len = g_bytes_get_size (file->public_key);
  gsize sealed_len = g_bytes_get_size (file->sealed);

  *sealed_at = len - 32 - sealed_len;
  *pk_at = *sealed_at - 4 - pk_len;
  g_assert_cmpmem (data + *pk_at, pk_len, g_bytes_get_data (file->public_key, NULL), pk_len);
}

static void
fix_checksum (guint8 *data, gsize len)
{
  gsize digest_len = 32;
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);

  g_checksum_update (sum, data, (gssize) (len - 32));
  g_checksum_get_digest (sum, data + len - 32, &digest_len);
}

/* Someone who edits the file and fixes the checksum still cannot make it
 * load: the GCM tag covers the sealed key, the pair check the public key. */
static void
test_tampered_with_valid_checksum (void)
{
  gsize len, pk_at, sealed_at;
  const guint8 *data = g_bytes_get_data (shared.file_bytes, &len);
  g_autofree guint8 *copy = g_memdup2 (data, len);
  gsize targets[] = { 0, 0, 0, 0 };

  locate_blobs (data, len, &pk_at, &sealed_at);
  targets[0] = sealed_at + 12 + 32 + 5;    /* nonce */
  targets[1] = sealed_at + 12 + 32 + 12 + 100;  /* encrypted coefficients */
  targets[2] = len - 32 - 3;                /* GCM tag */
  targets[3] = pk_at + 12 + 32 + 16 + 64;   /* a residue of the public key */
  for (guint i = 0; i < G_N_ELEMENTS (targets); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (TsKeyFile) file = NULL;
      TsKeyPair *opened;

      copy[targets[i]] ^= 0x01;
      fix_checksum (copy, len);
      file = ts_key_file_parse (copy, len, &error);
      g_assert_no_error (error);
      opened = ts_key_file_unlock (file, PASSPHRASE, NULL, NULL, &error);
      g_assert_null (opened);
      g_assert_nonnull (error);
      g_assert_true (error->domain == TS_KEY_ERROR);
      g_assert_true (error->code == TS_KEY_ERROR_WRONG_PASSPHRASE || error->code == TS_KEY_ERROR_CORRUPT);
      memcpy (copy, data, len);
    }
}

static void
test_unreasonable_kdf_refused (void)
{
  gsize len;
  const guint8 *data = g_bytes_get_data (shared.file_bytes, &len);
  g_autofree guint8 *copy = g_memdup2 (data, len);

  copy[12] = 40;  /* log2 N = 40: terabytes of memory */
  fix_checksum (copy, len);
  assert_corrupt (copy, len);
}

/* Sets the header's scrypt costs (log2 N at byte 12, r at 16, p at 20),
 * fixes the checksum and parses. */
static TsKeyFile *
parse_with_kdf (guint32 log2_n, guint32 r, guint32 p, GError **error)
{
  gsize len;
  const guint8 *data = g_bytes_get_data (shared.file_bytes, &len);
  g_autofree guint8 *copy = g_memdup2 (data, len);
  guint32 fields[3] = { GUINT32_TO_LE (log2_n), GUINT32_TO_LE (r), GUINT32_TO_LE (p) };

  memcpy (copy + 12, fields, sizeof fields);
  fix_checksum (copy, len);
  return ts_key_file_parse (copy, len, error);
}

/* The costs the old bounds let a hostile file ask for (N = 2^20, r = 32:
 * 4 GiB; p = 16: minutes) are refused before any derivation, with the
 * costs named; the vault's own setting with its margin still opens. */
static void
test_kdf_cost_capped (void)
{
  const guint32 refused[][3] = { { 20, 32, 1 }, { 20, 8, 1 }, { 18, 8, 1 }, { 15, 8, 16 },
                                 { 15, 32, 2 }, { 17, 8, 2 } };
  const guint32 accepted[][3] = { { 15, 8, 1 }, { 17, 8, 1 }, { 15, 8, 4 }, { 10, 8, 1 },
                                  { 16, 16, 1 } };

  for (gsize i = 0; i < G_N_ELEMENTS (refused); i++)
    {
      g_autoptr (GError) error = NULL;
      gint64 start = g_get_monotonic_time ();
      TsKeyFile *file = parse_with_kdf (refused[i][0], refused[i][1], refused[i][2], &error);

      g_assert_null (file);
      g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_CORRUPT);
      g_assert_nonnull (strstr (error->message, "key-derivation cost"));
      g_assert_cmpint (g_get_monotonic_time () - start, <, G_USEC_PER_SEC);
    }
  for (gsize i = 0; i < G_N_ELEMENTS (accepted); i++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (TsKeyFile) file = parse_with_kdf (accepted[i][0], accepted[i][1],
                                                   accepted[i][2], &error);
      g_assert_no_error (error);
      g_assert_cmpuint (file->kdf.log2_n, ==, accepted[i][0]);
    }
}

/* The exported file is exactly the documented public fields, nothing more. */
static void
test_export_has_no_secret (void)
{
  g_autoptr (TsKeyFile) file = parse_shared ();
  g_autoptr (GBytes) exported = ts_key_file_export_public (file);
  gsize len, sealed_len, params_len, pk_len, at = 8;
  const guint8 *data = g_bytes_get_data (exported, &len);
  const guint8 *sealed = g_bytes_get_data (file->sealed, &sealed_len);
  const guint8 *params = g_bytes_get_data (file->params, &params_len);
  const guint8 *pk = g_bytes_get_data (file->public_key, &pk_len);
  guint32 field;

  g_assert_cmpmem (data, 4, "TSPK", 4);
  memcpy (&field, data + at, 4);
  g_assert_cmpuint (GUINT32_FROM_LE (field), ==, 4);
  g_assert_cmpmem (data + at + 4, 4, "fast", 4);
  at += 8;
  memcpy (&field, data + at, 4);
  g_assert_cmpuint (GUINT32_FROM_LE (field), ==, params_len);
  g_assert_cmpmem (data + at + 4, params_len, params, params_len);
  at += 4 + params_len;
  memcpy (&field, data + at, 4);
  g_assert_cmpuint (GUINT32_FROM_LE (field), ==, pk_len);
  g_assert_cmpmem (data + at + 4, pk_len, pk, pk_len);
  at += 4 + pk_len;
  g_assert_cmpuint (at + 32, ==, len);
  /* And no stretch of the sealed key past its public header (frame and
   * parameter fingerprint) appears anywhere in it. */
  for (gsize i = 12 + 32; i + 16 <= sealed_len; i += 16)
    g_assert_null (memmem (data, len, sealed + i, 16));
}

/* The handover blob opens with its one-time key, and only with it. */
static void
test_handover (void)
{
  g_autoptr (GError) error = NULL;
  guint8 key[32];
  g_autoptr (GBytes) sealed = ts_key_pair_seal_for_handover (shared.pair, key, &error);
  CkksSecretKey *sk = NULL;
  gsize len;
  const guint8 *data;

  g_assert_no_error (error);
  data = g_bytes_get_data (sealed, &len);
  g_assert_cmpint (ckks_secret_key_unseal (shared.pair->ctx, key, data, len, &sk), ==, CKKS_OK);
  {
    /* The handed-over key decrypts what the vault's key encrypted. */
    TsKeyPair view = { shared.pair->ctx, sk, shared.pair->pk, NULL };
    assert_decrypts (shared.pair, &view);
  }
  ckks_secret_key_free (sk);
  key[5] ^= 0x10;
  sk = NULL;
  g_assert_cmpint (ckks_secret_key_unseal (shared.pair->ctx, key, data, len, &sk), ==, CKKS_ERR_AUTH);
  g_assert_null (sk);
}

static char *
make_temp_dir (void)
{
  g_autoptr (GError) error = NULL;
  char *dir = g_dir_make_tmp ("ts-key-file-XXXXXX", &error);

  g_assert_no_error (error);
  return dir;
}

static guint
count_entries (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;

  while (g_dir_read_name (d) != NULL)
    n++;
  return n;
}

/* A crash before the rename (or in the middle of writing) leaves the old
 * key loading as before; the next complete write replaces it. */
static void
test_atomic_replace (void)
{
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *path = g_build_filename (dir, "key.tskey", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyPair) second = ts_key_pair_generate ("fast", NULL, NULL, &error);
  g_autoptr (TsKeyFile) first_file = parse_shared ();
  g_autoptr (TsKeyFile) second_file = NULL;
  g_autoptr (GBytes) second_bytes = NULL;
  g_autofree char *first_fp = ts_key_file_fingerprint_hex (first_file);
  struct stat st;

  g_assert_true (ts_key_file_save (first_file, path, &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);

  second_file = ts_key_pair_seal (second, PASSPHRASE, &cheap_kdf, 0, NULL, NULL, &error);
  g_assert_no_error (error);
  second_bytes = ts_key_file_serialize (second_file);
  for (TsWriteStop stop = TS_WRITE_STOP_BEFORE_RENAME; stop <= TS_WRITE_STOP_MID_DATA; stop++)
    {
      g_autoptr (GError) crash = NULL;
      g_autoptr (TsKeyFile) loaded = NULL;
      g_autoptr (TsKeyPair) opened = NULL;
      g_autofree char *fp = NULL;

      g_assert_false (_ts_write_atomic_until (path, g_bytes_get_data (second_bytes, NULL),
                                              g_bytes_get_size (second_bytes), stop, &crash));
      loaded = ts_key_file_load (path, &error);
      g_assert_no_error (error);
      fp = ts_key_file_fingerprint_hex (loaded);
      g_assert_cmpstr (fp, ==, first_fp);
      opened = ts_key_file_unlock (loaded, PASSPHRASE, NULL, NULL, &error);
      g_assert_no_error (error);
      assert_decrypts (shared.pair, opened);
    }
  /* The stale temporary files are there, and ignored. */
  g_assert_cmpuint (count_entries (dir), ==, 3);

  g_assert_true (ts_key_file_save (second_file, path, &error));
  g_autoptr (TsKeyFile) replaced = ts_key_file_load (path, &error);
  g_assert_no_error (error);
  g_autofree char *replaced_fp = ts_key_file_fingerprint_hex (replaced);
  g_autofree char *second_fp = ts_key_file_fingerprint_hex (second_file);
  g_assert_cmpstr (replaced_fp, ==, second_fp);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);
  ts_test_remove_tree (dir);
}

static void
test_missing_file (void)
{
  g_autofree char *dir = make_temp_dir ();
  g_autofree char *path = g_build_filename (dir, "key.tskey", NULL);
  g_autoptr (GError) error = NULL;

  g_assert_null (ts_key_file_load (path, &error));
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_NOT_FOUND);
  ts_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  shared_init ();
  g_test_add_func ("/key-file/round-trip", test_round_trip);
  g_test_add_func ("/key-file/default-kdf", test_default_kdf);
  g_test_add_func ("/key-file/wrong-passphrase", test_wrong_passphrase);
  g_test_add_func ("/key-file/empty-passphrase-refused", test_seal_refuses_empty_passphrase);
  g_test_add_func ("/key-file/every-truncation", test_every_truncation);
  g_test_add_func ("/key-file/bit-flips", test_bit_flips);
  g_test_add_func ("/key-file/tampered-with-valid-checksum", test_tampered_with_valid_checksum);
  g_test_add_func ("/key-file/unreasonable-kdf-refused", test_unreasonable_kdf_refused);
  g_test_add_func ("/key-file/kdf-cost-capped", test_kdf_cost_capped);
  g_test_add_func ("/key-file/export-has-no-secret", test_export_has_no_secret);
  g_test_add_func ("/key-file/atomic-replace", test_atomic_replace);
  g_test_add_func ("/key-file/handover", test_handover);
  g_test_add_func ("/key-file/missing", test_missing_file);
  rc = g_test_run ();
  ts_key_pair_free (shared.pair);
  g_bytes_unref (shared.file_bytes);
  return rc;
}
