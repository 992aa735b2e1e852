/* test-server-gate.c: what both servers' accept path does before libsoup
 * sees a connection (server-listen.h): ambiguous body framing answered 400
 * at once, an oversized request head 431 instead of a reset, a cap on
 * connections per client address, kept-alive connections the client
 * closed really closed, and ordinary requests untouched.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The server runs on its own thread and main context; the test talks raw
 * HTTP/1.1 over blocking sockets with receive timeouts, as an attacker
 * would. Each refusal case is also sent to a server listening with plain
 * soup_server_listen(), which must behave as the finding says (no answer
 * within the wait, a reset, sockets left in CLOSE_WAIT), so the test can
 * tell the two apart. */
#include <errno.h>
#include <stdio.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "server-listen.h"
#include "ts-test-util.h"

#define WAIT_MS 1500

typedef struct {
  GThread *thread;
  GMainContext *context;
  GMainLoop *loop;
  SoupServer *server;
  gboolean gated;
  guint max_per_address;
  guint idle_timeout_s;   /* the socket timeout the servers set; 0: none */
  guint16 port;
  GMutex lock;
  GCond ready;
} Served;

static void
echo_cb (SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
         gpointer data)
{
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  g_autofree char *text = g_strdup_printf ("got %" G_GINT64_FORMAT " bytes", body->length);

  soup_server_message_set_status (msg, 200, NULL);
  soup_server_message_set_response (msg, "text/plain", SOUP_MEMORY_COPY, text, strlen (text));
}

/* Answers "1" when the connection's socket sends without Nagle's delay. */
static void
nodelay_cb (SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
            gpointer data)
{
  GSocket *socket = server_message_socket (msg);
  int on = 0;
  const char *text;

  g_assert_nonnull (socket);
  g_assert_true (g_socket_get_option (socket, IPPROTO_TCP, TCP_NODELAY, &on, NULL));
  text = on ? "1" : "0";
  soup_server_message_set_status (msg, 200, NULL);
  soup_server_message_set_response (msg, "text/plain", SOUP_MEMORY_STATIC, text, 1);
}

/* As both servers do: a connection silent this long is given up. */
static void
request_started_cb (SoupServer *server, SoupServerMessage *msg, gpointer data)
{
  Served *s = data;
  GSocket *socket = s->gated ? server_message_socket (msg) : soup_server_message_get_socket (msg);

  if (socket != NULL && s->idle_timeout_s > 0)
    g_socket_set_timeout (socket, s->idle_timeout_s);
}

static guint16
first_port (GSList *uris)
{
  guint16 port = uris != NULL ? (guint16) g_uri_get_port (uris->data) : 0;

  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  return port;
}

static gpointer
serve_thread (gpointer data)
{
  Served *s = data;
  g_autoptr (GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) address = g_inet_socket_address_new (loopback, 0);
  ServerListenLimits limits = { .max_per_address = s->max_per_address };
  g_autoptr (GError) error = NULL;

  g_main_context_push_thread_default (s->context);
  s->server = soup_server_new (NULL, NULL);
  soup_server_add_handler (s->server, "/echo", echo_cb, NULL, NULL);
  soup_server_add_handler (s->server, "/nodelay", nodelay_cb, NULL, NULL);
  g_signal_connect (s->server, "request-started", G_CALLBACK (request_started_cb), s);
  if (s->gated)
    g_assert_true (server_listen (s->server, address, &limits, &error));
  else
    g_assert_true (soup_server_listen (s->server, address, 0, &error));
  g_assert_no_error (error);
  g_mutex_lock (&s->lock);
  s->port = first_port (s->gated ? server_listen_get_uris (s->server)
                                 : soup_server_get_uris (s->server));
  g_cond_signal (&s->ready);
  g_mutex_unlock (&s->lock);
  g_main_loop_run (s->loop);
  if (s->gated)
    server_listen_stop (s->server);
  soup_server_disconnect (s->server);
  g_clear_object (&s->server);
  /* let lingering closes and handshakes finish their sources */
  while (g_main_context_iteration (s->context, FALSE))
    ;
  g_main_context_pop_thread_default (s->context);
  return NULL;
}

static Served *
served_start_full (gboolean gated, guint max_per_address, guint idle_timeout_s)
{
  Served *s = g_new0 (Served, 1);

  s->gated = gated;
  s->max_per_address = max_per_address;
  s->idle_timeout_s = idle_timeout_s;
  s->context = g_main_context_new ();
  s->loop = g_main_loop_new (s->context, FALSE);
  g_mutex_init (&s->lock);
  g_cond_init (&s->ready);
  g_mutex_lock (&s->lock);
  s->thread = g_thread_new ("server", serve_thread, s);
  while (s->port == 0)
    g_cond_wait (&s->ready, &s->lock);
  g_mutex_unlock (&s->lock);
  return s;
}

static Served *
served_start (gboolean gated, guint max_per_address)
{
  return served_start_full (gated, max_per_address, 0);
}

static gboolean
quit_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

static void
served_stop (Served *s)
{
  g_main_context_invoke (s->context, quit_cb, s->loop);
  g_thread_join (s->thread);
  g_main_loop_unref (s->loop);
  g_main_context_unref (s->context);
  g_mutex_clear (&s->lock);
  g_cond_clear (&s->ready);
  g_free (s);
}

typedef struct {
  Served *s;
  guint n;
  const char *ip;
} CountQuery;

static gboolean
count_cb (gpointer data)
{
  CountQuery *q = data;

  g_mutex_lock (&q->s->lock);
  q->n = server_listen_connections_from (q->s->server, q->ip);
  g_cond_signal (&q->s->ready);
  g_mutex_unlock (&q->s->lock);
  return G_SOURCE_REMOVE;
}

/* Asks the server's thread how many connections it counts from 127.0.0.1. */
static guint
served_count (Served *s)
{
  CountQuery q = { .s = s, .n = G_MAXUINT, .ip = "127.0.0.1" };

  g_mutex_lock (&s->lock);
  g_main_context_invoke (s->context, count_cb, &q);
  while (q.n == G_MAXUINT)
    g_cond_wait (&s->ready, &s->lock);
  g_mutex_unlock (&s->lock);
  return q.n;
}

static guint
served_count_reaches (Served *s, guint want)
{
  guint n = served_count (s);

  for (int i = 0; i < 1000 && n != want; i++)
    {
      g_usleep (10000);
      n = served_count (s);
    }
  return n;
}

/* ---- a raw client ---- */

static int
client_connect (guint16 port)
{
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons (port),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  struct timeval tv = { .tv_sec = WAIT_MS / 1000, .tv_usec = (WAIT_MS % 1000) * 1000 };
  int fd = socket (AF_INET, SOCK_STREAM, 0);

  g_assert_cmpint (fd, >=, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &to, sizeof to), ==, 0);
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

/* Sends what it can (the server may stop reading and answer first). */
static void
client_send (int fd, const char *data, gsize len)
{
  while (len > 0)
    {
      ssize_t n = send (fd, data, len, MSG_NOSIGNAL);
      if (n <= 0)
        return;
      data += n;
      len -= (gsize) n;
    }
}

typedef struct {
  GString *text;
  gboolean reset;     /* ECONNRESET before or instead of an answer */
  gboolean timed_out; /* nothing more within WAIT_MS */
  gboolean closed;
  double seconds;
} Answer;

static void
answer_clear (Answer *a)
{
  g_string_free (a->text, TRUE);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Answer, answer_clear)

/* Reads until the server closes, resets, or is silent for WAIT_MS; with
 * @one_answer, stops after a complete answer with a Content-Length. */
static Answer
client_read (int fd, gboolean one_answer)
{
  Answer a = { .text = g_string_new (NULL) };
  gint64 start = g_get_monotonic_time ();
  char buf[4096];

  for (;;)
    {
      ssize_t n = recv (fd, buf, sizeof buf, 0);
      if (n > 0)
        {
          g_string_append_len (a.text, buf, n);
          const char *end = strstr (a.text->str, "\r\n\r\n");
          const char *cl = g_strstr_len (a.text->str, -1, "Content-Length: ");
          if (one_answer && end != NULL && cl != NULL
              && a.text->len >= (gsize) (end + 4 - a.text->str) + strtoul (cl + 16, NULL, 10))
            break;
          continue;
        }
      a.closed = n == 0;
      a.reset = n < 0 && errno == ECONNRESET;
      a.timed_out = n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      break;
    }
  a.seconds = (double) (g_get_monotonic_time () - start) / G_USEC_PER_SEC;
  return a;
}

/* One request on a fresh connection; the answer as read. */
static Answer
exchange (guint16 port, const char *request, gsize len)
{
  int fd = client_connect (port);
  Answer a;

  client_send (fd, request, len);
  a = client_read (fd, FALSE);
  close (fd);
  return a;
}

static const char *const ambiguous_requests[] = {
  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5000\r\n\r\nabc",
  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc",
  "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n"
  "3\r\nabc\r\n0\r\n\r\n",
  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc",
  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\nabc",
  "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3x\r\n\r\nabc",
};

static void
test_ambiguous_framing (void)
{
  Served *s = served_start (TRUE, 0);

  for (gsize i = 0; i < G_N_ELEMENTS (ambiguous_requests); i++)
    {
      g_auto (Answer) a = exchange (s->port, ambiguous_requests[i],
                                    strlen (ambiguous_requests[i]));
      g_test_message ("request %zu answered in %.3f s: %.40s", i, a.seconds, a.text->str);
      g_assert_true (g_str_has_prefix (a.text->str, "HTTP/1.1 400 "));
      g_assert_nonnull (strstr (a.text->str, "\"code\":\"bad_framing\""));
      g_assert_true (a.closed);
      g_assert_cmpfloat (a.seconds, <, 1.0);
    }
  served_stop (s);
}

/* A transfer coding nobody here knows, and whitespace before a colon:
 * answered by the gate before libsoup parses the head (libsoup's own 501
 * lost the request's path, a leak per request; its answer has no JSON
 * body, so the two differ). */
static void
test_unknown_coding (void)
{
  static const char *const requests[] = {
    "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
    "POST /echo HTTP/1.1\r\nHost: x\r\ntransfer-encoding:  gzip, chunked\r\n\r\n",
    "POST /echo HTTP/1.1\r\nHost: x\nTransfer-Encoding: x\n\n",
    "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
  };
  Served *s = served_start (TRUE, 0);

  for (gsize i = 0; i < G_N_ELEMENTS (requests); i++)
    {
      g_auto (Answer) a = exchange (s->port, requests[i], strlen (requests[i]));
      g_assert_true (g_str_has_prefix (a.text->str, "HTTP/1.1 501 "));
      g_assert_nonnull (strstr (a.text->str, "\"code\":\"unknown_transfer_coding\""));
    }
  {
    static const char spaced[] = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\n\r\nabc";
    g_auto (Answer) a = exchange (s->port, spaced, sizeof spaced - 1);
    g_assert_true (g_str_has_prefix (a.text->str, "HTTP/1.1 400 "));
  }
  served_stop (s);
}

/* Before the gate: the negative length waited for a body that never came. */
static void
test_soup_alone_waits_on_negative_length (void)
{
  Served *s = served_start (FALSE, 0);
  g_auto (Answer) a = exchange (s->port, ambiguous_requests[0], strlen (ambiguous_requests[0]));

  g_test_message ("soup_server_listen: %zu bytes, timed out %d", a.text->len, a.timed_out);
  g_assert_true (a.timed_out);
  g_assert_cmpuint (a.text->len, ==, 0);
  served_stop (s);
}

static char *
request_with_header_bytes (gsize bytes)
{
  g_autofree char *filler = g_strnfill (bytes, 'a');

  return g_strdup_printf ("GET /echo HTTP/1.1\r\nHost: x\r\nX-Filler: %s\r\n\r\n", filler);
}

static void
test_oversized_head (void)
{
  Served *s = served_start (TRUE, 0);
  g_autofree char *big = request_with_header_bytes (100 * 1024);
  g_autofree char *fits = request_with_header_bytes (SERVER_DEFAULT_MAX_HEAD_BYTES - 1024);
  g_auto (Answer) refused = exchange (s->port, big, strlen (big));
  g_auto (Answer) served = exchange (s->port, fits, strlen (fits));

  g_test_message ("100 KiB head: %.40s (reset %d)", refused.text->str, refused.reset);
  g_assert_true (g_str_has_prefix (refused.text->str, "HTTP/1.1 431 "));
  g_assert_nonnull (strstr (refused.text->str, "\"code\":\"headers_too_large\""));
  g_assert_false (refused.reset);
  g_assert_cmpfloat (refused.seconds, <, 1.0);
  g_assert_true (g_str_has_prefix (served.text->str, "HTTP/1.1 200 "));
  served_stop (s);
}

static void
test_soup_alone_resets_oversized_head (void)
{
  Served *s = served_start (FALSE, 0);
  g_autofree char *big = request_with_header_bytes (100 * 1024);
  g_auto (Answer) a = exchange (s->port, big, strlen (big));

  g_test_message ("soup_server_listen: %.40s (reset %d, closed %d)", a.text->str, a.reset,
                  a.closed);
  g_assert_false (g_str_has_prefix (a.text->str, "HTTP/1.1 431 "));
  served_stop (s);
}

/* Keep-alive, a sized body, a chunked body and a short one all still work
 * on one connection. */
static void
test_ordinary_requests (void)
{
  static const char *const requests[] = {
    "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n",
    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    "3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n",
    "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
  };
  static const char *const bodies[] = { "got 0 bytes", "got 5 bytes", "got 7 bytes",
                                        "got 0 bytes" };
  Served *s = served_start (TRUE, 0);
  int fd = client_connect (s->port);

  for (gsize i = 0; i < G_N_ELEMENTS (requests); i++)
    {
      g_auto (Answer) a = { 0 };
      client_send (fd, requests[i], strlen (requests[i]));
      a = client_read (fd, TRUE);
      g_test_message ("request %zu: %.40s", i, a.text->str);
      g_assert_true (g_str_has_prefix (a.text->str, "HTTP/1.1 200 "));
      g_assert_true (g_str_has_suffix (a.text->str, bodies[i]));
    }
  close (fd);
  served_stop (s);
}

static void
test_connections_per_address (void)
{
  enum { CAP = 4 };
  Served *s = served_start (TRUE, CAP);
  int held[CAP];
  int extra;

  for (int i = 0; i < CAP; i++)
    held[i] = client_connect (s->port);
  g_assert_cmpuint (served_count_reaches (s, CAP), ==, CAP);
  {
    g_auto (Answer) a = exchange (s->port, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", 32);
    g_test_message ("connection %d: %.40s", CAP + 1, a.text->str);
    g_assert_true (g_str_has_prefix (a.text->str, "HTTP/1.1 503 "));
    g_assert_nonnull (strstr (a.text->str, "\"code\":\"too_many_connections\""));
  }
  g_assert_cmpuint (served_count (s), ==, CAP);
  /* a connection that ends gives its place back */
  close (held[0]);
  g_assert_cmpuint (served_count_reaches (s, CAP - 1), ==, CAP - 1);
  extra = client_connect (s->port);
  client_send (extra, "GET /echo HTTP/1.1\r\nHost: x\r\n\r\n", 32);
  {
    g_auto (Answer) a = client_read (extra, TRUE);
    g_assert_true (g_str_has_prefix (a.text->str, "HTTP/1.1 200 "));
  }
  close (extra);
  for (int i = 1; i < CAP; i++)
    close (held[i]);
  g_assert_cmpuint (served_count_reaches (s, 0), ==, 0);
  served_stop (s);
}

/* Server-side sockets of @port in CLOSE_WAIT: the client closed, the
 * server has not (/proc/net/tcp, state 08). */
static guint
close_wait_sockets (guint16 port)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;
  guint n = 0;

  g_assert_true (g_file_get_contents ("/proc/net/tcp", &text, NULL, NULL));
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 1; lines[i] != NULL; i++)
    {
      unsigned local_port = 0, state = 0;
      if (sscanf (lines[i], "%*d: %*x:%x %*x:%*x %x", &local_port, &state) == 2
          && local_port == port && state == 0x08)
        n++;
    }
  return n;
}

/* What a SoupSession sends: the client keeps the connection for a next
 * request, then closes it. */
static const char keep_alive_request[] = "GET /echo HTTP/1.1\r\nAccept-Encoding: gzip, deflate\r\n"
                                         "Connection: Keep-Alive\r\nHost: x\r\n\r\n";

static void
keep_alive_then_close (guint16 port)
{
  int fd = client_connect (port);
  g_auto (Answer) a = { 0 };

  client_send (fd, keep_alive_request, strlen (keep_alive_request));
  a = client_read (fd, TRUE);
  g_usleep (20000);   /* the server waits for the next request */
  close (fd);
  g_assert_true (g_str_has_prefix (a.text->str, "HTTP/1.1 200 "));
}

/* Kept-alive connections the client closed give their place back: 40 in
 * a row under a cap of 4 are all served, and none stays half-closed. */
static void
test_places_given_back (void)
{
  Served *s = served_start (TRUE, 4);

  for (int i = 0; i < 40; i++)
    keep_alive_then_close (s->port);
  g_assert_cmpuint (served_count_reaches (s, 0), ==, 0);
  g_assert_cmpuint (close_wait_sockets (s->port), ==, 0);
  served_stop (s);
}

/* Before the gate: libsoup 3.2 left each of them in CLOSE_WAIT for good. */
static void
test_soup_alone_keeps_closed_connections (void)
{
  Served *s = served_start (FALSE, 0);
  guint left;

  for (int i = 0; i < 10; i++)
    keep_alive_then_close (s->port);
  g_usleep (100000);
  left = close_wait_sockets (s->port);
  g_test_message ("soup_server_listen: %u of 10 closed connections still open", left);
  g_assert_cmpuint (left, ==, 10);
  served_stop (s);
}

/* Accepted sockets send without Nagle's delay, as libsoup's own listener
 * makes them: with it, each answer's last write waited for the client's
 * delayed ACK and a keep-alive connection managed 25 requests a second
 * (marketd: 365 requests/s over 16 connections instead of 5,000). */
static void
test_no_nagle (void)
{
  Served *s = served_start (TRUE, 0);
  g_auto (Answer) a = exchange (s->port, "GET /nodelay HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                                strlen ("GET /nodelay HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));

  g_assert_true (g_str_has_prefix (a.text->str, "HTTP/1.1 200 "));
  g_assert_true (g_str_has_suffix (a.text->str, "\r\n\r\n1"));
  served_stop (s);
}

/* One request on a kept-alive connection, then silence past the server's
 * socket timeout (1 s): how the connection ends, read within WAIT_MS. */
static Answer
idle_past_timeout (Served *s)
{
  int fd = client_connect (s->port);
  g_auto (Answer) first = { 0 };
  Answer after;

  client_send (fd, keep_alive_request, strlen (keep_alive_request));
  first = client_read (fd, TRUE);
  g_assert_true (g_str_has_prefix (first.text->str, "HTTP/1.1 200 "));
  g_usleep (1200000);
  after = client_read (fd, FALSE);
  close (fd);
  return after;
}

/* A kept-alive connection left idle past the socket timeout is closed, so
 * the client's next request goes on a new connection; before, it stayed
 * open and unread, and a request sent on it (a marketplace page opened
 * half a minute after the last) waited forever. */
static void
test_idle_keep_alive_closed (void)
{
  Served *s = served_start_full (TRUE, 0, 1);
  g_auto (Answer) a = idle_past_timeout (s);

  g_test_message ("after the timeout: closed %d, reset %d, silent %d (%.2f s)", a.closed, a.reset,
                  a.timed_out, a.seconds);
  g_assert_true (a.closed);
  g_assert_cmpuint (a.text->len, ==, 0);
  g_assert_cmpuint (served_count_reaches (s, 0), ==, 0);
  served_stop (s);
}

/* Before the gate: libsoup 3.2 alone keeps such a connection open. */
static void
test_soup_alone_keeps_timed_out_connections (void)
{
  Served *s = served_start_full (FALSE, 0, 1);
  g_auto (Answer) a = idle_past_timeout (s);

  g_test_message ("soup_server_listen, after the timeout: closed %d, silent %d", a.closed,
                  a.timed_out);
  g_assert_true (a.timed_out);
  served_stop (s);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/server-gate/ambiguous-framing-400", test_ambiguous_framing);
  g_test_add_func ("/server-gate/unknown-coding-501", test_unknown_coding);
  g_test_add_func ("/server-gate/soup-alone-waits-on-negative-length",
                   test_soup_alone_waits_on_negative_length);
  g_test_add_func ("/server-gate/oversized-head-431", test_oversized_head);
  g_test_add_func ("/server-gate/soup-alone-resets-oversized-head",
                   test_soup_alone_resets_oversized_head);
  g_test_add_func ("/server-gate/ordinary-requests", test_ordinary_requests);
  g_test_add_func ("/server-gate/connections-per-address", test_connections_per_address);
  g_test_add_func ("/server-gate/places-given-back", test_places_given_back);
  g_test_add_func ("/server-gate/soup-alone-keeps-closed-connections",
                   test_soup_alone_keeps_closed_connections);
  g_test_add_func ("/server-gate/no-nagle", test_no_nagle);
  g_test_add_func ("/server-gate/idle-keep-alive-closed", test_idle_keep_alive_closed);
  g_test_add_func ("/server-gate/soup-alone-keeps-timed-out-connections",
                   test_soup_alone_keeps_timed_out_connections);
  return g_test_run ();
}
