/* he-server-metrics.h: counters and latency histograms of tensafe-he-server.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Thread-safe: workers record, the main thread renders /metrics.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Server-side stages of one evaluate request. */
typedef enum {
  HE_STAGE_DECODE,             /* frame and ciphertext parsing */
  HE_STAGE_EVALUATE,           /* ct × pt products */
  HE_STAGE_ENCODE,             /* result serialisation */
  HE_STAGE_TOTAL,              /* received → answer queued */
  HE_N_STAGES
} HeStage;

typedef struct _HeMetrics HeMetrics;

HeMetrics *he_metrics_new (void);
void he_metrics_free (HeMetrics *self);

void he_metrics_observe (HeMetrics *self, HeStage stage, double seconds);
void he_metrics_count_request (HeMetrics *self);
void he_metrics_count_error (HeMetrics *self, guint code);
void he_metrics_count_bytes (HeMetrics *self, guint64 received, guint64 sent);
/* An adapter loaded, replaced or unloaded while serving. */
void he_metrics_count_swap (HeMetrics *self);
void he_metrics_clients_changed (HeMetrics *self, int delta);
/* A client closed for leaving too many answers unread. */
void he_metrics_count_unread_close (HeMetrics *self);
int he_metrics_clients (HeMetrics *self);

/* Privacy pads: @refill_made made by the refill thread in @refill_seconds
 * of its CPU time; @from_pool taken by answers from a pool, @made_inline
 * made by answers that found their pool empty. */
void he_metrics_count_pads (HeMetrics *self, guint64 refill_made, double refill_seconds,
                            guint64 from_pool, guint64 made_inline);

/* Appends more of the exposition at render time (one source; NULL
 * removes it). Set and removed on the thread that renders. */
typedef void (*HeMetricsSource) (GString *out, gpointer data);
void he_metrics_add_source (HeMetrics *self, HeMetricsSource source, gpointer data);

/* Returns the Prometheus text exposition (newly allocated). */
char *he_metrics_render (HeMetrics *self);

G_END_DECLS
