/* ts-helora-remote-private.h: internals of the evaluator client shared by its two files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <libsoup/soup.h>

#include "ts-helora-remote.h"

G_BEGIN_DECLS

struct _TsHeloraRemote {
  GMainContext *context;
  GMainLoop *loop;
  GThread *thread;
  char *url;                   /* the http(s):// form soup connects to */
  char *endpoint;              /* the address as given, for messages */
  GTlsDatabase *tls_db;        /* trusted CAs for wss:// (NULL: the system's) */
  /* I/O thread only. */
  SoupSession *session;
  SoupWebsocketConnection *ws;
  gboolean quitting;
  gboolean connected_once;
  /* Reconnecting (ts-helora-remote-reconnect.c), I/O thread only. */
  GHashTable *unanswered;      /* request id (guint64 *) → GBytes sent, not yet answered */
  GBytes *hello_message;       /* the last hello: said again first on a new connection */
  guint64 hello_id;
  guint64 rehello_id;          /* non-zero: that hello, said again, awaits its ack */
  gboolean recovering;         /* between a drop and the new connection's ack */
  guint attempt;               /* connection tries since the drop */
  gint64 dropped_us;
  char *drop_reason;           /* the last failure, for the error when tries run out */
  GSource *retry_source;
  GCancellable *cancellable;   /* the connect in progress */
  SoupMessage *connect_msg;    /* its request (for the status of a refusal) */
  /* Shared, under lock. */
  GMutex lock;
  GCond cond;
  GHashTable *waiting;         /* request id (guint64 *) → TsHeloraFrame * or NULL */
  gboolean connect_done;
  GError *connect_error;
  gboolean closed;
  char *close_reason;
  guint timeout_ms;
  guint64 next_id;
  guint64 bytes_up;
  guint64 bytes_down;
  TsHeloraTapFunc tap;
  gpointer tap_data;
  guint reconnect_tries;       /* 0: a drop fails every waiter */
  TsHeloraRemoteRecovery recovery;
};

/* ts-helora-remote.c, I/O thread. */
/* Fails every wait, now and later, with TS_HELORA_ERROR_CLOSED and @reason. */
void _ts_helora_remote_fail_all (TsHeloraRemote *self, const char *reason);
/* Starts a WebSocket connect to self->url; its end comes to
 * _ts_helora_remote_reconnected() or _ts_helora_remote_connect_failed(). */
void _ts_helora_remote_open (TsHeloraRemote *self);
/* Sends @message on the open connection (through the tap). */
void _ts_helora_remote_transmit (TsHeloraRemote *self, GBytes *message);
/* Whether a caller still waits for the answer to @request_id. */
gboolean _ts_helora_remote_is_waited (TsHeloraRemote *self, guint64 request_id);
/* Hands @frame to the caller waiting for its request id, or drops it. */
void _ts_helora_remote_deliver (TsHeloraRemote *self, TsHeloraFrame *frame);

/* ts-helora-remote-reconnect.c, I/O thread. */
/* A message is sent: kept until answered, sent now when the connection is
 * ready, else once a new one is (a lost connection is reopened here). */
void _ts_helora_remote_queue (TsHeloraRemote *self, guint64 request_id, GBytes *message,
                              gboolean is_hello);
/* The connection is gone (closed, dropped, or the evaluator said it shuts
 * down or drains): reconnects while answers are awaited, else fails them. */
void _ts_helora_remote_lost (TsHeloraRemote *self, const char *reason);
/* Answers that belong to the recovery (the ack of a hello said again, a
 * draining evaluator's refusal); TRUE when @frame was taken. Any other
 * frame answers its request, which is then forgotten here. */
gboolean _ts_helora_remote_take (TsHeloraRemote *self, TsHeloraFrame *frame);
void _ts_helora_remote_reconnected (TsHeloraRemote *self);
/* The first connect was refused for a reason that may pass: TRUE when
 * another try is scheduled (within the reconnect tries). */
gboolean _ts_helora_remote_retry_first (TsHeloraRemote *self);
void _ts_helora_remote_connect_failed (TsHeloraRemote *self, const GError *error);
/* Teardown: stops a pending try and forgets what was kept. */
void _ts_helora_remote_reconnect_clear (TsHeloraRemote *self);

G_END_DECLS
