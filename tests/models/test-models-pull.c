/* test-models-pull.c: downloads against a local SoupServer: resume after a dropped
 * connection, a wrong digest refused, a full disk, cancel, fallback, chunked wheels;
 * a pull from a main loop, its progress on the loop's thread.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "models-test-hub.h"
#include "ts-models-async.h"
#include "ts-models-catalog.h"
#include "ts-models-error.h"
#include "ts-models-files.h"
#include "ts-models-http.h"
#include "ts-models-index.h"
#include "ts-models-pull.h"
#include "ts-test-util.h"

#define BODY_BYTES 300000

typedef struct
{
  ModelsTestHub  *hub;
  SoupSession    *session;
  GBytes         *body;
  char           *body_sha;
  char           *dir;
  TsModelCatalog *catalog;
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  GRand *rand = g_rand_new_with_seed ((guint32) ts_test_seed ());
  guint8 *bytes = g_malloc (BODY_BYTES);

  for (gsize i = 0; i < BODY_BYTES; i++)
    bytes[i] = (guint8) g_rand_int (rand);
  g_rand_free (rand);
  f->body = g_bytes_new_take (bytes, BODY_BYTES);
  f->body_sha = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, f->body);
  f->hub = models_test_hub_new ();
  f->session = ts_models_session_new ();
  f->dir = g_dir_make_tmp ("models-pull-XXXXXX", NULL);
  g_assert_nonnull (f->dir);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  ts_models_set_free_space_func (NULL, NULL);
  ts_model_catalog_free (f->catalog);
  ts_test_remove_tree (f->dir);
  g_free (f->dir);
  g_object_unref (f->session);
  models_test_hub_free (f->hub);
  g_free (f->body_sha);
  g_bytes_unref (f->body);
}

/* A one-model catalogue; @sources is the JSON of its "sources" array. */
static const TsModelEntry *
entry_for (Fixture *f, gint64 bytes, const char *sha, const char *sources)
{
  g_autofree char *bytes_json = bytes >= 0 ? g_strdup_printf ("%" G_GINT64_FORMAT, bytes)
                                           : g_strdup ("null");
  g_autofree char *sha_json = sha ? g_strdup_printf ("\"%s\"", sha) : g_strdup ("null");
  g_autofree char *json = g_strdup_printf (
    "{\"models\": [{\"name\": \"test-model\", \"title\": \"Test\", \"architecture\": \"qwen2\","
    " \"parameters\": \"1M\", \"quantisation\": \"Q8_0\", \"file\": \"test-model.gguf\","
    " \"bytes\": %s, \"approx_bytes\": %d, \"sha256\": %s, \"verified\": %s,"
    " \"license\": \"none\", \"context_length\": 512,"
    " \"attention\": {\"layers\": 1, \"kv_heads\": 1, \"head_dim\": 8}, \"sources\": %s}]}",
    bytes_json, BODY_BYTES, sha_json, sha && bytes >= 0 ? "true" : "false", sources);
  g_autoptr(GError) error = NULL;

  ts_model_catalog_free (f->catalog);
  f->catalog = ts_model_catalog_parse (json, -1, "test catalogue", &error);
  g_assert_no_error (error);
  return g_ptr_array_index (f->catalog->models, 0);
}

static char *
http_sources (Fixture *f, const char *path)
{
  g_autofree char *url = models_test_hub_url (f->hub, path);

  return g_strdup_printf ("[{\"kind\": \"http\", \"url\": \"%s\"}]", url);
}

static char *
pull (Fixture *f, const TsModelEntry *e, guint attempts, TsModelsProgressFunc progress,
      gpointer data, GCancellable *cancellable, GError **error)
{
  TsModelsPullOptions o = { f->session, attempts, progress, data, cancellable, NULL };

  return ts_models_pull (e, f->dir, &o, error);
}

static char *
in_dir (Fixture *f, const char *name)
{
  return g_build_filename (f->dir, name, NULL);
}

static void
assert_installed_body (Fixture *f, const char *path)
{
  g_autofree char *text = NULL;
  gsize len = 0;

  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  g_assert_cmpuint (len, ==, g_bytes_get_size (f->body));
  g_assert_true (memcmp (text, g_bytes_get_data (f->body, NULL), len) == 0);
}

static void
assert_file_digest (const char *path, const char *sha)
{
  g_autofree char *text = NULL;
  g_autofree char *digest = NULL;
  gsize len = 0;

  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  digest = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) text, len);
  g_assert_cmpstr (digest, ==, sha);
}

static gint
compare_names (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 (*(char *const *) a, *(char *const *) b);
}

/* Names in the models folder, sorted, joined by spaces ("" when empty). */
static char *
dir_listing (Fixture *f)
{
  g_autoptr(GDir) dir = g_dir_open (f->dir, 0, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *name;

  while ((name = g_dir_read_name (dir)) != NULL)
    g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, compare_names);
  g_ptr_array_add (names, NULL);
  return g_strjoinv (" ", (char **) names->pdata);
}

static char *
log_line (Fixture *f, guint i)
{
  g_autoptr(GPtrArray) log = models_test_hub_log (f->hub);

  g_assert_cmpuint (i, <, log->len);
  return g_strdup (g_ptr_array_index (log, i));
}

static guint
log_length (Fixture *f)
{
  g_autoptr(GPtrArray) log = models_test_hub_log (f->hub);

  return log->len;
}

static void
test_plain (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/model.gguf");
  const TsModelEntry *e = entry_for (f, BODY_BYTES, f->body_sha, sources);
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL, *listing = NULL, *line = NULL;

  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_installed_body (f, path);
  listing = dir_listing (f);
  g_assert_cmpstr (listing, ==, "test-model.gguf");
  line = log_line (f, 0);
  g_assert_cmpstr (line, ==, "/model.gguf -");
  g_assert_cmpuint (log_length (f), ==, 1);
  /* A second pull finds it installed and asks nothing. */
  g_free (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_EXISTS);
  g_assert_cmpuint (log_length (f), ==, 1);
}

/* What ts_models_pull_async() reported, and where. */
typedef struct
{
  GThread *main_thread;
  guint    reports;
  guint    off_main;      /* reports that ran on another thread */
  gint64   last_done;
  gboolean after_result;
  char    *path;
  GError  *error;
} AsyncPull;

static void
async_progress (const TsModelsProgress *progress, gpointer data)
{
  AsyncPull *a = data;

  a->reports++;
  a->off_main += g_thread_self () != a->main_thread;
  a->after_result |= a->path != NULL || a->error != NULL;
  a->last_done = progress->done;
}

static void
async_done (GObject *source, GAsyncResult *result, gpointer data)
{
  AsyncPull *a = data;

  a->path = ts_models_pull_finish (result, &a->error);
}

/* The main loop gets the installed path, and progress before it on its own
 * thread: the download's then the digest's bytes, each up to the body's size. */
static void
test_async (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/model.gguf");
  const TsModelEntry *e = entry_for (f, BODY_BYTES, f->body_sha, sources);
  AsyncPull a = { g_thread_self () };

  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  ts_models_pull_async (e, f->dir, async_progress, &a, NULL, async_done, &a);
  while (a.path == NULL && a.error == NULL)
    g_main_context_iteration (NULL, TRUE);
  g_assert_no_error (a.error);
  assert_installed_body (f, a.path);
  g_assert_cmpuint (a.reports, >, 0);
  g_assert_cmpuint (a.off_main, ==, 0);
  g_assert_false (a.after_result);
  g_assert_cmpint (a.last_done, ==, BODY_BYTES);
  /* Nothing more arrives once the result is in. */
  while (g_main_context_iteration (NULL, FALSE))
    ;
  g_assert_false (a.after_result);
  g_free (a.path);
}

static void
test_resume_after_drop (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/drop.gguf");
  const TsModelEntry *e = entry_for (f, BODY_BYTES, f->body_sha, sources);
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL, *first = NULL, *second = NULL, *expected = NULL;

  models_test_hub_serve (f->hub, "/drop.gguf", f->body);
  models_test_hub_drop (f->hub, "/drop.gguf", 123456, 1);
  path = pull (f, e, 3, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_installed_body (f, path);
  first = log_line (f, 0);
  second = log_line (f, 1);
  g_assert_cmpstr (first, ==, "/drop.gguf -");
  expected = g_strdup_printf ("/drop.gguf bytes=%d- if-range", 123456);
  g_assert_cmpstr (second, ==, expected);
  g_assert_cmpuint (log_length (f), ==, 2);
}

/* With one attempt the pull fails, keeps the part, and the next pull resumes it. */
static void
test_resume_next_pull (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/drop.gguf");
  const TsModelEntry *e = entry_for (f, BODY_BYTES, f->body_sha, sources);
  g_autofree char *part = in_dir (f, "test-model.gguf.part");
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL, *second = NULL;

  models_test_hub_serve (f->hub, "/drop.gguf", f->body);
  models_test_hub_drop (f->hub, "/drop.gguf", 70000, 1);
  g_assert_null (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_assert_true (g_error_matches (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NETWORK)
                 || g_error_matches (error, TS_MODELS_ERROR, TS_MODELS_ERROR_TRUNCATED));
  g_test_message ("first pull: %s", error->message);
  g_assert_cmpint (ts_models_file_size (part), ==, 70000);
  g_clear_error (&error);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_installed_body (f, path);
  second = log_line (f, 1);
  g_assert_cmpstr (second, ==, "/drop.gguf bytes=70000- if-range");
  g_assert_false (g_file_test (part, G_FILE_TEST_EXISTS));
}

static void
test_wrong_digest (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/model.gguf");
  g_autofree char *other = g_compute_checksum_for_string (G_CHECKSUM_SHA256, "other", -1);
  const TsModelEntry *e = entry_for (f, BODY_BYTES, other, sources);
  g_autoptr(GError) error = NULL;
  g_autofree char *listing = NULL;

  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  g_assert_null (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM);
  g_assert_nonnull (strstr (error->message, f->body_sha));
  g_assert_nonnull (strstr (error->message, other));
  listing = dir_listing (f);
  g_assert_cmpstr (listing, ==, "");
}

/* A server that announces another length than the catalogue's is refused at once. */
static void
test_wrong_length (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/model.gguf");
  const TsModelEntry *e = entry_for (f, BODY_BYTES + 1, f->body_sha, sources);
  g_autoptr(GError) error = NULL;
  g_autofree char *listing = NULL;

  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  g_assert_null (pull (f, e, 3, NULL, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM);
  g_assert_cmpuint (log_length (f), ==, 1);
  listing = dir_listing (f);
  g_assert_cmpstr (listing, ==, "");
}

static gint64
tiny_disk (const char *dir, gpointer data)
{
  return *(gint64 *) data;
}

static void
test_full_disk (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/model.gguf");
  const TsModelEntry *e = entry_for (f, BODY_BYTES, f->body_sha, sources);
  gint64 free_bytes = 1 << 20;
  g_autoptr(GError) error = NULL;
  g_autofree char *listing = NULL, *path = NULL;

  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  ts_models_set_free_space_func (tiny_disk, &free_bytes);
  g_assert_null (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NO_SPACE);
  g_assert_nonnull (strstr (error->message, "Not enough free space"));
  g_assert_cmpuint (log_length (f), ==, 0);
  listing = dir_listing (f);
  g_assert_cmpstr (listing, ==, "");
  /* Enough space (the file plus the 64 MiB margin): it goes through. */
  free_bytes = BODY_BYTES + (64 << 20);
  g_clear_error (&error);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_installed_body (f, path);
}

typedef struct
{
  GCancellable *cancellable;
  gint64        cancel_at;
  gint64        seen;
} Canceller;

static void
cancel_midway (const TsModelsProgress *p, gpointer data)
{
  Canceller *c = data;

  if (p->stage == TS_MODELS_STAGE_DOWNLOAD && p->done >= c->cancel_at)
    {
      c->seen = p->done;
      g_cancellable_cancel (c->cancellable);
    }
}

static void
test_cancel (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/model.gguf");
  const TsModelEntry *e = entry_for (f, BODY_BYTES, f->body_sha, sources);
  g_autofree char *part = in_dir (f, "test-model.gguf.part");
  g_autofree char *target = in_dir (f, "test-model.gguf");
  Canceller c = { g_cancellable_new (), 1, 0 };
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL, *line = NULL, *expected = NULL;
  gint64 kept;

  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  g_assert_null (pull (f, e, 3, cancel_midway, &c, c.cancellable, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_assert_false (g_file_test (target, G_FILE_TEST_EXISTS));
  kept = ts_models_file_size (part);
  g_assert_cmpint (kept, ==, c.seen);
  g_assert_cmpint (kept, >, 0);
  g_assert_cmpint (kept, <, BODY_BYTES);
  g_assert_cmpuint (log_length (f), ==, 1);
  g_object_unref (c.cancellable);
  g_clear_error (&error);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_installed_body (f, path);
  line = log_line (f, 1);
  expected = g_strdup_printf ("/model.gguf bytes=%" G_GINT64_FORMAT "- if-range", kept);
  g_assert_cmpstr (line, ==, expected);
}

static void
test_fallback (Fixture *f, gconstpointer data)
{
  g_autofree char *missing = models_test_hub_url (f->hub, "/missing.gguf");
  g_autofree char *good = models_test_hub_url (f->hub, "/model.gguf");
  g_autofree char *sources = g_strdup_printf ("[{\"kind\": \"http\", \"url\": \"%s\"},"
                                              " {\"kind\": \"http\", \"url\": \"%s\"}]",
                                              missing, good);
  const TsModelEntry *e = entry_for (f, BODY_BYTES, f->body_sha, sources);
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL, *listing = NULL;
  g_autoptr(GBytes) short_body = NULL;

  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_installed_body (f, path);
  g_assert_cmpuint (log_length (f), ==, 2);
  /* With no source left, the error names each one's reason. */
  g_unlink (path);
  short_body = g_bytes_new_static ("short", 5);
  models_test_hub_serve (f->hub, "/model.gguf", short_body);
  g_assert_null (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_HTTP);
  g_assert_nonnull (strstr (error->message, "HTTP 404"));
  g_assert_nonnull (strstr (error->message, "5 bytes long"));
  listing = dir_listing (f);
  g_assert_cmpstr (listing, ==, "");
}

/* A model whose digest the catalogue does not pin: the first download's is
 * recorded, and a later download must match it. */
static void
test_unverified_records_digest (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/model.gguf");
  const TsModelEntry *e = entry_for (f, -1, NULL, sources);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsModelIndex) index = NULL;
  g_autoptr(GBytes) changed = NULL;
  g_autofree char *path = NULL;
  const TsModelRecord *r;
  guint8 *copy;

  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  index = ts_model_index_load (f->dir, &error);
  g_assert_no_error (error);
  r = ts_model_index_find (index, "test-model");
  g_assert_nonnull (r);
  g_assert_cmpstr (r->sha256, ==, f->body_sha);
  g_assert_cmpint (r->bytes, ==, BODY_BYTES);
  g_assert_false (r->imported);
  g_unlink (path);
  copy = g_memdup2 (g_bytes_get_data (f->body, NULL), BODY_BYTES);
  copy[BODY_BYTES / 2] ^= 1;
  changed = g_bytes_new_take (copy, BODY_BYTES);
  models_test_hub_serve (f->hub, "/model.gguf", changed);
  g_assert_null (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM);
  g_assert_nonnull (strstr (error->message, f->body_sha));
  g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
}

/* The file changed upstream between two pulls: the If-Range of the first
 * answer's ETag makes the server send the new file whole, which is what gets
 * installed (and its digest recorded), not a mix of both. */
static void
test_changed_upstream (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/drop.gguf");
  const TsModelEntry *e = entry_for (f, -1, NULL, sources);
  g_autoptr(GBytes) changed = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsModelIndex) index = NULL;
  g_autofree char *path = NULL, *second = NULL, *changed_sha = NULL;
  guint8 *copy;

  models_test_hub_serve (f->hub, "/drop.gguf", f->body);
  models_test_hub_drop (f->hub, "/drop.gguf", 70000, 1);
  g_assert_null (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_clear_error (&error);
  copy = g_memdup2 (g_bytes_get_data (f->body, NULL), BODY_BYTES);
  copy[10] ^= 0xff;
  changed = g_bytes_new_take (copy, BODY_BYTES);
  changed_sha = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, changed);
  models_test_hub_serve (f->hub, "/drop.gguf", changed);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  second = log_line (f, 1);
  g_assert_cmpstr (second, ==, "/drop.gguf bytes=70000- if-range");
  index = ts_model_index_load (f->dir, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (ts_model_index_find (index, "test-model")->sha256, ==, changed_sha);
  assert_file_digest (path, changed_sha);
}

/* A second pull in the same folder while one runs is refused, not interleaved. */
static void
test_busy (Fixture *f, gconstpointer data)
{
  g_autofree char *sources = http_sources (f, "/model.gguf");
  const TsModelEntry *e = entry_for (f, BODY_BYTES, f->body_sha, sources);
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL;
  int lock = ts_models_lock_dir (f->dir, &error);

  g_assert_no_error (error);
  models_test_hub_serve (f->hub, "/model.gguf", f->body);
  g_assert_null (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_BUSY);
  g_assert_cmpuint (log_length (f), ==, 0);
  ts_models_unlock_dir (lock);
  g_clear_error (&error);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_installed_body (f, path);
}

/* The HTTP layer alone: a 200 to a Range request starts the file over. */
static void
test_range_ignored (Fixture *f, gconstpointer data)
{
  g_autofree char *url = models_test_hub_url (f->hub, "/model.gguf");
  g_autofree char *part = in_dir (f, "x.part");
  g_autoptr(GError) error = NULL;
  g_autofree char *text = NULL;
  g_autoptr(GBytes) body = g_bytes_new_static ("0123456789", 10);
  gsize len;

  /* The server answers 416 to a range past the end, so the stale bytes go. */
  g_assert_true (g_file_set_contents (part, "stale bytes that are longer", -1, NULL));
  models_test_hub_serve (f->hub, "/model.gguf", body);
  g_assert_true (ts_models_http_fetch (f->session, url, part, -1, 2, NULL, NULL, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (part, &text, &len, NULL));
  g_assert_cmpstr (text, ==, "0123456789");
}

/* ---- pypi-chunks ---- */

typedef struct
{
  char   *path;
  char   *member;
  gint64  wheel_bytes;
  char   *wheel_sha256;
  gint64  bytes;
  char   *sha256;
} RefChunk;

static JsonObject *
load_refs (JsonParser *parser)
{
  g_autofree char *path = ts_test_data_path ("models/refs.json");
  g_autoptr(GError) error = NULL;

  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  return json_node_get_object (json_parser_get_root (parser));
}

static char *
chunk_sources (Fixture *f, JsonObject *refs, gboolean with_digests)
{
  JsonArray *chunks = json_object_get_array_member (refs, "chunks");
  g_autoptr(GString) s = g_string_new ("[{\"kind\": \"pypi-chunks\", \"chunks\": [");

  for (guint i = 0; i < json_array_get_length (chunks); i++)
    {
      JsonObject *c = json_array_get_object_element (chunks, i);
      const char *wheel = json_object_get_string_member (c, "wheel");
      g_autofree char *rel = g_build_filename ("models", wheel, NULL);
      g_autofree char *web = g_strconcat ("/wheels/", wheel, NULL);
      g_autofree char *url = models_test_hub_url (f->hub, web);
      gsize len = 0;
      guint8 *data = ts_test_read_data (rel, &len);
      g_autoptr(GBytes) bytes = g_bytes_new_take (data, len);

      models_test_hub_serve (f->hub, web, bytes);
      g_string_append_printf (s, "%s{\"url\": \"%s\", \"member\": \"%s\"", i ? ", " : "", url,
                              json_object_get_string_member (c, "member"));
      if (with_digests)
        g_string_append_printf (s, ", \"wheel_bytes\": %" G_GINT64_FORMAT ", \"wheel_sha256\": "
                                "\"%s\", \"bytes\": %" G_GINT64_FORMAT ", \"sha256\": \"%s\"",
                                json_object_get_int_member (c, "wheel_bytes"),
                                json_object_get_string_member (c, "wheel_sha256"),
                                json_object_get_int_member (c, "bytes"),
                                json_object_get_string_member (c, "sha256"));
      g_string_append (s, "}");
    }
  g_string_append (s, "]}]");
  return g_string_free (g_steal_pointer (&s), FALSE);
}


static void
cancel_on_second_wheel (const TsModelsProgress *p, gpointer data)
{
  Canceller *c = data;

  if (p->stage == TS_MODELS_STAGE_DOWNLOAD && p->what != NULL
      && g_str_has_suffix (p->what, "/part2.whl"))
    g_cancellable_cancel (c->cancellable);
}

static void
test_chunks (Fixture *f, gconstpointer data)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *refs = load_refs (parser);
  JsonObject *joined = json_object_get_object_member (refs, "joined");
  g_autofree char *sources = chunk_sources (f, refs, TRUE);
  const TsModelEntry *e = entry_for (f, json_object_get_int_member (joined, "bytes"),
                                     json_object_get_string_member (joined, "sha256"), sources);
  g_autofree char *chunk1 = in_dir (f, "test-model.gguf.partial/chunk-01.bin");
  Canceller c = { g_cancellable_new (), 0, 0 };
  g_autoptr(GError) error = NULL;
  g_autofree char *path = NULL, *listing = NULL, *third = NULL;

  /* Cancelled at the second wheel: the first chunk is kept. */
  g_assert_null (pull (f, e, 1, cancel_on_second_wheel, &c, c.cancellable, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
  g_object_unref (c.cancellable);
  assert_file_digest (chunk1, json_object_get_string_member (
    json_array_get_object_element (json_object_get_array_member (refs, "chunks"), 0), "sha256"));
  g_assert_cmpuint (log_length (f), ==, 2);
  /* The next pull asks only for the second wheel. */
  g_clear_error (&error);
  path = pull (f, e, 1, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  assert_file_digest (path, json_object_get_string_member (joined, "sha256"));
  g_assert_cmpuint (log_length (f), ==, 3);
  third = log_line (f, 2);
  g_assert_true (g_str_has_prefix (third, "/wheels/part2.whl"));
  listing = dir_listing (f);
  g_assert_cmpstr (listing, ==, "test-model.gguf");
}

/* Without chunk digests the whole file's digest still guards the install. */
static void
test_chunks_wrong_digest (Fixture *f, gconstpointer data)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonObject *refs = load_refs (parser);
  g_autofree char *sources = chunk_sources (f, refs, FALSE);
  g_autofree char *other = g_compute_checksum_for_string (G_CHECKSUM_SHA256, "other", -1);
  const TsModelEntry *e = entry_for (f, -1, other, sources);
  g_autoptr(GError) error = NULL;
  g_autofree char *listing = NULL;

  g_assert_null (pull (f, e, 1, NULL, NULL, NULL, &error));
  g_assert_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM);
  g_assert_nonnull (strstr (error->message,
                            json_object_get_string_member (
                              json_object_get_object_member (refs, "joined"), "sha256")));
  listing = dir_listing (f);
  g_assert_cmpstr (listing, ==, "");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add ("/models/pull/" path, Fixture, NULL, fixture_set_up, fn, \
                                  fixture_tear_down)
  ADD ("plain", test_plain);
  ADD ("async", test_async);
  ADD ("resume-after-drop", test_resume_after_drop);
  ADD ("resume-next-pull", test_resume_next_pull);
  ADD ("wrong-digest", test_wrong_digest);
  ADD ("wrong-length", test_wrong_length);
  ADD ("full-disk", test_full_disk);
  ADD ("cancel", test_cancel);
  ADD ("fallback", test_fallback);
  ADD ("unverified-records-digest", test_unverified_records_digest);
  ADD ("changed-upstream", test_changed_upstream);
  ADD ("busy", test_busy);
  ADD ("range-refused", test_range_ignored);
  ADD ("chunks", test_chunks);
  ADD ("chunks-wrong-digest", test_chunks_wrong_digest);
#undef ADD
  return g_test_run ();
}
