/* ts-bench-item.h: one benchmark configuration's result as a list item (for GtkColumnView).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib-object.h>

#include "ts-bench-runner.h"

G_BEGIN_DECLS

#define TS_TYPE_BENCH_ITEM (ts_bench_item_get_type ())
G_DECLARE_FINAL_TYPE (TsBenchItem, ts_bench_item, TS, BENCH_ITEM, GObject)

/* Keeps a reference on @results, which owns @result. */
TsBenchItem *ts_bench_item_new (GPtrArray *results, const TsBenchResult *result);
const TsBenchResult *ts_bench_item_get_result (TsBenchItem *self);

/* Text of one table column ("label", "rank", "tokens-per-s", "total",
 * "he-per-module", a stage name, "bytes", "error"). Newly allocated. */
char *ts_bench_item_format (TsBenchItem *self, const char *column);

/* The configuration's name for people (translated), newly allocated. */
char *ts_bench_result_label (const TsBenchResult *result);
/* Sum over stages of the median ms per token. */
double ts_bench_result_total_ms (const TsBenchResult *result);

G_END_DECLS
