/* test-market-install.c: verified install, cancel and resume, and every refusal leaving nothing installed.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <string.h>

#include "market-test-util.h"
#include "ts-market-download.h"
#include "ts-market-install.h"
#include "ts-signing.h"

#define BIG_BYTES (3 * 1024 * 1024)

static MarketServer *server;
static TsMarketClient *client;
static char *extra_dir;

typedef struct
{
  goffset       first;      /* first progress value seen */
  goffset       last;
  goffset       total;
  gboolean      monotonic;
  goffset       cancel_at;  /* cancel once this many bytes arrived (0: never) */
  GCancellable *cancellable;
} Progress;

static void
progress_cb (goffset received, goffset total, gpointer user_data)
{
  Progress *p = user_data;

  if (p->first == 0)
    p->first = received;
  p->monotonic &= received >= p->last;
  p->last = received;
  p->total = total;
  if (p->cancel_at > 0 && received >= p->cancel_at)
    g_cancellable_cancel (p->cancellable);
}

static char *
install (TsMarketAdapter *a, TsMarketKeyring *keyring, const char *dir, Progress *p,
         GError **error)
{
  g_autoptr(GAsyncResult) res = NULL;

  ts_market_client_install_async (client, a, NULL, keyring, dir, p ? progress_cb : NULL, p,
                                  NULL, p ? p->cancellable : NULL, market_store_result, &res);
  market_wait (&res);
  return ts_market_client_install_finish (client, res, error);
}

static TsMarketKeyring *
demo_keyring (void)
{
  TsMarketKeyring *keyring = ts_market_keyring_new (NULL);

  market_pin_publisher (client, keyring, "tensafe-demo");
  market_pin_publisher (client, keyring, "acme");
  return keyring;
}

/* Nothing of @id under @dir: no folder, no staging folder left behind. */
static void
assert_not_installed (const char *dir, const char *id)
{
  g_autofree char *target = g_build_filename (dir, id, NULL);
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;

  g_assert_false (g_file_test (target, G_FILE_TEST_EXISTS));
  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    g_assert_false (g_str_has_prefix (name, ".staging-"));
}

static void
test_install_and_remove (void)
{
  g_autofree char *dir = market_tmpdir (), *path = NULL, *again = NULL;
  g_autoptr(TsMarketKeyring) keyring = demo_keyring ();
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, "tiny-golden", &error);
  g_autoptr(GPtrArray) installed = NULL;
  Progress p = { .monotonic = TRUE };
  const char *names[] = { "adapter_config.json", "adapter_model.safetensors" };

  g_assert_no_error (error);
  path = install (a, keyring, dir, &p, &error);
  g_assert_no_error (error);
  g_assert_true (p.monotonic);
  g_assert_cmpint (p.last, ==, 446 + 33832);
  g_assert_cmpint (p.total, ==, 446 + 33832);
  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *got = g_build_filename (path, names[i], NULL);
      g_autofree char *want = g_build_filename (market_demo_dir (), "tiny-golden", names[i],
                                                NULL);
      market_assert_same_file (got, want);
    }
  installed = ts_market_list_installed (dir, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (installed->len, ==, 1);
  g_assert_cmpstr (((TsMarketInstalled *) installed->pdata[0])->id, ==, "tiny-golden");
  g_assert_cmpstr (((TsMarketInstalled *) installed->pdata[0])->version, ==, "1.0.0");
  ts_market_verify_installed (dir, "tiny-golden", keyring, NULL, &error);
  g_assert_no_error (error);
  /* A file changed on disk after the install is caught before use. */
  {
    g_autofree char *cfg = g_build_filename (path, "adapter_config.json", NULL);
    g_autoptr(TsMarketKeyring) empty = ts_market_keyring_new (NULL);
    g_assert_true (g_file_set_contents (cfg, "{}", -1, NULL));
    ts_market_verify_installed (dir, "tiny-golden", keyring, NULL, &error);
    g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_CHECKSUM);
    g_clear_error (&error);
    ts_market_verify_installed (dir, "tiny-golden", empty, NULL, &error);
    g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_UNKNOWN_KEY);
    g_clear_error (&error);
  }
  /* Installing again swaps the folder in place (and repairs it). */
  again = install (a, keyring, dir, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (again, ==, path);
  ts_market_verify_installed (dir, "tiny-golden", keyring, NULL, &error);
  g_assert_no_error (error);
  g_clear_pointer (&installed, g_ptr_array_unref);
  installed = ts_market_list_installed (dir, &error);
  g_assert_cmpuint (installed->len, ==, 1);
  assert_not_installed (dir, "nothing");
  ts_market_remove_installed (dir, "tiny-golden", &error);
  g_assert_no_error (error);
  assert_not_installed (dir, "tiny-golden");
  ts_market_remove_installed (dir, "tiny-golden", &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NOT_FOUND);
  market_rm_rf (dir);
}

/* The string list @member of the JSON object in @path. */
static GStrv
read_list (const char *path, const char *member)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GError) error = NULL;
  JsonObject *o;
  JsonArray *a;
  GStrv out;

  g_assert_true (json_parser_load_from_file (parser, path, &error));
  g_assert_no_error (error);
  o = json_node_get_object (json_parser_get_root (parser));
  g_test_message ("%s in %s", member, path);
  g_assert_true (json_object_has_member (o, member));
  a = json_object_get_array_member (o, member);
  g_assert_nonnull (a);
  out = g_new0 (char *, json_array_get_length (a) + 1);
  for (guint i = 0; i < json_array_get_length (a); i++)
    out[i] = g_strdup (json_array_get_string_element (a, i));
  return out;
}

/* The installed release file carries the publisher's routing hints as its
 * metadata.json gives them, next to the tags; they lie outside the signed
 * manifest, so the install verifies with them, and without them (a release
 * written before they existed). */
static void
test_release_routing_hints (void)
{
  const char *members[] = { "tags", "keywords", "examples" };
  g_autofree char *dir = market_tmpdir (), *path = NULL, *release = NULL, *meta = NULL;
  g_autofree char *text = NULL;
  g_autoptr(TsMarketKeyring) keyring = demo_keyring ();
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, "tiny-pirate", &error);
  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(GPtrArray) installed = NULL;
  JsonObject *o;

  g_assert_no_error (error);
  path = install (a, keyring, dir, NULL, &error);
  g_assert_no_error (error);
  release = g_build_filename (path, TS_MARKET_RELEASE_FILE, NULL);
  meta = g_build_filename (market_demo_dir (), "tiny-pirate", "metadata.json", NULL);
  for (guint m = 0; m < G_N_ELEMENTS (members); m++)
    {
      g_auto(GStrv) got = read_list (release, members[m]), want = read_list (meta, members[m]);
      g_test_message ("%s: %u entries", members[m], g_strv_length (want));
      g_assert_cmpuint (g_strv_length (want), >, 0);
      g_assert_cmpuint (g_strv_length (got), ==, g_strv_length (want));
      for (guint i = 0; want[i] != NULL; i++)
        g_assert_cmpstr (got[i], ==, want[i]);
    }
  ts_market_verify_installed (dir, "tiny-pirate", keyring, NULL, &error);
  g_assert_no_error (error);
  /* A release file from before: no keywords, no examples. */
  g_assert_true (json_parser_load_from_file (parser, release, &error));
  o = json_node_get_object (json_parser_get_root (parser));
  json_object_remove_member (o, "keywords");
  json_object_remove_member (o, "examples");
  text = json_to_string (json_parser_get_root (parser), TRUE);
  g_assert_null (strstr (text, "matey"));
  g_assert_true (g_file_set_contents (release, text, -1, NULL));
  ts_market_verify_installed (dir, "tiny-pirate", keyring, NULL, &error);
  g_assert_no_error (error);
  installed = ts_market_list_installed (dir, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (installed->len, ==, 1);
  g_assert_cmpstr (((TsMarketInstalled *) installed->pdata[0])->id, ==, "tiny-pirate");
  market_rm_rf (dir);
}

static gint64
part_size (const char *downloads)
{
  g_autoptr(GDir) d = g_dir_open (downloads, 0, NULL);
  const char *name;
  gint64 total = 0;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    if (g_str_has_suffix (name, ".part"))
      {
        g_autofree char *path = g_build_filename (downloads, name, NULL);
        GStatBuf st;
        g_assert_cmpint (g_stat (path, &st), ==, 0);
        total += st.st_size;
      }
  return total;
}

static void
test_cancel_and_resume_install (void)
{
  g_autofree char *dir = market_tmpdir (), *path = NULL, *downloads = NULL;
  g_autofree char *got = NULL, *want = NULL;
  g_autoptr(TsMarketKeyring) keyring = demo_keyring ();
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, "big-adapter", &error);
  g_autoptr(GCancellable) cancel = g_cancellable_new ();
  Progress p = { .monotonic = TRUE, .cancel_at = BIG_BYTES / 3, .cancellable = cancel };
  Progress q = { .monotonic = TRUE };
  gint64 kept;

  g_assert_no_error (error);
  path = install (a, keyring, dir, &p, &error);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  assert_not_installed (dir, "big-adapter");
  downloads = g_build_filename (dir, ".downloads", NULL);
  kept = part_size (downloads);
  g_test_message ("cancelled with %" G_GINT64_FORMAT " bytes kept", kept);
  g_assert_cmpint (kept, >, 0);
  g_assert_cmpint (kept, <, BIG_BYTES);
  path = install (a, keyring, dir, &q, &error);
  g_assert_no_error (error);
  /* The second run started from the kept bytes, not from zero. */
  g_assert_cmpint (q.first, >, kept);
  g_assert_cmpint (q.last, ==, q.total);
  got = g_build_filename (path, "weights-extra.bin", NULL);
  want = g_build_filename (extra_dir, "big-adapter", "weights-extra.bin", NULL);
  market_assert_same_file (got, want);
  market_rm_rf (dir);
}

/* The same through the plain downloader: resumed_from reports the reuse. */
static void
test_cancel_and_resume_download (void)
{
  g_autofree char *dir = market_tmpdir ();
  g_autofree char *dest = g_build_filename (dir, "weights.bin", NULL);
  g_autofree char *url = ts_market_client_build_url (
      client, "/v1/adapters/big-adapter/versions/1.0.0/files/weights-extra.bin");
  g_autofree char *local = g_build_filename (extra_dir, "big-adapter", "weights-extra.bin", NULL);
  g_autofree char *want = ts_sha256_file (local, NULL, NULL, NULL);
  g_autofree char *sha = NULL;
  g_autoptr(GCancellable) cancel = g_cancellable_new ();
  g_autoptr(GAsyncResult) r1 = NULL, r2 = NULL;
  g_autoptr(GError) error = NULL;
  Progress p = { .monotonic = TRUE, .cancel_at = BIG_BYTES / 2, .cancellable = cancel };
  gint64 resumed = -1;

  ts_market_download_async (ts_market_client_get_session (client), url, dest, want, BIG_BYTES,
                            progress_cb, &p, NULL, cancel, market_store_result, &r1);
  market_wait (&r1);
  g_assert_null (ts_market_download_finish (r1, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
  ts_market_download_async (ts_market_client_get_session (client), url, dest, want, BIG_BYTES,
                            NULL, NULL, NULL, NULL, market_store_result, &r2);
  market_wait (&r2);
  sha = ts_market_download_finish (r2, &resumed, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (sha, ==, want);
  g_assert_cmpint (resumed, >=, BIG_BYTES / 2);
  g_assert_cmpint (resumed, <, BIG_BYTES);
  market_assert_same_file (dest, local);
  market_rm_rf (dir);
}

static char *
blob_of (TsMarketAdapter *a, const char *name)
{
  TsMarketVersion *v = ts_market_adapter_find_version (a, NULL);
  const TsMarketFile *f = ts_market_manifest_find_file (v->manifest, name);

  g_assert_nonnull (f);
  return market_server_blob_path (server, f->sha256);
}

static void
test_tampered_blob (void)
{
  g_autofree char *dir = market_tmpdir (), *blob = NULL, *data = NULL, *path = NULL;
  g_autoptr(TsMarketKeyring) keyring = demo_keyring ();
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, "tiny-pirate", &error);
  gsize len = 0;

  blob = blob_of (a, "adapter_model.safetensors");
  g_assert_true (g_file_get_contents (blob, &data, &len, NULL));
  data[len / 2] ^= 0x01;
  g_assert_true (g_file_set_contents (blob, data, len, NULL));
  path = install (a, keyring, dir, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_CHECKSUM);
  g_assert_null (path);
  assert_not_installed (dir, "tiny-pirate");
  data[len / 2] ^= 0x01;
  g_assert_true (g_file_set_contents (blob, data, len, NULL));
  market_rm_rf (dir);
}

static void
test_truncated_blob (void)
{
  g_autofree char *dir = market_tmpdir (), *blob = NULL, *data = NULL, *path = NULL;
  g_autoptr(TsMarketKeyring) keyring = demo_keyring ();
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, "tiny-poet", &error);
  gsize len = 0;

  blob = blob_of (a, "adapter_model.safetensors");
  g_assert_true (g_file_get_contents (blob, &data, &len, NULL));
  g_assert_true (g_file_set_contents (blob, data, len / 2, NULL));
  path = install (a, keyring, dir, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_TRUNCATED);
  g_assert_null (path);
  assert_not_installed (dir, "tiny-poet");
  g_assert_true (g_file_set_contents (blob, data, len, NULL));
  market_rm_rf (dir);
}

static void
test_wrong_signature (void)
{
  g_autofree char *dir = market_tmpdir (), *path = NULL;
  g_autoptr(TsMarketKeyring) keyring = demo_keyring ();
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, "tiny-formal", &error);
  g_autoptr(TsMarketAdapter) b = market_get_adapter (client, "tiny-formal", &error);
  TsMarketVersion *v = ts_market_adapter_find_version (a, NULL);
  TsMarketVersion *w = ts_market_adapter_find_version (b, NULL);
  g_autofree guchar *sig = NULL;
  gsize len = 0;

  /* A flipped bit in the signature itself. */
  sig = g_base64_decode (v->signature, &len);
  sig[3] ^= 0x80;
  g_free (v->signature);
  v->signature = g_base64_encode (sig, len);
  path = install (a, keyring, dir, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_SIGNATURE);
  g_clear_error (&error);
  /* A server that lies about a file's digest, keeping the real signature. */
  g_free (((TsMarketFile *) w->manifest->files->pdata[0])->sha256);
  ((TsMarketFile *) w->manifest->files->pdata[0])->sha256 = g_strnfill (64, 'a');
  path = install (b, keyring, dir, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_SIGNATURE);
  assert_not_installed (dir, "tiny-formal");
  g_assert_false (g_file_test (dir, G_FILE_TEST_EXISTS) && part_size (dir) != 0);
  market_rm_rf (dir);
}

static void
test_unknown_key (void)
{
  g_autofree char *dir = market_tmpdir (), *path = NULL;
  g_autoptr(TsMarketKeyring) empty = ts_market_keyring_new (NULL);
  g_autoptr(TsMarketKeyring) other = ts_market_keyring_new (NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, "tiny-golden", &error);
  g_autoptr(GAsyncResult) res = NULL;
  g_autoptr(GPtrArray) acme = NULL;
  TsMarketPublisherKey *k;

  path = install (a, empty, dir, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_UNKNOWN_KEY);
  g_clear_error (&error);
  /* Another publisher's (valid) key pinned under this publisher's name. */
  ts_market_client_get_publisher_keys_async (client, "acme", NULL, market_store_result, &res);
  market_wait (&res);
  acme = ts_market_client_get_publisher_keys_finish (client, res, &error);
  g_assert_no_error (error);
  k = g_ptr_array_index (acme, 0);
  ts_market_keyring_pin (other, "tensafe-demo", k->key_id, k->public_key, &error);
  g_assert_no_error (error);
  path = install (a, other, dir, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_UNKNOWN_KEY);
  assert_not_installed (dir, "tiny-golden");
  market_rm_rf (dir);
}

static void
test_keyring_file (void)
{
  g_autofree char *dir = market_tmpdir ();
  g_autofree char *path = g_build_filename (dir, "pinned.json", NULL);
  g_autoptr(TsMarketKeyring) a = ts_market_keyring_new (path);
  g_autoptr(TsMarketKeyring) b = ts_market_keyring_new (path);
  g_autoptr(TsSigningKey) key = ts_signing_key_generate (NULL);
  g_autoptr(TsSigningKey) other = ts_signing_key_generate (NULL);
  g_autofree char *id = ts_signing_key_get_id (key), *pub = ts_signing_key_get_public_base64 (key);
  g_autofree char *other_pub = ts_signing_key_get_public_base64 (other);
  g_autoptr(GError) error = NULL;
  GStatBuf st;

  ts_market_keyring_pin (a, "someone", id, pub, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (path, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);
  ts_market_keyring_load (b, &error);
  g_assert_no_error (error);
  g_assert_true (ts_market_keyring_is_pinned (b, "someone", id));
  g_assert_false (ts_market_keyring_is_pinned (b, "someone-else", id));
  /* An id that does not belong to the key is refused. */
  ts_market_keyring_pin (a, "someone", id, other_pub, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID);
  market_rm_rf (dir);
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *big = NULL;
  int rc;

  g_test_init (&argc, &argv, NULL);
  extra_dir = market_tmpdir ();
  big = g_build_filename (extra_dir, "big-adapter", NULL);
  market_write_adapter (big, "big-adapter", "acme", "1.0.0", BIG_BYTES);
  server = market_server_start_demo_plus (extra_dir);
  client = ts_market_client_new (server->url, &error);
  g_assert_no_error (error);
  g_test_add_func ("/market/install/install-and-remove", test_install_and_remove);
  g_test_add_func ("/market/install/release-routing-hints", test_release_routing_hints);
  g_test_add_func ("/market/install/cancel-and-resume", test_cancel_and_resume_install);
  g_test_add_func ("/market/install/download-resume", test_cancel_and_resume_download);
  g_test_add_func ("/market/install/tampered-blob", test_tampered_blob);
  g_test_add_func ("/market/install/truncated-blob", test_truncated_blob);
  g_test_add_func ("/market/install/wrong-signature", test_wrong_signature);
  g_test_add_func ("/market/install/unknown-key", test_unknown_key);
  g_test_add_func ("/market/install/keyring-file", test_keyring_file);
  rc = g_test_run ();
  g_object_unref (client);
  market_server_stop (server);
  market_rm_rf (extra_dir);
  return rc;
}
