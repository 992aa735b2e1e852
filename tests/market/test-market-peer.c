/* test-market-peer.c: a fake peer answering garbage, huge, deep or cut-short replies; each a clear GError.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "market-test-util.h"
#include "ts-market-download.h"

/* What the peer sends to every connection: a head, then @body_repeat copies
 * of @body_unit, then it closes the connection. */
static struct
{
  const char *head;
  const char *body_unit;
  gsize       body_repeat;
} reply;

static GThreadedSocketService *service;
static char *peer_url;

/* Reads the request head (up to the blank line) and ignores it. */
static void
skip_request (GInputStream *in)
{
  char buf[4096];
  GString *seen = g_string_new (NULL);
  gssize n;

  while (strstr (seen->str, "\r\n\r\n") == NULL && seen->len < 65536
         && (n = g_input_stream_read (in, buf, sizeof buf - 1, NULL, NULL)) > 0)
    g_string_append_len (seen, buf, n);
  g_string_free (seen, TRUE);
}

static gboolean
peer_run_cb (GThreadedSocketService *svc, GSocketConnection *conn, GObject *source,
             gpointer user_data)
{
  GOutputStream *out = g_io_stream_get_output_stream (G_IO_STREAM (conn));

  skip_request (g_io_stream_get_input_stream (G_IO_STREAM (conn)));
  if (g_output_stream_write_all (out, reply.head, strlen (reply.head), NULL, NULL, NULL))
    for (gsize i = 0; i < reply.body_repeat; i++)
      if (!g_output_stream_write_all (out, reply.body_unit, strlen (reply.body_unit), NULL,
                                      NULL, NULL))
        break;
  g_io_stream_close (G_IO_STREAM (conn), NULL, NULL);
  return TRUE;
}

static void
set_reply (const char *head, const char *unit, gsize repeat)
{
  reply.head = head;
  reply.body_unit = unit;
  reply.body_repeat = repeat;
}

/* Runs a search against the peer and returns its error. */
static GError *
search_error (void)
{
  g_autoptr(TsMarketClient) c = ts_market_client_new (peer_url, NULL);
  g_autoptr(TsMarketPage) page = NULL;
  GError *error = NULL;
  gint64 start = g_get_monotonic_time ();

  page = market_search (c, NULL, &error);
  g_assert_null (page);
  g_assert_nonnull (error);
  g_test_message ("error after %.1f ms: %s", (g_get_monotonic_time () - start) / 1000.0,
                  error->message);
  return error;
}

#define HEAD_200 "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"

static void
test_malformed_json (void)
{
  g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL;

  set_reply (HEAD_200 "Content-Length: 22\r\n\r\n{\"adapters\": [ {\"id\": ", "", 0);
  e1 = search_error ();
  g_assert_error (e1, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL);
  set_reply (HEAD_200 "Content-Length: 15\r\n\r\n{\"adapters\": 4}", "", 0);
  e2 = search_error ();
  g_assert_error (e2, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL);
  set_reply (HEAD_200 "Content-Length: 33\r\n\r\n{\"adapters\":[{\"id\":5,\"name\":[]}]}", "", 0);
  e3 = search_error ();
  g_assert_error (e3, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL);
}

static void
test_not_http (void)
{
  g_autoptr(GError) e = NULL;

  set_reply ("SSH-2.0-OpenSSH_9.2\r\n\x01\x02\x03 garbage\r\n\r\n", "", 0);
  e = search_error ();
  g_assert_error (e, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK);
}

static void
test_huge_json (void)
{
  g_autoptr(GError) e1 = NULL, e2 = NULL;

  /* Announced as 64 MiB: refused from the headers alone. */
  set_reply (HEAD_200 "Content-Length: 67108864\r\n\r\n[", "1,1,1,1,1,1,1,1,", 1000);
  e1 = search_error ();
  g_assert_error (e1, TS_MARKET_ERROR, TS_MARKET_ERROR_TOO_LARGE);
  /* No length at all: refused once 4 MiB have arrived. */
  set_reply (HEAD_200 "\r\n[", "1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,", 1024 * 1024);
  e2 = search_error ();
  g_assert_error (e2, TS_MARKET_ERROR, TS_MARKET_ERROR_TOO_LARGE);
}

static void
test_deep_json (void)
{
  g_autoptr(GError) e = NULL;

  set_reply (HEAD_200 "\r\n", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 5000);
  e = search_error ();
  g_assert_error (e, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL);
  g_assert_nonnull (strstr (e->message, "nested"));
}

static void
test_error_statuses (void)
{
  g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL;

  set_reply ("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 57\r\nConnection: close\r\n\r\n"
             "{\"error\":{\"code\":\"maintenance\",\"message\":\"Back at noon\"}}", "", 0);
  e1 = search_error ();
  g_assert_error (e1, TS_MARKET_ERROR, TS_MARKET_ERROR_SERVER);
  g_assert_nonnull (strstr (e1->message, "Back at noon"));
  g_assert_nonnull (strstr (e1->message, "503"));
  set_reply ("HTTP/1.1 500 Internal Server Error\r\nContent-Length: 19\r\nConnection: close\r\n"
             "\r\n<html>oops</html>\r\n", "", 0);
  e2 = search_error ();
  g_assert_error (e2, TS_MARKET_ERROR, TS_MARKET_ERROR_SERVER);
  set_reply ("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", "", 0);
  e3 = search_error ();
  g_assert_error (e3, TS_MARKET_ERROR, TS_MARKET_ERROR_NOT_FOUND);
}

static void
test_cut_short (void)
{
  g_autoptr(GError) e = NULL;

  set_reply (HEAD_200 "Content-Length: 1000\r\n\r\n{\"adapters\": [", "", 0);
  e = search_error ();
  g_assert_error (e, TS_MARKET_ERROR, TS_MARKET_ERROR_TRUNCATED);
}

static void
test_download_cut_short (void)
{
  g_autofree char *dir = market_tmpdir ();
  g_autofree char *dest = g_build_filename (dir, "model.gguf", NULL);
  g_autofree char *part = g_strconcat (dest, ".part", NULL);
  g_autoptr(SoupSession) session = soup_session_new ();
  g_autoptr(GAsyncResult) res = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *sha = NULL;

  set_reply ("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n",
             "0123456789", 100);
  ts_market_download_async (session, peer_url, dest, NULL, -1, NULL, NULL, NULL, NULL,
                            market_store_result, &res);
  market_wait (&res);
  sha = ts_market_download_finish (res, NULL, &error);
  g_assert_null (sha);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_TRUNCATED);
  g_assert_false (g_file_test (dest, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (part, G_FILE_TEST_EXISTS));  /* kept for a resume */
  market_rm_rf (dir);
}

static void
test_refused (void)
{
  g_autoptr(GSocket) sock = g_socket_new (G_SOCKET_FAMILY_IPV4, G_SOCKET_TYPE_STREAM,
                                          G_SOCKET_PROTOCOL_TCP, NULL);
  g_autoptr(GInetAddress) lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr(GSocketAddress) addr = g_inet_socket_address_new (lo, 0);
  g_autoptr(GSocketAddress) bound = NULL;
  g_autoptr(TsMarketClient) c = NULL;
  g_autoptr(TsMarketPage) page = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *url = NULL;

  /* A port that was free a moment ago and has no listener now. */
  g_assert_true (g_socket_bind (sock, addr, TRUE, NULL));
  bound = g_socket_get_local_address (sock, NULL);
  url = g_strdup_printf ("http://127.0.0.1:%u/",
                         g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (bound)));
  g_socket_close (sock, NULL);
  c = ts_market_client_new (url, NULL);
  page = market_search (c, NULL, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK);
}

int
main (int argc, char **argv)
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  service = market_start_tcp_service (G_CALLBACK (peer_run_cb), &peer_url);
  g_test_add_func ("/market/peer/malformed-json", test_malformed_json);
  g_test_add_func ("/market/peer/not-http", test_not_http);
  g_test_add_func ("/market/peer/huge-json", test_huge_json);
  g_test_add_func ("/market/peer/deep-json", test_deep_json);
  g_test_add_func ("/market/peer/error-statuses", test_error_statuses);
  g_test_add_func ("/market/peer/cut-short", test_cut_short);
  g_test_add_func ("/market/peer/download-cut-short", test_download_cut_short);
  g_test_add_func ("/market/peer/connection-refused", test_refused);
  rc = g_test_run ();
  g_socket_service_stop (G_SOCKET_SERVICE (service));
  g_object_unref (service);
  g_free (peer_url);
  return rc;
}
