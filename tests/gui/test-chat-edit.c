/* test-chat-edit.c: editing an earlier prompt on the demo model: each
 * prompt's Edit button (off while a reply streams) puts it in the prompt;
 * Cancel puts back the draft; Send removes that exchange and every later
 * one from both panes and history.sqlite and both panes answer the edited
 * prompt as if the conversation began with it.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <sqlite3.h>
#include <string.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-message.h"
#include "ts-chat-page.h"
#include "ts-history.h"

#define N_TOKENS 6
#define EDITED "What is a ciphertext?"

static void
send_prompt (TsChatPage *page, const char *prompt)
{
  ts_chat_page_set_prompt (page, prompt);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  gui_wait_until (gui_chat_idle, page, 60, "both panes to finish");
  g_assert_null (ts_chat_page_get_last_error (page));
}

static gboolean
is_edit_button (GtkWidget *widget, gconstpointer unused)
{
  return GTK_IS_BUTTON (widget) && gtk_widget_has_css_class (widget, "ts-edit-prompt");
}

/* The Edit button of @pane's @index-th prompt. */
static GtkWidget *
edit_button (TsChatPane *pane, guint index)
{
  guint n = 0;

  for (GtkWidget *w = gui_find_descendant (GTK_WIDGET (pane), TS_TYPE_CHAT_MESSAGE);
       w != NULL; w = gtk_widget_get_next_sibling (w))
    if (ts_chat_message_get_is_user (TS_CHAT_MESSAGE (w)) && n++ == index)
      {
        GtkWidget *button = gui_find_widget (w, is_edit_button, NULL);

        g_assert_nonnull (button);
        return button;
      }
  g_assert_not_reached ();
}

/* Rows of history.sqlite: all messages, and those with statistics. */
static void
count_rows (int *messages, int *with_stats)
{
  g_autofree char *path = ts_history_default_path ();
  sqlite3 *db = NULL;
  sqlite3_stmt *stmt = NULL;

  g_assert_cmpint (sqlite3_open (path, &db), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_prepare_v2 (db, "SELECT count(*), count(stats) FROM messages", -1,
                                       &stmt, NULL), ==, SQLITE_OK);
  g_assert_cmpint (sqlite3_step (stmt), ==, SQLITE_ROW);
  *messages = sqlite3_column_int (stmt, 0);
  *with_stats = sqlite3_column_int (stmt, 1);
  sqlite3_finalize (stmt);
  sqlite3_close (db);
}

static GPtrArray *
stored_messages (gint64 conversation)
{
  g_autofree char *path = ts_history_default_path ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  GPtrArray *messages = ts_history_messages (history, conversation, &error);

  g_assert_no_error (error);
  return messages;
}

static gboolean
page_busy (gpointer page)
{
  return ts_chat_page_get_busy (TS_CHAT_PAGE (page));
}

static void
test_edit_first_of_three (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), 30);
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);
  g_autoptr (GPtrArray) messages = NULL;
  g_autofree char *plain_reply = NULL;
  g_autofree char *he_reply = NULL;
  gint64 conversation;
  int n_rows, n_stats;

  g_object_set (page, "max-tokens", N_TOKENS, "temperature", 0.0, NULL);
  send_prompt (page, "Name a colour.");
  send_prompt (page, "Name a fruit.");
  conversation = ts_chat_page_get_conversation (page);
  /* While the third answer streams, no prompt can be edited. */
  ts_chat_page_set_prompt (page, "Name a city.");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  gui_wait_until (page_busy, page, 10, "the third answer to start");
  g_assert_false (gtk_widget_is_sensitive (edit_button (plain, 0)));
  g_assert_false (gtk_widget_is_sensitive (edit_button (he, 1)));
  gtk_widget_activate_action (GTK_WIDGET (page), "chat.edit-prompt", "u", 0);
  g_assert_cmpint (ts_chat_page_get_editing (page), ==, -1);
  gui_wait_until (gui_chat_idle, page, 60, "the third answer");
  g_assert_cmpuint (ts_chat_pane_get_n_prompts (plain), ==, 3);
  count_rows (&n_rows, &n_stats);
  g_assert_cmpint (n_rows, ==, 9);
  g_assert_cmpint (n_stats, ==, 6);

  /* Edit, then Cancel: the draft comes back, nothing else changes. */
  ts_chat_page_set_prompt (page, "a draft");
  g_assert_true (gtk_widget_is_sensitive (edit_button (plain, 0)));
  g_signal_emit_by_name (edit_button (plain, 0), "clicked");
  g_assert_cmpint (ts_chat_page_get_editing (page), ==, 0);
  g_assert_cmpstr (ts_chat_page_get_prompt (page), ==, "Name a colour.");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.cancel-edit", NULL));
  g_assert_cmpint (ts_chat_page_get_editing (page), ==, -1);
  g_assert_cmpstr (ts_chat_page_get_prompt (page), ==, "a draft");
  g_assert_cmpuint (ts_chat_pane_get_n_prompts (he), ==, 3);

  /* Edit the first prompt (from the HE pane's button) and send it. */
  g_signal_emit_by_name (edit_button (he, 0), "clicked");
  g_assert_cmpint (ts_chat_page_get_editing (page), ==, 0);
  gui_save_screenshot (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))), "chat-edit.png");
  send_prompt (page, EDITED);
  g_assert_cmpint (ts_chat_page_get_editing (page), ==, -1);
  g_assert_cmpint (ts_chat_page_get_conversation (page), ==, conversation);
  for (int side = 0; side <= 1; side++)
    {
      TsChatPane *pane = side ? he : plain;

      g_assert_cmpuint (ts_chat_pane_get_n_prompts (pane), ==, 1);
      g_assert_cmpstr (ts_chat_pane_get_prompt (pane, 0), ==, EDITED);
      g_assert_cmpuint (ts_chat_pane_get_n_tokens (pane), >, 0);
      g_assert_cmpstr (ts_chat_pane_get_reply (pane), !=, "");
    }
  messages = stored_messages (conversation);
  g_assert_cmpuint (messages->len, ==, 3);
  g_assert_cmpstr (((TsHistoryMessage *) g_ptr_array_index (messages, 0))->content, ==, EDITED);
  g_assert_cmpstr (((TsHistoryMessage *) g_ptr_array_index (messages, 1))->content, ==,
                   ts_chat_pane_get_reply (plain));
  g_assert_cmpstr (((TsHistoryMessage *) g_ptr_array_index (messages, 2))->content, ==,
                   ts_chat_pane_get_reply (he));
  count_rows (&n_rows, &n_stats);
  g_assert_cmpint (n_rows, ==, 3);
  g_assert_cmpint (n_stats, ==, 2);

  /* The answers are those of a conversation that begins with the edited prompt. */
  plain_reply = g_strdup (ts_chat_pane_get_reply (plain));
  he_reply = g_strdup (ts_chat_pane_get_reply (he));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL));
  send_prompt (page, EDITED);
  g_assert_cmpstr (ts_chat_pane_get_reply (plain), ==, plain_reply);
  g_assert_cmpstr (ts_chat_pane_get_reply (he), ==, he_reply);

  /* Reopened, the edited conversation shows its one exchange. */
  g_assert_true (ts_chat_page_load_conversation (page, conversation, NULL));
  g_assert_cmpuint (ts_chat_pane_get_n_prompts (plain), ==, 1);
  g_assert_cmpuint (ts_chat_pane_get_n_prompts (he), ==, 1);
  g_assert_cmpstr (ts_chat_pane_get_reply (he), ==, he_reply);
  gui_quit_app (G_APPLICATION (app), 30);
}

int
main (int argc, char **argv)
{
  GuiTestProgram program;

  if (gui_test_program_init (&program, &argc, &argv, "chat-edit"))
    g_test_add_func ("/chat-edit/edit-first-of-three", test_edit_first_of_three);
  return gui_test_program_run (&program, "/chat-edit/no-display");
}
