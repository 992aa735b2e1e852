/* test-market-usage.c: usage records reach the server exactly once, through dropped connections and restarts.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "market-pg.h"
#include "market-test-util.h"
#include "ts-market-usage.h"

#define TOKEN "tok-alice-0123456789abcdef"

static MarketServer *server;

/* A TCP proxy in front of the server that can swallow responses: while
 * drops_left > 0, the first bytes the server sends back on a connection are
 * thrown away and both sides are shut — the request was processed, the
 * client never hears so. */
static GThreadedSocketService *proxy;
static char *proxy_url;
static guint16 upstream_port;
static gint drops_left;

/* TRUE (once per drop asked for) when this response is to be swallowed. */
static gboolean
take_drop (void)
{
  gint left;

  do
    left = g_atomic_int_get (&drops_left);
  while (left > 0 && !g_atomic_int_compare_and_exchange (&drops_left, left, left - 1));
  return left > 0;
}

static gpointer
pump_thread (gpointer data)
{
  GSocket **pair = data;
  char buf[16384];
  gssize n;

  while ((n = g_socket_receive (pair[0], buf, sizeof buf, NULL, NULL)) > 0)
    if (g_socket_send (pair[1], buf, n, NULL, NULL) != n)
      break;
  g_socket_shutdown (pair[1], FALSE, TRUE, NULL);
  return NULL;
}

static gboolean
proxy_run_cb (GThreadedSocketService *svc, GSocketConnection *conn, GObject *source,
              gpointer user_data)
{
  g_autoptr(GSocketClient) sc = g_socket_client_new ();
  g_autoptr(GSocketConnection) up = g_socket_client_connect_to_host (sc, "127.0.0.1",
                                                                     upstream_port, NULL, NULL);
  GSocket *down_sock = g_socket_connection_get_socket (conn), *up_sock;
  GSocket *forward[2];
  GThread *pump;
  char buf[16384];
  gssize n;

  if (up == NULL)
    return TRUE;
  up_sock = g_socket_connection_get_socket (up);
  forward[0] = down_sock;
  forward[1] = up_sock;
  pump = g_thread_new ("proxy-pump", pump_thread, forward);
  while ((n = g_socket_receive (up_sock, buf, sizeof buf, NULL, NULL)) > 0)
    {
      if (take_drop ())
        break;
      if (g_socket_send (down_sock, buf, n, NULL, NULL) != n)
        break;
    }
  g_socket_shutdown (down_sock, TRUE, TRUE, NULL);
  g_socket_shutdown (up_sock, TRUE, TRUE, NULL);
  g_thread_join (pump);
  return TRUE;
}

static void
start_proxy (void)
{
  g_autoptr(GUri) uri = g_uri_parse (server->url, G_URI_FLAGS_NONE, NULL);

  upstream_port = g_uri_get_port (uri);
  proxy = market_start_tcp_service (G_CALLBACK (proxy_run_cb), &proxy_url);
}

/* Rows and token sum the server stored for @key_prefix (read-only connection). */
static void
stored_usage (const char *key_prefix, gint64 *rows, gint64 *tokens)
{
  g_autofree char *like = g_strconcat (key_prefix, "%", NULL);
  gint64 v[2] = { 0, 0 };

  market_sql_ints (server->db_path, "SELECT count(*), coalesce(sum(tokens), 0) FROM usage "
                   "WHERE idempotency_key LIKE ?1", like, v, 2);
  *rows = v[0];
  *tokens = v[1];
}

static gboolean
flush (TsMarketUsage *usage, GError **error)
{
  g_autoptr(GAsyncResult) res = NULL;

  ts_market_usage_flush_async (usage, NULL, market_store_result, &res);
  market_wait (&res);
  return ts_market_usage_flush_finish (usage, res, error);
}

static void
wait_for_empty_queue (TsMarketUsage *usage)
{
  gint64 deadline = g_get_monotonic_time () + 20 * G_USEC_PER_SEC;

  while (ts_market_usage_get_pending (usage) > 0 && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 0);
}

static void
test_exactly_once_after_drop (void)
{
  g_autoptr(TsMarketClient) client = ts_market_client_new (proxy_url, NULL);
  g_autoptr(TsMarketUsage) usage = ts_market_usage_new (client, TOKEN, NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *k1 = NULL, *k2 = NULL;
  gint64 rows = 0, tokens = 0, r1 = 0, t1 = 0, r2 = 0, t2 = 0;

  /* No automatic send before the explicit flush; retries come fast. */
  ts_market_usage_set_timing (usage, 60000, 50, 200);
  k1 = ts_market_usage_record (usage, "tiny-golden", "1.0.0", 123);
  k2 = ts_market_usage_record (usage, "tiny-pirate", "1.0.0", 45);
  g_assert_cmpstr (k1, !=, k2);
  g_atomic_int_set (&drops_left, 1);
  g_assert_false (flush (usage, &error));
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK);
  g_assert_cmpint (g_atomic_int_get (&drops_left), ==, 0);
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 2);
  /* The server did record them before the answer was lost. */
  stored_usage (k1, &r1, &t1);
  stored_usage (k2, &r2, &t2);
  g_assert_cmpint (r1 + r2, ==, 2);
  /* The automatic retry resends the same keys; the server counts them once. */
  wait_for_empty_queue (usage);
  stored_usage (k1, &rows, &tokens);
  g_assert_cmpint (rows, ==, 1);
  g_assert_cmpint (tokens, ==, 123);
  stored_usage (k2, &rows, &tokens);
  g_assert_cmpint (rows, ==, 1);
  g_assert_cmpint (tokens, ==, 45);
}

static void
test_batch_and_restart (void)
{
  g_autofree char *dir = market_tmpdir ();
  g_autofree char *queue = g_build_filename (dir, "usage-queue.json", NULL);
  g_autoptr(TsMarketClient) dead = ts_market_client_new ("http://127.0.0.1:9/", NULL);
  g_autoptr(TsMarketClient) live = ts_market_client_new (server->url, NULL);
  g_autoptr(TsMarketUsage) first = ts_market_usage_new (dead, TOKEN, queue);
  g_autoptr(TsMarketUsage) second = NULL;
  g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  gint64 rows = 0, tokens = 0, total_rows = 0, total_tokens = 0;

  ts_market_usage_set_timing (first, 60000, 60000, 60000);
  for (int i = 1; i <= 5; i++)
    g_ptr_array_add (keys, ts_market_usage_record (first, "tiny-poet", "1.0.0", i * 10));
  g_assert_false (flush (first, &error));
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK);
  g_clear_error (&error);
  g_clear_object (&first);
  /* A restarted application finds the queue, keys included, on disk. */
  second = ts_market_usage_new (live, TOKEN, queue);
  ts_market_usage_load (second, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (ts_market_usage_get_pending (second), ==, 5);
  g_assert_true (flush (second, &error));
  g_assert_no_error (error);
  g_assert_true (flush (second, &error));  /* nothing left: a no-op */
  for (guint i = 0; i < keys->len; i++)
    {
      stored_usage (keys->pdata[i], &rows, &tokens);
      total_rows += rows;
      total_tokens += tokens;
    }
  g_assert_cmpint (total_rows, ==, 5);
  g_assert_cmpint (total_tokens, ==, 150);
  market_rm_rf (dir);
}

static void
test_refusals (void)
{
  g_autoptr(TsMarketClient) client = ts_market_client_new (server->url, NULL);
  g_autoptr(TsMarketUsage) bad_token = ts_market_usage_new (client, "tok-wrong-0123456789", NULL);
  g_autoptr(TsMarketUsage) bad_adapter = ts_market_usage_new (client, TOKEN, NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *k1 = NULL, *k2 = NULL;
  gint64 rows = 0, tokens = 0;

  ts_market_usage_set_timing (bad_token, 60000, 60000, 60000);
  ts_market_usage_set_timing (bad_adapter, 60000, 60000, 60000);
  k1 = ts_market_usage_record (bad_token, "tiny-golden", "1.0.0", 7);
  g_assert_false (flush (bad_token, &error));
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_UNAUTHORIZED);
  g_assert_cmpuint (ts_market_usage_get_pending (bad_token), ==, 1);  /* kept for later */
  g_clear_error (&error);
  /* An adapter the server does not know can never be recorded: dropped. */
  k2 = ts_market_usage_record (bad_adapter, "no-such-adapter", "1.0.0", 7);
  g_assert_true (flush (bad_adapter, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (ts_market_usage_get_pending (bad_adapter), ==, 0);
  stored_usage (k1, &rows, &tokens);
  g_assert_cmpint (rows, ==, 0);
  stored_usage (k2, &rows, &tokens);
  g_assert_cmpint (rows, ==, 0);
}

static guint post_raw_answer (const char *body, const char *token, char **answer_out);

static guint
post_raw (const char *body, const char *token)
{
  return post_raw_answer (body, token, NULL);
}

/* POSTs @body to /v1/usage; the answer's text into @answer_out if given. */
static guint
post_raw_answer (const char *body, const char *token, char **answer_out)
{
  g_autoptr(SoupSession) session = soup_session_new ();
  g_autofree char *url = g_strconcat (server->url, "v1/usage", NULL);
  g_autofree char *auth = g_strconcat ("Bearer ", token, NULL);
  g_autoptr(SoupMessage) msg = soup_message_new ("POST", url);
  g_autoptr(GBytes) bytes = g_bytes_new (body, strlen (body));
  g_autoptr(GBytes) answer = NULL;

  soup_message_headers_replace (soup_message_get_request_headers (msg), "Authorization", auth);
  soup_message_set_request_body_from_bytes (msg, "application/json", bytes);
  answer = soup_session_send_and_read (session, msg, NULL, NULL);
  if (answer_out != NULL)
    *answer_out = answer != NULL ? g_strndup (g_bytes_get_data (answer, NULL),
                                              g_bytes_get_size (answer)) : g_strdup ("");
  return soup_message_get_status (msg);
}

/* An id that ends in \u0000 is refused, not stored under the id without
 * it; a body nested too deep says so instead of "Expected a JSON object". */
static void
test_nul_and_depth_named (void)
{
  g_autofree char *answer = NULL;
  gint64 rows = 0, tokens = 0;

  g_assert_cmpuint (post_raw_answer ("{\"adapter\":\"tiny-golden\\u0000\",\"version\":\"1.0.0\","
                                     "\"tokens\":3,\"idempotency_key\":\"nul-key-0001\"}",
                                     TOKEN, &answer), ==, 400);
  g_assert_nonnull (strstr (answer, "NUL"));
  stored_usage ("nul-key-0001", &rows, &tokens);
  g_assert_cmpint (rows, ==, 0);
  g_clear_pointer (&answer, g_free);
  g_assert_cmpuint (post_raw_answer ("{\"adapter\":\"tiny-golden\",\"version\":\"1.0.0\","
                                     "\"tokens\":3,\"idempotency_key\":\"deep-key-0001\","
                                     "\"extra\":{\"a\":{\"b\":{\"c\":{\"d\":1}}}}}",
                                     TOKEN, &answer), ==, 400);
  g_assert_nonnull (strstr (answer, "nested deeper"));
  stored_usage ("deep-key-0001", &rows, &tokens);
  g_assert_cmpint (rows, ==, 0);
  /* the text "\u0000" escaped as data (a backslash, then u0000) is fine */
  g_clear_pointer (&answer, g_free);
  g_assert_cmpuint (post_raw_answer ("{\"adapter\":\"tiny-golden\",\"version\":\"1.0.0\","
                                     "\"tokens\":3,\"idempotency_key\":\"esc-key-0001\","
                                     "\"note\":\"a\\\\u0000\"}", TOKEN, &answer), ==, 200);
  stored_usage ("esc-key-0001", &rows, &tokens);
  g_assert_cmpint (rows, ==, 1);
}

/* Hostile bodies get a 400 and change nothing; the server keeps serving. */
static void
test_hostile_bodies (void)
{
  g_autofree char *deep = g_strnfill (60000, '[');
  g_autofree char *deep_obj = g_strconcat ("{\"records\":", deep, NULL);
  g_autofree char *many = NULL;
  GString *batch = g_string_new ("{\"records\":[");
  const char *bodies[] = {
    deep, deep_obj, "", "null", "[]", "{\"records\":{}}", "{\"records\":[1]}",
    "{\"adapter\":\"tiny-golden\",\"version\":\"1.0.0\",\"tokens\":-5,"
    "\"idempotency_key\":\"abcdefgh1\"}",
    "{\"adapter\":\"tiny-golden\",\"version\":\"1.0.0\",\"tokens\":1.5,"
    "\"idempotency_key\":\"abcdefgh2\"}",
    "{\"adapter\":\"../x\",\"version\":\"1.0.0\",\"tokens\":1,"
    "\"idempotency_key\":\"abcdefgh3\"}",
    "{\"adapter\":\"tiny-golden\",\"version\":\"1.0.0\",\"tokens\":1,"
    "\"idempotency_key\":\"short\"}",
  };
  gint64 rows = 0, tokens = 0;

  for (guint i = 0; i < G_N_ELEMENTS (bodies); i++)
    g_assert_cmpuint (post_raw (bodies[i], TOKEN), ==, 400);
  for (int i = 0; i < 101; i++)
    g_string_append_printf (batch, "%s{\"adapter\":\"tiny-golden\",\"version\":\"1.0.0\","
                            "\"tokens\":1,\"idempotency_key\":\"batch-key-%03d\"}",
                            i ? "," : "", i);
  g_string_append (batch, "]}");
  many = g_string_free (batch, FALSE);
  g_assert_cmpuint (post_raw (many, TOKEN), ==, 413);
  stored_usage ("abcdefgh", &rows, &tokens);
  g_assert_cmpint (rows, ==, 0);
  stored_usage ("batch-key-", &rows, &tokens);
  g_assert_cmpint (rows, ==, 0);
  g_assert_cmpuint (post_raw ("{}", "tok-wrong-0123456789"), ==, 401);
}

int
main (int argc, char **argv)
{
  const char *imports[] = { market_demo_dir (), NULL };
  int rc;

  g_test_init (&argc, &argv, NULL);
  server = market_server_start (imports, "# account token\nalice " TOKEN "\n");
  start_proxy ();
  g_test_add_func ("/market/usage/exactly-once-after-drop", test_exactly_once_after_drop);
  g_test_add_func ("/market/usage/batch-and-restart", test_batch_and_restart);
  g_test_add_func ("/market/usage/refusals", test_refusals);
  g_test_add_func ("/market/usage/hostile-bodies", test_hostile_bodies);
  g_test_add_func ("/market/usage/nul-and-depth-named", test_nul_and_depth_named);
  rc = g_test_run ();
  g_socket_service_stop (G_SOCKET_SERVICE (proxy));
  g_object_unref (proxy);
  market_server_stop (server);
  g_free (proxy_url);
  return rc;
}
