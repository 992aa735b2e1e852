/* test-hostile-marketd.c: the real tensafe-marketd under hostile clients.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * - Clients that pipeline downloads of the largest adapter and never read:
 *   the server writes one answer at a time per connection, so its own
 *   memory (RssAnon: heap, not the mapped blob) stays within a stated
 *   bound, and other clients are served meanwhile.
 * - A corpus of hostile requests (traversal, odd ranges, injection text,
 *   odd methods and versions, malformed and oversized heads, ambiguous
 *   framing) and, with --long, many more made by flipping bytes of valid
 *   requests: every one gets an answer below 500 (or 501 for an unknown
 *   transfer coding) or a clean close, and the server keeps serving. */
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "hostile-common.h"
#include "market-test-util.h"
#include "ts-test-util.h"

#define BLOB_PATH "/v1/adapters/qwen2.5-coder-0.5b-banking/versions/1.0.0/files/" \
                  "adapter_model.safetensors"
/* What non-reading clients may add to the server's own memory. */
#define NON_READING_MAX_GROWTH_KIB (32 * 1024)
#define ANSWER_WAIT_MS 3000

static MarketServer *server;
static guint16 port;

static GPid
server_pid (void)
{
  return (GPid) g_ascii_strtoll (g_subprocess_get_identifier (server->proc), NULL, 10);
}

static int
connect_raw (void)
{
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons (port),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  struct timeval tv = { .tv_sec = ANSWER_WAIT_MS / 1000,
                        .tv_usec = (ANSWER_WAIT_MS % 1000) * 1000 };
  int fd = socket (AF_INET, SOCK_STREAM, 0);

  g_assert_cmpint (fd, >=, 0);
  g_assert_cmpint (connect (fd, (struct sockaddr *) &to, sizeof to), ==, 0);
  setsockopt (fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  return fd;
}

static void
send_all (int fd, const char *data, gsize len)
{
  while (len > 0)
    {
      ssize_t n = send (fd, data, len, MSG_NOSIGNAL);
      if (n <= 0)
        return;   /* the server answered and closed, or stopped reading */
      data += n;
      len -= (gsize) n;
    }
}

/* The status of the first answer on @fd, 0 after a clean close without
 * one; fails on a reset or a silence of ANSWER_WAIT_MS. */
static guint
first_status (int fd, const char *what)
{
  char buf[64] = { 0 };
  gsize got = 0;

  while (got < 12)
    {
      ssize_t n = recv (fd, buf + got, sizeof buf - 1 - got, 0);
      if (n == 0)
        return 0;
      if (n < 0)
        g_error ("%s: %s instead of an answer", what, g_strerror (errno));
      got += (gsize) n;
    }
  if (!g_str_has_prefix (buf, "HTTP/1."))
    g_error ("%s: not an HTTP answer: %.12s", what, buf);
  return (guint) g_ascii_strtoull (buf + 9, NULL, 10);
}

/* Sends @request; with @then_end, ends the sending side after it, so a
 * request cut short is one the server can see will never be finished. */
static guint
one_request_full (const char *request, gsize len, gboolean then_end, const char *what)
{
  int fd = connect_raw ();
  guint status;

  send_all (fd, request, len);
  if (then_end)
    shutdown (fd, SHUT_WR);
  status = first_status (fd, what);
  close (fd);
  return status;
}

static guint
one_request (const char *request, gsize len, const char *what)
{
  return one_request_full (request, len, FALSE, what);
}

static void
assert_still_serving (void)
{
  static const char probe[] = "GET /v1/adapters?q=demo HTTP/1.1\r\nHost: x\r\n\r\n";

  g_assert_cmpuint (one_request (probe, sizeof probe - 1, "probe"), ==, 200);
}

static void
test_non_reading_clients (void)
{
  enum { CLIENTS = 16, PIPELINED = 200 };
  g_autoptr (GString) burst = g_string_new (NULL);
  GPid pid = server_pid ();
  guint64 base_anon, peak_anon = 0, peak_rss = 0;
  int fds[CLIENTS];

  for (int i = 0; i < PIPELINED; i++)
    g_string_append (burst, "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_still_serving ();
  base_anon = hostile_status_kib (pid, "RssAnon");
  for (guint round = 0; round < hostile_count (1); round++)
    {
      for (int i = 0; i < CLIENTS; i++)
        {
          fds[i] = connect_raw ();
          send_all (fds[i], burst->str, burst->len);   /* never read */
        }
      for (int t = 0; t < 20; t++)
        {
          g_usleep (50000);
          peak_anon = MAX (peak_anon, hostile_status_kib (pid, "RssAnon"));
          peak_rss = MAX (peak_rss, hostile_status_kib (pid, "VmRSS"));
        }
      /* served meanwhile: the stuck connections hold only themselves */
      assert_still_serving ();
      for (int i = 0; i < CLIENTS; i++)
        close (fds[i]);
    }
  g_test_message ("%d clients x %d pipelined 2.1 MB downloads, never read: server heap "
                  "%" G_GUINT64_FORMAT " -> peak %" G_GUINT64_FORMAT " KiB (VmRSS peak %"
                  G_GUINT64_FORMAT " KiB with the mapped blob)", CLIENTS, PIPELINED,
                  base_anon, peak_anon, peak_rss);
  g_assert_cmpuint (peak_anon, <, base_anon + NON_READING_MAX_GROWTH_KIB);
  assert_still_serving ();
}

static const char *const corpus[] = {
  /* traversal */
  "GET /../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters/..%2f..%2f..%2fetc%2fpasswd HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters/tiny-golden/versions/1.0.0/files/..%2f..%2fmarketd.db HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters/tiny-golden/versions/1.0.0/files/%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters/%00 HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET //v1//adapters HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET http://evil.example/v1/adapters HTTP/1.1\r\nHost: x\r\n\r\n",
  /* odd ranges */
  "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\nRange: bytes=-0\r\n\r\n",
  "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\nRange: bytes=5-1\r\n\r\n",
  "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\nRange: bytes=999999999999-\r\n\r\n",
  "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\nRange: bytes=abc\r\n\r\n",
  "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\nRange: bytes=-99999999999999999999\r\n\r\n",
  "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\nRange: lines=1-2\r\n\r\n",
  "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\nIf-Range: \"nope\"\r\nRange: bytes=0-1\r\n\r\n",
  /* injection text */
  "GET /v1/adapters?q=%27%20OR%201%3D1%20-- HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?q=%22 HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?q=* HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?q=NEAR(a%20b) HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?q=a%20OR%20b%20AND%20NOT%20c HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?sort=price;DROP%20TABLE%20adapters HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?limit=-1 HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?limit=99999999999999999999 HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?cursor=%ff%fe%00 HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?max_price=1e999 HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET /v1/adapters?q=%3Cscript%3Ealert(1)%3C/script%3E HTTP/1.1\r\nHost: x\r\n\r\n",
  /* odd methods and versions */
  "DELETE /v1/adapters HTTP/1.1\r\nHost: x\r\n\r\n",
  "TRACE / HTTP/1.1\r\nHost: x\r\n\r\n",
  "BREW /coffee HTTP/1.1\r\nHost: x\r\n\r\n",
  "GET / HTTP/9.9\r\nHost: x\r\n\r\n",
  "GET /\r\n\r\n",
  "GET / HTTP/1.1\r\nHost x\r\n\r\n",
  "GET / HTTP/1.1\r\nHost: a/b\r\n\r\n",
  "\r\n\r\n\r\n",
  /* framing */
  "POST /v1/usage HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
  "POST /v1/usage HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
  "POST /v1/usage HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 2\r\n\r\n0\r\n\r\n",
  "POST /v1/usage HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n",
  "POST /v1/usage HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
  "POST /v1/usage HTTP/1.1\r\nHost: x\r\nContent-Length: 999999999999\r\n\r\n",
};

static gboolean
acceptable (guint status)
{
  /* 0: closed without an answer; 501: a transfer coding nobody knows;
   * 505: an HTTP version nobody speaks */
  return status < 500 || status == 501 || status == 505;
}

static void
test_request_corpus (void)
{
  g_autofree char *big_filler = g_strnfill (64 * 1024, 'a');
  g_autofree char *big = g_strdup_printf ("GET / HTTP/1.1\r\nHost: x\r\nX: %s\r\n\r\n",
                                          big_filler);

  for (gsize i = 0; i < G_N_ELEMENTS (corpus); i++)
    {
      g_autofree char *escaped = g_strescape (corpus[i], NULL);
      g_autofree char *what = g_strdup_printf ("corpus %zu (%.40s)", i, escaped);
      guint status = one_request (corpus[i], strlen (corpus[i]), what);
      g_test_message ("%s: %u", what, status);
      g_assert_true (acceptable (status));
    }
  g_assert_cmpuint (one_request (big, strlen (big), "64 KiB head"), ==, 431);
  assert_still_serving ();
}

/* Valid requests with bytes flipped: seeded, many more with --long. */
static void
test_flipped_requests (void)
{
  static const char *const valid[] = {
    "GET /v1/adapters?q=demo&limit=3 HTTP/1.1\r\nHost: x\r\n\r\n",
    "GET " BLOB_PATH " HTTP/1.1\r\nHost: x\r\nRange: bytes=0-99\r\n\r\n",
    "POST /v1/usage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    "Content-Length: 13\r\n\r\n{\"events\":[]}",
  };
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  guint answered = 0, closed = 0;

  for (guint i = 0; i < hostile_count (60); i++)
    {
      const char *base = valid[i % G_N_ELEMENTS (valid)];
      g_autofree char *req = g_strdup (base);
      gsize len = strlen (req);
      guint status;

      for (int n = g_rand_int_range (rng, 1, 4); n > 0; n--)
        req[g_rand_int_range (rng, 0, (gint32) len)] = (char) g_rand_int_range (rng, 0, 256);
      g_autofree char *what = g_strdup_printf ("flipped request %u (seed %" G_GUINT64_FORMAT ")",
                                               i, ts_test_seed ());
      /* a flip may leave the head or body unfinished: end the stream */
      status = one_request_full (req, len, TRUE, what);
      if (!acceptable (status))
        {
          g_autofree char *escaped = g_strescape (req, NULL);
          g_error ("%s: status %u for %s", what, status, escaped);
        }
      if (status == 0)
        closed++;
      else
        answered++;
    }
  g_test_message ("flipped requests: %u answered, %u closed", answered, closed);
  assert_still_serving ();
}

static guint16
port_of (const char *url)
{
  g_autoptr (GUri) uri = g_uri_parse (url, G_URI_FLAGS_NONE, NULL);

  return (guint16) g_uri_get_port (uri);
}

int
main (int argc, char **argv)
{
  int rc;

  hostile_scale_from_args (&argc, argv);
  g_test_init (&argc, &argv, NULL);
  /* Under AddressSanitizer freed memory waits in a quarantine (256 MiB by
   * default) before it is reused, which would read as the server's heap
   * growing; a small one keeps the measure honest. Ignored otherwise. */
  {
    const char *asan = g_getenv ("ASAN_OPTIONS");
    g_autofree char *options = g_strconcat (asan != NULL ? asan : "", asan != NULL ? ":" : "",
                                            "quarantine_size_mb=4", NULL);
    g_setenv ("ASAN_OPTIONS", options, TRUE);
  }
  server = market_server_start_demo_plus (NULL);
  port = port_of (server->url);
  g_test_add_func ("/hostile/marketd/non-reading-clients", test_non_reading_clients);
  g_test_add_func ("/hostile/marketd/request-corpus", test_request_corpus);
  g_test_add_func ("/hostile/marketd/flipped-requests", test_flipped_requests);
  rc = g_test_run ();
  market_server_stop (server);
  return rc;
}
