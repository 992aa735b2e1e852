/* ts-bench-summary.h: benchmark rounds folded into one row per configuration.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * ts_bench_run() with several rounds gives one result per configuration
 * and round; a summary row takes the medians over the rounds, and for the
 * adapter-private rows the cost relative to the plain remote row of the
 * same rank and preset (the bar of docs/benchmarks.md) and the pads' CPU.
 * Pure functions of the results, which must outlive the summary.
 */
#pragma once

#include "ts-bench-runner.h"

G_BEGIN_DECLS

typedef struct {
  const TsBenchResult *first;  /* the configuration's first round: label, mode, rank */
  guint n_rounds;
  double he_ms_per_module;     /* median over the rounds of their HE ms/module */
  double he_ms_token_median;   /* median over every token of every round, per module */
  double tokens_per_s;         /* median over the rounds */
  /* Private rows with a plain remote row beside them: he_ms_per_module over
   * that row's, minus 1 (+0.05: 5% more); NAN otherwise. */
  double overhead;
  double overhead_token_median;  /* the same from the token medians */
  /* Private rows whose evaluator's /metrics was read in every round, else
   * FALSE and 0: */
  gboolean pads_known;
  guint64 pads_inline;         /* summed over the rounds */
  guint64 pads_from_pool;      /* summed over the rounds */
  guint64 pads_refilled;       /* made by the refill thread during the decodes, summed */
  double pad_cpu_ms_per_module;  /* median of pads per module answer × ms per pad */
} TsBenchSummaryRow;

/* One row per (configuration, rank), in the order they first ran (a GArray
 * of TsBenchSummaryRow). */
GArray *ts_bench_summarise (GPtrArray *results);

G_END_DECLS
