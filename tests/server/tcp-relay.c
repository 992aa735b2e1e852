/* tcp-relay.c: a TCP relay on 127.0.0.1 whose connections a test can cut at any moment.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One thread accepts; each connection gets a thread that copies both ways
 * with poll() until either side ends or the test cuts it (shutdown() of
 * both sockets, so the peers see the connection end at once).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp-relay.h"

typedef struct {
  int a, b;                    /* the client's side, the server's side */
  GThread *thread;
} Pair;

struct _TcpRelay {
  int listener;
  int wake[2];
  guint16 port, target;
  GThread *acceptor;
  GMutex lock;
  GPtrArray *pairs;            /* of Pair * */
  guint accepted, refused;
  gboolean unavailable;        /* answer as a balancer with no server up */
};

static gboolean
copy_once (int from, int to)
{
  char buf[65536];
  ssize_t n = recv (from, buf, sizeof buf, 0);

  for (ssize_t off = 0; n > 0 && off < n;)
    {
      ssize_t w = send (to, buf + off, n - off, MSG_NOSIGNAL);
      if (w <= 0)
        return FALSE;
      off += w;
    }
  return n > 0;
}

static gpointer
pump (gpointer data)
{
  Pair *p = data;
  struct pollfd fds[2] = { { .fd = p->a, .events = POLLIN }, { .fd = p->b, .events = POLLIN } };

  while (poll (fds, 2, -1) >= 0)
    {
      if ((fds[0].revents & (POLLIN | POLLHUP | POLLERR)) && !copy_once (p->a, p->b))
        break;
      if ((fds[1].revents & (POLLIN | POLLHUP | POLLERR)) && !copy_once (p->b, p->a))
        break;
    }
  shutdown (p->a, SHUT_RDWR);
  shutdown (p->b, SHUT_RDWR);
  return NULL;
}

static int
connect_target (guint16 port)
{
  struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons (port) };
  int fd = socket (AF_INET, SOCK_STREAM, 0);

  addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  if (fd >= 0 && connect (fd, (struct sockaddr *) &addr, sizeof addr) != 0)
    {
      close (fd);
      fd = -1;
    }
  return fd;
}

static gboolean
relay_unavailable (TcpRelay *self)
{
  gboolean unavailable;

  g_mutex_lock (&self->lock);
  unavailable = self->unavailable;
  if (unavailable)
    self->refused++;
  g_mutex_unlock (&self->lock);
  return unavailable;
}

/* What HAProxy answers when no server of the backend is up; the request
 * itself is read first so that the client sees the answer, not a reset. */
static void
answer_unavailable (int fd)
{
  static const char answer[] = "HTTP/1.1 503 Service Unavailable\r\n"
                               "Content-Length: 0\r\nConnection: close\r\n\r\n";
  char request[4096];

  if (recv (fd, request, sizeof request, 0) > 0)
    (void) !send (fd, answer, sizeof answer - 1, MSG_NOSIGNAL);
  close (fd);
}

static gpointer
accept_loop (gpointer data)
{
  TcpRelay *self = data;
  struct pollfd fds[2] = { { .fd = self->listener, .events = POLLIN },
                           { .fd = self->wake[0], .events = POLLIN } };

  while (poll (fds, 2, -1) >= 0 && !(fds[1].revents & POLLIN))
    {
      int a = accept (self->listener, NULL, NULL), b;
      Pair *p;

      if (a < 0)
        continue;
      if (relay_unavailable (self))
        {
          answer_unavailable (a);
          continue;
        }
      if ((b = connect_target (self->target)) < 0)
        {
          close (a);
          continue;
        }
      p = g_new0 (Pair, 1);
      p->a = a;
      p->b = b;
      g_mutex_lock (&self->lock);
      self->accepted++;
      g_ptr_array_add (self->pairs, p);
      p->thread = g_thread_new ("relay-pump", pump, p);
      g_mutex_unlock (&self->lock);
    }
  return NULL;
}

TcpRelay *
tcp_relay_new (guint16 port)
{
  TcpRelay *self = g_new0 (TcpRelay, 1);
  struct sockaddr_in addr = { .sin_family = AF_INET };
  socklen_t len = sizeof addr;

  addr.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
  self->target = port;
  self->listener = socket (AF_INET, SOCK_STREAM, 0);
  g_assert_cmpint (self->listener, >=, 0);
  g_assert_cmpint (bind (self->listener, (struct sockaddr *) &addr, sizeof addr), ==, 0);
  g_assert_cmpint (listen (self->listener, 64), ==, 0);
  g_assert_cmpint (getsockname (self->listener, (struct sockaddr *) &addr, &len), ==, 0);
  self->port = ntohs (addr.sin_port);
  g_assert_cmpint (pipe (self->wake), ==, 0);
  g_mutex_init (&self->lock);
  self->pairs = g_ptr_array_new ();
  self->acceptor = g_thread_new ("relay-accept", accept_loop, self);
  return self;
}

guint16
tcp_relay_port (TcpRelay *self)
{
  return self->port;
}

guint
tcp_relay_accepted (TcpRelay *self)
{
  guint n;

  g_mutex_lock (&self->lock);
  n = self->accepted;
  g_mutex_unlock (&self->lock);
  return n;
}

void
tcp_relay_cut (TcpRelay *self)
{
  g_mutex_lock (&self->lock);
  for (guint i = 0; i < self->pairs->len; i++)
    {
      Pair *p = g_ptr_array_index (self->pairs, i);
      shutdown (p->a, SHUT_RDWR);
      shutdown (p->b, SHUT_RDWR);
    }
  g_mutex_unlock (&self->lock);
}

void
tcp_relay_free (TcpRelay *self)
{
  g_assert_cmpint (write (self->wake[1], "x", 1), ==, 1);
  g_thread_join (self->acceptor);
  close (self->listener);
  tcp_relay_cut (self);
  for (guint i = 0; i < self->pairs->len; i++)
    {
      Pair *p = g_ptr_array_index (self->pairs, i);
      g_thread_join (p->thread);
      close (p->a);
      close (p->b);
      g_free (p);
    }
  g_ptr_array_unref (self->pairs);
  close (self->wake[0]);
  close (self->wake[1]);
  g_mutex_clear (&self->lock);
  g_free (self);
}

void
tcp_relay_set_unavailable (TcpRelay *self, gboolean unavailable)
{
  g_mutex_lock (&self->lock);
  self->unavailable = unavailable;
  g_mutex_unlock (&self->lock);
}

guint
tcp_relay_refused (TcpRelay *self)
{
  guint refused;

  g_mutex_lock (&self->lock);
  refused = self->refused;
  g_mutex_unlock (&self->lock);
  return refused;
}
