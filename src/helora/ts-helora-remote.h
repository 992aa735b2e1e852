/* ts-helora-remote.h: client side of the evaluator protocol over a WebSocket.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsHeloraRemote owns an I/O thread with its own GMainContext, so its
 * blocking calls work from any thread (the engine calls the LoRA hook on its
 * generation thread) and never need the caller's main loop. Calls may come
 * from several threads at once; each waits for the answer to its own request
 * id, with the remote's timeout. A dropped connection fails every waiter with
 * TS_HELORA_ERROR_CLOSED; no answer in time gives TS_HELORA_ERROR_TIMEOUT.
 * Error frames from the server become GErrors with the server's code.
 */
#pragma once

#include <glib.h>

#include "ts-helora-proto.h"

G_BEGIN_DECLS

#define TS_HELORA_REMOTE_DEFAULT_TIMEOUT_MS 30000

typedef struct _TsHeloraRemote TsHeloraRemote;

/* Called on the I/O thread with every message just before it is sent. */
typedef void (*TsHeloraTapFunc) (GBytes *message, gpointer user_data);

/* Opens a WebSocket to @url: ws://HOST:PORT or wss://…; the path defaults to
 * /v1/helora. Blocks until open, failed or @timeout_ms passed. */
TsHeloraRemote *ts_helora_remote_connect (const char *url, guint timeout_ms, GError **error);
/* The same, trusting for wss:// only the CA certificates in the PEM file
 * @ca_file (NULL: the system's): e.g. a server's self-signed certificate. */
TsHeloraRemote *ts_helora_remote_connect_with_ca (const char *url, guint timeout_ms,
                                                  const char *ca_file, GError **error);

/* Closes the connection (close frame, then the WebSocket) and frees. */
void ts_helora_remote_free (TsHeloraRemote *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHeloraRemote, ts_helora_remote_free)

void ts_helora_remote_set_timeout (TsHeloraRemote *self, guint timeout_ms);
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
