/* he-server-service.h: tensafe-he-server as a library: the remote HE-LoRA evaluator.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A HeServer lives on the thread whose thread-default GMainContext was
 * current at he_server_new(); all its functions must be called there.
 * Evaluation runs on its own worker pool. It holds adapters and never a key.
 */
#pragma once

#include <glib.h>

#include "he-server-metrics.h"
#include "ts-helora-evaluator.h"

G_BEGIN_DECLS

#define HE_SERVER_DEFAULT_MAX_FRAME (64u << 20)
#define HE_SERVER_DEFAULT_MAX_IN_FLIGHT 8
#define HE_SERVER_DEFAULT_IDLE_TIMEOUT_MS 120000
/* An HTTP request's headers (and the WebSocket upgrade) must arrive within
 * this, or within the idle timeout when that is shorter (server-deadline.h). */
#define HE_SERVER_REQUEST_DEADLINE_MS 30000
/* Answers a client may leave unread (queued behind a full socket) before it
 * is closed: a client that sends and never reads grew a server from 12.5 to
 * 178 MB; a reading client never comes near this. */
#define HE_SERVER_DEFAULT_MAX_UNREAD_BYTES ((gsize) 8 << 20)
#define HE_SERVER_DEFAULT_PAD_POOL_ANSWERS 2
#define HE_SERVER_DEFAULT_PAD_POOL_BYTES ((gsize) 256 << 20)

typedef struct {
  const char *adapters_dir;    /* required */
  guint n_threads;             /* 0: one per CPU */
  guint max_frame_bytes;       /* 0: HE_SERVER_DEFAULT_MAX_FRAME */
  guint max_in_flight;         /* 0: HE_SERVER_DEFAULT_MAX_IN_FLIGHT */
  guint idle_timeout_ms;       /* 0: HE_SERVER_DEFAULT_IDLE_TIMEOUT_MS */
  gsize max_unread_bytes;      /* 0: HE_SERVER_DEFAULT_MAX_UNREAD_BYTES */
  int max_conns_per_address;   /* 0: SERVER_DEFAULT_MAX_PER_ADDRESS (64); < 0: no cap */
  const char *tls_cert;        /* PEM files; both or neither */
  const char *tls_key;
  gboolean watch_adapters;     /* reload adapters when their files change */
  guint drain_timeout_ms;      /* a drain ends this long after it began; 0: 300 s */
  TsHeloraEvaluatorOpenFunc open_evaluator;  /* required */
  /* Stacked hellos (several adapters with weights); NULL refuses them. */
  TsHeloraEvaluatorOpenStackFunc open_stack;
  gpointer open_data;          /* passed to both open functions */
  double privacy_epsilon;      /* adapter-private DP budget per client; 0: no DP */
  double privacy_delta;
  const char *privacy_state;   /* accountant file (loaded, saved on change); NULL: memory */
  guint privacy_min_lambda;    /* private hellos asking less flooding are refused;
                                * 0: CKKS_PRIVACY_DEFAULT_LAMBDA (40) */
  guint pad_pool_answers;      /* privacy pads kept ready per module, in answers; 0: 2 */
  gsize pad_pool_bytes;        /* memory cap of all pad pools; 0: 256 MiB */
  /* > 0: pads are made only once no private answer was served for this
   * long (between turns), unless a pool falls below the default 2 answers;
   * 0: as soon as answers take them */
  guint pad_refill_idle_ms;
} HeServerOptions;

typedef struct _HeServer HeServer;

/* Scans the adapter directory (hashing every adapter) and builds the server.
 * Copies what it needs from @options. */
HeServer *he_server_new (const HeServerOptions *options, GError **error);

/* Listens on "ADDR:PORT" (IPv4, or [IPv6]:PORT); port 0 picks a free one. */
gboolean he_server_listen (HeServer *self, const char *address, GError **error);

/* Returns the first listening URL, "http://127.0.0.1:PORT/" (or https). */
char *he_server_get_url (HeServer *self);
guint16 he_server_get_port (HeServer *self);
HeMetrics *he_server_get_metrics (HeServer *self);

/* Draining (he-server-drain.c): /healthz answers 503 "draining", new
 * connections and hellos are refused with SHUTTING_DOWN (a client then
 * reconnects to another evaluator), sessions already open are served
 * until their clients close them or leave them idle for
 * HE_SERVER_DRAIN_IDLE_MS. When the last connection is gone, or the
 * drain timeout passed, the drained function runs once (main context):
 * he_server_shutdown() then closes what is left. Idempotent. */
#define HE_SERVER_DRAIN_IDLE_MS 2000
#define HE_SERVER_DEFAULT_DRAIN_TIMEOUT_MS 300000
typedef void (*HeServerDrainedFunc) (gpointer data);
void he_server_set_drained_func (HeServer *self, HeServerDrainedFunc func, gpointer data);
void he_server_drain (HeServer *self);
gboolean he_server_is_draining (HeServer *self);

/* Stops accepting, closes every client with a close frame, waits for the
 * workers and drains their answers. Idempotent. */
void he_server_shutdown (HeServer *self);

/* Shuts down if needed and frees. */
void he_server_free (HeServer *self);

G_END_DECLS
