/* test-chat-settings.c: a conversation's own system prompt and sampling on
 * the demo model: set in the Conversation Settings dialog, kept with the
 * conversation (switching away and back, and in a new application, brings
 * them back; a new conversation starts from the defaults), one seed drawing
 * the same tokens in both panes, the dialog's presets, checks and defaults,
 * and its size on a laptop screen.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <glib/gi18n.h>
#include <string.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-conversation-settings-dialog-private.h"
#include "ts-history.h"

#define N_TOKENS 8

static TsChatPage *
start_app (TsApplication *app)
{
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), 30);

  g_object_set (page, "max-tokens", N_TOKENS, NULL);
  return page;
}

static void
send_prompt (TsChatPage *page, const char *prompt)
{
  ts_chat_page_set_prompt (page, prompt);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  gui_wait_until (gui_chat_idle, page, 60, "both panes to finish");
  g_assert_null (ts_chat_page_get_last_error (page));
}

/* Opens the dialog as the header's menu does. */
static TsConversationSettingsDialog *
open_dialog (TsChatPage *page)
{
  GtkWidget *dialog;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.conversation-settings", NULL));
  dialog = ts_chat_page_get_settings_dialog (page);
  g_assert_nonnull (dialog);
  g_assert_true (gtk_widget_get_visible (dialog));
  return TS_CONVERSATION_SETTINGS_DIALOG (dialog);
}

static char *
dialog_system_text (TsConversationSettingsDialog *dialog)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (dialog->system_view);
  GtkTextIter start, end;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  return gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
}

static guint
preset_index (const char *id)
{
  guint n;
  const TsSystemPromptPreset *presets = ts_system_prompt_presets (&n);

  for (guint i = 0; i < n; i++)
    if (g_str_equal (presets[i].id, id))
      return i;
  g_assert_not_reached ();
}

static gboolean
dialog_gone (gpointer page)
{
  return ts_chat_page_get_settings_dialog (TS_CHAT_PAGE (page)) == NULL;
}

static void
save_dialog (TsChatPage *page, TsConversationSettingsDialog *dialog)
{
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "settings.save", NULL));
  gui_wait_until (dialog_gone, page, 10, "the dialog to close");
}

static gint64
stored_row (TsChatPage *page, gint64 id)
{
  g_autoptr (GError) error = NULL;

  g_assert_true (ts_chat_page_load_conversation (page, id, &error));
  g_assert_no_error (error);
  return id;
}

/* What history.sqlite keeps with @id (NULL: the defaults). */
static TsConversationSettings *
stored_settings (gint64 id)
{
  g_autofree char *path = ts_history_default_path ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  TsConversationSettings *settings = NULL;

  g_assert_no_error (error);
  g_assert_true (ts_history_get_settings (history, id, &settings, &error));
  g_assert_no_error (error);
  return settings;
}

static gint64 concise_conversation;   /* made by /restored, reopened by /reopened */

/* The Concise preset at temperature 0.7 in one conversation; the next one
 * starts from the defaults; going back shows the Concise ones again, in the
 * page and in the dialog. */
static void
test_restored (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  g_autoptr (TsConversationSettings) defaults = ts_conversation_settings_new ();
  g_autoptr (TsConversationSettings) kept = NULL;
  const char *concise = gettext (ts_system_prompt_presets (&(guint) { 0 })[preset_index ("concise")].text);
  TsConversationSettingsDialog *dialog;
  g_autofree char *text = NULL;
  gint64 other;

  /* A new conversation shows the defaults. */
  g_assert_true (ts_conversation_settings_equal (ts_chat_page_get_conversation_settings (page),
                                                 defaults));
  dialog = open_dialog (page);
  adw_combo_row_set_selected (dialog->preset_row, preset_index ("concise"));
  text = dialog_system_text (dialog);
  g_assert_cmpstr (text, ==, concise);
  gtk_spin_button_set_value (dialog->temperature_spin, 0.7);
  save_dialog (page, dialog);
  g_assert_cmpstr (ts_chat_page_get_conversation_settings (page)->system_prompt, ==, concise);
  g_assert_cmpfloat (ts_chat_page_get_conversation_settings (page)->temperature, ==, 0.7);

  send_prompt (page, "Name a prime number.");
  concise_conversation = ts_chat_page_get_conversation (page);
  kept = stored_settings (concise_conversation);
  g_assert_nonnull (kept);
  g_assert_cmpstr (kept->system_prompt, ==, concise);
  g_assert_cmpfloat (kept->temperature, ==, 0.7);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL));
  g_assert_true (ts_conversation_settings_equal (ts_chat_page_get_conversation_settings (page),
                                                 defaults));
  send_prompt (page, "Name a colour.");
  other = ts_chat_page_get_conversation (page);
  g_assert_cmpint (other, !=, concise_conversation);
  g_assert_cmpfloat (ts_chat_page_get_conversation_settings (page)->temperature, ==, 0);

  stored_row (page, concise_conversation);
  g_assert_cmpstr (ts_chat_page_get_conversation_settings (page)->system_prompt, ==, concise);
  g_assert_cmpfloat (ts_chat_page_get_conversation_settings (page)->temperature, ==, 0.7);
  dialog = open_dialog (page);
  g_assert_cmpuint (adw_combo_row_get_selected (dialog->preset_row), ==, preset_index ("concise"));
  g_assert_cmpfloat (gtk_spin_button_get_value (dialog->temperature_spin), ==, 0.7);
  gtk_window_close (GTK_WINDOW (dialog));
  gui_wait_until (dialog_gone, page, 10, "the dialog to close");

  stored_row (page, other);
  g_assert_cmpstr (ts_chat_page_get_conversation_settings (page)->system_prompt, ==, "");
  g_assert_cmpfloat (ts_chat_page_get_conversation_settings (page)->temperature, ==, 0);

  /* A sidebar row's Settings… opens that conversation and its settings. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.conversation-settings-of",
                                             "x", concise_conversation));
  g_assert_cmpint (ts_chat_page_get_conversation (page), ==, concise_conversation);
  dialog = TS_CONVERSATION_SETTINGS_DIALOG (ts_chat_page_get_settings_dialog (page));
  g_assert_nonnull (dialog);
  g_assert_cmpfloat (gtk_spin_button_get_value (dialog->temperature_spin), ==, 0.7);
  gtk_window_close (GTK_WINDOW (dialog));
  gui_wait_until (dialog_gone, page, 10, "the dialog to close");
  gui_quit_app (G_APPLICATION (app), 30);
}

/* A new application opens the conversation with its settings. */
static void
test_reopened (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page;

  if (concise_conversation == 0)
    {
      g_test_skip ("needs /chat-settings/restored");
      return;
    }
  page = start_app (app);
  stored_row (page, concise_conversation);
  g_assert_cmpint (ts_chat_page_get_conversation_settings (page)->top_k, ==, 40);
  g_assert_cmpfloat (ts_chat_page_get_conversation_settings (page)->temperature, ==, 0.7);
  g_assert_nonnull (strstr (ts_chat_page_get_conversation_settings (page)->system_prompt, " "));
  gui_quit_app (G_APPLICATION (app), 30);
}

/* Sets sampling at temperature 1 with nothing cut off and @seed, in a new
 * conversation, then sends @prompt; returns the plaintext pane's reply. */
static char *
sample_with_seed (TsChatPage *page, gint64 seed, const char *prompt)
{
  g_autoptr (TsConversationSettings) s = ts_conversation_settings_new ();
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL));
  s->temperature = 1.0;
  s->top_k = 0;
  s->min_p = 0;
  s->seed = seed;
  ts_chat_page_set_conversation_settings (page, s);
  send_prompt (page, prompt);
  g_assert_cmpstr (ts_chat_pane_get_reply (he), ==, ts_chat_pane_get_reply (plain));
  g_assert_cmpint (ts_chat_pane_get_diverged_at (he), ==, -1);
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (he), ==, ts_chat_pane_get_n_tokens (plain));
  return g_strdup (ts_chat_pane_get_reply (plain));
}

/* The conversation's seed is both panes' seed: the same seed draws the same
 * reply again, another seed another one, and a random seed is drawn once
 * for both panes. */
static void
test_seed_both_panes (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  g_autofree char *first = sample_with_seed (page, 4321, "Say something surprising.");
  g_autofree char *again = sample_with_seed (page, 4321, "Say something surprising.");
  g_autofree char *other = sample_with_seed (page, 4322, "Say something surprising.");
  g_autofree char *random1 = sample_with_seed (page, -1, "Say something surprising.");
  g_autofree char *random2 = sample_with_seed (page, -1, "Say something surprising.");

  g_assert_cmpstr (first, ==, again);
  g_assert_cmpstr (first, !=, other);
  /* Two random seeds: two different draws of 8 tokens at temperature 1. */
  g_assert_cmpstr (random1, !=, random2);
  gui_quit_app (G_APPLICATION (app), 30);
}

/* The preset row follows the text; out-of-range values are named and keep
 * Save off; Reset and Use as Defaults; the dialog fits 1366×768. */
static void
test_dialog (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsSettings *settings = ts_application_get_settings (app);
  TsConversationSettingsDialog *dialog = open_dialog (page);
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (dialog->system_view);
  guint n_presets;
  const TsSystemPromptPreset *presets = ts_system_prompt_presets (&n_presets);
  g_autoptr (TsConversationSettings) defaults = NULL;
  int min_width, min_height;

  /* The presets, then Custom; an empty prompt is Custom. */
  g_assert_cmpuint (g_list_model_get_n_items (adw_combo_row_get_model (dialog->preset_row)), ==,
                    n_presets + 1);
  g_assert_cmpuint (adw_combo_row_get_selected (dialog->preset_row), ==, n_presets);
  gtk_text_buffer_set_text (buffer, gettext (presets[preset_index ("translator")].text), -1);
  g_assert_cmpuint (adw_combo_row_get_selected (dialog->preset_row), ==, preset_index ("translator"));
  gtk_text_buffer_insert_at_cursor (buffer, " Keep names.", -1);
  g_assert_cmpuint (adw_combo_row_get_selected (dialog->preset_row), ==, n_presets);

  /* The context: 1 to 63 tokens is refused, by name; the model's length is the top. */
  g_assert_cmpfloat (gtk_adjustment_get_upper (dialog->context_adjustment), >, 0);
  g_assert_cmpfloat (gtk_adjustment_get_upper (dialog->context_adjustment), <, 1048576);
  gtk_spin_button_set_value (dialog->context_spin, 10);
  g_assert_nonnull (ts_conversation_settings_dialog_get_error (dialog));
  g_assert_nonnull (strstr (ts_conversation_settings_dialog_get_error (dialog), "Context length"));
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (dialog->error_label)));
  g_assert_false (gtk_widget_is_sensitive (GTK_WIDGET (dialog->save_button)));
  gtk_spin_button_set_value (dialog->context_spin, 256);
  g_assert_null (ts_conversation_settings_dialog_get_error (dialog));
  g_assert_true (gtk_widget_is_sensitive (GTK_WIDGET (dialog->save_button)));

  /* Random seed turns the seed off. */
  gtk_switch_set_active (dialog->random_seed_switch, TRUE);
  g_assert_false (gtk_widget_is_sensitive (GTK_WIDGET (dialog->seed_spin)));

  /* Use as Defaults: the preferences keep them; a new conversation starts from them. */
  gtk_spin_button_set_value (dialog->repeat_spin, 1.3);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "settings.make-default", NULL));
  defaults = ts_settings_get_conversation_defaults (settings);
  g_assert_cmpfloat (defaults->repeat_penalty, ==, 1.3);
  g_assert_cmpint (defaults->seed, ==, -1);
  g_assert_cmpuint (defaults->context_length, ==, 256);

  /* Reset to Defaults shows them (after any edit). */
  gtk_spin_button_set_value (dialog->repeat_spin, 1.8);
  gtk_text_buffer_set_text (buffer, "", -1);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "settings.reset", NULL));
  g_assert_cmpfloat (gtk_spin_button_get_value (dialog->repeat_spin), ==, 1.3);

  gtk_widget_measure (GTK_WIDGET (dialog), GTK_ORIENTATION_HORIZONTAL, -1, &min_width, NULL,
                      NULL, NULL);
  gtk_widget_measure (GTK_WIDGET (dialog), GTK_ORIENTATION_VERTICAL, min_width, &min_height, NULL,
                      NULL, NULL);
  g_test_message ("dialog: at least %d × %d", min_width, min_height);
  g_assert_cmpint (min_width, <=, 1366);
  g_assert_cmpint (min_height, <=, 768 - 64);
  gui_save_screenshot (GTK_WIDGET (dialog), "conversation-settings.png");
  gtk_window_close (GTK_WINDOW (dialog));
  gui_wait_until (dialog_gone, page, 10, "the dialog to close");

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL));
  g_assert_cmpfloat (ts_chat_page_get_conversation_settings (page)->repeat_penalty, ==, 1.3);
  /* The next cases start from the built-in defaults again. */
  g_clear_pointer (&defaults, ts_conversation_settings_free);
  defaults = ts_conversation_settings_new ();
  ts_settings_set_conversation_defaults (settings, defaults);
  gui_quit_app (G_APPLICATION (app), 30);
}

int
main (int argc, char **argv)
{
  GuiTestProgram program;

  if (gui_test_program_init (&program, &argc, &argv, "chat-settings"))
    {
      g_test_add_func ("/chat-settings/restored", test_restored);
      g_test_add_func ("/chat-settings/reopened", test_reopened);
      g_test_add_func ("/chat-settings/seed-both-panes", test_seed_both_panes);
      g_test_add_func ("/chat-settings/dialog", test_dialog);
    }
  return gui_test_program_run (&program, "/chat-settings/no-display");
}
