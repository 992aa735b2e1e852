/* server-guard-stream.h: the stream a server hands to libsoup for one connection.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * libsoup reads a request's line and headers into a buffer of up to 64 KiB
 * and, past it, drops the connection: the client sees a reset, not an
 * answer. The guard passes every byte through and counts those of each
 * request head; past its own, lower bound it answers 431 itself
 * (server_reject) and fails the read, so libsoup gives the connection up.
 * It also answers 400 or 501 to a head whose body framing is ambiguous or
 * unknown, before libsoup parses it (server-framing.h).
 * The server tells the guard where heads end (got-headers) and where the
 * next one starts (request-finished). It also ends connections libsoup
 * would keep forever after the client closed them between requests.
 * Thread-safety: one connection, on the server's thread. */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define SERVER_TYPE_GUARD_STREAM (server_guard_stream_get_type ())
G_DECLARE_FINAL_TYPE (ServerGuardStream, server_guard_stream, SERVER, GUARD_STREAM, GIOStream)

/* Wraps @base (a TCP or TLS connection over @socket); the first bytes read
 * are a request head. Property "base-io-stream" is @base. */
ServerGuardStream *server_guard_stream_new (GIOStream *base, GSocket *socket,
                                            gsize max_head_bytes);
GSocket *server_guard_stream_get_socket (ServerGuardStream *self);
/* The next request head starts (request-finished) or is complete
 * (got-headers). */
void server_guard_stream_head_started (ServerGuardStream *self);
void server_guard_stream_head_done (ServerGuardStream *self);
/* Answers with an error and closes (server_reject); later reads fail and
 * closing the guard no longer closes the connection under it. */
void server_guard_stream_reject (ServerGuardStream *self, guint status, const char *reason,
                                 const char *code, const char *message);
/* The same with an answer body of the caller's (server_reject_with_body). */
void server_guard_stream_reject_with_body (ServerGuardStream *self, guint status,
                                           const char *reason, const char *content_type,
                                           GBytes *body);

G_END_DECLS
