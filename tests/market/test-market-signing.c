/* test-market-signing.c: Ed25519 against RFC 8032, canonical manifests, name and digest checks.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <string.h>

#include "market-test-util.h"
#include "ts-market-manifest.h"
#include "ts-signing.h"

/* RFC 8032 §7.1, TEST 1 (empty message). */
#define RFC_SECRET "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"
#define RFC_PUBLIC "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
#define RFC_SIGNATURE "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"

static GBytes *
unhex (const char *hex)
{
  gsize n = strlen (hex) / 2;
  guint8 *out = g_malloc (n);

  for (gsize i = 0; i < n; i++)
    out[i] = (g_ascii_xdigit_value (hex[2 * i]) << 4) | g_ascii_xdigit_value (hex[2 * i + 1]);
  return g_bytes_new_take (out, n);
}

static char *
b64_of_hex (const char *hex)
{
  g_autoptr(GBytes) raw = unhex (hex);

  return g_base64_encode (g_bytes_get_data (raw, NULL), g_bytes_get_size (raw));
}

/* Writes the RFC secret as PKCS#8 PEM: the fixed Ed25519 prefix, then the seed. */
static char *
write_rfc_key (const char *dir)
{
  g_autofree char *der_hex = g_strconcat ("302e020100300506032b657004220420", RFC_SECRET, NULL);
  g_autofree char *b64 = b64_of_hex (der_hex);
  g_autofree char *pem = g_strdup_printf ("-----BEGIN PRIVATE KEY-----\n%s\n"
                                          "-----END PRIVATE KEY-----\n", b64);
  char *path = g_build_filename (dir, "rfc.pem", NULL);

  g_assert_true (g_file_set_contents (path, pem, -1, NULL));
  return path;
}

static void
test_rfc8032_vector (void)
{
  g_autofree char *dir = market_tmpdir (), *path = write_rfc_key (dir);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSigningKey) key = ts_signing_key_load_private (path, &error);
  g_autofree char *pub = NULL, *sig = NULL, *want_pub = b64_of_hex (RFC_PUBLIC);
  g_autofree char *want_sig = b64_of_hex (RFC_SIGNATURE);
  g_autoptr(TsSigningKey) verifier = NULL;

  g_assert_no_error (error);
  pub = ts_signing_key_get_public_base64 (key);
  g_assert_cmpstr (pub, ==, want_pub);
  sig = ts_signing_key_sign (key, "", 0, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (sig, ==, want_sig);
  verifier = ts_signing_key_new_public_base64 (want_pub, &error);
  g_assert_no_error (error);
  g_assert_true (ts_signing_key_verify (verifier, "", 0, want_sig, &error));
  g_assert_false (ts_signing_key_verify (verifier, "x", 1, want_sig, &error));
  g_assert_error (error, TS_SIGNING_ERROR, TS_SIGNING_ERROR_SIGNATURE);
  market_rm_rf (dir);
}

static void
test_key_roundtrip (void)
{
  g_autofree char *dir = market_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "k.pem", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsSigningKey) key = ts_signing_key_generate (&error);
  g_autoptr(TsSigningKey) again = NULL;
  g_autofree char *id = NULL, *id2 = NULL, *sig = NULL;
  GStatBuf st;

  g_assert_no_error (error);
  g_assert_true (ts_signing_key_save_private (key, path, &error));
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);
  again = ts_signing_key_load_private (path, &error);
  g_assert_no_error (error);
  id = ts_signing_key_get_id (key);
  id2 = ts_signing_key_get_id (again);
  g_assert_cmpstr (id, ==, id2);
  g_assert_true (g_str_has_prefix (id, "ed25519:"));
  g_assert_cmpuint (strlen (id), ==, strlen ("ed25519:") + 16);
  sig = ts_signing_key_sign (again, "abc", 3, &error);
  g_assert_true (ts_signing_key_verify (key, "abc", 3, sig, &error));
  g_assert_null (ts_signing_key_new_public_base64 ("AAAA", &error));
  g_assert_error (error, TS_SIGNING_ERROR, TS_SIGNING_ERROR_KEY);
  g_clear_error (&error);
  g_assert_false (ts_signing_key_verify (key, "abc", 3, "bm90IGEgc2lnbmF0dXJl", &error));
  g_assert_error (error, TS_SIGNING_ERROR, TS_SIGNING_ERROR_SIGNATURE);
  market_rm_rf (dir);
}

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

static void
test_canonical_form (void)
{
  g_autoptr(TsMarketManifest) m = ts_market_manifest_new ("my-adapter", "1.2.0", "acme", SHA_A);
  g_autoptr(TsMarketManifest) odd = ts_market_manifest_new ("q\"\\\n", "1", "p", "");
  g_autofree char *text = NULL, *odd_text = NULL;
  g_autoptr(GError) error = NULL;

  /* Files given out of order come out sorted by name. */
  ts_market_manifest_add_file (m, "b.safetensors", SHA_B, 1234567890123);
  ts_market_manifest_add_file (m, "a.json", SHA_A, 0);
  g_assert_true (ts_market_manifest_validate (m, &error));
  text = ts_market_manifest_to_canonical (m);
  g_assert_cmpstr (text, ==,
      "{\"base_model_sha256\":\"" SHA_A "\",\"files\":["
      "{\"name\":\"a.json\",\"sha256\":\"" SHA_A "\",\"size\":0},"
      "{\"name\":\"b.safetensors\",\"sha256\":\"" SHA_B "\",\"size\":1234567890123}],"
      "\"id\":\"my-adapter\",\"publisher\":\"acme\",\"version\":\"1.2.0\"}");
  /* Escapes are minimal and fixed (such names fail validation anyway). */
  ts_market_manifest_add_file (odd, "f", SHA_A, 1);
  odd_text = ts_market_manifest_to_canonical (odd);
  g_assert_cmpstr (odd_text, ==, "{\"base_model_sha256\":\"\",\"files\":[{\"name\":\"f\","
                   "\"sha256\":\"" SHA_A "\",\"size\":1}],\"id\":\"q\\\"\\\\\\u000a\","
                   "\"publisher\":\"p\",\"version\":\"1\"}");
  g_assert_false (ts_market_manifest_validate (odd, &error));
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID);
}

static void
test_validation (void)
{
  static const char *bad_names[] = { "", ".hidden", "-x", "a/b", "..", "a b", "é", NULL };
  static const char *good_names[] = { "a", "adapter_model.safetensors", "v1.0.0+build", NULL };
  g_autoptr(TsMarketManifest) dup = ts_market_manifest_new ("a", "1", "p", NULL);
  g_autoptr(TsMarketManifest) badsha = ts_market_manifest_new ("a", "1", "p", NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *long_name = g_strnfill (129, 'x');

  for (const char **n = bad_names; *n; n++)
    g_assert_false (ts_market_name_is_safe (*n));
  for (const char **n = good_names; *n; n++)
    g_assert_true (ts_market_name_is_safe (*n));
  g_assert_false (ts_market_name_is_safe (long_name));
  ts_market_manifest_add_file (dup, "f", SHA_A, 1);
  ts_market_manifest_add_file (dup, "f", SHA_B, 2);
  g_assert_false (ts_market_manifest_validate (dup, &error));
  g_clear_error (&error);
  ts_market_manifest_add_file (badsha, "f", "ABCDEF", 1);
  g_assert_false (ts_market_manifest_validate (badsha, &error));
  g_assert_false (ts_sha256_hex_is_valid (SHA_A "0"));
  g_assert_true (ts_sha256_hex_is_valid (SHA_B));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/market/signing/rfc8032-vector", test_rfc8032_vector);
  g_test_add_func ("/market/signing/key-roundtrip", test_key_roundtrip);
  g_test_add_func ("/market/signing/canonical-form", test_canonical_form);
  g_test_add_func ("/market/signing/validation", test_validation);
  return g_test_run ();
}
