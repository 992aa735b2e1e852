/* test-market-model.c: base-model downloads from Hugging Face-style …/resolve/main/FILE URLs, with resume.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "market-test-util.h"
#include "ts-market-download.h"
#include "ts-signing.h"

#define MODEL_BYTES (2 * 1024 * 1024)

static MarketServer *server;
static TsMarketClient *client;
static char *extra_dir;
static SoupServer *hub;
static char *hub_url;
static const char *current_target;  /* adapter whose file the hub points at */

/* The hub answers …/resolve/main/FILE with a redirect to the file's storage,
 * as huggingface.co does; the storage here is the marketplace's blob route. */
static void
hub_cb (SoupServer *s, SoupServerMessage *msg, const char *path, GHashTable *query,
        gpointer user_data)
{
  g_autofree char *location = NULL;

  if (strcmp (path, "/tensafe/tiny-models/resolve/main/model.gguf") != 0)
    {
      soup_server_message_set_status (msg, 404, NULL);
      return;
    }
  location = g_strdup_printf ("%sv1/adapters/%s/versions/1.0.0/files/weights-extra.bin",
                              server->url, current_target);
  soup_server_message_set_redirect (msg, 302, location);
}

static void
start_hub (void)
{
  g_autoptr(GError) error = NULL;
  GSList *uris;

  hub = soup_server_new (NULL, NULL);
  soup_server_add_handler (hub, NULL, hub_cb, NULL, NULL);
  soup_server_listen_local (hub, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &error);
  g_assert_no_error (error);
  uris = soup_server_get_uris (hub);
  hub_url = g_uri_to_string (uris->data);
  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
}

static char *
local_sha (const char *adapter)
{
  g_autofree char *path = g_build_filename (extra_dir, adapter, "weights-extra.bin", NULL);

  return ts_sha256_file (path, NULL, NULL, NULL);
}

typedef struct
{
  GCancellable *cancellable;
  goffset       cancel_at;
  goffset       first;      /* first progress value seen */
} Cancel;

static void
cancel_cb (goffset received, goffset total, gpointer user_data)
{
  Cancel *c = user_data;

  g_assert_cmpint (total, ==, MODEL_BYTES);
  if (c->first == 0)
    c->first = received;
  if (received >= c->cancel_at)
    g_cancellable_cancel (c->cancellable);
}

static char *
download (const char *url, const char *dest, const char *sha, Cancel *c, GError **error)
{
  g_autoptr(GAsyncResult) res = NULL;

  ts_market_client_download_model_async (client, url, dest, sha, c ? cancel_cb : NULL, c,
                                         NULL, c ? c->cancellable : NULL,
                                         market_store_result, &res);
  market_wait (&res);
  return ts_market_client_download_model_finish (client, res, error);
}

static void
test_resolve_url (void)
{
  g_autofree char *a = ts_market_hf_resolve_url ("https://huggingface.co/", "Qwen/Qwen3.5-GGUF",
                                                 NULL, "model-q4_k_m.gguf");
  g_autofree char *b = ts_market_hf_resolve_url ("http://127.0.0.1:8/", "org/repo", "v1.0",
                                                 "sub dir/x.gguf");

  g_assert_cmpstr (a, ==, "https://huggingface.co/Qwen/Qwen3.5-GGUF/resolve/main/model-q4_k_m.gguf");
  g_assert_cmpstr (b, ==, "http://127.0.0.1:8/org/repo/resolve/v1.0/sub%20dir/x.gguf");
}

static void
test_resume_through_redirect (void)
{
  g_autofree char *dir = market_tmpdir ();
  g_autofree char *dest = g_build_filename (dir, "model.gguf", NULL);
  g_autofree char *url = ts_market_hf_resolve_url (hub_url, "tensafe/tiny-models", NULL,
                                                   "model.gguf");
  g_autofree char *want = local_sha ("model-a"), *sha = NULL, *got = NULL;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;
  Cancel c = { cancellable, MODEL_BYTES / 4, 0 };
  Cancel resume = { NULL, G_MAXINT64, 0 };
  goffset size = 0;

  current_target = "model-a";
  g_assert_null (download (url, dest, want, &c, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  sha = download (url, dest, want, &resume, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (sha, ==, want);
  /* The second run went on from the bytes the first one kept. */
  g_assert_cmpint (resume.first, >, MODEL_BYTES / 4);
  got = ts_sha256_file (dest, &size, NULL, &error);
  g_assert_cmpstr (got, ==, want);
  g_assert_cmpint (size, ==, MODEL_BYTES);
  market_rm_rf (dir);
}

/* The file behind the URL changed between attempts: If-Range makes the
 * server send all of the new file, and the result is that file. */
static void
test_file_changed_between_attempts (void)
{
  g_autofree char *dir = market_tmpdir ();
  g_autofree char *dest = g_build_filename (dir, "model.gguf", NULL);
  g_autofree char *url = ts_market_hf_resolve_url (hub_url, "tensafe/tiny-models", NULL,
                                                   "model.gguf");
  g_autofree char *want = local_sha ("model-b"), *sha = NULL;
  g_autoptr(GCancellable) cancellable = g_cancellable_new ();
  g_autoptr(GError) error = NULL;
  Cancel c = { cancellable, MODEL_BYTES / 3, 0 };

  current_target = "model-a";
  g_assert_null (download (url, dest, NULL, &c, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_clear_error (&error);
  current_target = "model-b";
  sha = download (url, dest, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (sha, ==, want);
  market_rm_rf (dir);
}

static void
test_wrong_digest_and_missing (void)
{
  g_autofree char *dir = market_tmpdir ();
  g_autofree char *dest = g_build_filename (dir, "model.gguf", NULL);
  g_autofree char *part = g_strconcat (dest, ".part", NULL);
  g_autofree char *url = ts_market_hf_resolve_url (hub_url, "tensafe/tiny-models", NULL,
                                                   "model.gguf");
  g_autofree char *missing = ts_market_hf_resolve_url (hub_url, "tensafe/tiny-models", NULL,
                                                       "nope.gguf");
  g_autofree char *wrong = g_strnfill (64, '0'), *sha = NULL;
  g_autoptr(GError) error = NULL;

  current_target = "model-a";
  sha = download (url, dest, wrong, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_CHECKSUM);
  g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (part, G_FILE_TEST_EXISTS));
  g_clear_error (&error);
  sha = download (missing, dest, NULL, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NOT_FOUND);
  market_rm_rf (dir);
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *a = NULL, *b = NULL;
  const char *imports[2];
  int rc;

  g_test_init (&argc, &argv, NULL);
  extra_dir = market_tmpdir ();
  a = g_build_filename (extra_dir, "model-a", NULL);
  b = g_build_filename (extra_dir, "model-b", NULL);
  market_write_adapter (a, "model-a", "acme", "1.0.0", MODEL_BYTES);
  market_write_adapter (b, "model-b", "acme", "1.0.0", MODEL_BYTES);
  imports[0] = extra_dir;
  imports[1] = NULL;
  server = market_server_start (imports, NULL);
  client = ts_market_client_new (server->url, &error);
  g_assert_no_error (error);
  start_hub ();
  g_test_add_func ("/market/model/resolve-url", test_resolve_url);
  g_test_add_func ("/market/model/resume-through-redirect", test_resume_through_redirect);
  g_test_add_func ("/market/model/file-changed", test_file_changed_between_attempts);
  g_test_add_func ("/market/model/wrong-digest-and-missing", test_wrong_digest_and_missing);
  rc = g_test_run ();
  g_object_unref (hub);
  g_free (hub_url);
  g_object_unref (client);
  market_server_stop (server);
  market_rm_rf (extra_dir);
  return rc;
}
