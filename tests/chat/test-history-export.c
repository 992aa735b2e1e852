/* test-history-export.c: a stored conversation exported as Markdown and as
 * JSON: two exchanges through the real TsHistory API (one reply stopped, the
 * second exchange left out, footer numbers and chart bars on the replies);
 * the expected texts and numbers are written out here, not produced by the
 * exporter.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <json-glib/json-glib.h>
#include <string.h>

#include "ts-config.h"
#include "ts-history-export.h"
#include "ts-test-util.h"

#define TITLE "Quarterly report: Q1/Q2"

typedef struct {
  char *dir;
  TsHistory *history;
  gint64 conversation;
} Fixture;

/* A reply's stats: @n bars, bar i taking forward 10 + i ms, encrypt
 * @encrypt_ms + i ms, and the text "t<i>". */
static void
store_stats (TsHistory *history, gint64 message, guint n, double tokens_per_second,
             double first_token_ms, double encrypt_ms)
{
  g_autoptr (TsHistoryReplyStats) stats = ts_history_reply_stats_new ();
  g_autoptr (GError) error = NULL;

  stats->n_tokens = n;
  stats->tokens_per_second = tokens_per_second;
  stats->first_token_ms = first_token_ms;
  stats->encrypted = encrypt_ms > 0;
  for (guint i = 0; i < n; i++)
    {
      TsTokenTimings t = { 0 };
      g_autofree char *text = g_strdup_printf ("t%u", i);

      t.ms[TS_STAGE_FORWARD] = 10 + i;
      t.ms[TS_STAGE_ENCRYPT] = encrypt_ms > 0 ? encrypt_ms + i : 0;
      t.bytes_up = encrypt_ms > 0 ? 1000 + i : 0;
      ts_history_reply_stats_add_bar (stats, &t, text);
    }
  g_assert_true (ts_history_set_stats (history, message, stats, &error));
  g_assert_no_error (error);
}

static gint64
add (TsHistory *history, gint64 conversation, gboolean is_user, TsHistoryPane pane,
     const char *content, gboolean complete)
{
  g_autoptr (GError) error = NULL;
  gint64 id = ts_history_add_message (history, conversation, is_user, pane, content, complete,
                                      &error);

  g_assert_no_error (error);
  g_assert_cmpint (id, >, 0);
  return id;
}

/* What the plaintext pane's first reply thought: two paragraphs. */
#define THINKING "CKKS: approximate.\n\nSay it short.\n"

/* Exchange 1: both panes answer (the plaintext one after thinking), the
 * HE reply stopped after 2 tokens.
 * Exchange 2: the plaintext pane answers, the HE pane fails; the exchange
 * is left out. */
static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autofree char *path = NULL;
  g_autoptr (GError) error = NULL;
  gint64 plain1, he1, user2, plain2;

  f->dir = g_dir_make_tmp ("tensafe-export-XXXXXX", NULL);
  path = g_build_filename (f->dir, "history.sqlite", NULL);
  f->history = ts_history_open (path, &error);
  g_assert_no_error (error);
  f->conversation = ts_history_create (f->history, TITLE, &error);
  g_assert_no_error (error);
  add (f->history, f->conversation, TRUE, TS_HISTORY_PANE_BOTH, "What is CKKS?", TRUE);
  plain1 = add (f->history, f->conversation, FALSE, TS_HISTORY_PANE_PLAIN, "An HE scheme.", TRUE);
  he1 = add (f->history, f->conversation, FALSE, TS_HISTORY_PANE_HE, "An HE", FALSE);
  g_assert_true (ts_history_set_note (f->history, plain1, "routed to: crypto-101", &error));
  g_assert_true (ts_history_set_note (f->history, he1, "routed to: crypto-101", &error));
  g_assert_true (ts_history_set_thinking (f->history, plain1, THINKING, &error));
  g_assert_no_error (error);
  store_stats (f->history, plain1, 3, 12.5, 40, 0);
  store_stats (f->history, he1, 2, 4.3, 180.4, 2.5);
  user2 = add (f->history, f->conversation, TRUE, TS_HISTORY_PANE_BOTH, "And BFV?", TRUE);
  plain2 = add (f->history, f->conversation, FALSE, TS_HISTORY_PANE_PLAIN, "Integers.", TRUE);
  add (f->history, f->conversation, FALSE, TS_HISTORY_PANE_HE, "", FALSE);
  store_stats (f->history, plain2, 1, 20, 35.6, 0);
  g_assert_true (ts_history_leave_out (f->history, f->conversation, user2, &error));
  g_assert_no_error (error);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  ts_history_close (f->history);
  ts_test_remove_tree (f->dir);
  g_free (f->dir);
}

/* Each of @parts in @text, in this order. */
static void
assert_in_order (const char *text, const char *const *parts)
{
  const char *at = text;

  for (guint i = 0; parts[i] != NULL; i++)
    {
      const char *found = strstr (at, parts[i]);

      if (found == NULL)
        g_error ("“%s” missing (or out of order) in:\n%s", parts[i], text);
      at = found + strlen (parts[i]);
    }
}

/* The part of @text from the first @from up to the next @to (newly allocated). */
static char *
between (const char *text, const char *from, const char *to)
{
  const char *start = strstr (text, from);
  const char *end = start != NULL ? strstr (start + strlen (from), to) : NULL;

  g_assert_nonnull (end);
  return g_strndup (start, end - start);
}

static void
test_markdown (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *md = ts_history_export_markdown (f->history, f->conversation, &error);
  g_autofree char *plain1 = NULL;
  const char *const parts[] = {
    "# " TITLE "\n",
    "Exported from TenSafe Desktop " TS_VERSION " on ",
    "## Exchange 1\n",
    "**Prompt**\n\nWhat is CKKS?\n",
    "### Plaintext LoRA\n",
    "*routed to: crypto-101*\n",
    "An HE scheme.\n",
    "*3 tokens · 12.5 tokens/s · first token 40 ms*\n",
    "### HE-LoRA\n",
    "*routed to: crypto-101*\n",
    "An HE\n",
    "*(stopped)*\n",
    "*2 tokens · 4.3 tokens/s · first token 180 ms*\n",
    "## Exchange 2 (left out)\n",
    "*Left out of the conversation the model sees.*\n",
    "**Prompt**\n\nAnd BFV?\n",
    "### Plaintext LoRA\n",
    "Integers.\n",
    "*1 token · 20.0 tokens/s · first token 36 ms*\n",
    "### HE-LoRA\n",
    "*(stopped)*\n",
    NULL,
  };

  g_assert_no_error (error);
  g_assert_nonnull (md);
  assert_in_order (md, parts);
  /* The first exchange is not left out; its plaintext reply was not stopped. */
  g_assert_null (strstr (md, "## Exchange 1 (left out)"));
  plain1 = between (md, "### Plaintext LoRA", "### HE-LoRA");
  g_assert_cmpstr (plain1, ==,
                   "### Plaintext LoRA\n\n*routed to: crypto-101*\n\n"
                   "<details>\n<summary>Thinking</summary>\n\n"
                   "> CKKS: approximate.\n>\n> Say it short.\n\n</details>\n\n"
                   "An HE scheme.\n\n"
                   "*3 tokens · 12.5 tokens/s · first token 40 ms*\n\n");
  /* Only that reply thought. */
  g_assert_null (strstr (strstr (md, "</details>") + 1, "<details>"));
  /* The failed HE reply has no footer: it kept no numbers. */
  g_assert_true (g_str_has_suffix (md, "### HE-LoRA\n\n*(stopped)*\n\n"));
}

static JsonObject *
message_at (JsonArray *messages, guint i)
{
  return json_array_get_object_element (messages, i);
}

/* A reply's stats member: @n tokens, each with the bars' numbers. */
static void
check_reply_stats (JsonObject *message, guint n, double first_token_ms, double encrypt_ms)
{
  JsonObject *stats = json_object_get_object_member (message, "stats");
  JsonArray *tokens;

  g_assert_nonnull (stats);
  g_assert_cmpint (json_object_get_int_member (stats, "n_tokens"), ==, n);
  g_assert_cmpfloat (json_object_get_double_member (stats, "first_token_ms"), ==, first_token_ms);
  g_assert_true (json_object_get_boolean_member (stats, "encrypted") == (encrypt_ms > 0));
  tokens = json_object_get_array_member (stats, "tokens");
  g_assert_nonnull (tokens);
  g_assert_cmpuint (json_array_get_length (tokens), ==, n);
  for (guint i = 0; i < n; i++)
    {
      JsonObject *t = json_array_get_object_element (tokens, i);
      g_autofree char *text = g_strdup_printf ("t%u", i);

      g_assert_cmpstr (json_object_get_string_member (t, "text"), ==, text);
      g_assert_cmpfloat (json_object_get_double_member (t, "forward_ms"), ==, 10 + i);
      g_assert_cmpfloat (json_object_get_double_member (t, "encrypt_ms"), ==,
                         encrypt_ms > 0 ? encrypt_ms + i : 0);
      g_assert_true (json_object_has_member (t, "evaluate_ms"));
      g_assert_true (json_object_has_member (t, "sample_ms"));
      g_assert_cmpint (json_object_get_int_member (t, "bytes_up"), ==, encrypt_ms > 0 ? 1000 + i : 0);
    }
}

static void
check_message (JsonObject *m, const char *role, const char *pane, const char *content,
               gboolean complete, gboolean left_out, const char *note)
{
  g_assert_cmpstr (json_object_get_string_member (m, "role"), ==, role);
  if (pane != NULL)
    g_assert_cmpstr (json_object_get_string_member (m, "pane"), ==, pane);
  else
    g_assert_false (json_object_has_member (m, "pane"));
  g_assert_cmpstr (json_object_get_string_member (m, "content"), ==, content);
  g_assert_true (json_object_get_boolean_member (m, "complete") == complete);
  g_assert_true (json_object_get_boolean_member (m, "left_out") == left_out);
  g_assert_true (json_object_has_member (m, "note"));
  if (note != NULL)
    g_assert_cmpstr (json_object_get_string_member (m, "note"), ==, note);
  else
    g_assert_true (json_object_get_null_member (m, "note"));
  /* Replies say what they thought (null: nothing); prompts have no thinking. */
  g_assert_true (json_object_has_member (m, "thinking") == (pane != NULL));
}

static void
check_iso8601 (JsonObject *root, const char *member, gint64 now)
{
  g_autoptr (GDateTime) when = g_date_time_new_from_iso8601 (json_object_get_string_member (root, member), NULL);

  g_assert_nonnull (when);
  g_assert_cmpint (ABS (g_date_time_to_unix (when) - now), <, 120);
}

static void
test_json (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *json = ts_history_export_json (f->history, f->conversation, &error);
  g_autoptr (JsonParser) parser = json_parser_new ();
  gint64 now = g_get_real_time () / G_USEC_PER_SEC;
  JsonObject *root;
  JsonArray *messages;

  g_assert_no_error (error);
  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  g_assert_no_error (error);
  /* Pretty-printed: one member a line. */
  g_assert_nonnull (strstr (json, "\n  \"format\" : \"tensafe-conversation\""));
  root = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpstr (json_object_get_string_member (root, "format"), ==, "tensafe-conversation");
  g_assert_cmpint (json_object_get_int_member (root, "version"), ==, 1);
  g_assert_cmpstr (json_object_get_string_member (root, "title"), ==, TITLE);
  g_assert_cmpstr (json_object_get_string_member (root, "app_version"), ==, TS_VERSION);
  check_iso8601 (root, "created_at", now);
  check_iso8601 (root, "exported_at", now);
  messages = json_object_get_array_member (root, "messages");
  g_assert_cmpuint (json_array_get_length (messages), ==, 6);
  check_message (message_at (messages, 0), "user", NULL, "What is CKKS?", TRUE, FALSE, NULL);
  g_assert_false (json_object_has_member (message_at (messages, 0), "stats"));
  check_message (message_at (messages, 1), "assistant", "plaintext", "An HE scheme.", TRUE, FALSE,
                 "routed to: crypto-101");
  check_reply_stats (message_at (messages, 1), 3, 40, 0);
  g_assert_cmpstr (json_object_get_string_member (message_at (messages, 1), "thinking"), ==,
                   THINKING);
  g_assert_true (json_object_get_null_member (message_at (messages, 2), "thinking"));
  check_message (message_at (messages, 2), "assistant", "he", "An HE", FALSE, FALSE,
                 "routed to: crypto-101");
  check_reply_stats (message_at (messages, 2), 2, 180.4, 2.5);
  check_message (message_at (messages, 3), "user", NULL, "And BFV?", TRUE, TRUE, NULL);
  check_message (message_at (messages, 4), "assistant", "plaintext", "Integers.", TRUE, TRUE, NULL);
  check_reply_stats (message_at (messages, 4), 1, 35.6, 0);
  check_message (message_at (messages, 5), "assistant", "he", "", FALSE, TRUE, NULL);
  g_assert_true (json_object_get_null_member (message_at (messages, 5), "stats"));
}

/* Settings kept with the conversation go in both exports; without them,
 * both say the conversation follows the defaults. */
static void
test_settings (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsConversationSettings) mine = ts_conversation_settings_new ();
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autofree char *md = ts_history_export_markdown (f->history, f->conversation, &error);
  g_autofree char *json = ts_history_export_json (f->history, f->conversation, &error);
  JsonObject *settings;

  g_assert_nonnull (strstr (md, "*Settings: the defaults of the preferences*\n"));
  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  g_assert_true (json_object_get_null_member (json_node_get_object (json_parser_get_root (parser)),
                                              "settings"));
  g_free (mine->system_prompt);
  mine->system_prompt = g_strdup ("Be brief.\nUse French.");
  mine->temperature = 0.7;
  mine->top_k = 20;
  mine->top_p = 0.9;
  mine->min_p = 0.1;
  mine->repeat_penalty = 1.1;
  mine->seed = -1;
  mine->context_length = 256;
  g_assert_true (ts_history_set_settings (f->history, f->conversation, mine, &error));
  g_clear_pointer (&md, g_free);
  g_clear_pointer (&json, g_free);
  md = ts_history_export_markdown (f->history, f->conversation, &error);
  json = ts_history_export_json (f->history, f->conversation, &error);
  g_assert_no_error (error);
  assert_in_order (md, (const char *const[]) {
    "*Settings: temperature 0.7 · top-k 20 · top-p 0.9 · min-p 0.1 · repetition penalty 1.1 · "
    "seed random · context 256*\n\n",
    "**System prompt**\n\n> Be brief.\n> Use French.\n\n", "## Exchange 1", NULL });
  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  settings = json_object_get_object_member (json_node_get_object (json_parser_get_root (parser)),
                                            "settings");
  g_assert_cmpstr (json_object_get_string_member (settings, "system_prompt"), ==,
                   "Be brief.\nUse French.");
  g_assert_cmpfloat (json_object_get_double_member (settings, "temperature"), ==, 0.7);
  g_assert_cmpint (json_object_get_int_member (settings, "top_k"), ==, 20);
  g_assert_cmpfloat (json_object_get_double_member (settings, "top_p"), ==, 0.9);
  g_assert_cmpfloat (json_object_get_double_member (settings, "min_p"), ==, 0.1);
  g_assert_cmpfloat (json_object_get_double_member (settings, "repeat_penalty"), ==, 1.1);
  g_assert_true (json_object_get_null_member (settings, "seed"));
  g_assert_cmpint (json_object_get_int_member (settings, "context_length"), ==, 256);
}

/* A conversation that is not there is an error that names it. */
static void
test_missing_conversation (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *md = ts_history_export_markdown (f->history, f->conversation + 41, &error);
  g_autofree char *id = g_strdup_printf ("%" G_GINT64_FORMAT, f->conversation + 41);
  g_autofree char *json = NULL;

  g_assert_null (md);
  g_assert_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND);
  g_assert_nonnull (strstr (error->message, id));
  g_clear_error (&error);
  json = ts_history_export_json (f->history, f->conversation + 41, &error);
  g_assert_null (json);
  g_assert_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND);
}

static void
test_file_name (void)
{
  const struct { const char *title, *extension, *expected; } cases[] = {
    { TITLE, "md", "Quarterly report_ Q1_Q2.md" },
    { "a\\b*c?d\"e<f>g|h\ni", "json", "a_b_c_d_e_f_g_h_i.json" },
    { " ..hidden. ", "md", "hidden.md" },
    { "Über Schlüssel ✓", "md", "Über Schlüssel ✓.md" },
    { "", "json", "conversation.json" },
    { "//", "md", "__.md" },
    /* U+012F is 0x2F ('/') in its low byte: it stays. */
    { "\xc4\xaf", "md", "\xc4\xaf.md" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = ts_history_export_file_name (cases[i].title, cases[i].extension);

      g_assert_cmpstr (name, ==, cases[i].expected);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add ("/history-export/markdown", Fixture, NULL, fixture_set_up, test_markdown,
              fixture_tear_down);
  g_test_add ("/history-export/json", Fixture, NULL, fixture_set_up, test_json, fixture_tear_down);
  g_test_add ("/history-export/missing-conversation", Fixture, NULL, fixture_set_up,
              test_missing_conversation, fixture_tear_down);
  g_test_add ("/history-export/settings", Fixture, NULL, fixture_set_up, test_settings,
              fixture_tear_down);
  g_test_add_func ("/history-export/file-name", test_file_name);
  return g_test_run ();
}
