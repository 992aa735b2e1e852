/* he-server-private.h: internals shared by the server's files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <libsoup/soup.h>

#include "he-server-service.h"
#include "ts-helora-privacy-eval.h"
#include "ts-privacy-accountant.h"

G_BEGIN_DECLS

/* ---- adapters (he-server-adapters.c): thread-safe ---- */

typedef struct _HeAdapters HeAdapters;
typedef struct _HeStacks HeStacks;

/* @open_stack may be NULL: stacked hellos are then refused (unavailable). */
HeAdapters *he_adapters_new (const char *dir, TsHeloraEvaluatorOpenFunc open_func,
                             TsHeloraEvaluatorOpenStackFunc open_stack,
                             gpointer open_data, GError **error);
void he_adapters_free (HeAdapters *self);
guint he_adapters_count (HeAdapters *self);
/* Checks the hello's adapter id and hash (every member's, for a stacked
 * hello) and returns a shared evaluator for its parameter set (opened once,
 * then cached). */
TsHeloraEvaluator *he_adapters_open (HeAdapters *self, const TsHeloraHello *hello,
                                     GError **error);

/* A version of an adapter id, pinned by a hello that named its hash. */
typedef struct _HeAdapterVersion HeAdapterVersion;

/* The current version of @id if its hash is @sha256; else NULL with
 * TS_HELORA_ERROR_UNKNOWN_ADAPTER or _ADAPTER_HASH naming @id. */
HeAdapterVersion *he_adapters_pin (HeAdapters *self, const char *id, const guint8 *sha256,
                                   GError **error);
/* Whether @v is still the version @id maps to (no swap since the pin). */
gboolean he_adapters_is_current (HeAdapters *self, const char *id, HeAdapterVersion *v);
const char *he_adapter_version_path (HeAdapterVersion *v);
/* Files are opened lazily: FALSE (_ADAPTER_HASH) once @v's file has changed on disk. */
gboolean he_adapter_version_check_file (HeAdapterVersion *v, GError **error);
void he_adapter_version_unref (HeAdapterVersion *v);
/* TS_HELORA_ERROR_PARAMS when @ev packs under other parameters than @hello names. */
gboolean he_evaluator_check_params (TsHeloraEvaluator *ev, const TsHeloraHello *hello,
                                    GError **error);

/* ---- stacked adapters (he-server-stacks.c): thread-safe ---- */

/* One evaluator per (members' ids and versions, preset), shared by every
 * hello naming that stack; @open_stack NULL refuses stacks. */
HeStacks *he_stacks_new (TsHeloraEvaluatorOpenStackFunc open_stack, gpointer open_data);
void he_stacks_free (HeStacks *self);
/* Pins every member of @hello's stack in @adapters and returns the shared
 * evaluator of that stack. */
TsHeloraEvaluator *he_stacks_open (HeStacks *self, HeAdapters *adapters,
                                   const TsHeloraHello *hello, GError **error);
/* Drops cached stacks with a member @id (after a swap): new hellos cannot
 * name the old version, connected clients keep their evaluators. */
void he_stacks_forget (HeStacks *self, const char *id);

/* Hot-swap. What a reload or unload did: action is "loaded", "replaced",
 * "unchanged" or "unloaded" (static); id and sha256_hex are owned. */
typedef struct {
  char *id;
  const char *action;
  char *sha256_hex;            /* the new version's; NULL when unloaded */
} HeAdapterChange;

/* Rescans the directory for @id: loads it if new, replaces the served
 * version if its content changed, unloads it if gone. Clients that said
 * hello to the old version keep it until they disconnect. */
gboolean he_adapters_reload (HeAdapters *self, const char *id, HeAdapterChange *change,
                             GError **error);
/* Stops offering @id to new hellos; connected clients keep their version. */
gboolean he_adapters_unload (HeAdapters *self, const char *id, HeAdapterChange *change,
                             GError **error);
void he_adapter_change_clear (HeAdapterChange *change);

/* ---- the server (he-server-service.c) ---- */

typedef struct _HeWatch HeWatch;
typedef struct _HePads HePads;

struct _HeServer {
  GMainContext *context;
  SoupServer *soup;
  GThreadPool *pool;
  HeMetrics *metrics;
  HeAdapters *adapters;
  HeWatch *watch;              /* NULL unless watch_adapters */
  GHashTable *conns;           /* HeConn * → itself; main thread only */
  guint max_frame_bytes;
  guint max_in_flight;
  guint idle_timeout_ms;
  gsize max_unread_bytes;
  guint max_conns_per_address;  /* 0: no cap */
  gboolean shut_down;
  /* draining (he-server-drain.c) */
  gboolean draining;
  gboolean drained_notified;
  GSource *drained_source;
  guint drain_timeout_ms;
  GSource *drain_timer;
  HeServerDrainedFunc drained_func;
  gpointer drained_data;
  /* adapter-private mode (he-server-privacy.c) */
  TsPrivacyAccountant *accountant;   /* NULL: no DP budget configured */
  char *privacy_state;               /* file the accountant is saved to */
  GMutex privacy_lock;               /* serialises the saves */
  guint privacy_min_lambda;          /* floor on a private hello's lambda_s */
  HePads *pads;                      /* the pad refill thread */
};

/* ---- draining (he-server-drain.c) ---- */

/* After a connection went: runs the drained function once none is left. */
void he_drain_check (HeServer *self);
/* Drops the drain's pending sources (teardown). */
void he_drain_clear (HeServer *self);

/* ---- admin routes (he-server-admin.c) ---- */

/* Adds /admin/adapters/… and /admin/drain (loopback peers only) to the
 * server's routes. */
void he_admin_install (HeServer *self);

/* ---- directory watch (he-server-watch.c): main context ---- */

/* Reloads an adapter of @dir shortly after its entry changes. */
HeWatch *he_watch_new (HeServer *server, const char *dir, GError **error);
void he_watch_free (HeWatch *self);

/* ---- adapter-private mode (he-server-privacy.c) ---- */

gboolean he_privacy_init (HeServer *server, const HeServerOptions *options, GError **error);
void he_privacy_clear (HeServer *server);
/* Worker: a private hello's evaluation object (pads for one answer made). */
TsHeloraPrivacyEval *he_privacy_open (HeServer *server, TsHeloraEvaluator *evaluator,
                                      const TsHeloraHello *hello, GArray *module_map,
                                      GError **error);
/* Worker: one module privately; saves the accountant after a charge,
 * counts the pads it used and wakes the refill thread. */
gboolean he_privacy_evaluate (HeServer *server, TsHeloraPrivacyEval *pe, guint index,
                              GPtrArray *cts, GPtrArray *results, GError **error);
/* The identity the accountant charges: hex SHA-256 of the hello's public key. */
char *he_privacy_client_id (const TsHeloraHello *hello);
/* Any thread: what @client has spent, for a privacy-status frame. */
void he_privacy_status (HeServer *server, const char *client, TsHeloraPrivacyStatus *out);

/* ---- the pad refill thread (he-server-pads.c): thread-safe ---- */

/* Keeps @answers answers' worth of pads per module of every registered
 * connection, all pools together under @max_bytes; reports to @metrics.
 * @idle_ms > 0: refills wait until no answer took pads for that long,
 * except for pools below the default answers. */
HePads *he_pads_new (HeMetrics *metrics, guint answers, gsize max_bytes, guint idle_ms,
                     GError **error);
/* Stops and joins the thread; drops every registration. */
void he_pads_free (HePads *self);
/* A private connection's modules (hello's module i -> evaluator index). */
void he_pads_add (HePads *self, TsHeloraPrivacyEval *pe, GArray *module_map);
void he_pads_remove (HePads *self, TsHeloraPrivacyEval *pe);
/* An answer took pads from module @index of @pe: look again (at once, or
 * when the idle period is over). */
void he_pads_taken (HePads *self, TsHeloraPrivacyEval *pe, guint index);

/* ---- one client connection (he-server-conn.c): main thread only ---- */

typedef struct _HeConn HeConn;

/* Takes over @ws and registers the connection in self->conns. */
void he_conn_accept (HeServer *server, SoupWebsocketConnection *ws);
/* Sends a close frame with @code and starts the closing handshake. */
void he_conn_shutdown (HeConn *conn, guint16 code, const char *text);
/* Forgets the connection at once (end of the handshake, or server teardown). */
void he_conn_unregister (HeConn *conn);
void he_conn_unref (HeConn *conn);
/* Whether a hello succeeded on the connection (or is being answered). */
gboolean he_conn_has_session (HeConn *conn);

/* Runs on a worker: the pool's GFunc. */
void he_conn_run_job (gpointer job, gpointer server);

G_END_DECLS
