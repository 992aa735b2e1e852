/* test-chat-widgets.c: the chat page's parts on their own: markdown rendering of
 * messages, messages and panes as views of a conversation's turns, the
 * latency chart (ring buffer, medians, CSV, PNG) and the conversation store.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <sqlite3.h>
#include <glib/gstdio.h>

#include "ts-application.h"
#include "ts-chat-message.h"
#include "ts-chat-pane.h"
#include "ts-history.h"
#include "ts-latency-chart.h"
#include "ts-test-util.h"

static void
test_markdown_blocks (void)
{
  const char *text = "Intro paragraph\ncontinues here.\n\n"
                     "- first item\n* second item\n12. numbered\n\n"
                     "```c\nint main (void) { return 0; }\n```\n"
                     "Closing words with `code` and **bold**.";
  GtkWidget *message = g_object_ref_sink (ts_chat_message_new (FALSE, text));

  g_assert_cmpuint (ts_chat_message_count_list_items (TS_CHAT_MESSAGE (message)), ==, 3);
  g_assert_cmpuint (ts_chat_message_count_code_blocks (TS_CHAT_MESSAGE (message)), ==, 1);
  g_assert_cmpstr (ts_chat_message_get_text (TS_CHAT_MESSAGE (message)), ==, text);
  g_assert_finalize_object (message);
}

/* Streaming: a code fence still open keeps its lines in one code block, and
 * blocks appear as the text grows. */
static void
test_markdown_streaming (void)
{
  GtkWidget *message = g_object_ref_sink (ts_chat_message_new (FALSE, ""));
  TsChatMessage *m = TS_CHAT_MESSAGE (message);

  ts_chat_message_append (m, "Here:\n```\nline 1\n");
  g_assert_cmpuint (ts_chat_message_count_code_blocks (m), ==, 1);
  ts_chat_message_append (m, "line 2\n```\n- a\n");
  g_assert_cmpuint (ts_chat_message_count_code_blocks (m), ==, 1);
  g_assert_cmpuint (ts_chat_message_count_list_items (m), ==, 1);
  ts_chat_message_set_text (m, "plain");
  g_assert_cmpuint (ts_chat_message_count_code_blocks (m), ==, 0);
  g_assert_cmpuint (ts_chat_message_count_list_items (m), ==, 0);
  g_assert_finalize_object (message);
}

/* A message made for a turn follows it: streamed thinking, then the answer
 * (which closes the thinking), note, error, ending, left out. */
static void
test_message_follows_turn (void)
{
  g_autoptr (TsChatTurn) turn = ts_chat_turn_new (FALSE, "");
  GtkWidget *message = g_object_ref_sink (ts_chat_message_new_for_turn (turn));
  TsChatMessage *m = TS_CHAT_MESSAGE (message);
  TsThinkingBlock *block;

  g_assert_true (ts_chat_message_get_turn (m) == turn);
  g_assert_null (ts_chat_message_get_thinking_block (m));
  ts_chat_turn_append_thinking (turn, "Let me", 1);
  ts_chat_turn_append_thinking (turn, " see", 2);
  g_assert_cmpstr (ts_chat_message_get_thinking (m), ==, "Let me see");
  block = ts_chat_message_get_thinking_block (m);
  g_assert_nonnull (block);
  g_assert_true (ts_thinking_block_get_active (block));
  g_assert_true (ts_thinking_block_get_expanded (block));
  ts_chat_turn_append_text (turn, "- a\n");
  ts_chat_turn_append_text (turn, "- b\n");
  g_assert_cmpstr (ts_chat_message_get_text (m), ==, "- a\n- b\n");
  g_assert_cmpuint (ts_chat_message_count_list_items (m), ==, 2);
  g_assert_false (ts_thinking_block_get_active (block));
  g_assert_false (ts_thinking_block_get_expanded (block));
  g_assert_cmpstr (ts_thinking_block_get_title (block), ==, "Thought for 2 tokens");

  ts_chat_turn_set_note (turn, "routed to: tiny-pirate");
  ts_chat_turn_set_error (turn, "No answer: broken");
  ts_chat_turn_set_ending (turn, "Stopped");
  ts_chat_turn_set_excluded (turn, TRUE);
  g_assert_cmpstr (ts_chat_message_get_note (m), ==, "routed to: tiny-pirate");
  g_assert_cmpstr (ts_chat_message_get_error (m), ==, "No answer: broken");
  g_assert_cmpstr (ts_chat_message_get_ending (m), ==, "Stopped");
  g_assert_true (ts_chat_message_get_excluded (m));
  ts_chat_turn_set_ending (turn, NULL);
  g_assert_null (ts_chat_message_get_ending (m));
  /* Text that does not continue what is shown replaces it. */
  ts_chat_turn_set_text (turn, "plain");
  g_assert_cmpstr (ts_chat_message_get_text (m), ==, "plain");
  g_assert_cmpuint (ts_chat_message_count_list_items (m), ==, 0);
  g_assert_finalize_object (message);
}

/* The pane's messages, in order, by the turns they show. */
static GPtrArray *
shown_turns (GtkWidget *widget, GPtrArray *turns)
{
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    if (TS_IS_CHAT_MESSAGE (c))
      g_ptr_array_add (turns, ts_chat_message_get_turn (TS_CHAT_MESSAGE (c)));
    else
      shown_turns (c, turns);
  return turns;
}

static void
assert_shows (TsChatPane *pane, TsChatConversation *conversation)
{
  g_autoptr (GPtrArray) turns = shown_turns (GTK_WIDGET (pane), g_ptr_array_new ());
  guint n = g_list_model_get_n_items (G_LIST_MODEL (conversation));

  g_assert_cmpuint (turns->len, ==, n);
  for (guint i = 0; i < n; i++)
    g_assert_true (g_ptr_array_index (turns, i)
                   == ts_chat_conversation_get_turn (conversation, i));
}

/* The message under @widget that shows @turn, or NULL. */
static TsChatMessage *
find_message (GtkWidget *widget, TsChatTurn *turn)
{
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    {
      TsChatMessage *found = TS_IS_CHAT_MESSAGE (c) ? TS_CHAT_MESSAGE (c) : find_message (c, turn);

      if (found != NULL && ts_chat_message_get_turn (found) == turn)
        return found;
    }
  return NULL;
}

/* The exchange the Edit button of the @index-th prompt edits. */
static guint
edit_target (TsChatPane *pane, TsChatConversation *conversation, guint index)
{
  TsChatMessage *m = find_message (GTK_WIDGET (pane),
                                   ts_chat_conversation_get_prompt (conversation, index));
  GtkWidget *button;

  g_assert_nonnull (m);
  button = gtk_widget_get_last_child (adw_bin_get_child (ADW_BIN (m)));
  g_assert_true (gtk_widget_has_css_class (button, "ts-edit-prompt"));
  return g_variant_get_uint32 (gtk_actionable_get_action_target_value (GTK_ACTIONABLE (button)));
}

/* A pane shows its conversation's turns as messages, one each, in order,
 * through every change; a conversation given later replaces them. */
static void
test_pane_shows_conversation (void)
{
  GtkWidget *pane = g_object_ref_sink (g_object_new (TS_TYPE_CHAT_PANE, NULL));
  TsChatPane *p = TS_CHAT_PANE (pane);
  g_autoptr (TsChatConversation) conversation = ts_chat_conversation_new ();
  TsChatConversation *own = ts_chat_pane_get_conversation (p);

  ts_chat_pane_add_message (p, TRUE, "in its own conversation");
  assert_shows (p, own);
  for (guint i = 0; i < 3; i++)
    {
      ts_chat_conversation_append (conversation, TRUE, "prompt");
      ts_chat_conversation_append (conversation, FALSE, "reply");
    }
  ts_chat_pane_set_conversation (p, conversation);
  g_assert_true (ts_chat_pane_get_conversation (p) == conversation);
  assert_shows (p, conversation);
  g_assert_cmpuint (edit_target (p, conversation, 2), ==, 2);
  ts_chat_conversation_truncate (conversation, 1);
  assert_shows (p, conversation);
  ts_chat_conversation_append (conversation, TRUE, "again");
  assert_shows (p, conversation);
  g_assert_cmpuint (edit_target (p, conversation, 1), ==, 1);
  g_assert_cmpstr (ts_chat_pane_get_reply (p), ==, "reply");
  ts_chat_pane_clear (p);
  assert_shows (p, conversation);
  g_assert_cmpuint (g_list_model_get_n_items (G_LIST_MODEL (conversation)), ==, 0);
  g_assert_null (ts_chat_pane_get_reply (p));
  g_assert_finalize_object (pane);
}

static void
test_inline_markup (void)
{
  struct { const char *in, *out; } cases[] = {
    { "a < b & c > d", "a &lt; b &amp; c &gt; d" },
    { "use `x<y` now", "use <tt>x&lt;y</tt> now" },
    { "**bold** text", "<b>bold</b> text" },
    { "open `code", "open <tt>code</tt>" },
    { "ctl\001x", "ctl\357\277\275x" },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *markup = ts_chat_message_inline_markup (cases[i].in);

      g_assert_cmpstr (markup, ==, cases[i].out);
      g_assert_true (pango_parse_markup (markup, -1, 0, NULL, NULL, NULL, NULL));
    }
}

static TsTokenTimings
make_timings (guint i)
{
  TsTokenTimings t = { 0 };

  for (int s = 0; s < TS_N_STAGES; s++)
    t.ms[s] = (double) ((i * 7 + (guint) s * 3) % 11) + 0.5 * s;
  t.bytes_up = i;
  return t;
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

/* The ring keeps the newest bars; medians match a sort of those bars. */
static void
test_chart_ring_and_medians (void)
{
  GtkWidget *chart = g_object_ref_sink (ts_latency_chart_new ());
  TsLatencyChart *c = TS_LATENCY_CHART (chart);
  guint total = TS_LATENCY_CHART_CAPACITY + 37;
  g_autofree double *values = g_new (double, TS_LATENCY_CHART_CAPACITY);

  for (guint i = 0; i < total; i++)
    {
      TsTokenTimings t = make_timings (i);
      g_autofree char *text = g_strdup_printf ("t%u", i);

      ts_latency_chart_append (c, &t, text);
    }
  g_assert_cmpuint (ts_latency_chart_get_n_bars (c), ==, TS_LATENCY_CHART_CAPACITY);
  g_assert_cmpstr (ts_latency_chart_get_bar_text (c, 0), ==, "t37");
  g_assert_cmpfloat (ts_latency_chart_get_bar (c, 0)->ms[TS_STAGE_SAMPLE],
                     ==, make_timings (37).ms[TS_STAGE_SAMPLE]);
  g_assert_null (ts_latency_chart_get_bar (c, TS_LATENCY_CHART_CAPACITY));
  for (int s = 0; s < TS_N_STAGES; s++)
    {
      guint n = TS_LATENCY_CHART_CAPACITY;

      for (guint i = 0; i < n; i++)
        values[i] = make_timings (i + 37).ms[s];
      qsort (values, n, sizeof (double), compare_doubles);
      g_assert_cmpfloat_with_epsilon (ts_latency_chart_get_median_ms (c, s),
                                      (values[n / 2 - 1] + values[n / 2]) / 2, 1e-12);
    }
  ts_latency_chart_clear (c);
  g_assert_cmpuint (ts_latency_chart_get_n_bars (c), ==, 0);
  g_assert_cmpfloat (ts_latency_chart_get_median_ms (c, TS_STAGE_FORWARD), ==, 0);
  g_assert_finalize_object (chart);
}

static void
test_chart_csv (void)
{
  GtkWidget *chart = g_object_ref_sink (ts_latency_chart_new ());
  TsTokenTimings t = make_timings (3);
  g_autofree char *csv = NULL;
  g_auto (GStrv) lines = NULL;
  g_auto (GStrv) cells = NULL;

  ts_latency_chart_append (TS_LATENCY_CHART (chart), &t, "say \"hi\"");
  csv = ts_latency_chart_to_csv (TS_LATENCY_CHART (chart));
  lines = g_strsplit (csv, "\n", -1);
  g_assert_cmpstr (lines[0], ==, "token,text,forward_ms,encrypt_ms,upload_ms,evaluate_ms,"
                                 "download_ms,decrypt_ms,lora_b_ms,lm_head_ms,sample_ms,"
                                 "total_ms,bytes_up,bytes_down");
  g_assert_true (g_str_has_prefix (lines[1], "1,\"say \"\"hi\"\"\","));
  cells = g_strsplit (lines[1] + strlen ("1,\"say \"\"hi\"\"\","), ",", -1);
  g_assert_cmpuint (g_strv_length (cells), ==, TS_N_STAGES + 3);
  for (int s = 0; s < TS_N_STAGES; s++)
    g_assert_cmpfloat_with_epsilon (g_ascii_strtod (cells[s], NULL), t.ms[s], 1e-4);
  g_assert_cmpfloat_with_epsilon (g_ascii_strtod (cells[TS_N_STAGES], NULL),
                                  ts_token_timings_total_ms (&t), 1e-4);
  g_assert_cmpstr (cells[TS_N_STAGES + 1], ==, "3");
  g_assert_cmpstr (lines[2], ==, "");
  g_assert_finalize_object (chart);
}

/* The PNG export renders without the widget being shown. */
static void
test_chart_png (void)
{
  GtkWidget *chart = g_object_ref_sink (ts_latency_chart_new ());
  g_autofree char *dir = g_dir_make_tmp ("tensafe-chart-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "chart.png", NULL);
  g_autoptr (GFile) file = g_file_new_for_path (path);
  g_autoptr (GError) error = NULL;
  g_autoptr (GdkTexture) texture = NULL;

  for (guint i = 0; i < 40; i++)
    {
      TsTokenTimings t = make_timings (i);
      ts_latency_chart_append (TS_LATENCY_CHART (chart), &t, "x");
    }
  g_assert_true (ts_latency_chart_save_png (TS_LATENCY_CHART (chart), file, &error));
  g_assert_no_error (error);
  texture = gdk_texture_new_from_file (file, &error);
  g_assert_no_error (error);
  g_assert_cmpint (gdk_texture_get_width (texture), ==, 800);
  g_assert_cmpint (gdk_texture_get_height (texture), ==, 240);
  g_remove (path);
  g_rmdir (dir);
  g_assert_finalize_object (chart);
}

static void
test_stage_colours_distinct (void)
{
  for (int dark = 0; dark <= 1; dark++)
    for (int a = 0; a < TS_N_STAGES; a++)
      for (int b = a + 1; b < TS_N_STAGES; b++)
        {
          GdkRGBA x, y;

          ts_latency_chart_stage_color (a, dark, &x);
          ts_latency_chart_stage_color (b, dark, &y);
          g_assert_false (gdk_rgba_equal (&x, &y));
        }
}

static void
test_history_store (void)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "sub", "history.sqlite", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  g_autoptr (GPtrArray) list = NULL;
  g_autoptr (GPtrArray) messages = NULL;
  gint64 a, b, user, reply;

  g_assert_no_error (error);
  a = ts_history_create (history, "First", &error);
  b = ts_history_create (history, "Second", &error);
  g_assert_cmpint (a, >, 0);
  g_assert_cmpint (b, >, a);
  user = ts_history_add_message (history, a, TRUE, TS_HISTORY_PANE_BOTH, "hello", TRUE, &error);
  reply = ts_history_add_message (history, a, FALSE, TS_HISTORY_PANE_HE, "par", FALSE, &error);
  g_assert_true (ts_history_update_message (history, reply, "partial answer", FALSE, &error));
  g_assert_true (ts_history_rename (history, b, "Renamed ‘quotes’ \"too\"", &error));
  g_assert_no_error (error);

  /* Reopened, everything is there. */
  g_clear_pointer (&history, ts_history_close);
  history = ts_history_open (path, &error);
  g_assert_no_error (error);
  list = ts_history_list (history, &error);
  g_assert_cmpuint (list->len, ==, 2);
  for (guint i = 0; i < list->len; i++)
    {
      TsHistoryConversation *c = g_ptr_array_index (list, i);

      g_assert_cmpstr (c->title, ==, c->id == a ? "First" : "Renamed ‘quotes’ \"too\"");
    }
  messages = ts_history_messages (history, a, &error);
  g_assert_cmpuint (messages->len, ==, 2);
  g_assert_cmpstr (((TsHistoryMessage *) g_ptr_array_index (messages, 1))->content, ==,
                   "partial answer");
  g_assert_false (((TsHistoryMessage *) g_ptr_array_index (messages, 1))->complete);

  /* Truncating at the prompt removes it and its answers. */
  g_assert_true (ts_history_truncate (history, a, user, &error));
  g_clear_pointer (&messages, g_ptr_array_unref);
  messages = ts_history_messages (history, a, &error);
  g_assert_cmpuint (messages->len, ==, 0);

  /* Unknown ids are errors; deleting cascades. */
  g_assert_false (ts_history_rename (history, 9999, "x", &error));
  g_assert_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND);
  g_clear_error (&error);
  ts_history_add_message (history, b, TRUE, TS_HISTORY_PANE_BOTH, "q", TRUE, &error);
  g_assert_true (ts_history_delete (history, b, &error));
  g_clear_pointer (&messages, g_ptr_array_unref);
  messages = ts_history_messages (history, b, &error);
  g_assert_cmpuint (messages->len, ==, 0);
  g_clear_pointer (&history, ts_history_close);

  g_remove (path);
  {
    g_autofree char *wal = g_strconcat (path, "-wal", NULL);
    g_autofree char *shm = g_strconcat (path, "-shm", NULL);
    g_autofree char *sub = g_path_get_dirname (path);

    g_remove (wal);
    g_remove (shm);
    g_rmdir (sub);
  }
  g_rmdir (dir);
}

/* A reply keeps its note ("routed to: …"), and a database written before
 * messages had notes opens with every row kept and takes notes afterwards. */
static void
test_history_notes (void)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "history.sqlite", NULL);
  const char *old_schema =
    "CREATE TABLE conversations (id INTEGER PRIMARY KEY, title TEXT NOT NULL,"
    " created INTEGER NOT NULL, updated INTEGER NOT NULL);"
    "CREATE TABLE messages (id INTEGER PRIMARY KEY, conversation INTEGER NOT NULL"
    " REFERENCES conversations(id) ON DELETE CASCADE, is_user INTEGER NOT NULL,"
    " pane INTEGER NOT NULL, content TEXT NOT NULL, complete INTEGER NOT NULL);"
    "INSERT INTO conversations VALUES (1, 'Old', 0, 0);"
    "INSERT INTO messages VALUES (1, 1, 0, 0, 'old question', 1);"
    "INSERT INTO messages VALUES (2, 1, 0, 2, 'old answer', 1);";
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = NULL;
  g_autoptr (GPtrArray) messages = NULL;
  TsHistoryMessage *reply;
  sqlite3 *db = NULL;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_exec (db, old_schema, NULL, NULL, NULL), ==, SQLITE_OK);
  sqlite3_close (db);

  history = ts_history_open (path, &error);
  g_assert_no_error (error);
  messages = ts_history_messages (history, 1, &error);
  g_assert_cmpuint (messages->len, ==, 2);
  reply = g_ptr_array_index (messages, 1);
  g_assert_cmpstr (reply->content, ==, "old answer");
  g_assert_null (reply->note);
  g_assert_true (ts_history_set_note (history, 2, "routed to: tiny-pirate, 1.00 (keyword)",
                                      &error));
  g_assert_false (ts_history_set_note (history, 99, "x", &error));
  g_assert_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND);
  g_clear_error (&error);

  /* Reopened (already migrated), the note is there. */
  g_clear_pointer (&history, ts_history_close);
  history = ts_history_open (path, &error);
  g_assert_no_error (error);
  g_clear_pointer (&messages, g_ptr_array_unref);
  messages = ts_history_messages (history, 1, &error);
  reply = g_ptr_array_index (messages, 1);
  g_assert_cmpstr (reply->note, ==, "routed to: tiny-pirate, 1.00 (keyword)");
  g_assert_null (((TsHistoryMessage *) g_ptr_array_index (messages, 0))->note);
  g_clear_pointer (&history, ts_history_close);
  ts_test_remove_tree (dir);
}

/* A file that is not a database is reported, not crashed on. */
static void
test_history_corrupt (void)
{
  g_autofree char *dir = g_dir_make_tmp ("tensafe-history-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "history.sqlite", NULL);
  g_autoptr (GError) error = NULL;
  TsHistory *history;

  g_assert_true (g_file_set_contents (path, "this is not sqlite, not at all, no.........", -1, NULL));
  history = ts_history_open (path, &error);
  g_assert_null (history);
  g_assert_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_DATABASE);
  g_remove (path);
  g_rmdir (dir);
}

static void
test_no_display (void)
{
  g_test_skip ("no display: run the gui suite under xvfb-run");
}

int
main (int argc, char **argv)
{
  g_autoptr (TsApplication) app = NULL;

  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/chat-widgets/history-store", test_history_store);
  g_test_add_func ("/chat-widgets/history-corrupt", test_history_corrupt);
  g_test_add_func ("/chat-widgets/history-notes", test_history_notes);
  if (!gtk_init_check ())
    {
      g_test_add_func ("/chat-widgets/no-display", test_no_display);
      return g_test_run ();
    }
  adw_init ();
  /* Creating the application registers the resources the templates load from. */
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_test_add_func ("/chat-widgets/markdown-blocks", test_markdown_blocks);
  g_test_add_func ("/chat-widgets/markdown-streaming", test_markdown_streaming);
  g_test_add_func ("/chat-widgets/message-follows-turn", test_message_follows_turn);
  g_test_add_func ("/chat-widgets/pane-shows-conversation", test_pane_shows_conversation);
  g_test_add_func ("/chat-widgets/inline-markup", test_inline_markup);
  g_test_add_func ("/chat-widgets/chart-ring-and-medians", test_chart_ring_and_medians);
  g_test_add_func ("/chat-widgets/chart-csv", test_chart_csv);
  g_test_add_func ("/chat-widgets/chart-png", test_chart_png);
  g_test_add_func ("/chat-widgets/stage-colours-distinct", test_stage_colours_distinct);
  return g_test_run ();
}
