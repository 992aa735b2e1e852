/* server-listen.h: how both servers accept connections.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * soup_server_listen() listens with GLib's default backlog of 10 (a burst
 * of 500 connections found the queue full and a third were reset), lets
 * one client address open any number of connections, and leaves libsoup's
 * HTTP edge cases as they are: a request head over 64 KiB is reset, a
 * negative or doubled Content-Length waits for a body that never comes.
 * server_listen() binds and listens itself with the system's maximum
 * backlog (SOMAXCONN, capped by net.core.somaxconn), accepts each
 * connection, and before handing it to the server:
 *  - refuses one past the cap on connections from one client address
 *    (503, or a plain close over TLS, where no answer can be read yet);
 *  - does the TLS handshake itself when the server has a certificate;
 *  - wraps it in a ServerGuardStream, which answers 431 to a request head
 *    over max_head_bytes and 400/501 to one whose body framing is
 *    ambiguous or unknown (server-framing.h), before libsoup parses it;
 * and answers at once a request its handler refused from the head alone
 * (413, say), where libsoup would read the whole body first. Refusals end
 * with a lingering close (server-reject.h) so the client reads the answer,
 * not a reset.
 * Thread-safety: every function on the server's thread. */
#pragma once

#include <libsoup/soup.h>

typedef struct {
  /* connections open at once from one client IP address; 0: no cap
   * (behind a proxy every client has the proxy's address) */
  guint max_per_address;
  /* a request's line and headers; 0: SERVER_DEFAULT_MAX_HEAD_BYTES */
  gsize max_head_bytes;
  /* a TLS handshake must finish within it; 0: SERVER_DEFAULT_HANDSHAKE_MS */
  guint handshake_ms;
} ServerListenLimits;

#define SERVER_DEFAULT_MAX_PER_ADDRESS 64
#define SERVER_DEFAULT_MAX_HEAD_BYTES (32 * 1024)
#define SERVER_DEFAULT_HANDSHAKE_MS 30000

/* The accept backlog server_listen() asks for. */
int server_listen_backlog (void);

/* Listens on @address (port 0: one the system picks) for @server, over TLS
 * when the server has a TLS certificate. @limits may be NULL (defaults,
 * with SERVER_DEFAULT_MAX_PER_ADDRESS). Call once per server. */
gboolean server_listen (SoupServer *server, GSocketAddress *address,
                        const ServerListenLimits *limits, GError **error);
/* What soup_server_get_uris() would say for a server listening this way;
 * free with g_slist_free_full (l, (GDestroyNotify) g_uri_unref). */
GSList *server_listen_get_uris (SoupServer *server);
/* Stops accepting (call beside soup_server_disconnect). */
void server_listen_stop (SoupServer *server);
/* Connections now open from @ip (its text form), for metrics and tests. */
guint server_listen_connections_from (SoupServer *server, const char *ip);

/* The TCP socket under @msg's connection, whichever way it was accepted;
 * NULL once the connection is gone. */
GSocket *server_message_socket (SoupServerMessage *msg);
