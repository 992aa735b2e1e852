/* ts-bench-page.h: the benchmark page: plaintext vs HE-LoRA per stage, table, chart, export.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. The user picks a model and an adapter (GGUF, through the
 * file chooser portal; remembered in the bench-model / bench-adapter
 * settings), CKKS presets and a token count; "bench.run" runs
 * ts_bench_run() (src/bench/ts-bench-runner.h) on a worker thread with a
 * progress bar, "bench.cancel" stops it between two tokens. Results fill a
 * GtkColumnView and a TsBenchChart and export as CSV or JSON ("bench.export"
 * with "csv" or "json"). The compute devices are probed on a worker thread
 * when the page is created; the probe is cancelled if the page goes first.
 */
#pragma once

#include <adwaita.h>

#include "ts-settings.h"

G_BEGIN_DECLS

#define TS_TYPE_BENCH_PAGE (ts_bench_page_get_type ())
G_DECLARE_FINAL_TYPE (TsBenchPage, ts_bench_page, TS, BENCH_PAGE, AdwBin)

/* A page over the application's @settings (referenced; the construct-only
 * property "settings", which the page requires): the evaluator address,
 * threads, and the model and adapter it remembers. */
GtkWidget *ts_bench_page_new (TsSettings *settings);

/* The text shown for the GPU row ("Probing…" until the probe returns). */
const char *ts_bench_page_get_gpu_summary (TsBenchPage *self);

G_END_DECLS
