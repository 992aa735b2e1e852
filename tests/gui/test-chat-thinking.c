/* test-chat-thinking.c: a reply's thinking in the chat: streamed into a
 * "Thinking" block above the answer that closes once the answer starts,
 * never part of the answer or of the turns the model gets back, kept in
 * the history; the switch that turns it on, insensitive for a model that
 * does not think.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <string.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-message.h"
#include "ts-chat-page.h"
#include "ts-history.h"
#include "ts-test-util.h"
#include "ts-thinking-block.h"

#define THOUGHT_1 "The user asks for 2 + 2. "
#define THOUGHT_2 "Adding: four.\n"
#define ANSWER "It is **4**."

static gboolean
is_type (GtkWidget *widget, gconstpointer type)
{
  return G_TYPE_CHECK_INSTANCE_TYPE (widget, GPOINTER_TO_SIZE (type));
}

/* Whether a label outside the thinking block, in @widget's tree, shows @text. */
static gboolean
label_outside_thinking_shows (GtkWidget *widget, const char *text)
{
  if (TS_IS_THINKING_BLOCK (widget))
    return FALSE;
  if (GTK_IS_LABEL (widget) && strstr (gtk_label_get_text (GTK_LABEL (widget)), text) != NULL)
    return TRUE;
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    if (label_outside_thinking_shows (c, text))
      return TRUE;
  return FALSE;
}

/* The text the expander's own label (inside the block) shows. */
static const char *
shown_thinking (TsThinkingBlock *block)
{
  GtkExpander *expander = GTK_EXPANDER (gui_find_descendant (GTK_WIDGET (block),
                                                             GTK_TYPE_EXPANDER));

  return gtk_label_get_text (GTK_LABEL (gtk_expander_get_child (expander)));
}

/* Streamed as a pane streams it: the block opens with "Thinking…" and
 * the text so far, the answer starts and the block closes, titled with
 * the thinking's length; the answer never holds the thinking. */
static void
test_streaming (void)
{
  GtkWidget *message = g_object_ref_sink (ts_chat_message_new (FALSE, ""));
  TsChatMessage *m = TS_CHAT_MESSAGE (message);
  TsThinkingBlock *block;
  GtkExpander *expander;

  g_assert_null (ts_chat_message_get_thinking_block (m));
  ts_chat_message_append_thinking (m, THOUGHT_1, 7);
  block = ts_chat_message_get_thinking_block (m);
  g_assert_nonnull (block);
  g_assert_true (ts_thinking_block_get_expanded (block));
  g_assert_cmpstr (ts_thinking_block_get_title (block), ==, "Thinking…");
  ts_chat_message_append_thinking (m, THOUGHT_2, 12);
  g_assert_cmpstr (shown_thinking (block), ==, THOUGHT_1 THOUGHT_2);
  g_assert_cmpstr (ts_chat_message_get_thinking (m), ==, THOUGHT_1 THOUGHT_2);
  g_assert_cmpstr (ts_chat_message_get_text (m), ==, "");
  g_assert_true (ts_thinking_block_get_expanded (block));

  ts_chat_message_append (m, "It is ");
  ts_chat_message_append (m, "**4**.");
  g_assert_false (ts_thinking_block_get_expanded (block));
  g_assert_cmpstr (ts_thinking_block_get_title (block), ==, "Thought for 12 tokens");
  g_assert_cmpstr (ts_chat_message_get_text (m), ==, ANSWER);
  g_assert_cmpstr (shown_thinking (block), ==, THOUGHT_1 THOUGHT_2);
  g_assert_true (label_outside_thinking_shows (message, "It is 4."));
  g_assert_false (label_outside_thinking_shows (message, "Adding"));
  g_assert_false (label_outside_thinking_shows (message, "The user asks"));
  /* The reader opens it; more answer and the reply's end leave it open. */
  expander = GTK_EXPANDER (gui_find_descendant (GTK_WIDGET (block), GTK_TYPE_EXPANDER));
  gtk_expander_set_expanded (expander, TRUE);
  ts_chat_message_append (m, " Done.");
  ts_chat_message_end_thinking (m);
  g_assert_true (ts_thinking_block_get_expanded (block));
  g_object_unref (message);
}

/* A reply without thinking has no block; one cut off while thinking keeps
 * it open (there is nothing else to read); one read back from history
 * shows it closed. */
static void
test_other_replies (void)
{
  GtkWidget *plain = g_object_ref_sink (ts_chat_message_new (FALSE, ANSWER));
  GtkWidget *cut = g_object_ref_sink (ts_chat_message_new (FALSE, ""));
  GtkWidget *stored = g_object_ref_sink (ts_chat_message_new (FALSE, ANSWER));
  GtkWidget *hidden;
  TsThinkingBlock *block;

  g_assert_null (ts_chat_message_get_thinking_block (TS_CHAT_MESSAGE (plain)));
  hidden = gui_find_widget (plain, is_type, GSIZE_TO_POINTER (TS_TYPE_THINKING_BLOCK));
  g_assert_true (hidden == NULL || !gtk_widget_get_visible (hidden));
  g_assert_cmpstr (ts_chat_message_get_thinking (TS_CHAT_MESSAGE (plain)), ==, "");

  ts_chat_message_append_thinking (TS_CHAT_MESSAGE (cut), THOUGHT_1, 5);
  ts_chat_message_end_thinking (TS_CHAT_MESSAGE (cut));
  block = ts_chat_message_get_thinking_block (TS_CHAT_MESSAGE (cut));
  g_assert_true (ts_thinking_block_get_expanded (block));
  g_assert_cmpstr (ts_thinking_block_get_title (block), ==, "Thought for 5 tokens");

  ts_chat_message_set_thinking (TS_CHAT_MESSAGE (stored), THOUGHT_2);
  block = ts_chat_message_get_thinking_block (TS_CHAT_MESSAGE (stored));
  g_assert_nonnull (block);
  g_assert_false (ts_thinking_block_get_expanded (block));
  g_assert_cmpstr (shown_thinking (block), ==, THOUGHT_2);
  ts_chat_message_set_thinking (TS_CHAT_MESSAGE (stored), NULL);
  g_assert_null (ts_chat_message_get_thinking_block (TS_CHAT_MESSAGE (stored)));
  g_object_unref (plain);
  g_object_unref (cut);
  g_object_unref (stored);
}

/* A long thinking wraps: the reply asks for no more width than without it. */
static void
test_wraps (void)
{
  GtkWidget *message = g_object_ref_sink (ts_chat_message_new (FALSE, "Short."));
  g_autofree char *word = g_strnfill (3000, 'x');
  int before = 0, after = 0;

  gtk_widget_measure (message, GTK_ORIENTATION_HORIZONTAL, -1, &before, NULL, NULL, NULL);
  ts_chat_message_append_thinking (TS_CHAT_MESSAGE (message), word, 1);
  ts_chat_message_append_thinking (TS_CHAT_MESSAGE (message), " and a long sentence of many "
                                   "words that goes on and on and on", 2);
  gtk_widget_measure (message, GTK_ORIENTATION_HORIZONTAL, -1, &after, NULL, NULL, NULL);
  g_test_message ("minimum width %d px without thinking, %d with", before, after);
  g_assert_cmpint (after, <=, MAX (before, 200));
  g_object_unref (message);
}

/* The last reply in @pane (the one the pane shows last). */
static gboolean
record_reply (GtkWidget *widget, gconstpointer data)
{
  if (TS_IS_CHAT_MESSAGE (widget) && !ts_chat_message_get_is_user (TS_CHAT_MESSAGE (widget)))
    *(TsChatMessage **) data = TS_CHAT_MESSAGE (widget);
  return FALSE;
}

static TsChatMessage *
last_reply (TsChatPane *pane)
{
  TsChatMessage *last = NULL;

  gui_find_widget (GTK_WIDGET (pane), record_reply, &last);
  g_assert_nonnull (last);
  return last;
}

/* Prompts after which the demo model with its adapter, greedy, closes its
 * thinking early (tried "Tell me about adapter N." for N up to 1500):
 * several, so that a near-tie decided otherwise on another CPU still
 * leaves one. */
static const char *const closing_prompts[] = {
  "Tell me about adapter 1201.",
  "Tell me about adapter 1384.",
  "Tell me about adapter 1135.",
};

static GtkSwitch *
thinking_switch (TsChatPage *page)
{
  GtkWidget *found = gui_find_descendant (GTK_WIDGET (page), GTK_TYPE_SWITCH);

  g_assert_nonnull (found);
  return GTK_SWITCH (found);
}

#define THINK_CLOSE 1023     /* </think> in the demo model's vocabulary */

static void
record_token_cb (TsChatPane *pane, guint index, int token_id, GArray *ids)
{
  g_array_append_val (ids, token_id);
}

/* The title a reply of @ids has: the thinking is every token up to </think>. */
static char *
thought_title (GArray *ids)
{
  guint n = 0;

  while (n < ids->len && g_array_index (ids, int, n) != THINK_CLOSE)
    n++;
  g_assert_cmpuint (n, <, ids->len);
  return g_strdup_printf ("Thought for %u tokens", n + 1);
}

/* One pane's reply with thinking: a closed block with the thinking above
 * an answer that does not hold it, titled with its length in @ids; the
 * turns the model gets back have the answer alone. */
static void
check_pane_reply (TsChatPane *pane, GArray *ids)
{
  g_autofree char *title = thought_title (ids);
  TsChatMessage *reply = last_reply (pane);
  TsThinkingBlock *block = ts_chat_message_get_thinking_block (reply);
  const char *thinking = ts_chat_pane_get_reply_thinking (pane);
  g_autoptr (GPtrArray) turns = ts_chat_pane_get_turns (pane);

  g_assert_nonnull (block);
  g_assert_cmpuint (strlen (thinking), >, 0);
  g_assert_cmpstr (shown_thinking (block), ==, thinking);
  g_assert_false (ts_thinking_block_get_expanded (block));
  g_assert_cmpstr (ts_thinking_block_get_title (block), ==, title);
  g_assert_null (strstr (ts_chat_pane_get_reply (pane), thinking));
  for (guint i = 0; i < turns->len; i++)
    g_assert_null (strstr (g_ptr_array_index (turns, i), thinking));
}

/* Through the page on the demo model: the switch turns thinking on, both
 * panes think the same and answer apart from it, and the conversation
 * opened again shows the same thinking. */
static void
test_page (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), 30);
  TsSettings *settings = ts_application_get_settings (app);
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);
  g_autofree char *plain_thinking = NULL, *he_thinking = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) plain_ids = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr (GArray) he_ids = g_array_new (FALSE, FALSE, sizeof (int));
  gint64 conversation;
  guint k;

  g_object_set (page, "max-tokens", 40, "temperature", 0.0, NULL);
  g_assert_false (ts_settings_get_chat_thinking (settings));
  g_assert_true (gtk_widget_get_sensitive (GTK_WIDGET (thinking_switch (page))));
  gtk_switch_set_active (thinking_switch (page), TRUE);
  g_assert_true (ts_settings_get_chat_thinking (settings));
  g_signal_connect (plain, "token", G_CALLBACK (record_token_cb), plain_ids);
  g_signal_connect (he, "token", G_CALLBACK (record_token_cb), he_ids);
  for (k = 0; k < G_N_ELEMENTS (closing_prompts); k++)
    {
      gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL);
      g_array_set_size (plain_ids, 0);
      g_array_set_size (he_ids, 0);
      ts_chat_page_set_prompt (page, closing_prompts[k]);
      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
      gui_wait_until (gui_chat_idle, page, 60, "both panes to finish");
      g_assert_null (ts_chat_page_get_last_error (page));
      g_assert_cmpuint (strlen (ts_chat_pane_get_reply_thinking (plain)), >, 0);
      if (*ts_chat_pane_get_reply (plain) != '\0')
        break;
    }
  g_test_message ("answered after thinking on prompt %u", k);
  g_assert_cmpuint (k, <, G_N_ELEMENTS (closing_prompts));
  check_pane_reply (plain, plain_ids);
  check_pane_reply (he, he_ids);
  g_assert_cmpstr (ts_chat_pane_get_reply_thinking (he), ==, ts_chat_pane_get_reply_thinking (plain));
  gui_save_screenshot (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))), "chat-thinking.png");
  plain_thinking = g_strdup (ts_chat_pane_get_reply_thinking (plain));
  he_thinking = g_strdup (ts_chat_pane_get_reply_thinking (he));
  conversation = ts_chat_page_get_conversation (page);
  gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL);
  g_assert_null (ts_chat_pane_get_reply (plain));
  g_assert_true (ts_chat_page_load_conversation (page, conversation, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (ts_chat_pane_get_reply_thinking (plain), ==, plain_thinking);
  g_assert_cmpstr (ts_chat_pane_get_reply_thinking (he), ==, he_thinking);
  g_assert_false (ts_thinking_block_get_expanded (ts_chat_message_get_thinking_block (last_reply (plain))));
  gtk_switch_set_active (thinking_switch (page), FALSE);
  g_assert_false (ts_settings_get_chat_thinking (settings));
  g_signal_handlers_disconnect_by_data (plain, plain_ids);
  g_signal_handlers_disconnect_by_data (he, he_ids);
  gui_quit_app (G_APPLICATION (app), 10);
}

static gboolean
model_is (gpointer data)
{
  TsChatPage *page = data;
  const char *label = gtk_menu_button_get_label (ts_chat_page_get_picker (page, FALSE));

  return gui_chat_ready (page) && label != NULL
         && strstr (label, g_object_get_data (G_OBJECT (page), "wanted-model")) != NULL;
}

/* A model without the think tags (the demo model's copy with them
 * renamed, as Qwen2.5's vocabulary) makes the switch insensitive, with a
 * tooltip saying why; the demo model again makes it sensitive. */
static void
test_switch_for_model_that_cannot_think (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), 30);
  g_autofree char *demo = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
  g_autofree char *dir = g_dir_make_tmp ("tensafe-thinking-XXXXXX", NULL);
  g_autofree char *copy = g_build_filename (dir, "no-think.gguf", NULL);
  GtkSwitch *sw = thinking_switch (page);

  g_assert_true (gtk_widget_get_sensitive (GTK_WIDGET (sw)));
  ts_test_copy_model_without_think (demo, copy);
  g_object_set_data (G_OBJECT (page), "wanted-model", (gpointer) "no-think");
  ts_chat_page_load_model (page, copy, NULL);
  gui_wait_until (model_is, page, 30, "the model without thinking to load");
  g_assert_false (gtk_widget_get_sensitive (GTK_WIDGET (sw)));
  g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (GTK_WIDGET (sw)), "does not think"));
  g_object_set_data (G_OBJECT (page), "wanted-model", (gpointer) "Demo Model");
  ts_chat_page_load_model (page, demo, NULL);
  gui_wait_until (model_is, page, 30, "the demo model to load again");
  g_assert_true (gtk_widget_get_sensitive (GTK_WIDGET (sw)));
  gui_quit_app (G_APPLICATION (app), 10);
  ts_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  GuiTestProgram program;

  if (gui_test_program_init (&program, &argc, &argv, "chat-thinking"))
    {
      g_test_add_func ("/chat-thinking/streaming", test_streaming);
      g_test_add_func ("/chat-thinking/other-replies", test_other_replies);
      g_test_add_func ("/chat-thinking/wraps", test_wraps);
      g_test_add_func ("/chat-thinking/page", test_page);
      g_test_add_func ("/chat-thinking/switch-for-model-that-cannot-think",
                       test_switch_for_model_that_cannot_think);
    }
  return gui_test_program_run (&program, "/chat-thinking/no-display");
}
