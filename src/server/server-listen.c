/* server-listen.c: both servers listen with the system's largest backlog.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <sys/socket.h>

#include "server-listen.h"

int
server_listen_backlog (void)
{
  return SOMAXCONN;
}

gboolean
server_listen (SoupServer *server, GSocketAddress *address, SoupServerListenOptions options,
               GError **error)
{
  g_autoptr (GSocket) socket = g_socket_new (g_socket_address_get_family (address),
                                             G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP,
                                             error);

  if (socket == NULL)
    return FALSE;
  g_socket_set_listen_backlog (socket, server_listen_backlog ());
  if (!g_socket_bind (socket, address, TRUE, error) || !g_socket_listen (socket, error))
    return FALSE;
  return soup_server_listen_socket (server, socket, options, error);
}
