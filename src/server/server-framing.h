/* server-framing.h: request heads whose body framing is ambiguous.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * libsoup reads a negative Content-Length as a huge one and waits for a
 * body that never comes; it takes the last of two Content-Lengths and lets
 * Transfer-Encoding win over Content-Length, where a proxy in front may
 * take the other (request smuggling). RFC 9112 §6.3 wants such a request
 * answered 400 and its connection closed.
 * Thread-safety: pure. */
#pragma once

#include <libsoup/soup.h>

/* NULL when @headers frame the body one way only; else the problem, in
 * plain ASCII for an error message. */
const char *server_framing_problem (SoupMessageHeaders *headers);
