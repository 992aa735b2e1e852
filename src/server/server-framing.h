/* server-framing.h: request heads whose body framing is ambiguous or unknown.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * libsoup 3.2 reads a negative Content-Length as a huge one and waits for
 * a body that never comes; it takes the last of two Content-Lengths and
 * lets Transfer-Encoding win over Content-Length, where a proxy in front
 * may take the other (request smuggling); and each time it refuses a
 * transfer coding it does not know or a Content-Length it cannot read, it
 * loses the request's path (a leak a client can repeat with long paths).
 * RFC 9112 §5.1 and §6.3 want such requests answered 400 (or 501 for an
 * unknown coding) and their connection closed. The check reads the raw
 * head, before libsoup parses it.
 * Thread-safety: pure. */
#pragma once

#include <glib.h>

typedef struct {
  guint status;          /* 400 or 501 */
  const char *code;      /* for the JSON error */
  const char *message;   /* plain ASCII, no quotes */
} ServerFramingRefusal;

/* FALSE when the request head @head (@len bytes: the request line and the
 * header lines, up to the empty line) frames its body one way only: at
 * most one Content-Length of decimal digits, or one Transfer-Encoding of
 * exactly "chunked" and no Content-Length, and no whitespace between a
 * field name and its colon. Else TRUE with the answer in @refusal. */
gboolean server_framing_refuse_head (const char *head, gsize len,
                                     ServerFramingRefusal *refusal);
