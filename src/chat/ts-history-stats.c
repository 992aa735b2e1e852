/* ts-history-stats.c: what a reply's footer and latency chart showed, kept with it in history.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <json-glib/json-glib.h>

#include "ts-history-stats.h"
#include "ts-json-builder.h"

TsHistoryReplyStats *
ts_history_reply_stats_new (void)
{
  TsHistoryReplyStats *stats = g_new0 (TsHistoryReplyStats, 1);

  stats->diverged_at = -1;
  stats->has_adapter = TRUE;
  stats->timings = g_array_new (FALSE, TRUE, sizeof (TsTokenTimings));
  stats->texts = g_ptr_array_new_with_free_func (g_free);
  return stats;
}

TsHistoryReplyStats *
ts_history_reply_stats_copy (const TsHistoryReplyStats *stats)
{
  TsHistoryReplyStats *copy;

  g_return_val_if_fail (stats != NULL, NULL);
  copy = g_memdup2 (stats, sizeof *stats);
  copy->timings = g_array_copy (stats->timings);
  copy->texts = g_ptr_array_new_full (stats->texts->len, g_free);
  for (guint i = 0; i < stats->texts->len; i++)
    g_ptr_array_add (copy->texts, g_strdup (g_ptr_array_index (stats->texts, i)));
  return copy;
}

void
ts_history_reply_stats_free (TsHistoryReplyStats *stats)
{
  if (stats == NULL)
    return;
  g_array_unref (stats->timings);
  g_ptr_array_unref (stats->texts);
  g_free (stats);
}

void
ts_history_reply_stats_add_bar (TsHistoryReplyStats *stats, const TsTokenTimings *timings,
                                const char *text)
{
  g_return_if_fail (stats != NULL);
  g_return_if_fail (timings != NULL);

  g_array_append_val (stats->timings, *timings);
  g_ptr_array_add (stats->texts, g_strdup (text != NULL ? text : ""));
}

static void
build_bar (JsonBuilder *b, const TsTokenTimings *t, const char *text)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "text");
  json_builder_add_string_value (b, text);
  json_builder_set_member_name (b, "ms");
  json_builder_begin_object (b);
  for (int s = 0; s < TS_N_STAGES; s++)
    {
      json_builder_set_member_name (b, ts_stage_name (s));
      json_builder_add_double_value (b, t->ms[s]);
    }
  json_builder_end_object (b);
  json_builder_set_member_name (b, "bytes_up");
  json_builder_add_int_value (b, (gint64) t->bytes_up);
  json_builder_set_member_name (b, "bytes_down");
  json_builder_add_int_value (b, (gint64) t->bytes_down);
  json_builder_end_object (b);
}

void
ts_history_reply_stats_add_numbers (JsonBuilder *b, const TsHistoryReplyStats *stats)
{
  g_return_if_fail (JSON_IS_BUILDER (b));
  g_return_if_fail (stats != NULL);
  ts_json_builder_add_int (b, "n_tokens", stats->n_tokens);
  ts_json_builder_add_double (b, "tokens_per_second", stats->tokens_per_second);
  ts_json_builder_add_double (b, "first_token_ms", stats->first_token_ms);
  ts_json_builder_add_double (b, "max_delta_error", stats->max_delta_error);
  ts_json_builder_add_double (b, "bytes_per_token", stats->bytes_per_token);
  ts_json_builder_add_boolean (b, "encrypted", stats->encrypted);
  ts_json_builder_add_boolean (b, "has_adapter", stats->has_adapter);
  ts_json_builder_add_int (b, "he_modules", stats->he_modules);
  ts_json_builder_add_int (b, "he_inputs", stats->he_inputs);
  ts_json_builder_add_int (b, "diverged_at", stats->diverged_at);
}

char *
ts_history_reply_stats_to_json (const TsHistoryReplyStats *stats)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonNode) root = NULL;

  g_return_val_if_fail (stats != NULL, NULL);
  json_builder_begin_object (b);
  ts_history_reply_stats_add_numbers (b, stats);
  json_builder_set_member_name (b, "bars");
  json_builder_begin_array (b);
  for (guint i = 0; i < stats->timings->len; i++)
    build_bar (b, &g_array_index (stats->timings, TsTokenTimings, i),
               g_ptr_array_index (stats->texts, i));
  json_builder_end_array (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}

/* Stages missing from @ms (named by a later version) read as 0 ms. */
static gboolean
parse_bar (JsonNode *node, TsHistoryReplyStats *stats)
{
  TsTokenTimings t = { 0 };
  JsonObject *bar, *ms;

  if (!JSON_NODE_HOLDS_OBJECT (node))
    return FALSE;
  bar = json_node_get_object (node);
  if (!json_object_has_member (bar, "ms") || !JSON_NODE_HOLDS_OBJECT (json_object_get_member (bar, "ms")))
    return FALSE;
  ms = json_object_get_object_member (bar, "ms");
  for (int s = 0; s < TS_N_STAGES; s++)
    t.ms[s] = json_object_get_double_member_with_default (ms, ts_stage_name (s), 0);
  t.bytes_up = (guint64) MAX (json_object_get_int_member_with_default (bar, "bytes_up", 0), 0);
  t.bytes_down = (guint64) MAX (json_object_get_int_member_with_default (bar, "bytes_down", 0), 0);
  ts_history_reply_stats_add_bar (stats, &t,
                                  json_object_get_string_member_with_default (bar, "text", ""));
  return TRUE;
}

static void
parse_numbers (JsonObject *o, TsHistoryReplyStats *stats)
{
  stats->n_tokens = (guint) CLAMP (json_object_get_int_member_with_default (o, "n_tokens", 0),
                                   0, G_MAXUINT);
  stats->tokens_per_second = json_object_get_double_member_with_default (o, "tokens_per_second", 0);
  stats->first_token_ms = json_object_get_double_member_with_default (o, "first_token_ms", 0);
  stats->max_delta_error = json_object_get_double_member_with_default (o, "max_delta_error", 0);
  stats->bytes_per_token = json_object_get_double_member_with_default (o, "bytes_per_token", 0);
  stats->encrypted = json_object_get_boolean_member_with_default (o, "encrypted", FALSE);
  stats->has_adapter = json_object_get_boolean_member_with_default (o, "has_adapter", TRUE);
  stats->he_modules = (guint) CLAMP (json_object_get_int_member_with_default (o, "he_modules", 0),
                                     0, G_MAXUINT);
  stats->he_inputs = (guint) CLAMP (json_object_get_int_member_with_default (o, "he_inputs", 0),
                                    0, G_MAXUINT);
  stats->diverged_at = (int) CLAMP (json_object_get_int_member_with_default (o, "diverged_at", -1),
                                    -1, G_MAXINT);
}

TsHistoryReplyStats *
ts_history_reply_stats_from_json (const char *json, GError **error)
{
  g_return_val_if_fail (json != NULL, NULL);

  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (TsHistoryReplyStats) stats = NULL;
  JsonNode *root, *bars;
  JsonObject *o;

  if (!json_parser_load_from_data (parser, json, -1, error))
    return NULL;
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "Reply statistics: not a JSON object");
      return NULL;
    }
  o = json_node_get_object (root);
  stats = ts_history_reply_stats_new ();
  parse_numbers (o, stats);
  bars = json_object_get_member (o, "bars");
  if (bars != NULL && !JSON_NODE_HOLDS_ARRAY (bars))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "Reply statistics: “bars” is not an array");
      return NULL;
    }
  for (guint i = 0; bars != NULL && i < json_array_get_length (json_node_get_array (bars)); i++)
    if (!parse_bar (json_array_get_element (json_node_get_array (bars), i), stats))
      {
        g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                     "Reply statistics: bar %u is not an object with “ms”", i + 1);
        return NULL;
      }
  return g_steal_pointer (&stats);
}
