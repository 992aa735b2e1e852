/* ts-latency-chart.h: live stacked bars of per-stage latency, one bar per token.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each bar stacks the token's milliseconds per HE-LoRA stage (DESIGN.md §2,
 * one colour per stage, light and dark variants), newest on the right; a line
 * shows the rolling tokens/s; hovering a bar shows its token and stage times;
 * a summary row gives the median ms per stage. Bars live in a ring buffer
 * (the newest TS_LATENCY_CHART_CAPACITY are kept); however fast they arrive,
 * the chart redraws at most once per frame.
 *
 * Main-thread only.
 */
#pragma once

#include <gtk/gtk.h>

#include "ts-timings.h"

G_BEGIN_DECLS

#define TS_LATENCY_CHART_CAPACITY 4096

#define TS_TYPE_LATENCY_CHART (ts_latency_chart_get_type ())
G_DECLARE_FINAL_TYPE (TsLatencyChart, ts_latency_chart, TS, LATENCY_CHART, GtkWidget)

GtkWidget *ts_latency_chart_new (void);

/* Adds a bar for one token (@text: its text, for the tooltip and CSV). */
void ts_latency_chart_append (TsLatencyChart *self, const TsTokenTimings *timings,
                              const char *text);
void ts_latency_chart_clear (TsLatencyChart *self);
/* Bars held (at most TS_LATENCY_CHART_CAPACITY). */
guint ts_latency_chart_get_n_bars (TsLatencyChart *self);
/* Bar @index (0 = oldest held); NULL when out of range. Borrowed. */
const TsTokenTimings *ts_latency_chart_get_bar (TsLatencyChart *self, guint index);
const char *ts_latency_chart_get_bar_text (TsLatencyChart *self, guint index);
double ts_latency_chart_get_median_ms (TsLatencyChart *self, TsStage stage);

/* The colour of @stage in the light or dark palette. */
void ts_latency_chart_stage_color (TsStage stage, gboolean dark, GdkRGBA *out);

/* "token,text,forward_ms,…,sample_ms,total_ms,bytes_up,bytes_down" and one line per bar. */
char *ts_latency_chart_to_csv (TsLatencyChart *self);
gboolean ts_latency_chart_save_csv (TsLatencyChart *self, GFile *file, GError **error);
/* Renders the chart at its current size (or 800×240 when it has none) to a PNG. */
gboolean ts_latency_chart_save_png (TsLatencyChart *self, GFile *file, GError **error);

/* Draws on the taller of the two charts' scales, so that the plaintext and
 * HE panes' bars compare at a glance (@peer is watched weakly; call it both
 * ways). */
void ts_latency_chart_share_scale (TsLatencyChart *self, TsLatencyChart *peer);
/* The top of the scale in ms (the shared one), and whether @stage is in
 * the legend (only stages some bar spends time in are listed). */
double ts_latency_chart_get_scale_ms (TsLatencyChart *self);
gboolean ts_latency_chart_get_stage_listed (TsLatencyChart *self, TsStage stage);

G_END_DECLS
