/* ts-history-stats.h: what a reply's footer and latency chart showed, kept with it in history.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A reopened conversation shows its last replies' numbers and bars again:
 * they are stored as one JSON text per reply (stages by name, so that a
 * stage added later reads as 0 ms in older replies).
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

#include "ts-timings.h"

G_BEGIN_DECLS

typedef struct {
  guint n_tokens;
  double tokens_per_second;
  double first_token_ms;
  double max_delta_error;
  double bytes_per_token;
  gboolean encrypted;          /* the adapter was evaluated encrypted */
  gboolean has_adapter;
  guint he_modules;            /* adapted modules, and the encryptions they share */
  guint he_inputs;
  int diverged_at;             /* -1: the panes chose the same tokens */
  GArray *timings;             /* TsTokenTimings, one per chart bar, oldest first */
  GPtrArray *texts;            /* each bar's token text (char*) */
} TsHistoryReplyStats;

TsHistoryReplyStats *ts_history_reply_stats_new (void);
TsHistoryReplyStats *ts_history_reply_stats_copy (const TsHistoryReplyStats *stats);
void ts_history_reply_stats_free (TsHistoryReplyStats *stats);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHistoryReplyStats, ts_history_reply_stats_free)

/* Appends one bar. */
void ts_history_reply_stats_add_bar (TsHistoryReplyStats *stats, const TsTokenTimings *timings,
                                     const char *text);

char *ts_history_reply_stats_to_json (const TsHistoryReplyStats *stats);
/* Adds the footer's numbers (n_tokens … diverged_at) as members of the
 * object @builder is building: one list of names for the stored form and
 * the conversation export. */
void ts_history_reply_stats_add_numbers (JsonBuilder *builder, const TsHistoryReplyStats *stats);
/* NULL (with @error naming what is wrong) when @json is not such a text. */
TsHistoryReplyStats *ts_history_reply_stats_from_json (const char *json, GError **error);

G_END_DECLS
