/* test-market-daemon.c: tensafe-marketd's store: migrations, restarts, versions, GGUF import, refusals, limits.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <string.h>

#include "market-pg.h"
#include "market-test-util.h"

static char *work;

static char *
folder (const char *name)
{
  return g_build_filename (work, name, NULL);
}

static gint64
sql_int (const char *db_path, const char *sql)
{
  gint64 v = 0;

  market_sql_ints (db_path, sql, NULL, &v, 1);
  return v;
}

/* SQLite keeps the schema number in user_version, PostgreSQL in a table. */
static gint64
schema_version (MarketServer *s)
{
  return sql_int (s->db_path, market_use_postgresql ()
                              ? "SELECT max(version) FROM schema_version"
                              : "PRAGMA user_version");
}

static GPtrArray *
keys_of (TsMarketClient *client, const char *publisher)
{
  g_autoptr(GAsyncResult) res = NULL;
  g_autoptr(GError) error = NULL;
  GPtrArray *keys;

  ts_market_client_get_publisher_keys_async (client, publisher, NULL, market_store_result, &res);
  market_wait (&res);
  keys = ts_market_client_get_publisher_keys_finish (client, res, &error);
  g_assert_no_error (error);
  return keys;
}

static void
write_gguf_adapter (const char *dir)
{
  g_autofree char *gguf = g_build_filename (dir, "lora.gguf", NULL);
  g_autofree char *meta = g_build_filename (dir, "metadata.json", NULL);
  char bytes[128] = "GGUF\x03";

  g_assert_cmpint (g_mkdir_with_parents (dir, 0755), ==, 0);
  g_assert_true (g_file_set_contents (gguf, bytes, sizeof bytes, NULL));
  g_assert_true (g_file_set_contents (meta, "{\"id\":\"gguf-lora\",\"name\":\"GGUF LoRA\","
      "\"publisher\":\"acme\",\"version\":\"0.1.0\",\"base_model\":\"test-base\","
      "\"rank\":8,\"alpha\":16,\"target_modules\":[\"o_proj\"]}", -1, NULL));
}

static void
test_migrations_versions_restart (void)
{
  g_autofree char *v1 = folder ("evolving-1"), *v2 = folder ("evolving-2");
  g_autofree char *gguf = folder ("gguf"), *pem = NULL;
  const char *first[] = { v1, NULL }, *second[] = { v1, v2, gguf, NULL };
  MarketServer *s;
  g_autoptr(TsMarketClient) client = NULL;
  g_autoptr(TsMarketKeyring) keyring = ts_market_keyring_new (NULL);
  g_autoptr(TsMarketAdapter) a = NULL, g = NULL;
  g_autoptr(GPtrArray) keys1 = NULL, keys2 = NULL;
  g_autoptr(GError) error = NULL;
  GStatBuf st;

  market_write_adapter (v1, "evolving", "acme", "1.0.0", 1000);
  market_write_adapter (v2, "evolving", "acme", "1.1.0", 2000);
  write_gguf_adapter (gguf);
  s = market_server_start (first, NULL);
  g_assert_cmpint (schema_version (s), ==, 4);
  if (market_use_postgresql ())
    g_assert_cmpint (sql_int (s->db_path, "SELECT count(*) FROM information_schema.columns "
                              "WHERE (table_name, column_name) IN (('adapters', 'id'), "
                              "('usage', 'idempotency_key'), ('adapters', 'search_vector'))"),
                     ==, 3);
  else
    g_assert_cmpint (sql_int (s->db_path, "SELECT count(*) FROM sqlite_master WHERE name IN "
                              "('adapters', 'usage', 'adapters_fts')"), ==, 3);
  pem = g_build_filename (s->keys_dir, "acme.pem", NULL);
  g_assert_cmpint (g_stat (pem, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);
  client = ts_market_client_new (s->url, NULL);
  keys1 = keys_of (client, "acme");
  g_assert_cmpuint (keys1->len, ==, 1);

  /* Same folder again (no change), a new version, a GGUF adapter. */
  market_server_restart (s, second);
  g_clear_object (&client);
  client = ts_market_client_new (s->url, NULL);
  keys2 = keys_of (client, "acme");
  g_assert_cmpuint (keys2->len, ==, 1);
  g_assert_cmpstr (((TsMarketPublisherKey *) keys2->pdata[0])->key_id, ==,
                   ((TsMarketPublisherKey *) keys1->pdata[0])->key_id);
  market_pin_publisher (client, keyring, "acme");
  a = market_get_adapter (client, "evolving", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (a->latest_version, ==, "1.1.0");
  g_assert_cmpuint (a->versions->len, ==, 2);
  for (guint i = 0; i < a->versions->len; i++)
    {
      TsMarketVersion *v = g_ptr_array_index (a->versions, i);
      ts_market_keyring_verify (keyring, v->manifest, v->key_id, v->signature, &error);
      g_assert_no_error (error);
    }
  g = market_get_adapter (client, "gguf-lora", &error);
  g_assert_no_error (error);
  g_assert_cmpstr (g->format, ==, "gguf");
  g_assert_cmpint (g->rank, ==, 8);

  /* A restart without imports serves the same catalogue. */
  market_server_restart (s, NULL);
  g_assert_cmpint (sql_int (s->db_path, "SELECT count(*) FROM versions"), ==, 3);
  g_assert_cmpint (schema_version (s), ==, 4);
  market_server_stop (s);
}

static void
expect_refused (MarketServer *s, const char *dir, const char *message)
{
  const char *imports[] = { dir, NULL };
  g_autofree char *err = NULL;
  int status = market_server_run_once (s, imports, &err);

  g_test_message ("%s → %d: %s", dir, status, err);
  g_assert_cmpint (status, !=, 0);
  g_assert_nonnull (strstr (err, message));
}

static void
test_import_refusals (void)
{
  g_autofree char *ok = folder ("owner"), *changed = folder ("owner-changed");
  g_autofree char *thief = folder ("thief"), *nometa = folder ("nometa");
  g_autofree char *empty = folder ("empty"), *unsafe = folder ("unsafe");
  g_autofree char *meta = NULL, *bad_file = NULL;
  const char *imports[] = { ok, NULL };
  MarketServer *s;

  market_write_adapter (ok, "owned", "acme", "1.0.0", 0);
  market_write_adapter (changed, "owned", "acme", "1.0.0", 10);
  market_write_adapter (thief, "owned", "mallory", "2.0.0", 0);
  market_write_adapter (nometa, "x", "acme", "1.0.0", 0);
  meta = g_build_filename (nometa, "metadata.json", NULL);
  g_assert_true (g_file_set_contents (meta, "{\"name\":\"no id\"}", -1, NULL));
  g_assert_cmpint (g_mkdir_with_parents (empty, 0755), ==, 0);
  g_clear_pointer (&meta, g_free);
  meta = g_build_filename (empty, "metadata.json", NULL);
  g_assert_true (g_file_set_contents (meta, "{\"id\":\"e\",\"name\":\"E\",\"publisher\":\"acme\","
                                      "\"version\":\"1\",\"base_model\":\"b\"}", -1, NULL));
  market_write_adapter (unsafe, "unsafe", "acme", "1.0.0", 0);
  bad_file = g_build_filename (unsafe, "-rf", NULL);
  g_assert_true (g_file_set_contents (bad_file, "x", 1, NULL));

  s = market_server_start (imports, NULL);
  expect_refused (s, changed, "already published with other files");
  expect_refused (s, thief, "belongs to another publisher");
  expect_refused (s, nometa, "metadata.json needs id");
  expect_refused (s, empty, "neither a PEFT folder nor a GGUF");
  expect_refused (s, unsafe, "unsafe file name");
  g_assert_cmpint (sql_int (s->db_path, "SELECT count(*) FROM versions"), ==, 1);
  g_assert_cmpint (sql_int (s->db_path, "SELECT count(*) FROM publishers"), ==, 1);
  market_server_stop (s);
}

/* Refused with @message about @member (the quotes around it come out as
 * the locale allows, so they are left out of the match). */
static void
expect_refused_naming (MarketServer *s, const char *dir, const char *member,
                       const char *message)
{
  g_autofree char *named = g_strdup_printf ("%s: ", dir);
  const char *imports[] = { dir, NULL };
  g_autofree char *err = NULL;
  const char *at;

  g_test_message ("%s: %s", member, message);
  g_assert_cmpint (market_server_run_once (s, imports, &err), !=, 0);
  at = strstr (err, named);
  g_assert_nonnull (at);
  at += strlen (named);
  g_assert_nonnull (strstr (at, member));
  g_assert_nonnull (strstr (at, message));
  g_assert_true (strstr (at, member) < strstr (at, message));
}

/* An adapter folder whose metadata.json adds @member: @value (JSON text). */
static char *
adapter_with (const char *name, const char *member, const char *value)
{
  char *dir = folder (name);
  g_autofree char *meta_path = g_build_filename (dir, "metadata.json", NULL);
  g_autofree char *meta = NULL;

  market_write_adapter (dir, name, "acme", "1.0.0", 0);
  meta = g_strdup_printf ("{\"id\":\"%s\",\"name\":\"Hints\",\"publisher\":\"acme\","
                          "\"version\":\"1.0.0\",\"base_model\":\"test-base\",\"%s\":%s}",
                          name, member, value);
  g_assert_true (g_file_set_contents (meta_path, meta, -1, NULL));
  return dir;
}

/* A JSON list of @n different strings, each @chars (≥ 3) long. */
static char *
json_strings (guint n, guint chars)
{
  g_autoptr(GString) out = g_string_new ("[");
  g_autofree char *word = g_strnfill (chars, 'a');

  for (guint i = 0; i < n; i++)
    g_string_append_printf (out, "%s\"%s%u\"", i ? "," : "", word + 3, 100 + i);
  g_string_append_c (out, ']');
  return g_string_free (g_steal_pointer (&out), FALSE);
}

/* "keywords" and "examples" must be lists of 1–500 character strings, at
 * most 64 and 32 of them: anything else is refused, naming the member. */
static void
test_routing_hints_refused (void)
{
  g_autofree char *k64 = json_strings (64, 500), *k65 = json_strings (65, 10);
  g_autofree char *e32 = json_strings (32, 500), *e33 = json_strings (33, 10);
  g_autofree char *long_entry = json_strings (1, 501);
  g_autofree char *most = adapter_with ("hints-most", "keywords", k64);
  g_autofree char *most_e = adapter_with ("hints-most-e", "examples", e32);
  g_autofree char *number = adapter_with ("hints-number", "keywords", "42");
  g_autofree char *object = adapter_with ("hints-object", "examples", "{\"a\":\"b\"}");
  g_autofree char *mixed = adapter_with ("hints-mixed", "keywords", "[\"arr\", 7]");
  g_autofree char *too_many = adapter_with ("hints-many", "keywords", k65);
  g_autofree char *too_many_e = adapter_with ("hints-many-e", "examples", e33);
  g_autofree char *too_long = adapter_with ("hints-long", "examples", long_entry);
  g_autofree char *empty = adapter_with ("hints-empty", "keywords", "[\"\"]");
  const char *imports[] = { most, most_e, NULL };
  MarketServer *s;

  g_assert_cmpuint (strlen (k64), >, 64 * 500);
  s = market_server_start (imports, NULL);
  expect_refused_naming (s, number, "keywords", "must be a list of strings");
  expect_refused_naming (s, object, "examples", "must be a list of strings");
  expect_refused_naming (s, mixed, "keywords", "must be a list of strings");
  expect_refused_naming (s, too_many, "keywords", "lists 65 entries; at most 64");
  expect_refused_naming (s, too_many_e, "examples", "lists 33 entries; at most 32");
  expect_refused_naming (s, too_long, "examples", "entry 1 has 501 characters");
  expect_refused_naming (s, empty, "keywords", "entry 1 has 0 characters");
  g_assert_cmpint (sql_int (s->db_path, "SELECT count(*) FROM adapters"), ==, 2);
  g_assert_cmpint (sql_int (s->db_path, "SELECT length(keywords) FROM adapters "
                            "WHERE id = 'hints-most'"), ==, strlen (k64));
  market_server_stop (s);
}

static void
set_metadata (const char *dir, const char *id, const char *version, const char *keywords)
{
  g_autofree char *path = g_build_filename (dir, "metadata.json", NULL);
  g_autofree char *meta = g_strdup_printf ("{\"id\":\"%s\",\"name\":\"Hints\","
                                           "\"publisher\":\"acme\",\"version\":\"%s\","
                                           "\"base_model\":\"test-base\",\"keywords\":%s}",
                                           id, version, keywords);

  g_assert_true (g_file_set_contents (path, meta, -1, NULL));
}

static char *
keywords_of (MarketServer *s, const char *id)
{
  g_autoptr(TsMarketClient) client = ts_market_client_new (s->url, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, id, &error);

  g_assert_no_error (error);
  return g_strjoinv (",", a->keywords);
}

/* Importing an unchanged release again brings its keywords and examples up
 * to date (a catalogue published before they were kept gets them), and an
 * older version's folder does not speak for the adapter. */
static void
test_routing_hints_refreshed (void)
{
  g_autofree char *v1 = folder ("refresh-1"), *v2 = folder ("refresh-2");
  g_autofree char *got = NULL;
  /* Again with the older one last: it must not take the latest one's place. */
  const char *first[] = { v1, v2, NULL }, *again[] = { v2, v1, NULL };
  MarketServer *s;

  market_write_adapter (v1, "refresh", "acme", "1.0.0", 0);
  market_write_adapter (v2, "refresh", "acme", "2.0.0", 10);
  set_metadata (v1, "refresh", "1.0.0", "[]");
  set_metadata (v2, "refresh", "2.0.0", "[]");
  s = market_server_start (first, NULL);
  got = keywords_of (s, "refresh");
  g_assert_cmpstr (got, ==, "");
  set_metadata (v1, "refresh", "1.0.0", "[\"older\"]");
  set_metadata (v2, "refresh", "2.0.0", "[\"ahoy\", \"matey\"]");
  market_server_restart (s, again);
  g_clear_pointer (&got, g_free);
  got = keywords_of (s, "refresh");
  g_assert_cmpstr (got, ==, "ahoy,matey");
  g_assert_cmpint (sql_int (s->db_path, "SELECT count(*) FROM versions"), ==, 2);
  market_server_stop (s);
}

static void
test_newer_schema_refused (void)
{
  MarketServer *s = market_server_start (NULL, NULL);
  g_autofree char *err = NULL;

  market_server_restart (s, NULL);
  market_sql_exec (s->db_path, market_use_postgresql ()
                               ? "INSERT INTO schema_version VALUES (99, 0)"
                               : "PRAGMA user_version = 99");
  g_assert_cmpint (market_server_run_once (s, NULL, &err), !=, 0);
  g_assert_nonnull (strstr (err, "newer than this server"));
  g_assert_cmpint (schema_version (s), ==, 99);
  market_server_stop (s);
}

static guint
post (const char *base, GInputStream *stream, gssize length)
{
  g_autoptr(SoupSession) session = soup_session_new ();
  g_autofree char *url = g_strconcat (base, "v1/usage", NULL);
  g_autoptr(SoupMessage) msg = soup_message_new ("POST", url);
  g_autoptr(GBytes) body = NULL;

  soup_message_set_request_body (msg, "application/json", stream, length);
  body = soup_session_send_and_read (session, msg, NULL, NULL);
  return soup_message_get_status (msg);
}

static void
test_body_limits (void)
{
  MarketServer *s = market_server_start (NULL, "alice tok-alice-0123456789abcdef\n");
  g_autofree char *big = g_strnfill (100 * 1024, ' ');
  g_autoptr(GInputStream) a = g_memory_input_stream_new_from_data (big, strlen (big), NULL);
  g_autoptr(GInputStream) b = g_memory_input_stream_new_from_data ("{}", 2, NULL);

  g_assert_cmpuint (post (s->url, a, strlen (big)), ==, 413);
  g_assert_cmpuint (post (s->url, b, -1), ==, 411);  /* chunked: length unknown */
  market_server_stop (s);
}

static void
test_bad_options (void)
{
  const char *argv[] = { MARKETD_PATH, "--listen=127.0.0.1:0", NULL };
  g_autoptr(GSubprocess) proc = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;

  proc = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_SILENCE
                            | G_SUBPROCESS_FLAGS_STDERR_PIPE, &error);
  g_assert_no_error (error);
  g_subprocess_communicate_utf8 (proc, NULL, NULL, NULL, &err, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_subprocess_get_exit_status (proc), !=, 0);
  g_assert_nonnull (strstr (err, "--db, --blobs and --keys are required"));
}

static void
add_extension (X509 *x, int nid, const char *value)
{
  X509V3_CTX ctx;
  X509_EXTENSION *ext;

  X509V3_set_ctx_nodb (&ctx);
  X509V3_set_ctx (&ctx, x, x, NULL, NULL, 0);
  ext = X509V3_EXT_conf_nid (NULL, &ctx, nid, value);
  g_assert_nonnull (ext);
  X509_add_ext (x, ext, -1);
  X509_EXTENSION_free (ext);
}

/* A self-signed P-256 certificate for IP 127.0.0.1, valid for an hour. */
static void
write_self_signed (const char *cert_path, const char *key_path)
{
  EVP_PKEY *pkey = EVP_PKEY_Q_keygen (NULL, NULL, "EC", "P-256");
  X509 *x = X509_new ();
  X509_NAME *name;
  FILE *f;

  g_assert_nonnull (pkey);
  X509_set_version (x, 2);
  ASN1_INTEGER_set (X509_get_serialNumber (x), 1);
  X509_gmtime_adj (X509_getm_notBefore (x), -60);
  X509_gmtime_adj (X509_getm_notAfter (x), 3600);
  X509_set_pubkey (x, pkey);
  name = X509_get_subject_name (x);
  X509_NAME_add_entry_by_txt (name, "CN", MBSTRING_ASC, (const guchar *) "127.0.0.1", -1, -1, 0);
  X509_set_issuer_name (x, name);
  add_extension (x, NID_subject_alt_name, "IP:127.0.0.1");
  add_extension (x, NID_basic_constraints, "critical,CA:TRUE");
  g_assert_cmpint (X509_sign (x, pkey, EVP_sha256 ()), >, 0);
  f = fopen (cert_path, "w");
  g_assert_nonnull (f);
  PEM_write_X509 (f, x);
  fclose (f);
  f = fopen (key_path, "w");
  g_assert_nonnull (f);
  PEM_write_PrivateKey (f, pkey, NULL, NULL, 0, NULL, NULL);
  fclose (f);
  X509_free (x);
  EVP_PKEY_free (pkey);
}

static void
test_tls (void)
{
  g_autofree char *cert = folder ("cert.pem"), *key = folder ("key.pem");
  g_autofree char *cert_arg = NULL, *key_arg = NULL;
  const char *imports[] = { market_demo_dir (), NULL };
  const char *args[3];
  g_autoptr(TsMarketClient) trusting = NULL, plain = NULL;
  g_autoptr(GTlsDatabase) anchors = NULL;
  g_autoptr(TsMarketPage) page = NULL, refused = NULL;
  g_autoptr(GError) error = NULL;
  MarketServer *s;

  write_self_signed (cert, key);
  cert_arg = g_strconcat ("--tls-cert=", cert, NULL);
  key_arg = g_strconcat ("--tls-key=", key, NULL);
  args[0] = cert_arg;
  args[1] = key_arg;
  args[2] = NULL;
  s = market_server_start_with_args (imports, NULL, args);
  g_assert_true (g_str_has_prefix (s->url, "https://127.0.0.1:"));
  trusting = ts_market_client_new (s->url, &error);
  anchors = g_tls_file_database_new (cert, &error);
  g_assert_no_error (error);
  soup_session_set_tls_database (ts_market_client_get_session (trusting), anchors);
  page = market_search (trusting, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (page->adapters->len, ==, 6);   /* the folders of data/market */
  /* Without the anchor the self-signed certificate is refused. */
  plain = ts_market_client_new (s->url, &error);
  refused = market_search (plain, NULL, &error);
  g_assert_null (refused);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK);
  market_server_stop (s);
}

/* A peer that connects and says nothing is dropped after --io-timeout. */
static void
test_idle_timeout (void)
{
  const char *args[] = { "--io-timeout=1", NULL };
  MarketServer *s = market_server_start_with_args (NULL, NULL, args);
  g_autoptr(GUri) uri = g_uri_parse (s->url, G_URI_FLAGS_NONE, NULL);
  g_autoptr(GSocketClient) sc = g_socket_client_new ();
  g_autoptr(GSocketConnection) conn = NULL;
  g_autoptr(GError) error = NULL;
  gint64 start = g_get_monotonic_time ();
  char buf[64];
  gssize n;

  conn = g_socket_client_connect_to_host (sc, "127.0.0.1", g_uri_get_port (uri), NULL, &error);
  g_assert_no_error (error);
  /* Also a guard: the read itself gives up after 20 s. */
  g_socket_set_timeout (g_socket_connection_get_socket (conn), 20);
  n = g_input_stream_read (g_io_stream_get_input_stream (G_IO_STREAM (conn)), buf, sizeof buf,
                           NULL, NULL);
  g_test_message ("closed after %.2f s (read %" G_GSSIZE_FORMAT ")",
                  (g_get_monotonic_time () - start) / 1e6, n);
  g_assert_cmpint (n, <=, 0);
  g_assert_cmpint (g_get_monotonic_time () - start, <, 15 * G_USEC_PER_SEC);
  market_server_stop (s);
}

static void
count_notify_cb (GObject *object, GParamSpec *pspec, gpointer user_data)
{
  (*(guint *) user_data)++;
}

/* With a cache, the catalogue stays browsable when the server goes away. */
static void
test_offline_cache (void)
{
  const char *imports[] = { market_demo_dir (), NULL };
  MarketServer *s = market_server_start (imports, NULL);
  g_autofree char *cache = folder ("cache");
  g_autoptr(TsMarketClient) client = ts_market_client_new (s->url, NULL);
  g_autoptr(TsMarketPage) online = NULL, offline = NULL, uncached = NULL;
  g_autoptr(TsMarketAdapter) details = NULL, cached_details = NULL;
  g_autoptr(GError) error = NULL;
  TsMarketSearch q = TS_MARKET_SEARCH_INIT;
  guint notified = 0;

  ts_market_client_set_cache_dir (client, cache);
  g_signal_connect (client, "notify::offline", G_CALLBACK (count_notify_cb), &notified);
  online = market_search (client, NULL, &error);
  g_assert_no_error (error);
  details = market_get_adapter (client, "tiny-poet", &error);
  g_assert_no_error (error);
  g_assert_false (ts_market_client_get_offline (client));
  market_server_stop (s);

  offline = market_search (client, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (ts_market_client_get_offline (client));
  g_assert_cmpuint (notified, ==, 1);
  g_assert_cmpuint (offline->adapters->len, ==, online->adapters->len);
  for (guint i = 0; i < online->adapters->len; i++)
    g_assert_cmpstr (((TsMarketAdapter *) offline->adapters->pdata[i])->id, ==,
                     ((TsMarketAdapter *) online->adapters->pdata[i])->id);
  cached_details = market_get_adapter (client, "tiny-poet", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (cached_details->versions->len, ==, 1);
  q.query = "never asked before";
  uncached = market_search (client, &q, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK);
}

int
main (int argc, char **argv)
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  work = market_tmpdir ();
  g_test_add_func ("/market/daemon/migrations-versions-restart", test_migrations_versions_restart);
  g_test_add_func ("/market/daemon/import-refusals", test_import_refusals);
  g_test_add_func ("/market/daemon/routing-hints-refused", test_routing_hints_refused);
  g_test_add_func ("/market/daemon/routing-hints-refreshed", test_routing_hints_refreshed);
  g_test_add_func ("/market/daemon/newer-schema-refused", test_newer_schema_refused);
  g_test_add_func ("/market/daemon/body-limits", test_body_limits);
  g_test_add_func ("/market/daemon/bad-options", test_bad_options);
  g_test_add_func ("/market/daemon/tls", test_tls);
  g_test_add_func ("/market/daemon/offline-cache", test_offline_cache);
  g_test_add_func ("/market/daemon/idle-timeout", test_idle_timeout);
  rc = g_test_run ();
  market_rm_rf (work);
  return rc;
}
