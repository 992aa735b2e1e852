/* ts-bench-pads.h: an evaluator's privacy-pad pools, as its /metrics shows them, for the benchmark.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The adapter-private mode spends one pad per result ciphertext, and
 * tensafe-he-server makes pads ahead on a refill thread (docs/security.md
 * §5). A benchmark that wants what a chat user sees, tokens served from
 * pads made in idle time, waits until the pools are full before it times
 * the decode; it also counts the pads made inline during the timed run.
 * Both come from the server's GET /metrics on the evaluator's own host and
 * port (ws:// → http://, wss:// → https://). The figures are server-wide:
 * a warm run first waits until no other private connection is open, a
 * back-to-back run does not (other private clients mix theirs in).
 *
 * Blocking HTTP: call from a worker thread. Plain values, no shared state.
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* One reading of the pad figures of /metrics. */
typedef struct {
  guint64 pooled;              /* tensafe_he_pad_pool_pads: pads ready */
  guint64 target;              /* tensafe_he_pad_pool_target: pads the pools are kept at */
  /* tensafe_he_pad_pool_answers (in force, after the memory cap) and
   * …_configured (--pad-pool-answers); both 0 from a server that predates them */
  guint answers;
  guint answers_configured;
  gboolean has_answers;        /* the server reports them */
  guint64 made_refill;         /* tensafe_he_pads_made_total{by="refill"} */
  guint64 made_inline;         /* tensafe_he_pads_made_total{by="inline"} */
  guint64 from_pool;           /* tensafe_he_pads_from_pool_total */
  double refill_seconds;       /* tensafe_he_pad_refill_seconds_total (CPU) */
} TsBenchPads;

/* Reads the pad figures from the /metrics of the evaluator at @ws_url.
 * G_IO_ERROR_NOT_SUPPORTED when the server reports no pads (it predates the
 * adapter-private mode); other errors when it cannot be reached. */
gboolean ts_bench_pads_read (const char *ws_url, TsBenchPads *out, GError **error);

/* Parses the pad figures out of a Prometheus text exposition (what
 * ts_bench_pads_read() does with the body). */
gboolean ts_bench_pads_parse (const char *text, TsBenchPads *out, GError **error);

/* Polls until every pool is full and holds at least @answers answers per
 * module (the decode steps about to be timed), @timeout_ms at most; *out is
 * the last reading. Fails at once with G_IO_ERROR_NO_SPACE when the server
 * is configured for fewer answers, and with G_IO_ERROR_NO_SPACE or
 * G_IO_ERROR_TIMED_OUT after @timeout_ms when its memory cap keeps them
 * lower or the pools do not fill; the messages name the server options. */
gboolean ts_bench_pads_wait_full (const char *ws_url, guint answers, guint timeout_ms,
                                  GCancellable *cancellable, TsBenchPads *out, GError **error);

/* Polls until no private connection keeps pools on the evaluator (a pool
 * target of 0: an earlier run's connection has closed), @timeout_ms at most
 * (then G_IO_ERROR_TIMED_OUT: other clients use it). A warm run connects
 * after this, so that the pools, the memory cap and the server-wide counts
 * are its own. */
gboolean ts_bench_pads_wait_alone (const char *ws_url, guint timeout_ms, GCancellable *cancellable,
                                   TsBenchPads *out, GError **error);

/* CPU milliseconds per pad the refill thread spent between two readings
 * (0 when it made none). */
double ts_bench_pads_refill_ms_per_pad (const TsBenchPads *before, const TsBenchPads *after);

G_END_DECLS
