/* ts-history-export.c: a stored conversation as a Markdown document or a JSON file.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "ts-config.h"
#include "ts-history-export.h"
#include "ts-json-builder.h"

/* A conversation and its messages, as stored. */
typedef struct {
  TsHistoryConversation *conversation;
  GPtrArray *messages;
  TsConversationSettings *settings;   /* NULL: the preferences' defaults */
} Stored;

static void
stored_clear (Stored *stored)
{
  ts_history_conversation_free (stored->conversation);
  g_clear_pointer (&stored->messages, g_ptr_array_unref);
  g_clear_pointer (&stored->settings, ts_conversation_settings_free);
}
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC (Stored, stored_clear)

static gboolean
load_stored (TsHistory *history, gint64 id, Stored *stored, GError **error)
{
  g_autoptr (GPtrArray) list = ts_history_list (history, error);

  if (list == NULL)
    return FALSE;
  for (guint i = 0; i < list->len && stored->conversation == NULL; i++)
    if (((TsHistoryConversation *) g_ptr_array_index (list, i))->id == id)
      stored->conversation = g_ptr_array_steal_index (list, i);
  if (stored->conversation == NULL)
    {
      g_set_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND,
                   "No conversation with id %" G_GINT64_FORMAT " in the history", id);
      return FALSE;
    }
  stored->messages = ts_history_messages (history, id, error);
  return stored->messages != NULL
         && ts_history_get_settings (history, id, &stored->settings, error);
}

static char *
iso8601_utc (gint64 unix_seconds)
{
  g_autoptr (GDateTime) when = g_date_time_new_from_unix_utc (unix_seconds);

  return when != NULL ? g_date_time_format_iso8601 (when) : g_strdup ("");
}

static char *
iso8601_now (void)
{
  return iso8601_utc (g_get_real_time () / G_USEC_PER_SEC);
}

/* ------------------------------------------------------------------------ */
/* Markdown                                                                   */

static const char *
pane_label (TsHistoryPane pane)
{
  switch (pane)
    {
    case TS_HISTORY_PANE_PLAIN:
      return _("Plaintext LoRA");
    case TS_HISTORY_PANE_HE:
      return _("HE-LoRA");
    case TS_HISTORY_PANE_BOTH:
    default:
      return _("Reply");
    }
}

/* The reply footer's numbers, as the pane showed them. */
static void
append_footer (GString *md, const TsHistoryReplyStats *stats)
{
  g_string_append_c (md, '*');
  g_string_append_printf (md, g_dngettext (NULL, "%u token · %.1f tokens/s · first token %.0f ms",
                                           "%u tokens · %.1f tokens/s · first token %.0f ms",
                                           stats->n_tokens),
                          stats->n_tokens, stats->tokens_per_second, stats->first_token_ms);
  g_string_append (md, "*\n\n");
}

/* The sampling settings on one line, then the system prompt quoted. */
static void
append_settings (GString *md, const TsConversationSettings *s)
{
  g_autofree char *seed = s->seed < 0 ? g_strdup (_("random")) : g_strdup_printf ("%" G_GINT64_FORMAT, s->seed);
  g_autofree char *context = s->context_length == 0 ? g_strdup (_("the model's"))
                                                    : g_strdup_printf ("%u", s->context_length);
  g_auto (GStrv) lines = NULL;

  g_string_append_c (md, '*');
  g_string_append_printf (md, _("Settings: temperature %g · top-k %d · top-p %g · min-p %g · "
                                "repetition penalty %g · seed %s · context %s"),
                          s->temperature, s->top_k, s->top_p, s->min_p, s->repeat_penalty, seed,
                          context);
  g_string_append (md, "*\n\n");
  if (*s->system_prompt == '\0')
    return;
  g_string_append_printf (md, "**%s**\n\n", _("System prompt"));
  lines = g_strsplit (s->system_prompt, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    g_string_append_printf (md, "> %s\n", lines[i]);
  g_string_append_c (md, '\n');
}

static void
append_user (GString *md, const TsHistoryMessage *m, guint exchange)
{
  g_string_append (md, "## ");
  g_string_append_printf (md, _("Exchange %u"), exchange);
  if (m->left_out)
    g_string_append_printf (md, " (%s)", _("left out"));
  g_string_append (md, "\n\n");
  if (m->left_out)
    g_string_append_printf (md, "*%s*\n\n", _("Left out of the conversation the model sees."));
  g_string_append_printf (md, "**%s**\n\n%s\n\n", _("Prompt"), m->content);
}

/* The thinking as a block quote under its own heading line, each line
 * quoted (an empty one too, so the quote does not end there), in a
 * <details> element that Markdown viewers show closed, like the chat. */
static void
append_thinking (GString *md, const char *thinking)
{
  g_auto (GStrv) lines = NULL;

  if (thinking == NULL || *thinking == '\0')
    return;
  lines = g_strsplit (thinking, "\n", -1);
  g_string_append_printf (md, "<details>\n<summary>%s</summary>\n\n", _("Thinking"));
  for (guint i = 0; lines[i] != NULL; i++)
    if (lines[i + 1] != NULL || *lines[i] != '\0')
      g_string_append_printf (md, ">%s%s\n", *lines[i] != '\0' ? " " : "", lines[i]);
  g_string_append (md, "\n</details>\n\n");
}

static void
append_reply (GString *md, const TsHistoryMessage *m, gboolean exchange_left_out)
{
  g_string_append_printf (md, "### %s", pane_label (m->pane));
  if (m->left_out && !exchange_left_out)
    g_string_append_printf (md, " (%s)", _("left out"));
  g_string_append (md, "\n\n");
  if (m->note != NULL && *m->note != '\0')
    g_string_append_printf (md, "*%s*\n\n", m->note);
  append_thinking (md, m->thinking);
  if (*m->content != '\0')
    g_string_append_printf (md, "%s\n\n", m->content);
  if (!m->complete)
    g_string_append_printf (md, "*%s*\n\n", _("(stopped)"));
  if (m->stats != NULL)
    append_footer (md, m->stats);
}

char *
ts_history_export_markdown (TsHistory *history, gint64 conversation, GError **error)
{
  g_auto (Stored) stored = { NULL, NULL, NULL };
  g_autofree char *now = NULL;
  gboolean exchange_left_out = FALSE;
  guint exchange = 0;
  GString *md;

  g_return_val_if_fail (history != NULL, NULL);
  if (!load_stored (history, conversation, &stored, error))
    return NULL;
  now = iso8601_now ();
  md = g_string_new (NULL);
  g_string_append_printf (md, "# %s\n\n", stored.conversation->title);
  g_string_append_c (md, '*');
  g_string_append_printf (md, _("Exported from TenSafe Desktop %s on %s."), TS_VERSION, now);
  g_string_append (md, "*\n\n");
  if (stored.settings != NULL)
    append_settings (md, stored.settings);
  else
    g_string_append_printf (md, "*%s*\n\n", _("Settings: the defaults of the preferences"));
  for (guint i = 0; i < stored.messages->len; i++)
    {
      const TsHistoryMessage *m = g_ptr_array_index (stored.messages, i);

      if (m->is_user)
        {
          exchange_left_out = m->left_out;
          append_user (md, m, ++exchange);
        }
      else
        append_reply (md, m, exchange_left_out);
    }
  return g_string_free (md, FALSE);
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                       */

/* One chart bar: the token's text and each stage's milliseconds, named as
 * the CSV export's columns are. */
static void
build_token (JsonBuilder *b, const TsTokenTimings *t, const char *text)
{
  json_builder_begin_object (b);
  ts_json_builder_add_string (b, "text", text);
  for (int s = 0; s < TS_N_STAGES; s++)
    {
      g_autofree char *name = g_strdup_printf ("%s_ms", ts_stage_name (s));

      ts_json_builder_add_double (b, name, t->ms[s]);
    }
  ts_json_builder_add_int (b, "bytes_up", (gint64) t->bytes_up);
  ts_json_builder_add_int (b, "bytes_down", (gint64) t->bytes_down);
  json_builder_end_object (b);
}

static void
build_stats (JsonBuilder *b, const TsHistoryReplyStats *stats)
{
  json_builder_set_member_name (b, "stats");
  if (stats == NULL)
    {
      json_builder_add_null_value (b);
      return;
    }
  json_builder_begin_object (b);
  ts_history_reply_stats_add_numbers (b, stats);
  json_builder_set_member_name (b, "tokens");
  json_builder_begin_array (b);
  for (guint i = 0; i < stats->timings->len; i++)
    build_token (b, &g_array_index (stats->timings, TsTokenTimings, i),
                 g_ptr_array_index (stats->texts, i));
  json_builder_end_array (b);
  json_builder_end_object (b);
}

static void
build_message (JsonBuilder *b, const TsHistoryMessage *m)
{
  json_builder_begin_object (b);
  ts_json_builder_add_string (b, "role", m->is_user ? "user" : "assistant");
  if (!m->is_user)
    ts_json_builder_add_string (b, "pane", m->pane == TS_HISTORY_PANE_HE ? "he" : "plaintext");
  ts_json_builder_add_string (b, "content", m->content);
  ts_json_builder_add_boolean (b, "complete", m->complete);
  ts_json_builder_add_boolean (b, "left_out", m->left_out);
  ts_json_builder_add_string (b, "note", m->note);
  if (!m->is_user)
    {
      ts_json_builder_add_string (b, "thinking", m->thinking);
      build_stats (b, m->stats);
    }
  json_builder_end_object (b);
}

char *
ts_history_export_json (TsHistory *history, gint64 conversation, GError **error)
{
  g_auto (Stored) stored = { NULL, NULL, NULL };
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonGenerator) generator = json_generator_new ();
  g_autoptr (JsonNode) root = NULL;
  g_autofree char *created = NULL;
  g_autofree char *now = NULL;

  g_return_val_if_fail (history != NULL, NULL);
  if (!load_stored (history, conversation, &stored, error))
    return NULL;
  created = iso8601_utc (stored.conversation->created);
  now = iso8601_now ();
  json_builder_begin_object (b);
  ts_json_builder_add_string (b, "format", TS_HISTORY_EXPORT_FORMAT);
  ts_json_builder_add_int (b, "version", TS_HISTORY_EXPORT_VERSION);
  ts_json_builder_add_string (b, "title", stored.conversation->title);
  ts_json_builder_add_string (b, "created_at", created);
  ts_json_builder_add_string (b, "exported_at", now);
  ts_json_builder_add_string (b, "app_version", TS_VERSION);
  /* null: the conversation follows the preferences' defaults. */
  json_builder_set_member_name (b, "settings");
  if (stored.settings == NULL)
    json_builder_add_null_value (b);
  else
    {
      json_builder_begin_object (b);
      ts_conversation_settings_add_members (b, stored.settings);
      json_builder_end_object (b);
    }
  json_builder_set_member_name (b, "messages");
  json_builder_begin_array (b);
  for (guint i = 0; i < stored.messages->len; i++)
    build_message (b, g_ptr_array_index (stored.messages, i));
  json_builder_end_array (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  json_generator_set_root (generator, root);
  json_generator_set_pretty (generator, TRUE);
  json_generator_set_indent (generator, 2);
  return json_generator_to_data (generator, NULL);
}

/* ------------------------------------------------------------------------ */
/* File name                                                                  */

#define FILE_NAME_CHARS 64

char *
ts_history_export_file_name (const char *title, const char *extension)
{
  g_return_val_if_fail (extension != NULL, NULL);

  g_autofree char *valid = g_utf8_make_valid (title != NULL ? title : "", -1);
  GString *name = g_string_new (NULL);
  glong n = 0;

  for (const char *p = valid; *p != '\0' && n < FILE_NAME_CHARS; p = g_utf8_next_char (p), n++)
    {
      gunichar c = g_utf8_get_char (p);

      if (c < 0x20 || c == 0x7f || (c < 0x80 && strchr ("/\\:*?\"<>|", (int) c) != NULL))
        g_string_append_c (name, '_');
      else
        g_string_append_unichar (name, c);
    }
  /* No hidden file, no name ending in a space or a dot (Windows drops them). */
  while (name->len > 0 && (name->str[0] == '.' || g_ascii_isspace (name->str[0])))
    g_string_erase (name, 0, 1);
  while (name->len > 0 && (name->str[name->len - 1] == '.' || g_ascii_isspace (name->str[name->len - 1])))
    g_string_truncate (name, name->len - 1);
  if (name->len == 0)
    g_string_assign (name, "conversation");
  g_string_append_printf (name, ".%s", extension);
  return g_string_free (name, FALSE);
}
