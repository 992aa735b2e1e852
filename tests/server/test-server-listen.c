/* test-server-listen.c: a burst of connections finds room in the accept
 * queue of both servers' listening socket (server-listen.h).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The server's main loop does not run while the connections are opened, so
 * nothing is accepted: every connection that completes its handshake sits
 * in the accept queue, and the queue's length is the backlog. With GLib's
 * default (soup_server_listen) 11 of 300 complete; with SOMAXCONN all. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "server-listen.h"
#include "ts-test-util.h"

#define MAX_BURST 300

/* The kernel caps every backlog at net.core.somaxconn (4096 on current
 * kernels, 128 on older ones): the burst stays within it. */
static int
burst_size (void)
{
  g_autofree char *text = NULL;
  int cap = 4096;

  if (g_file_get_contents ("/proc/sys/net/core/somaxconn", &text, NULL, NULL))
    cap = atoi (text);
  return MIN (MAX_BURST, cap);
}

static guint16
server_port (SoupServer *server, gboolean ours)
{
  GSList *uris = ours ? server_listen_get_uris (server) : soup_server_get_uris (server);
  guint16 port = (guint16) g_uri_get_port (uris->data);

  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  return port;
}

/* Opens @burst non-blocking connections to 127.0.0.1:@port and counts
 * those whose handshake completes within a second. */
static int
connected_in_burst (guint16 port, int burst)
{
  struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons (port),
                            .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
  int fds[MAX_BURST], done = 0;

  for (int i = 0; i < burst; i++)
    {
      fds[i] = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      g_assert_cmpint (fds[i], >=, 0);
      int rc = connect (fds[i], (struct sockaddr *) &to, sizeof to);
      g_assert_true (rc == 0 || errno == EINPROGRESS);
    }
  gint64 deadline = g_get_monotonic_time () + G_USEC_PER_SEC;
  for (int i = 0; i < burst; i++)
    {
      struct pollfd p = { .fd = fds[i], .events = POLLOUT };
      /* One reading of the clock: MAX() evaluates its arguments twice, and a
       * second, later reading could make the timeout −1 (forever). */
      gint64 left_us = deadline - g_get_monotonic_time ();
      int left = left_us > 0 ? (int) (left_us / 1000) : 0;
      int err = 0;
      socklen_t len = sizeof err;
      if (poll (&p, 1, left) == 1 && (p.revents & POLLOUT)
          && getsockopt (fds[i], SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
        done++;
      close (fds[i]);
    }
  return done;
}

/* Opens a burst on a fresh server listening with server_listen() (@ours)
 * or soup_server_listen(); returns how many connections completed. */
static int
burst_against (gboolean ours, int burst)
{
  g_autoptr (SoupServer) server = soup_server_new (NULL, NULL);
  g_autoptr (GInetAddress) loopback = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV4);
  g_autoptr (GSocketAddress) address = g_inet_socket_address_new (loopback, 0);
  g_autoptr (GError) error = NULL;

  g_assert_true (ours ? server_listen (server, address, NULL, &error)
                      : soup_server_listen (server, address, 0, &error));
  g_assert_no_error (error);
  return connected_in_burst (server_port (server, ours), burst);
}

static void
test_burst (void)
{
  int burst = burst_size ();

  g_assert_cmpint (server_listen_backlog (), >=, burst);
  int done = burst_against (TRUE, burst);
  g_test_message ("%d of %d connections completed with nothing accepted", done, burst);
  g_assert_cmpint (done, ==, burst);
}

/* The same burst against soup_server_listen's own socket: the fixture can
 * tell the two apart (and so the test above can fail). */
static void
test_default_backlog_is_short (void)
{
  int burst = burst_size ();
  int done = burst_against (FALSE, burst);

  g_test_message ("soup_server_listen: %d of %d connections completed", done, burst);
  g_assert_cmpint (done, <, burst / 2);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/server-listen/burst", test_burst);
  g_test_add_func ("/server-listen/default-backlog-is-short", test_default_backlog_is_short);
  return g_test_run ();
}
