/* server-listen.c: listen, accept, cap per address, TLS, guard, hand over.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <gio/gunixsocketaddress.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "server-guard-stream.h"
#include "server-listen.h"
#include "server-reject.h"

#define GATE_KEY "ts-server-gate"

/* One per server, owned by it (object data); accepted connections keep a
 * reference so their count can be given back after the server is gone. */
typedef struct {
  SoupServer *server;          /* NULL once the server let go */
  GTlsCertificate *tls;
  ServerListenLimits limits;
  GSocketService *service;
  GPtrArray *sockets;          /* listening */
  GHashTable *per_address;     /* client IP text → connections open */
} Gate;

/* Connections handed to libsoup, by "local|remote" address, so a message
 * can find its guard; servers run on one thread each, tests run several
 * on one, so the table is shared and guarded. */
static GMutex guards_lock;
static GHashTable *guards_by_address;

/* ---- addresses ---- */

static char *
address_ip (GSocketAddress *address)
{
  if (!G_IS_INET_SOCKET_ADDRESS (address))
    return NULL;
  return g_inet_address_to_string (
    g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (address)));
}

static char *
address_text (GSocketAddress *address)
{
  g_autofree char *ip = address_ip (address);

  if (ip == NULL)
    return NULL;
  return g_strdup_printf ("%s#%u", ip,
                          g_inet_socket_address_get_port (G_INET_SOCKET_ADDRESS (address)));
}

static char *
connection_key (GSocketAddress *local, GSocketAddress *remote)
{
  g_autofree char *l = address_text (local);
  g_autofree char *r = address_text (remote);

  return l != NULL && r != NULL ? g_strconcat (l, "|", r, NULL) : NULL;
}

/* ---- the guard of a message ---- */

static ServerGuardStream *
guard_of_message (SoupServerMessage *msg)
{
  g_autofree char *key = connection_key (soup_server_message_get_local_address (msg),
                                         soup_server_message_get_remote_address (msg));
  ServerGuardStream *guard = NULL;

  if (key == NULL)
    return NULL;
  g_mutex_lock (&guards_lock);
  if (guards_by_address != NULL)
    guard = g_hash_table_lookup (guards_by_address, key);
  if (guard != NULL)
    g_object_ref (guard);
  g_mutex_unlock (&guards_lock);
  return guard;
}

GSocket *
server_message_socket (SoupServerMessage *msg)
{
  GSocket *socket;
  g_autoptr (ServerGuardStream) guard = NULL;

  g_return_val_if_fail (SOUP_IS_SERVER_MESSAGE (msg), NULL);

  socket = soup_server_message_get_socket (msg);
  if (socket != NULL || (guard = guard_of_message (msg)) == NULL)
    return socket;
  /* the registry's entry goes with the guard, and the guard with the
   * connection, which outlives the message's handlers */
  return server_guard_stream_get_socket (guard);
}

/* ---- the gate ---- */

static void
gate_clear (gpointer data)
{
  Gate *gate = data;

  g_clear_object (&gate->tls);
  g_clear_object (&gate->service);
  g_ptr_array_unref (gate->sockets);
  g_hash_table_unref (gate->per_address);
}

static void
gate_release (Gate *gate)
{
  g_rc_box_release_full (gate, gate_clear);
}

static void
gate_stop (Gate *gate)
{
  if (gate->service == NULL)
    return;
  g_signal_handlers_disconnect_by_data (gate->service, gate);
  g_socket_service_stop (gate->service);
  g_socket_listener_close (G_SOCKET_LISTENER (gate->service));
}

/* The server is finalised: nothing more reaches it. */
static void
gate_detach (gpointer data)
{
  Gate *gate = data;

  gate_stop (gate);
  gate->server = NULL;
  gate_release (gate);
}

static guint
gate_count (Gate *gate, const char *ip)
{
  return GPOINTER_TO_UINT (g_hash_table_lookup (gate->per_address, ip));
}

static void
gate_count_add (Gate *gate, const char *ip, int delta)
{
  guint n = gate_count (gate, ip) + (guint) delta;

  if (n == 0)
    g_hash_table_remove (gate->per_address, ip);
  else
    g_hash_table_replace (gate->per_address, g_strdup (ip), GUINT_TO_POINTER (n));
}

/* ---- one accepted connection until its guard goes ---- */

typedef struct {
  Gate *gate;
  char *ip;
  char *key;   /* in guards_by_address once handed over */
  GSocketConnection *tcp;
  GCancellable *handshake;
  GSource *handshake_timer;
} Accepted;

static void
accepted_free (Accepted *a)
{
  gate_count_add (a->gate, a->ip, -1);
  gate_release (a->gate);
  g_free (a->ip);
  g_free (a->key);
  g_clear_object (&a->tcp);
  g_clear_object (&a->handshake);
  if (a->handshake_timer != NULL)
    g_source_destroy (a->handshake_timer);
  g_clear_pointer (&a->handshake_timer, g_source_unref);
  g_free (a);
}

static void
guard_gone_cb (gpointer data, GObject *where_the_guard_was)
{
  Accepted *a = data;

  g_mutex_lock (&guards_lock);
  if (g_hash_table_lookup (guards_by_address, a->key) == where_the_guard_was)
    g_hash_table_remove (guards_by_address, a->key);
  g_mutex_unlock (&guards_lock);
  accepted_free (a);
}

static void
hand_over (Accepted *a, GIOStream *base)
{
  GSocket *socket = g_socket_connection_get_socket (a->tcp);
  g_autoptr (GSocketAddress) local = g_socket_get_local_address (socket, NULL);
  g_autoptr (GSocketAddress) remote = g_socket_get_remote_address (socket, NULL);
  g_autoptr (ServerGuardStream) guard = NULL;

  a->key = local != NULL && remote != NULL ? connection_key (local, remote) : NULL;
  if (a->gate->server == NULL || a->key == NULL)
    {
      g_io_stream_close (base, NULL, NULL);
      accepted_free (a);
      return;
    }
  guard = server_guard_stream_new (base, socket, a->gate->limits.max_head_bytes);
  g_mutex_lock (&guards_lock);
  if (guards_by_address == NULL)
    guards_by_address = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_hash_table_replace (guards_by_address, g_strdup (a->key), guard);
  g_mutex_unlock (&guards_lock);
  g_clear_object (&a->tcp);
  g_object_weak_ref (G_OBJECT (guard), guard_gone_cb, a);
  soup_server_accept_iostream (a->gate->server, G_IO_STREAM (guard), local, remote, NULL);
}

static void
handshake_done_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  Accepted *a = data;
  g_autoptr (GError) error = NULL;

  g_source_destroy (a->handshake_timer);
  g_clear_pointer (&a->handshake_timer, g_source_unref);
  if (!g_tls_connection_handshake_finish (G_TLS_CONNECTION (source), result, &error))
    {
      g_debug ("TLS handshake with %s failed: %s", a->ip, error->message);
      g_io_stream_close (G_IO_STREAM (source), NULL, NULL);
      g_object_unref (source);
      accepted_free (a);
      return;
    }
  hand_over (a, G_IO_STREAM (source));
  g_object_unref (source);
}

static gboolean
handshake_timeout_cb (gpointer data)
{
  g_cancellable_cancel (data);
  return G_SOURCE_REMOVE;
}

static void
start_tls (Accepted *a)
{
  g_autoptr (GError) error = NULL;
  GIOStream *tls = g_tls_server_connection_new (G_IO_STREAM (a->tcp), a->gate->tls, &error);

  if (tls == NULL)
    {
      g_warning ("Cannot start TLS: %s", error->message);
      accepted_free (a);
      return;
    }
  /* a client that starts a handshake and stalls holds a connection of
   * its address's quota: bound it like a request head */
  a->handshake = g_cancellable_new ();
  a->handshake_timer = g_timeout_source_new (a->gate->limits.handshake_ms);
  g_source_set_callback (a->handshake_timer, handshake_timeout_cb, a->handshake, NULL);
  g_source_attach (a->handshake_timer, g_main_context_get_thread_default ());
  g_tls_connection_handshake_async (G_TLS_CONNECTION (tls), G_PRIORITY_DEFAULT, a->handshake,
                                    handshake_done_cb, a);
}

static gboolean
incoming_cb (GSocketService *service, GSocketConnection *tcp, GObject *source, gpointer data)
{
  Gate *gate = data;
  GSocket *socket = g_socket_connection_get_socket (tcp);
  g_autoptr (GSocketAddress) remote = g_socket_connection_get_remote_address (tcp, NULL);
  g_autofree char *ip = remote != NULL ? address_ip (remote) : NULL;
  Accepted *a;

  if (gate->server == NULL || ip == NULL)
    return TRUE;   /* dropping our reference closes it */
  /* as libsoup's own listener does: an answer's last small write must not
   * wait for the client's delayed ACK (40 ms per request with Nagle) */
  g_socket_set_option (socket, IPPROTO_TCP, TCP_NODELAY, TRUE, NULL);
  if (gate->limits.max_per_address > 0 && gate_count (gate, ip) >= gate->limits.max_per_address)
    {
      g_debug ("Refusing a connection from %s: %u already open", ip, gate_count (gate, ip));
      if (gate->tls == NULL)
        server_reject (G_IO_STREAM (tcp), socket, 503, "Service Unavailable",
                       "too_many_connections", "Too many connections from this address");
      return TRUE;
    }
  gate_count_add (gate, ip, 1);
  a = g_new0 (Accepted, 1);
  a->gate = g_rc_box_acquire (gate);
  a->ip = g_steal_pointer (&ip);
  a->tcp = g_object_ref (tcp);
  if (gate->tls != NULL)
    start_tls (a);
  else
    hand_over (a, G_IO_STREAM (tcp));
  return TRUE;
}

/* ---- what the server tells the guard ---- */

static gboolean
has_body (SoupMessageHeaders *headers)
{
  return soup_message_headers_get_list (headers, "Transfer-Encoding") != NULL
         || soup_message_headers_get_content_length (headers) > 0;
}

/* A handler refused the request from its head (413 for a body too large,
 * say), but libsoup would still read the whole body before answering: a
 * client declaring a terabyte would hold the connection until the
 * deadline. Answer now with what the handler set, and close. */
static void
answer_early_refusal (SoupServerMessage *msg, ServerGuardStream *guard)
{
  guint status = soup_server_message_get_status (msg);
  g_autoptr (GBytes) body = soup_message_body_flatten (soup_server_message_get_response_body (msg));
  g_autofree char *type = g_strdup (soup_message_headers_get_content_type (
    soup_server_message_get_response_headers (msg), NULL));
  g_autoptr (GIOStream) stolen = soup_server_message_steal_connection (msg);

  server_guard_stream_reject_with_body (guard, status, soup_status_get_phrase (status), type,
                                        body);
}

static void
got_headers_cb (SoupServerMessage *msg, gpointer data)
{
  g_autoptr (ServerGuardStream) guard = guard_of_message (msg);

  if (guard == NULL)
    return;
  server_guard_stream_head_done (guard);
  if (soup_server_message_get_status (msg) >= 400
      && has_body (soup_server_message_get_request_headers (msg)))
    answer_early_refusal (msg, guard);
}

static void
request_started_cb (SoupServer *server, SoupServerMessage *msg, gpointer data)
{
  g_signal_connect (msg, "got-headers", G_CALLBACK (got_headers_cb), NULL);
}

/* What the connection reads next is the next request's head. */
static void
request_finished_cb (SoupServer *server, SoupServerMessage *msg, gpointer data)
{
  g_autoptr (ServerGuardStream) guard = guard_of_message (msg);

  if (guard != NULL)
    server_guard_stream_head_started (guard);
}

/* ---- listening ---- */

int
server_listen_backlog (void)
{
  return SOMAXCONN;
}

/* libsoup keeps a connection open for its next request only while the
 * server has a listener of its own (request_finished checks), and ours are
 * not libsoup's: give it one nobody can reach, a Unix socket whose name is
 * removed as soon as it listens. */
static gboolean
give_soup_a_listener (SoupServer *server, GError **error)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-listen-XXXXXX", error);
  g_autofree char *path = dir != NULL ? g_build_filename (dir, "unreachable", NULL) : NULL;
  g_autoptr (GSocketAddress) address = NULL;
  g_autoptr (GSocket) socket = NULL;
  gboolean ok;

  if (dir == NULL)
    return FALSE;
  address = g_unix_socket_address_new (path);
  socket = g_socket_new (G_SOCKET_FAMILY_UNIX, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_DEFAULT,
                         error);
  ok = socket != NULL && g_socket_bind (socket, address, FALSE, error)
       && g_socket_listen (socket, error);
  g_unlink (path);
  g_rmdir (dir);
  return ok && soup_server_listen_socket (server, socket, 0, error);
}

static Gate *
gate_for (SoupServer *server, const ServerListenLimits *limits, GError **error)
{
  Gate *gate = g_object_get_data (G_OBJECT (server), GATE_KEY);
  GTlsCertificate *tls = soup_server_get_tls_certificate (server);

  if (gate != NULL)
    return gate;
  if (!give_soup_a_listener (server, error))
    return NULL;
  gate = g_rc_box_new0 (Gate);
  gate->server = server;
  gate->tls = tls != NULL ? g_object_ref (tls) : NULL;
  if (limits != NULL)
    gate->limits = *limits;
  else
    gate->limits.max_per_address = SERVER_DEFAULT_MAX_PER_ADDRESS;
  if (gate->limits.max_head_bytes == 0)
    gate->limits.max_head_bytes = SERVER_DEFAULT_MAX_HEAD_BYTES;
  if (gate->limits.handshake_ms == 0)
    gate->limits.handshake_ms = SERVER_DEFAULT_HANDSHAKE_MS;
  gate->service = g_socket_service_new ();
  gate->sockets = g_ptr_array_new_with_free_func (g_object_unref);
  gate->per_address = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_signal_connect (gate->service, "incoming", G_CALLBACK (incoming_cb), gate);
  g_signal_connect (server, "request-started", G_CALLBACK (request_started_cb), NULL);
  g_signal_connect (server, "request-finished", G_CALLBACK (request_finished_cb), NULL);
  g_object_set_data_full (G_OBJECT (server), GATE_KEY, gate, gate_detach);
  return gate;
}

gboolean
server_listen (SoupServer *server, GSocketAddress *address, const ServerListenLimits *limits,
               GError **error)
{
  g_autoptr (GSocket) socket = NULL;
  Gate *gate;

  g_return_val_if_fail (SOUP_IS_SERVER (server), FALSE);
  g_return_val_if_fail (G_IS_SOCKET_ADDRESS (address), FALSE);

  socket = g_socket_new (g_socket_address_get_family (address), G_SOCKET_TYPE_STREAM,
                         G_SOCKET_PROTOCOL_TCP, error);
  if (socket == NULL)
    return FALSE;
  g_socket_set_listen_backlog (socket, server_listen_backlog ());
  if (!g_socket_bind (socket, address, TRUE, error) || !g_socket_listen (socket, error))
    return FALSE;
  gate = gate_for (server, limits, error);
  if (gate == NULL
      || !g_socket_listener_add_socket (G_SOCKET_LISTENER (gate->service), socket, NULL, error))
    return FALSE;
  g_ptr_array_add (gate->sockets, g_object_ref (socket));
  g_socket_service_start (gate->service);
  return TRUE;
}

GSList *
server_listen_get_uris (SoupServer *server)
{
  Gate *gate;
  GSList *uris = NULL;

  g_return_val_if_fail (SOUP_IS_SERVER (server), NULL);

  gate = g_object_get_data (G_OBJECT (server), GATE_KEY);
  for (guint i = 0; gate != NULL && i < gate->sockets->len; i++)
    {
      g_autoptr (GSocketAddress) local = g_socket_get_local_address (gate->sockets->pdata[i],
                                                                     NULL);
      g_autofree char *ip = local != NULL ? address_ip (local) : NULL;

      if (ip == NULL)
        continue;
      uris = g_slist_append (uris, g_uri_build (G_URI_FLAGS_NONE, gate->tls ? "https" : "http",
                                                NULL, ip,
                                                g_inet_socket_address_get_port (
                                                  G_INET_SOCKET_ADDRESS (local)),
                                                "/", NULL, NULL));
    }
  return uris;
}

void
server_listen_stop (SoupServer *server)
{
  Gate *gate;

  g_return_if_fail (SOUP_IS_SERVER (server));

  gate = g_object_get_data (G_OBJECT (server), GATE_KEY);
  if (gate != NULL)
    gate_stop (gate);
}

guint
server_listen_connections_from (SoupServer *server, const char *ip)
{
  Gate *gate;

  g_return_val_if_fail (SOUP_IS_SERVER (server), 0);
  g_return_val_if_fail (ip != NULL, 0);

  gate = g_object_get_data (G_OBJECT (server), GATE_KEY);
  return gate != NULL ? gate_count (gate, ip) : 0;
}
