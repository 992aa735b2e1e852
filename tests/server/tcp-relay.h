/* tcp-relay.h: a TCP relay on 127.0.0.1 whose connections a test can cut at any moment.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct _TcpRelay TcpRelay;

/* Listens on 127.0.0.1:0 and relays every connection to 127.0.0.1:@port. */
TcpRelay *tcp_relay_new (guint16 port);
guint16 tcp_relay_port (TcpRelay *self);
/* Cuts every relayed connection both ways (as a dead evaluator would);
 * new connections are relayed as before. Any thread. */
void tcp_relay_cut (TcpRelay *self);
/* Connections relayed so far. */
guint tcp_relay_accepted (TcpRelay *self);
/* While @unavailable, new connections get HTTP 503 and are closed, as
 * from a load balancer none of whose servers is up. Any thread. */
void tcp_relay_set_unavailable (TcpRelay *self, gboolean unavailable);
/* Connections answered 503 so far. */
guint tcp_relay_refused (TcpRelay *self);
/* Stops listening and cuts everything; frees. */
void tcp_relay_free (TcpRelay *self);

G_END_DECLS
