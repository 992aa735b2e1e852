/* server-reject.h: answer a connection with an error and close it cleanly.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A server that closes a socket while the client's bytes are still unread
 * makes the kernel send a reset, and the client usually loses the answer
 * with it. server_reject() writes a short JSON error answer, stops sending,
 * and then reads and throws away what the client still sends (at most
 * 1 MiB, at most 2 s) before closing: a lingering close, as web servers do.
 * Thread-safety: call it on the thread whose main context serves @stream. */
#pragma once

#include <gio/gio.h>

/* Answers "@status @reason" with {"error":{"code":@code,"message":@message}}
 * on @stream (written only if it fits without blocking), then lingers and
 * closes @stream. @socket is the TCP socket under @stream. @code and
 * @message are plain ASCII without quotes or backslashes. Takes its own
 * references; the caller must no longer read, write or close @stream. */
void server_reject (GIOStream *stream, GSocket *socket, guint status, const char *reason,
                    const char *code, const char *message);
/* The same with an answer body of the caller's (@content_type may be NULL). */
void server_reject_with_body (GIOStream *stream, GSocket *socket, guint status,
                              const char *reason, const char *content_type, GBytes *body);

/* How long and how much a lingering close reads before it closes. */
#define SERVER_REJECT_LINGER_MS 2000
#define SERVER_REJECT_LINGER_BYTES (1024 * 1024)
