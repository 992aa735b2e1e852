/* ts-bench-page-private.h: what the GUI tests reach inside the benchmark page.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-bench-chart.h"
#include "ts-bench-page.h"

G_BEGIN_DECLS

/* The table's rows (of TsBenchItem), transfer none. */
GListModel *_ts_bench_page_get_results_model (TsBenchPage *self);
TsBenchChart *_ts_bench_page_get_chart (TsBenchPage *self);
gboolean _ts_bench_page_get_running (TsBenchPage *self);
const char *_ts_bench_page_get_last_toast (TsBenchPage *self);
/* Sets model, adapter, token count and which presets ("fast", "default",
 * "wide") are ticked, as a user would. */
void _ts_bench_page_set_inputs (TsBenchPage *self, const char *model, const char *adapter,
                                guint n_tokens, const char *const *presets_on);
/* The switches: remote evaluator, adapter-private remote, random stack. */
void _ts_bench_page_set_modes (TsBenchPage *self, gboolean remote, gboolean private_mode,
                               gboolean stack);
/* The ranks field's text ("4, 8"). */
void _ts_bench_page_set_ranks (TsBenchPage *self, const char *ranks);
/* What the export buttons write, without the file chooser: "csv" or "json". */
gboolean _ts_bench_page_export_to (TsBenchPage *self, const char *path, const char *format,
                                   GError **error);

G_END_DECLS
