/* ts-bench-chart.h: bar chart of benchmark results: median ms per stage per configuration.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One horizontal stacked bar per configuration, one colour per stage
 * (DESIGN.md §2 order), the total and tokens/s written at the bar's end, a
 * legend below. Drawn in snapshot from the results it holds; main-thread only.
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define TS_TYPE_BENCH_CHART (ts_bench_chart_get_type ())
G_DECLARE_FINAL_TYPE (TsBenchChart, ts_bench_chart, TS, BENCH_CHART, GtkWidget)

GtkWidget *ts_bench_chart_new (void);
/* Shows @results (a GPtrArray of TsBenchResult, referenced), or nothing for NULL. */
void ts_bench_chart_set_results (TsBenchChart *self, GPtrArray *results);
guint ts_bench_chart_get_n_bars (TsBenchChart *self);

G_END_DECLS
