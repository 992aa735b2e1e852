/* ts-bench-page.h: the benchmark page: compute devices now, HE-LoRA runs later.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. Probes the GPU on a worker thread when created and shows
 * the result; the probe is cancelled if the page goes away first.
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define TS_TYPE_BENCH_PAGE (ts_bench_page_get_type ())
G_DECLARE_FINAL_TYPE (TsBenchPage, ts_bench_page, TS, BENCH_PAGE, AdwBin)

/* The text shown for the GPU row ("Probing…" until the probe returns). */
const char *ts_bench_page_get_gpu_summary (TsBenchPage *self);

G_END_DECLS
