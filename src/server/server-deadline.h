/* server-deadline.h: a deadline on each request's headers and body progress.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A socket timeout ends a connection only when it falls silent: a client
 * that sends one header line every few seconds holds it forever
 * (slowloris). With server_set_request_deadline(), a request's line and
 * headers must arrive within @ms of its start, and after the headers each
 * chunk of its body within @ms of the one before; otherwise the socket is
 * shut down and the server drops the request. An idle keep-alive connection
 * waiting for its next request counts as a request that has started.
 * Thread-safety: call it on the server's thread, before it listens. */
#pragma once

#include <libsoup/soup.h>

void server_set_request_deadline (SoupServer *server, guint ms);
