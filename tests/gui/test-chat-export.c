/* test-chat-export.c: the chat sidebar's conversation menu exports a
 * conversation answered on the demo model (Markdown and JSON, each reply's
 * tokens with the chart's timings), and its search entry filters the
 * conversations by what was said.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-history.h"
#include "ts-test-util.h"

#define PROMPT "Tell me about encrypted adapters."
#define OTHER_PROMPT "Write a haiku on bank statements."
#define N_TOKENS 12

static TsChatPage *
start_app (TsApplication *app)
{
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), 30);

  g_object_set (page, "max-tokens", N_TOKENS, "temperature", 0.0, NULL);
  return page;
}

/* Sends @prompt through the page's own action; waits for both replies. */
static void
send_prompt (TsChatPage *page, const char *prompt)
{
  ts_chat_page_set_prompt (page, prompt);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  gui_wait_until (gui_chat_idle, page, 30, "both panes to finish");
  g_assert_null (ts_chat_page_get_last_error (page));
}

/* The sidebar row of @id (the one selected) offers Export… for it in its menu. */
static void
check_export_menu_item (TsChatPage *page, gint64 id)
{
  GtkListBox *list = GTK_LIST_BOX (gui_find_descendant (GTK_WIDGET (page), GTK_TYPE_LIST_BOX));
  GtkListBoxRow *row = gtk_list_box_get_selected_row (list);
  GMenuModel *menu;
  gboolean found = FALSE;

  g_assert_nonnull (row);
  menu = gtk_menu_button_get_menu_model (GTK_MENU_BUTTON (gui_find_descendant (GTK_WIDGET (row),
                                                                               GTK_TYPE_MENU_BUTTON)));
  for (int i = 0; i < g_menu_model_get_n_items (menu); i++)
    {
      g_autofree char *action = NULL;
      g_autoptr (GVariant) target = NULL;

      g_menu_model_get_item_attribute (menu, i, G_MENU_ATTRIBUTE_ACTION, "s", &action);
      target = g_menu_model_get_item_attribute_value (menu, i, G_MENU_ATTRIBUTE_TARGET,
                                                      G_VARIANT_TYPE_INT64);
      if (g_strcmp0 (action, "chat.export-conversation") == 0)
        found = target != NULL && g_variant_get_int64 (target) == id;
    }
  g_assert_true (found);
}

static char *
read_file (const char *path)
{
  g_autoptr (GError) error = NULL;
  char *text = NULL;

  g_assert_true (g_file_get_contents (path, &text, NULL, &error));
  g_assert_no_error (error);
  return text;
}

/* Each reply in the JSON file: the pane's text, one token per chart bar
 * with the bar's text and milliseconds. */
static void
check_json_reply (JsonObject *m, TsChatPane *pane, const char *pane_name)
{
  TsLatencyChart *chart = ts_chat_pane_get_chart (pane);
  JsonObject *stats = json_object_get_object_member (m, "stats");
  JsonArray *tokens = json_object_get_array_member (stats, "tokens");

  g_assert_cmpstr (json_object_get_string_member (m, "role"), ==, "assistant");
  g_assert_cmpstr (json_object_get_string_member (m, "pane"), ==, pane_name);
  g_assert_cmpstr (json_object_get_string_member (m, "content"), ==, ts_chat_pane_get_reply (pane));
  g_assert_true (json_object_get_boolean_member (m, "complete"));
  g_assert_cmpint (json_object_get_int_member (stats, "n_tokens"), ==, ts_chat_pane_get_n_tokens (pane));
  g_assert_cmpuint (json_array_get_length (tokens), ==, ts_chat_pane_get_n_tokens (pane));
  g_assert_cmpuint (json_array_get_length (tokens), ==, ts_latency_chart_get_n_bars (chart));
  for (guint i = 0; i < json_array_get_length (tokens); i++)
    {
      JsonObject *t = json_array_get_object_element (tokens, i);
      const TsTokenTimings *bar = ts_latency_chart_get_bar (chart, i);

      g_assert_cmpstr (json_object_get_string_member (t, "text"), ==,
                       ts_latency_chart_get_bar_text (chart, i));
      g_assert_cmpfloat (json_object_get_double_member (t, "forward_ms"), ==, bar->ms[TS_STAGE_FORWARD]);
      g_assert_cmpfloat (json_object_get_double_member (t, "encrypt_ms"), ==, bar->ms[TS_STAGE_ENCRYPT]);
      g_assert_cmpfloat (json_object_get_double_member (t, "evaluate_ms"), ==, bar->ms[TS_STAGE_EVALUATE]);
    }
}

static void
test_export (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-export-XXXXXX", NULL);
  g_autofree char *md_path = g_build_filename (dir, "chat.md", NULL);
  g_autofree char *json_path = g_build_filename (dir, "chat.JSON", NULL);
  g_autofree char *bad_path = g_build_filename (dir, "missing", "chat.md", NULL);
  g_autofree char *md = NULL;
  g_autofree char *json = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  JsonArray *messages;
  const char *at;
  gint64 id;

  send_prompt (page, PROMPT);
  id = ts_chat_page_get_conversation (page);
  g_assert_cmpint (id, >, 0);
  check_export_menu_item (page, id);

  g_assert_true (ts_chat_page_export_conversation (page, id, md_path, &error));
  g_assert_no_error (error);
  md = read_file (md_path);
  g_test_message ("%s", md);
  g_assert_true (g_str_has_prefix (md, "# " PROMPT "\n"));
  g_assert_nonnull (at = strstr (md, "\n" PROMPT "\n"));
  g_assert_nonnull (at = strstr (at, "### Plaintext LoRA\n"));
  g_assert_nonnull (at = strstr (at, ts_chat_pane_get_reply (plain)));
  g_assert_nonnull (at = strstr (at, "### HE-LoRA\n"));
  g_assert_nonnull (at = strstr (at, ts_chat_pane_get_reply (he)));
  g_assert_null (strstr (md, "(stopped)"));

  /* The extension picks JSON, whatever its case. */
  g_assert_true (ts_chat_page_export_conversation (page, id, json_path, &error));
  g_assert_no_error (error);
  json = read_file (json_path);
  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (json_object_get_string_member (json_node_get_object (json_parser_get_root (parser)),
                                                  "format"), ==, "tensafe-conversation");
  messages = json_object_get_array_member (json_node_get_object (json_parser_get_root (parser)),
                                           "messages");
  g_assert_cmpuint (json_array_get_length (messages), ==, 3);
  g_assert_cmpstr (json_object_get_string_member (json_array_get_object_element (messages, 0), "content"),
                   ==, PROMPT);
  check_json_reply (json_array_get_object_element (messages, 1), plain, "plaintext");
  check_json_reply (json_array_get_object_element (messages, 2), he, "he");

  /* A folder that is not there: an error, and no file. */
  g_assert_false (ts_chat_page_export_conversation (page, id, bad_path, &error));
  g_assert_nonnull (error);
  g_assert_false (g_file_test (bad_path, G_FILE_TEST_EXISTS));
  g_clear_error (&error);
  g_assert_false (ts_chat_page_export_conversation (page, id + 1000, md_path, &error));
  g_assert_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND);

  gui_quit_app (G_APPLICATION (app), 30);
  ts_test_remove_tree (dir);
}

/* Every stored text but @conversation's (titles and messages), case folded. */
static char *
other_texts (gint64 conversation)
{
  g_autofree char *path = ts_history_default_path ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  g_autoptr (GPtrArray) list = ts_history_list (history, &error);
  g_autoptr (GString) all = g_string_new (NULL);

  g_assert_no_error (error);
  for (guint i = 0; i < list->len; i++)
    {
      TsHistoryConversation *c = g_ptr_array_index (list, i);
      g_autoptr (GPtrArray) messages = NULL;

      if (c->id == conversation)
        continue;
      g_string_append_printf (all, "%s\n", c->title);
      messages = ts_history_messages (history, c->id, &error);
      g_assert_no_error (error);
      for (guint k = 0; k < messages->len; k++)
        g_string_append_printf (all, "%s\n", ((TsHistoryMessage *) g_ptr_array_index (messages, k))->content);
    }
  return g_utf8_casefold (all->str, -1);
}

/* A word of @reply (ASCII letters, 3 or more) that no other conversation
 * has, or NULL. */
static char *
word_only_in (const char *reply, gint64 conversation)
{
  g_autofree char *others = other_texts (conversation);
  g_auto (GStrv) words = g_regex_split_simple ("[^A-Za-z]+", reply, 0, 0);

  for (guint i = 0; words[i] != NULL; i++)
    {
      g_autofree char *folded = g_utf8_casefold (words[i], -1);

      if (strlen (words[i]) >= 3 && strstr (others, folded) == NULL)
        return g_strdup (words[i]);
    }
  return NULL;
}

typedef struct {
  TsChatPage *page;
  guint n;
} RowCount;

static gboolean
has_n_rows (gpointer data)
{
  RowCount *count = data;

  return ts_chat_page_get_n_conversations (count->page) == count->n;
}

static void
search_for (TsChatPage *page, GtkEditable *entry, const char *query, guint n)
{
  RowCount count = { page, n };

  gtk_editable_set_text (entry, query);
  gui_wait_until (has_n_rows, &count, 30, "the sidebar to show the search's conversations");
}

static gboolean
is_placeholder_label (GtkWidget *widget, gconstpointer unused)
{
  return GTK_IS_LABEL (widget)
         && g_strcmp0 (gtk_label_get_label (GTK_LABEL (widget)), "No conversations match") == 0;
}

static void
test_search (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  GtkEditable *entry = GTK_EDITABLE (gui_find_descendant (GTK_WIDGET (page), GTK_TYPE_SEARCH_ENTRY));
  GtkListBox *list;
  GtkWidget *placeholder;
  g_autofree char *word = NULL;
  g_autofree char *upper = NULL;
  gint64 first, second;
  guint n_all;

  g_assert_nonnull (entry);
  /* Two conversations; the second one's reply has a word of its own. */
  send_prompt (page, PROMPT);
  first = ts_chat_page_get_conversation (page);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL));
  send_prompt (page, OTHER_PROMPT);
  second = ts_chat_page_get_conversation (page);
  g_assert_cmpint (second, !=, first);
  word = word_only_in (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, TRUE)), second);
  g_test_message ("searching for “%s”", word);
  g_assert_nonnull (word);
  n_all = ts_chat_page_get_n_conversations (page);
  g_assert_cmpuint (n_all, >=, 2);

  /* A word of one reply only, in capitals: that conversation alone. */
  upper = g_utf8_strup (word, -1);
  search_for (page, entry, upper, 1);
  list = GTK_LIST_BOX (gui_find_descendant (GTK_WIDGET (page), GTK_TYPE_LIST_BOX));
  g_assert_true (gtk_list_box_row_is_selected (gtk_list_box_get_row_at_index (list, 0)));
  g_assert_cmpint (second, ==, ts_chat_page_get_conversation (page));
  placeholder = gui_find_widget (GTK_WIDGET (list), is_placeholder_label, NULL);
  g_assert_nonnull (placeholder);

  /* Nothing matches: the placeholder says so. */
  search_for (page, entry, "qqzzxxyy", 0);
  g_assert_true (gtk_widget_get_visible (placeholder));
  g_assert_true (gtk_widget_get_child_visible (placeholder));

  /* Cleared: every conversation again, and no placeholder. */
  search_for (page, entry, "", n_all);
  g_assert_false (gtk_widget_get_visible (placeholder));
  gui_quit_app (G_APPLICATION (app), 30);
}

/* Ctrl+F in the sidebar puts the focus in its search entry. */
static void
test_find_shortcut (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  GtkWidget *entry = gui_find_descendant (GTK_WIDGET (page), GTK_TYPE_SEARCH_ENTRY);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.find-conversation", NULL));
  g_assert_true (gtk_widget_is_focus (entry) || gtk_widget_has_focus (entry)
                 || gtk_widget_get_focus_child (entry) != NULL);
  gui_quit_app (G_APPLICATION (app), 30);
}

int
main (int argc, char **argv)
{
  GuiTestProgram program;

  if (gui_test_program_init (&program, &argc, &argv, "chat-export"))
    {
      g_test_add_func ("/chat-export/export", test_export);
      g_test_add_func ("/chat-export/search", test_search);
      g_test_add_func ("/chat-export/find-shortcut", test_find_shortcut);
    }
  return gui_test_program_run (&program, "/chat-export/no-display");
}
