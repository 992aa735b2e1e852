/* server-listen.h: the listening socket of both servers.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * soup_server_listen() listens with GLib's default backlog of 10: a burst
 * of connections (500 opened at once) then finds the accept queue full and
 * about a third are reset. server_listen() binds and listens itself with
 * the system's maximum (SOMAXCONN, which the kernel caps at
 * net.core.somaxconn) and hands the socket to the server.
 * Thread-safety: as soup_server_listen (the server's own thread). */
#pragma once

#include <libsoup/soup.h>

/* The accept backlog server_listen() asks for. */
int server_listen_backlog (void);

/* Listens on @address (port 0: one the system picks) with the largest
 * backlog; @options as soup_server_listen's (HTTPS). */
gboolean server_listen (SoupServer *server, GSocketAddress *address,
                        SoupServerListenOptions options, GError **error);
