/* ts-helora-remote.h: client side of the evaluator protocol over a WebSocket.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsHeloraRemote owns an I/O thread with its own GMainContext, so its
 * blocking calls work from any thread (the engine calls the LoRA hook on its
 * generation thread) and never need the caller's main loop. Calls may come
 * from several threads at once; each waits for the answer to its own request
 * id, with the remote's timeout. A dropped connection fails every waiter with
 * TS_HELORA_ERROR_CLOSED, unless reconnecting is on (below); no answer in
 * time gives TS_HELORA_ERROR_TIMEOUT.
 * Error frames from the server become GErrors with the server's code.
 */
#pragma once

#include <glib.h>

#include "ts-helora-proto.h"

G_BEGIN_DECLS

#define TS_HELORA_REMOTE_DEFAULT_TIMEOUT_MS 30000

typedef struct _TsHeloraRemote TsHeloraRemote;

/* Tries after a drop: seven, over about 31.5 s (0, 0.5, 1, 2, 4, 8, 16 s
 * apart). A fleet whose evaluators are all busy or draining answers 503
 * until its proxy's health checks catch up, which took over 8 s on a
 * loaded machine: five tries (7.5 s) lost the generation. */
#define TS_HELORA_REMOTE_DEFAULT_RECONNECTS 7

/* Called on the I/O thread with every message just before it is sent. */
typedef void (*TsHeloraTapFunc) (GBytes *message, gpointer user_data);

/* Opens a WebSocket to @url: ws://HOST:PORT or wss://…; the path defaults to
 * /v1/helora. Blocks until open, failed or @timeout_ms passed. */
TsHeloraRemote *ts_helora_remote_connect (const char *url, guint timeout_ms, GError **error);
/* The same, trusting for wss:// only the CA certificates in the PEM file
 * @ca_file (NULL: the system's): e.g. a server's self-signed certificate. */
TsHeloraRemote *ts_helora_remote_connect_with_ca (const char *url, guint timeout_ms,
                                                  const char *ca_file, GError **error);

/* The same with reconnecting on (ts_helora_remote_set_reconnect()), which
 * also covers this first connect when a load balancer answers it with 502,
 * 503 or 504 (an evaluator that just went, or none up yet): it tries
 * again (0.5, 1, 2, then every 4 s) until @timeout_ms, however many
 * tries that takes. Other failures end it at once. */
TsHeloraRemote *ts_helora_remote_connect_retrying (const char *url, guint timeout_ms,
                                                   const char *ca_file, guint tries,
                                                   GError **error);

/* Closes the connection (close frame, then the WebSocket) and frees. */
void ts_helora_remote_free (TsHeloraRemote *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHeloraRemote, ts_helora_remote_free)

void ts_helora_remote_set_timeout (TsHeloraRemote *self, guint timeout_ms);
/* Reconnecting (ts-helora-remote-reconnect.c), off unless set (before the
 * first send): when the connection drops, or the evaluator closes it to
 * shut down or drain, or refuses a hello because it drains, while answers
 * are awaited (else at the next send), connect to the same URL again up to
 * @tries times with backoff, say the last hello again and, once it is
 * acknowledged, send every unanswered request again under its own id.
 * Each id's waiter takes one answer, and nothing the old connection still
 * delivers reaches a waiter: an answer lost with a connection is computed
 * again, never applied twice. When the tries run out, every wait fails
 * with TS_HELORA_ERROR_CLOSED naming the URL and the last failure. */
void ts_helora_remote_set_reconnect (TsHeloraRemote *self, guint tries);

typedef struct {
  guint reconnects;            /* connections that were lost and made again */
  guint64 resent;              /* requests sent again on a new connection */
  double max_recovery_ms;      /* longest time from a drop to the new hello's ack */
  double total_recovery_ms;
} TsHeloraRemoteRecovery;

void ts_helora_remote_get_recovery (TsHeloraRemote *self, TsHeloraRemoteRecovery *out);

/* Must be set before the first send. */
void ts_helora_remote_set_tap (TsHeloraRemote *self, TsHeloraTapFunc func, gpointer user_data);

/* Sends hello; returns the hello-ack frame (owned by the caller). */
TsHeloraFrame *ts_helora_remote_hello (TsHeloraRemote *self, const TsHeloraHello *hello,
                                       GError **error);

/* Sends one evaluate for @n_modules module indices sharing the ciphertexts
 * @cts (of GBytes); returns the result frame (owned by the caller). */
TsHeloraFrame *ts_helora_remote_evaluate (TsHeloraRemote *self, guint32 token_index,
                                          const guint16 *modules, guint n_modules,
                                          GPtrArray *cts, GError **error);

/* Sends privacy-query; fills @out from the privacy-status answer. A server
 * that predates the query answers TS_HELORA_ERROR_UNKNOWN_TYPE; one without
 * a private hello on this connection TS_HELORA_ERROR_NOT_READY. */
gboolean ts_helora_remote_privacy_status (TsHeloraRemote *self, TsHeloraPrivacyStatus *out,
                                          GError **error);

/* Low level, for tests and pipelining: a fresh request id; sending bytes as
 * they are; waiting for the frame that answers @request_id (any type). */
guint64 ts_helora_remote_next_id (TsHeloraRemote *self);
void ts_helora_remote_send (TsHeloraRemote *self, GBytes *message, guint64 request_id);
TsHeloraFrame *ts_helora_remote_wait (TsHeloraRemote *self, guint64 request_id, GError **error);

/* Pipelining: sends @frame under a fresh request id (returned, and set in
 * the frame; 0 when it does not encode), then waits for the answer of type
 * @expected (an error frame becomes a GError with the server's code). */
guint64 ts_helora_remote_send_frame (TsHeloraRemote *self, TsHeloraFrame *frame, GError **error);
TsHeloraFrame *ts_helora_remote_wait_for (TsHeloraRemote *self, guint64 request_id,
                                          TsHeloraFrameType expected, GError **error);

/* Bytes of messages sent and received so far. */
void ts_helora_remote_get_bytes (TsHeloraRemote *self, guint64 *up, guint64 *down);

/* From any thread: fails every wait, now and later, with
 * TS_HELORA_ERROR_CLOSED ("Cancelled"), e.g. when a user stops a generation
 * that waits on a slow evaluator. The connection is closed. */
void ts_helora_remote_cancel (TsHeloraRemote *self);

/* Whether the connection is gone (closed by either side or dropped). */
gboolean ts_helora_remote_is_closed (TsHeloraRemote *self);

G_END_DECLS
