/* test-chat.c: the chat page end to end on the demo model: one prompt through the
 * real page answered by both panes (plaintext LoRA and HE-LoRA, local evaluator),
 * greedy texts equal, one chart bar per token with every HE stage timed, the
 * conversation in history.sqlite after a restart; stop, regenerate, edit.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * With TS_SCREENSHOT_DIR set, a screenshot of the chat page after the run
 * is saved there as screenshot-chat.png.
 */
#include <adwaita.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <stdio.h>

#include "ckks-gpu.h"
#include "gui-evaluator.h"
#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-generation-cache.h"
#include "ts-history.h"
#include "ts-models-import.h"
#include "ts-prompt-view.h"
#include "ts-window.h"
#include "ts-test-util.h"

#define PROMPT "Tell me about encrypted adapters."
#define N_TOKENS 6

/* Iterates the main loop until @condition holds; fails after 30 s. */
static void
wait_until (GuiCondition condition, gpointer data, const char *what)
{
  gui_wait_until (condition, data, 30, what);
}

/* Starts the app, waits for its window and the demo model; returns the page. */
static TsChatPage *
start_app (TsApplication *app)
{
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), 30);

  g_object_set (page, "max-tokens", N_TOKENS, "temperature", 0.0, NULL);
  return page;
}

static void
quit_app (TsApplication *app)
{
  gui_quit_app (G_APPLICATION (app), 30);
}

static gboolean
page_idle (gpointer page)
{
  return !ts_chat_page_get_busy (TS_CHAT_PAGE (page));
}

static void
finished_cb (TsChatPane *pane, int kind, const char *message, char **error_out)
{
  if (message != NULL && *error_out == NULL)
    *error_out = g_strdup (message);
}

/* Sends @prompt through the page's own action and waits for both answers;
 * returns the first error a pane reported, or NULL. */
static char *
send_prompt_full (TsChatPage *page, const char *prompt)
{
  char *error = NULL;
  gulong ids[2];

  for (int he = 0; he <= 1; he++)
    ids[he] = g_signal_connect (ts_chat_page_get_pane (page, he), "finished",
                                G_CALLBACK (finished_cb), &error);
  ts_chat_page_set_prompt (page, prompt);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  g_assert_true (ts_chat_page_get_busy (page));
  wait_until (page_idle, page, "both panes to finish");
  for (int he = 0; he <= 1; he++)
    g_signal_handler_disconnect (ts_chat_page_get_pane (page, he), ids[he]);
  return error;
}

static void
send_prompt (TsChatPage *page, const char *prompt)
{
  g_autofree char *error = send_prompt_full (page, prompt);

  g_assert_cmpstr (error, ==, NULL);
}

/* One bar per token; the HE pane times every stage its mode has. */
static void
check_chart (TsChatPane *pane)
{
  TsLatencyChart *chart = ts_chat_pane_get_chart (pane);
  g_autofree char *csv = ts_latency_chart_to_csv (chart);
  g_auto (GStrv) lines = g_strsplit (csv, "\n", -1);
  TsStage timed[] = { TS_STAGE_FORWARD, TS_STAGE_LORA_B, TS_STAGE_LM_HEAD, TS_STAGE_SAMPLE };
  TsStage he_timed[] = { TS_STAGE_ENCRYPT, TS_STAGE_EVALUATE, TS_STAGE_DECRYPT };

  g_assert_cmpuint (ts_latency_chart_get_n_bars (chart), ==, ts_chat_pane_get_n_tokens (pane));
  /* The header names every stage; one line per bar follows. */
  for (int s = 0; s < TS_N_STAGES; s++)
    {
      g_autofree char *column = g_strdup_printf (",%s_ms", ts_stage_name (s));
      g_assert_nonnull (strstr (lines[0], column));
    }
  g_assert_cmpuint (g_strv_length (lines), ==, ts_chat_pane_get_n_tokens (pane) + 2);
  for (guint i = 0; i < ts_latency_chart_get_n_bars (chart); i++)
    {
      const TsTokenTimings *t = ts_latency_chart_get_bar (chart, i);

      for (gsize k = 0; k < G_N_ELEMENTS (timed); k++)
        g_assert_cmpfloat (t->ms[timed[k]], >, 0);
      for (gsize k = 0; k < G_N_ELEMENTS (he_timed); k++)
        if (ts_chat_pane_get_he (pane))
          g_assert_cmpfloat (t->ms[he_timed[k]], >, 0);
        else
          g_assert_cmpfloat (t->ms[he_timed[k]], ==, 0);
      /* Local evaluation: nothing crosses a wire; on the GPU (auto, the
       * default, when one is usable) the copies of h and u are timed. */
      if (ts_chat_pane_get_he (pane) && ckks_gpu_available (NULL, 0))
        {
          g_assert_cmpfloat (t->ms[TS_STAGE_UPLOAD], >, 0);
          g_assert_cmpfloat (t->ms[TS_STAGE_DOWNLOAD], >, 0);
        }
      else
        {
          g_assert_cmpfloat (t->ms[TS_STAGE_UPLOAD], ==, 0);
          g_assert_cmpfloat (t->ms[TS_STAGE_DOWNLOAD], ==, 0);
        }
    }
}

/* One scale for both charts; the plaintext chart lists no encryption stage. */
static void
check_charts_compare (TsChatPage *page)
{
  TsLatencyChart *plain = ts_chat_pane_get_chart (ts_chat_page_get_pane (page, FALSE));
  TsLatencyChart *he = ts_chat_pane_get_chart (ts_chat_page_get_pane (page, TRUE));

  g_assert_cmpfloat (ts_latency_chart_get_scale_ms (plain), >, 0);
  g_assert_cmpfloat (ts_latency_chart_get_scale_ms (plain), ==, ts_latency_chart_get_scale_ms (he));
  g_assert_false (ts_latency_chart_get_stage_listed (plain, TS_STAGE_ENCRYPT));
  g_assert_true (ts_latency_chart_get_stage_listed (he, TS_STAGE_ENCRYPT));
  g_assert_true (ts_latency_chart_get_stage_listed (plain, TS_STAGE_FORWARD));
}

/* The exported run: a header, then each pane's bars in order. */
static void
check_runs_csv (TsChatPage *page)
{
  g_autofree char *csv = ts_chat_page_runs_csv (page);
  g_auto (GStrv) lines = g_strsplit (csv, "\n", -1);
  guint n_plain = ts_chat_pane_get_n_tokens (ts_chat_page_get_pane (page, FALSE));
  guint n_he = ts_chat_pane_get_n_tokens (ts_chat_page_get_pane (page, TRUE));

  g_assert_true (g_str_has_prefix (lines[0], "pane,token,text,forward_ms,"));
  g_assert_cmpuint (g_strv_length (lines), ==, 1 + n_plain + n_he + 1);
  g_assert_true (g_str_has_prefix (lines[1], "plain,1,"));
  g_assert_true (g_str_has_prefix (lines[n_plain], "plain,"));
  g_assert_true (g_str_has_prefix (lines[n_plain + 1], "he,1,"));
  g_assert_cmpstr (lines[1 + n_plain + n_he], ==, "");
}

static void
check_stored (gint64 conversation, const char *plain, const char *he, gboolean complete)
{
  g_autofree char *path = ts_history_default_path ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHistory) history = ts_history_open (path, &error);
  g_autoptr (GPtrArray) messages = NULL;
  TsHistoryMessage *m;

  g_assert_no_error (error);
  messages = ts_history_messages (history, conversation, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (messages->len, ==, 3);
  m = g_ptr_array_index (messages, 0);
  g_assert_true (m->is_user);
  g_assert_cmpstr (m->content, ==, PROMPT);
  m = g_ptr_array_index (messages, 1);
  g_assert_cmpint (m->pane, ==, TS_HISTORY_PANE_PLAIN);
  g_assert_cmpstr (m->content, ==, plain);
  g_assert_cmpint (m->complete, ==, complete);
  m = g_ptr_array_index (messages, 2);
  g_assert_cmpint (m->pane, ==, TS_HISTORY_PANE_HE);
  g_assert_cmpstr (m->content, ==, he);
  g_assert_cmpint (m->complete, ==, complete);
}

/* The HE pane says where its adapter was computed (the GPU, or why not
 * the GPU the settings allow, when the computer has an NVIDIA driver); the
 * plaintext pane says nothing. */
static void
check_backend_line (TsChatPane *plain, TsChatPane *he)
{
  char why[256] = "";
  const char *line = ts_chat_pane_get_backend_text (he);

  g_assert_null (ts_chat_pane_get_backend_text (plain));
  if (!ckks_gpu_driver_present ())
    {
      /* no GPU at all: nothing to explain under every reply */
      g_assert_null (line);
      return;
    }
  g_assert_nonnull (line);
  g_test_message ("%s", line);
  if (ckks_gpu_available (why, sizeof why))
    g_assert_nonnull (strstr (line, "on the GPU"));
  else
    {
      g_assert_nonnull (strstr (line, "on the CPU, not the GPU"));
      g_assert_nonnull (strstr (line, why));
    }
}

static void
test_send_and_restart (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autoptr (TsApplication) app2 = NULL;
  TsChatPage *page = start_app (app);
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);
  g_autofree char *plain_text = NULL;
  g_autofree char *he_text = NULL;
  guint n_before = ts_chat_page_get_n_conversations (page);
  gint64 conversation;

  send_prompt (page, PROMPT);
  plain_text = g_strdup (ts_chat_pane_get_reply (plain));
  he_text = g_strdup (ts_chat_pane_get_reply (he));
  g_test_message ("%u tokens: “%s”; HE %.1f tokens/s, max |Δhe − Δplain| %.3g",
                  ts_chat_pane_get_n_tokens (he), he_text,
                  ts_chat_pane_get_tokens_per_second (he), ts_chat_pane_get_max_delta_error (he));

  /* Greedy: encryption must not change a single token. */
  g_assert_cmpstr (plain_text, ==, he_text);
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (plain), ==, ts_chat_pane_get_n_tokens (he));
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (he), >=, 1);
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (he), <=, N_TOKENS);
  g_assert_cmpint (ts_chat_pane_get_diverged_at (he), ==, -1);
  g_assert_cmpfloat (ts_chat_pane_get_max_delta_error (he), >, 0);
  g_assert_cmpfloat (ts_chat_pane_get_max_delta_error (he), <, 1e-3);
  g_assert_cmpfloat (ts_chat_pane_get_first_token_ms (he), >, 0);
  check_backend_line (plain, he);
  check_chart (plain);
  check_chart (he);
  check_charts_compare (page);
  check_runs_csv (page);
  gui_save_screenshot (gtk_widget_get_ancestor (GTK_WIDGET (page), GTK_TYPE_WINDOW), "screenshot-chat.png");

  conversation = ts_chat_page_get_conversation (page);
  g_assert_cmpint (conversation, >, 0);
  g_assert_cmpuint (ts_chat_page_get_n_conversations (page), ==, n_before + 1);
  quit_app (app);

  /* A new instance on the same data dir finds the conversation. */
  check_stored (conversation, plain_text, he_text, TRUE);
  app2 = ts_application_new (G_APPLICATION_NON_UNIQUE);
  page = start_app (app2);
  g_assert_cmpuint (ts_chat_page_get_n_conversations (page), ==, n_before + 1);
  g_assert_true (ts_chat_page_load_conversation (page, conversation, NULL));
  g_assert_cmpstr (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, FALSE)), ==, plain_text);
  g_assert_cmpstr (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, TRUE)), ==, he_text);
  quit_app (app2);
}

/* What a pane's footer and chart show, to compare after a reopen. */
typedef struct {
  guint n_tokens;
  double tokens_per_second;
  double first_token_ms;
  char *tokens_text;           /* the footer's "N tokens", as the user reads it */
  guint n_bars;
  double first_bar_forward_ms;
} ShownNumbers;

static gboolean
label_has_text (GtkWidget *widget, gconstpointer text)
{
  return GTK_IS_LABEL (widget) && g_strcmp0 (gtk_label_get_text (GTK_LABEL (widget)), text) == 0;
}

static void
shown_numbers (TsChatPane *pane, ShownNumbers *out)
{
  TsLatencyChart *chart = ts_chat_pane_get_chart (pane);

  out->n_tokens = ts_chat_pane_get_n_tokens (pane);
  out->tokens_per_second = ts_chat_pane_get_tokens_per_second (pane);
  out->first_token_ms = ts_chat_pane_get_first_token_ms (pane);
  out->tokens_text = g_strdup_printf (out->n_tokens == 1 ? "%u token" : "%u tokens", out->n_tokens);
  out->n_bars = ts_latency_chart_get_n_bars (chart);
  out->first_bar_forward_ms = out->n_bars > 0
                              ? ts_latency_chart_get_bar (chart, 0)->ms[TS_STAGE_FORWARD] : -1;
}

/* The pane shows @expected again: footer label, numbers and bars. */
static void
check_numbers_shown (TsChatPane *pane, const ShownNumbers *expected)
{
  ShownNumbers now;

  shown_numbers (pane, &now);
  g_assert_cmpuint (now.n_tokens, ==, expected->n_tokens);
  g_assert_cmpfloat_with_epsilon (now.tokens_per_second, expected->tokens_per_second, 1e-9);
  g_assert_cmpfloat_with_epsilon (now.first_token_ms, expected->first_token_ms, 1e-9);
  g_assert_cmpuint (now.n_bars, ==, expected->n_bars);
  g_assert_cmpfloat_with_epsilon (now.first_bar_forward_ms, expected->first_bar_forward_ms, 1e-9);
  g_assert_nonnull (gui_find_widget (GTK_WIDGET (pane), label_has_text, expected->tokens_text));
  g_free (now.tokens_text);
}

/* A conversation opened again, from the sidebar or after a restart, shows
 * the footers and charts its last answers had. */
static void
test_reopened_keeps_numbers (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autoptr (TsApplication) app2 = NULL;
  TsChatPage *page = start_app (app);
  ShownNumbers shown[2];
  gint64 conversation;

  send_prompt (page, PROMPT);
  send_prompt (page, "And what do they cost?");
  for (int he = 0; he <= 1; he++)
    {
      shown_numbers (ts_chat_page_get_pane (page, he), &shown[he]);
      g_assert_cmpuint (shown[he].n_tokens, >=, 1);
      g_assert_cmpuint (shown[he].n_bars, ==, shown[he].n_tokens);
      g_assert_cmpfloat (shown[he].first_bar_forward_ms, >, 0);
    }
  conversation = ts_chat_page_get_conversation (page);

  /* Another conversation, then back. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL));
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (ts_chat_page_get_pane (page, TRUE)), ==, 0);
  send_prompt (page, "Hello");
  g_assert_cmpint (ts_chat_page_get_conversation (page), !=, conversation);
  g_assert_true (ts_chat_page_load_conversation (page, conversation, NULL));
  for (int he = 0; he <= 1; he++)
    check_numbers_shown (ts_chat_page_get_pane (page, he), &shown[he]);
  quit_app (app);

  /* A new window on the same history file. */
  app2 = ts_application_new (G_APPLICATION_NON_UNIQUE);
  page = start_app (app2);
  g_assert_true (ts_chat_page_load_conversation (page, conversation, NULL));
  for (int he = 0; he <= 1; he++)
    {
      check_numbers_shown (ts_chat_page_get_pane (page, he), &shown[he]);
      g_free (shown[he].tokens_text);
    }
  quit_app (app2);
}

/* Regenerate gives the same greedy answer in place; edit takes the exchange
 * back into the prompt box; both keep history in step. */
static void
test_regenerate_and_edit (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);
  g_autofree char *first = NULL;
  g_autoptr (GPtrArray) turns = NULL;

  send_prompt (page, PROMPT);
  first = g_strdup (ts_chat_pane_get_reply (he));
  /* Regenerate gives another answer (a fresh seed, sampling although the
   * page is greedy), the same on both sides. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.regenerate", NULL));
  wait_until (page_idle, page, "the regenerated answer");
  g_assert_cmpstr (ts_chat_pane_get_reply (he), !=, first);
  g_assert_cmpstr (ts_chat_pane_get_reply (he), ==,
                   ts_chat_pane_get_reply (ts_chat_page_get_pane (page, FALSE)));
  g_autofree char *second = g_strdup (ts_chat_pane_get_reply (he));
  turns = ts_chat_pane_get_turns (he);
  g_assert_cmpuint (turns->len, ==, 2);
  check_stored (ts_chat_page_get_conversation (page), second, second, TRUE);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.regenerate", NULL));
  wait_until (page_idle, page, "the second regenerated answer");
  g_assert_cmpstr (ts_chat_pane_get_reply (he), !=, second);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.edit-last", NULL));
  g_assert_cmpstr (ts_chat_page_get_prompt (page), ==, PROMPT);
  g_assert_null (ts_chat_pane_get_reply (he));
  quit_app (app);
}

/* Sampling with one seed draws the same tokens on both sides: the HE error
 * is far too small to move a draw. */
static void
test_sampling_same_seed (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);

  g_object_set (page, "temperature", 0.9, "top-p", 0.95, "seed", 1234u, NULL);
  send_prompt (page, PROMPT);
  g_assert_cmpstr (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, TRUE)), ==,
                   ts_chat_pane_get_reply (ts_chat_page_get_pane (page, FALSE)));
  g_assert_cmpint (ts_chat_pane_get_diverged_at (ts_chat_page_get_pane (page, TRUE)), ==, -1);
  quit_app (app);
}

static char *
stored_title (gint64 conversation)
{
  g_autofree char *path = ts_history_default_path ();
  g_autoptr (TsHistory) history = ts_history_open (path, NULL);
  g_autoptr (GPtrArray) list = ts_history_list (history, NULL);

  for (guint i = 0; list != NULL && i < list->len; i++)
    {
      TsHistoryConversation *c = g_ptr_array_index (list, i);

      if (c->id == conversation)
        return g_strdup (c->title);
    }
  return NULL;
}

/* Rename through the sidebar's dialog, then delete: both reach the database
 * and the sidebar. */
static void
test_rename_and_delete (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  AdwMessageDialog *dialog;
  g_autofree char *title = NULL;
  guint n;
  gint64 id;

  send_prompt (page, PROMPT);
  id = ts_chat_page_get_conversation (page);
  n = ts_chat_page_get_n_conversations (page);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.rename-conversation",
                                             "x", id));
  wait_until (gui_message_dialog_shown, NULL, "the rename dialog");
  dialog = gui_find_message_dialog ();
  gtk_editable_set_text (GTK_EDITABLE (adw_message_dialog_get_extra_child (dialog)), "  Renamed  ");
  adw_message_dialog_response (dialog, "rename");
  gtk_window_destroy (GTK_WINDOW (dialog));
  gui_wait_until (gui_message_dialog_gone, NULL, 30, "the rename dialog to close");
  title = stored_title (id);
  g_assert_cmpstr (title, ==, "Renamed");

  /* Deleting asks first: declined, nothing goes; accepted, it goes. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.delete-conversation",
                                             "x", id));
  gui_wait_until (gui_message_dialog_shown, NULL, 30, "the delete confirmation");
  dialog = gui_find_message_dialog ();
  adw_message_dialog_response (dialog, "cancel");
  gtk_window_destroy (GTK_WINDOW (dialog));
  gui_wait_until (gui_message_dialog_gone, NULL, 30, "the dialog to close");
  g_free (title);
  title = stored_title (id);
  g_assert_cmpstr (title, ==, "Renamed");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.delete-conversation",
                                             "x", id));
  gui_wait_until (gui_message_dialog_shown, NULL, 30, "the delete confirmation");
  dialog = gui_find_message_dialog ();
  adw_message_dialog_response (dialog, "delete");
  gtk_window_destroy (GTK_WINDOW (dialog));
  gui_wait_until (gui_message_dialog_gone, NULL, 30, "the dialog to close");
  g_assert_null (stored_title (id));
  g_assert_cmpuint (ts_chat_page_get_n_conversations (page), ==, n - 1);
  /* The conversation shown was the one deleted: the page starts afresh. */
  g_assert_cmpint (ts_chat_page_get_conversation (page), ==, 0);
  g_assert_null (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, TRUE)));
  quit_app (app);
}

/* Stop ends both panes early; what streamed is kept, marked incomplete. */
static void
test_stop (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);

  g_object_set (page, "max-tokens", 200, NULL);
  ts_chat_page_set_prompt (page, PROMPT);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.stop", NULL));
  wait_until (page_idle, page, "both panes to stop");
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (he), <, 200);
  check_stored (ts_chat_page_get_conversation (page), ts_chat_pane_get_reply (plain),
                ts_chat_pane_get_reply (he), FALSE);
  quit_app (app);
}

typedef struct {
  TsChatPage *page;
  TsHistory *history;
  char *seen;              /* HE text found in the database mid-answer */
} StreamWatch;

static gboolean
he_reply_stored_while_busy (gpointer data)
{
  StreamWatch *w = data;
  g_autoptr (GPtrArray) messages = NULL;
  TsHistoryMessage *he;

  g_usleep (20000);
  messages = ts_history_messages (w->history, ts_chat_page_get_conversation (w->page), NULL);
  if (messages == NULL || messages->len != 3 || !ts_chat_page_get_busy (w->page))
    return FALSE;
  he = g_ptr_array_index (messages, 2);
  if (he->complete || *he->content == '\0')
    return FALSE;
  w->seen = g_strdup (he->content);
  return TRUE;
}

/* While an answer streams, what arrived so far is already in the database
 * (read through a second connection, as after a crash). */
static void
test_saved_while_streaming (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  g_autofree char *path = ts_history_default_path ();
  StreamWatch watch = { page, ts_history_open (path, NULL), NULL };

  GSettings *settings = ts_settings_get_gsettings (ts_application_get_settings (app));

  g_assert_nonnull (watch.history);
  /* saves every 20 ms, and the HE pane on the widest ring (the slowest),
   * so that even a fast machine is still streaming the 200 tokens when the
   * first save lands */
  g_settings_set_string (settings, "ckks-preset", "n32768");
  g_object_set (page, "max-tokens", 200, "save-interval", 20, NULL);
  ts_chat_page_set_prompt (page, PROMPT);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  wait_until (he_reply_stored_while_busy, &watch, "the streamed answer to reach history.sqlite");
  g_test_message ("stored mid-answer: %zu bytes", strlen (watch.seen));
  g_assert_true (g_str_has_prefix (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, TRUE)),
                                   watch.seen));
  gtk_widget_activate_action (GTK_WIDGET (page), "chat.stop", NULL);
  wait_until (page_idle, page, "both panes to stop");
  g_settings_reset (settings, "ckks-preset");
  ts_history_close (watch.history);
  g_free (watch.seen);
  quit_app (app);
}

/* The narrowest the window can be, in pixels. */
static int
window_min_width (TsChatPage *page)
{
  int min;
  gtk_widget_measure (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))),
                      GTK_ORIENTATION_HORIZONTAL, -1, &min, NULL, NULL, NULL);
  return min;
}

/* A 1366x768 laptop screen: the footers of a finished HE-LoRA answer
 * (tokens, rate, ciphertext bytes, error) wrap instead of widening the
 * window past the screen. */
static void
test_fits_laptop_screen (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  int before = window_min_width (page);
  g_autofree char *error = send_prompt_full (page, PROMPT);
  g_assert_null (error);
  int after = window_min_width (page);
  g_test_message ("window minimum width: %d px before the answer, %d after", before, after);
  g_assert_cmpint (after, <=, 1024);
  quit_app (app);
}

static gboolean
picker_shows (gpointer data)
{
  TsChatPage *page = data;
  const char *label = gtk_menu_button_get_label (ts_chat_page_get_picker (page, FALSE));
  return g_strcmp0 (label, "tiny-qwen35moe-f32") == 0;
}

/* tensafe --model FILE --adapter FILE: the chat starts on them, not on the
 * demo model, and answers with them. */
static void
test_start_model (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autofree char *model = ts_test_data_path ("qwen35/tiny-qwen35moe-f32/tiny-qwen35moe-f32.gguf");
  g_autofree char *adapter = ts_test_data_path ("qwen35/tiny-qwen35moe-f32/lora/tiny-qwen35moe-lora-f32.gguf");
  ts_application_set_start_model (app, model, adapter);
  TsChatPage *page = start_app (app);
  wait_until (picker_shows, page, "the model of --model to load");
  g_assert_cmpstr (gtk_menu_button_get_label (ts_chat_page_get_picker (page, TRUE)), ==,
                   "tiny-qwen35moe-lora-f32");
  g_autofree char *error = send_prompt_full (page, PROMPT);
  g_assert_null (error);
  g_assert_cmpstr (ts_chat_pane_get_reply (ts_chat_page_get_pane (page, FALSE)), ==,
                   ts_chat_pane_get_reply (ts_chat_page_get_pane (page, TRUE)));
  quit_app (app);
}

/* The HE pane claims encryption only for a reply that was encrypted: with
 * the evaluator set to plaintext its title, lock and footer say that
 * nothing was encrypted; back on the local evaluator they return. */
/* What the HE pane claims for its last answer: encrypted (title "HE-LoRA",
 * the key's lock) or not (a title that says so, no lock, no ciphertext). */
static void
assert_pane_claims (TsChatPane *he, gboolean encrypted)
{
  g_autofree char *title = NULL;

  g_object_get (he, "title", &title, NULL);
  g_assert_cmpint (ts_chat_pane_get_encrypted (he), ==, encrypted);
  if (encrypted)
    {
      g_assert_cmpstr (title, ==, "HE-LoRA");
      g_assert_nonnull (ts_chat_pane_get_key_fingerprint (he));
      return;
    }
  g_assert_cmpstr (title, !=, "HE-LoRA");
  g_assert_nonnull (strstr (title, "not encrypted"));
  g_assert_null (ts_chat_pane_get_key_fingerprint (he));
  g_assert_cmpfloat (ts_chat_pane_get_bytes_per_token (he), ==, 0);
}

static void
test_plaintext_mode_claims_nothing (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);
  GSettings *settings = ts_settings_get_gsettings (ts_application_get_settings (app));

  send_prompt (page, PROMPT);
  assert_pane_claims (he, TRUE);
  g_settings_set_string (settings, "evaluator-mode", "plain");
  send_prompt (page, "And in plaintext?");
  assert_pane_claims (he, FALSE);
  g_settings_reset (settings, "evaluator-mode");
  send_prompt (page, "And encrypted again?");
  assert_pane_claims (he, TRUE);
  quit_app (app);
}

/* A conversation longer than the demo model's context (512 tokens) goes on:
 * with answers of up to 200 tokens the fourth turn no longer fits, so the
 * oldest turns are left out (and said so) instead of every later turn
 * failing; both panes keep answering alike. */
static void
test_long_conversation_goes_on (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE), *he = ts_chat_page_get_pane (page, TRUE);
  gboolean left_out = FALSE;

  g_object_set (page, "max-tokens", 200, NULL);
  for (int turn = 0; turn < 7; turn++)
    {
      g_autofree char *prompt = g_strdup_printf ("Question number %d: tell me more.", turn);

      send_prompt (page, prompt);
      g_assert_cmpstr (ts_chat_pane_get_reply (plain), ==, ts_chat_pane_get_reply (he));
      /* the second turn continues each pane's session of the first */
      if (turn == 1)
        {
          guint reused = ts_generation_cache_get_last_reused (ts_chat_pane_get_cache (plain));

          g_test_message ("turn 1: %u prompt tokens already computed", reused);
          g_assert_cmpuint (reused, >, 20);
          g_assert_cmpuint (ts_generation_cache_get_last_reused (ts_chat_pane_get_cache (he)), ==,
                            reused);
        }
      if (ts_chat_pane_get_context_note (plain) != NULL)
        {
          g_test_message ("turn %d: %s", turn, ts_chat_pane_get_context_note (plain));
          left_out = TRUE;
          g_assert_cmpstr (ts_chat_pane_get_context_note (plain), ==,
                           ts_chat_pane_get_context_note (he));
          g_assert_nonnull (strstr (ts_chat_pane_get_reply_note (plain),
                                    ts_chat_pane_get_context_note (plain)));
        }
    }
  g_assert_true (left_out);
  quit_app (app);
}

/* Whether the keyboard focus is in the prompt. */
static gboolean
prompt_has_focus (TsChatPage *page)
{
  GtkWidget *focus = gtk_root_get_focus (gtk_widget_get_root (GTK_WIDGET (page)));

  return focus != NULL && gtk_widget_get_ancestor (focus, TS_TYPE_PROMPT_VIEW) != NULL;
}

/* The keyboard needs no Tabs: the prompt has the focus when the page is
 * ready and again after each answer; an answer cut at the length limit and
 * a stopped one say so under the text; Copy confirms with a toast. */
static void
test_focus_endings_copy (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);
  g_autofree char *cut = g_strdup_printf ("Cut at the limit of %d tokens", N_TOKENS);

  g_assert_true (prompt_has_focus (page));
  send_prompt (page, PROMPT);
  g_assert_true (prompt_has_focus (page));
  g_assert_cmpstr (ts_chat_pane_get_reply_ending (he), ==, cut);
  g_assert_cmpstr (ts_chat_pane_get_reply_ending (ts_chat_page_get_pane (page, FALSE)), ==, cut);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (he), "pane.copy", NULL));

  g_object_set (page, "max-tokens", 4096, NULL);
  ts_chat_page_set_prompt (page, "A long answer, please.");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.stop", NULL));
  wait_until (page_idle, page, "the stop");
  g_assert_cmpstr (ts_chat_pane_get_reply_ending (he), ==, "Stopped");
  quit_app (app);
}

static gboolean
error_shown (gpointer page)
{
  return ts_chat_page_get_last_error (TS_CHAT_PAGE (page)) != NULL;
}

/* A model that fails to load is an error that stays on screen (a toast with
 * no timeout) naming the file, and the page keeps the model it had. */
static void
test_model_error_stays (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-badmodel-XXXXXX", NULL);
  g_autofree char *bad = g_build_filename (dir, "broken-model.gguf", NULL);

  g_assert_true (g_file_set_contents (bad, "GGUF", 4, NULL));
  ts_chat_page_load_model (page, bad, NULL);
  wait_until (error_shown, page, "the load error");
  g_test_message ("%s", ts_chat_page_get_last_error (page));
  g_assert_nonnull (strstr (ts_chat_page_get_last_error (page), "broken-model.gguf"));
  send_prompt (page, PROMPT);   /* still answers with the model it had */
  g_remove (bad);
  g_rmdir (dir);
  quit_app (app);
}

typedef struct {
  TsChatPage *page;
  const char *adapter;
} LoadedWait;

static gboolean
adapter_in_use (gpointer data)
{
  LoadedWait *w = data;

  return gui_chat_ready (w->page)
         && g_strcmp0 (ts_chat_page_get_adapter_path (w->page), w->adapter) == 0;
}

/* An adapter made for another model that is installed: the error offers
 * to load that model with it, and its button does. */
static void
test_adapter_offers_its_model (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autofree char *models = g_dir_make_tmp ("tensafe-models-XXXXXX", NULL);
  g_autofree char *source = ts_test_data_path ("hf/qwen2/qwen2.gguf");
  g_autofree char *adapter = ts_test_data_path ("hf/qwen2/lora/peft");
  g_autofree char *demo = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
  g_autoptr (GError) error = NULL;
  g_autofree char *name = NULL;
  TsChatPage *page;
  GtkWidget *button;
  LoadedWait wait;

  /* the adapter names its base model "tiny-qwen2": install qwen2.gguf so */
  g_setenv ("TENSAFE_MODEL_DIR", models, TRUE);
  name = ts_models_import (source, models, "tiny-qwen2", NULL, NULL, &error);
  g_assert_no_error (error);
  page = start_app (app);
  ts_chat_page_load_model (page, demo, adapter);
  wait_until (error_shown, page, "the adapter's error");
  g_assert_nonnull (strstr (ts_chat_page_get_last_error (page), "made for the model tiny-qwen2"));
  button = gui_find_button (gtk_widget_get_ancestor (GTK_WIDGET (page), ADW_TYPE_TOAST_OVERLAY),
                            _("Load That Model"));
  if (button == NULL)
    button = gui_find_button (GTK_WIDGET (page), _("Load That Model"));
  g_assert_nonnull (button);
  gtk_widget_activate (button);
  wait = (LoadedWait) { page, adapter };
  gui_wait_until (adapter_in_use, &wait, 30, "the adapter's own model");
  g_assert_cmpstr (gtk_menu_button_get_label (ts_chat_page_get_picker (page, FALSE)), ==,
                   "tiny-qwen2");
  quit_app (app);
  g_unsetenv ("TENSAFE_MODEL_DIR");
  ts_test_remove_tree (models);
}

/* A turn only the HE side failed (its evaluator unreachable) is left out of
 * both panes' conversations: the next turn starts from the same history on
 * both sides, so the panes answer alike and nothing is marked as differing. */
static void
test_failed_turn_left_out (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE), *he = ts_chat_page_get_pane (page, TRUE);
  GSettings *settings = ts_settings_get_gsettings (ts_application_get_settings (app));
  g_autofree char *error = NULL;
  g_autoptr (GPtrArray) plain_turns = NULL, he_turns = NULL;

  send_prompt (page, PROMPT);
  g_settings_set_string (settings, "evaluator-url", "ws://127.0.0.1:1");
  g_settings_set_string (settings, "evaluator-mode", "remote");
  error = send_prompt_full (page, "Only the plaintext side answers this.");
  g_settings_reset (settings, "evaluator-mode");
  g_settings_reset (settings, "evaluator-url");
  g_assert_nonnull (error);
  g_assert_nonnull (ts_chat_pane_get_reply (plain));
  send_prompt (page, "Both sides again.");
  plain_turns = ts_chat_pane_get_turns (plain);
  he_turns = ts_chat_pane_get_turns (he);
  g_assert_cmpuint (plain_turns->len, ==, 4);   /* turns 1 and 3, the failed one left out */
  g_assert_cmpuint (he_turns->len, ==, plain_turns->len);
  for (guint i = 0; i < plain_turns->len; i++)
    g_assert_cmpstr (g_ptr_array_index (plain_turns, i), ==, g_ptr_array_index (he_turns, i));
  g_assert_cmpint (ts_chat_pane_get_diverged_at (he), ==, -1);
  g_assert_cmpstr (ts_chat_pane_get_reply (plain), ==, ts_chat_pane_get_reply (he));
  quit_app (app);
}

/* The failed turn of a conversation of three prompts is left out on both
 * panes, marked as such, and nothing else is. */
static void
check_turn_left_out (TsChatPage *page)
{
  for (int he = 0; he <= 1; he++)
    {
      TsChatPane *pane = ts_chat_page_get_pane (page, he);
      g_autoptr (GPtrArray) turns = ts_chat_pane_get_turns (pane);

      g_assert_cmpuint (turns->len, ==, 4);
      g_assert_cmpstr (g_ptr_array_index (turns, 0), ==, PROMPT);
      g_assert_cmpstr (g_ptr_array_index (turns, 2), ==, "Both sides again.");
      for (guint i = 0; i < turns->len; i++)
        g_assert_cmpstr (g_ptr_array_index (turns, i), !=, "Only the plaintext side answers this.");
    }
}

/* The left-out turn stays left out when the conversation is opened again,
 * from the sidebar or after a restart: it is not sent to the model. */
static void
test_left_out_turn_reopened (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autoptr (TsApplication) app2 = NULL;
  TsChatPage *page = start_app (app);
  GSettings *settings = ts_settings_get_gsettings (ts_application_get_settings (app));
  g_autofree char *error = NULL;
  g_autoptr (GPtrArray) turns = NULL;
  gint64 conversation;

  send_prompt (page, PROMPT);
  g_settings_set_string (settings, "evaluator-url", "ws://127.0.0.1:1");
  g_settings_set_string (settings, "evaluator-mode", "remote");
  error = send_prompt_full (page, "Only the plaintext side answers this.");
  g_settings_reset (settings, "evaluator-mode");
  g_settings_reset (settings, "evaluator-url");
  g_assert_nonnull (error);
  send_prompt (page, "Both sides again.");
  check_turn_left_out (page);
  conversation = ts_chat_page_get_conversation (page);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL));
  g_assert_true (ts_chat_page_load_conversation (page, conversation, NULL));
  check_turn_left_out (page);
  quit_app (app);

  app2 = ts_application_new (G_APPLICATION_NON_UNIQUE);
  page = start_app (app2);
  g_assert_true (ts_chat_page_load_conversation (page, conversation, NULL));
  check_turn_left_out (page);
  /* The next turn is answered from the same history on both sides. */
  send_prompt (page, "One more.");
  turns = ts_chat_pane_get_turns (ts_chat_page_get_pane (page, TRUE));
  g_assert_cmpuint (turns->len, ==, 6);
  g_assert_cmpint (ts_chat_pane_get_diverged_at (ts_chat_page_get_pane (page, TRUE)), ==, -1);
  quit_app (app2);
}

/* Remote mode: ciphertexts go to a real tensafe-he-server, so every stage
 * of the pipeline, upload and download included, is timed per token. */
static void
test_remote_evaluator (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autofree char *dir = gui_evaluator_demo_dir ();
  const char *args[] = { "--threads", "1", NULL };
  GuiEvaluator server = { 0 };
  TsChatPage *page;
  TsChatPane *he;
  TsLatencyChart *chart;
  GSettings *settings;
  g_autofree char *error = NULL;

  gui_evaluator_start (&server, dir, args);
  page = start_app (app);
  settings = ts_settings_get_gsettings (ts_application_get_settings (app));
  g_settings_set_string (settings, "evaluator-url", server.ws_url);
  g_settings_set_string (settings, "evaluator-mode", "remote");
  error = send_prompt_full (page, PROMPT);
  g_settings_reset (settings, "evaluator-mode");
  g_settings_reset (settings, "evaluator-url");
  if (error != NULL && strstr (error, "no CKKS engine") != NULL)
    {
      /* A server built without its evaluator says so in its hello. */
      g_test_skip (error);
      quit_app (app);
      gui_evaluator_clear (&server);
      ts_test_remove_tree (dir);
      return;
    }
  g_assert_cmpstr (error, ==, NULL);
  he = ts_chat_page_get_pane (page, TRUE);
  chart = ts_chat_pane_get_chart (he);
  g_assert_cmpstr (ts_chat_pane_get_reply (he), ==,
                   ts_chat_pane_get_reply (ts_chat_page_get_pane (page, FALSE)));
  /* The GPU setting does not apply to a remote evaluator: said only when
   * there is a GPU the setting would have used. */
  if (ckks_gpu_available (NULL, 0))
    g_assert_nonnull (strstr (ts_chat_pane_get_backend_text (he), "local evaluation only"));
  else
    g_assert_null (ts_chat_pane_get_backend_text (he));
  g_assert_cmpuint (ts_latency_chart_get_n_bars (chart), ==, ts_chat_pane_get_n_tokens (he));
  g_assert_cmpuint (ts_latency_chart_get_n_bars (chart), >=, 1);
  for (guint i = 0; i < ts_latency_chart_get_n_bars (chart); i++)
    {
      const TsTokenTimings *t = ts_latency_chart_get_bar (chart, i);

      for (int stage = 0; stage < TS_N_STAGES; stage++)
        g_assert_cmpfloat (t->ms[stage], >, 0);
      g_assert_cmpuint (t->bytes_up, >, 0);
      g_assert_cmpuint (t->bytes_down, >, 0);
    }
  quit_app (app);
  gui_evaluator_clear (&server);
  ts_test_remove_tree (dir);
}

/* The HE pane marks the first token where the panes' choices differ, in
 * whichever order the two threads report them. */
static void
test_divergence_marked (void)
{
  g_autoptr (TsSettings) settings = ts_settings_new_default ();
  GtkWidget *page = g_object_ref_sink (g_object_new (TS_TYPE_CHAT_PAGE, "settings", settings,
                                                     NULL));
  TsChatPane *plain = ts_chat_page_get_pane (TS_CHAT_PAGE (page), FALSE);
  TsChatPane *he = ts_chat_page_get_pane (TS_CHAT_PAGE (page), TRUE);
  const int plain_ids[] = { 5, 7, 9, 4 };
  const int he_ids[] = { 5, 7, 3, 4 };

  for (guint i = 0; i < 2; i++)
    g_signal_emit_by_name (plain, "token", i, plain_ids[i]);
  for (guint i = 0; i < 4; i++)
    {
      g_signal_emit_by_name (he, "token", i, he_ids[i]);
      g_assert_cmpint (ts_chat_pane_get_diverged_at (he), ==, -1);
    }
  g_signal_emit_by_name (plain, "token", 2u, plain_ids[2]);
  g_assert_cmpint (ts_chat_pane_get_diverged_at (he), ==, 2);
  g_signal_emit_by_name (plain, "token", 3u, plain_ids[3]);
  g_assert_cmpint (ts_chat_pane_get_diverged_at (he), ==, 2);
  g_assert_cmpint (ts_chat_pane_get_diverged_at (plain), ==, -1);
  g_assert_finalize_object (page);
  for (int i = 0; i < 100; i++)
    g_main_context_iteration (NULL, FALSE);
}

/* A page dropped while its model loads is freed, and the late load is ignored. */
static void
test_page_lifecycle (void)
{
  g_autoptr (TsSettings) settings = ts_settings_new_default ();
  GtkWidget *page = g_object_ref_sink (g_object_new (TS_TYPE_CHAT_PAGE, "settings", settings,
                                                     NULL));

  g_assert_false (ts_chat_page_get_busy (TS_CHAT_PAGE (page)));
  g_assert_finalize_object (page);
  for (int i = 0; i < 100; i++)
    g_main_context_iteration (NULL, FALSE);
}

int
main (int argc, char **argv)
{
  GuiTestProgram program;

  if (gui_test_program_init (&program, &argc, &argv, "chat"))
    {
      g_test_add_func ("/chat/send-and-restart", test_send_and_restart);
      g_test_add_func ("/chat/regenerate-and-edit", test_regenerate_and_edit);
      g_test_add_func ("/chat/reopened-keeps-numbers", test_reopened_keeps_numbers);
      g_test_add_func ("/chat/stop", test_stop);
      g_test_add_func ("/chat/sampling-same-seed", test_sampling_same_seed);
      g_test_add_func ("/chat/rename-and-delete", test_rename_and_delete);
      g_test_add_func ("/chat/remote-evaluator", test_remote_evaluator);
      g_test_add_func ("/chat/saved-while-streaming", test_saved_while_streaming);
      g_test_add_func ("/chat/start-model", test_start_model);
      g_test_add_func ("/chat/fits-laptop-screen", test_fits_laptop_screen);
      g_test_add_func ("/chat/page-lifecycle", test_page_lifecycle);
      g_test_add_func ("/chat/divergence-marked", test_divergence_marked);
      g_test_add_func ("/chat/plaintext-mode-claims-nothing", test_plaintext_mode_claims_nothing);
      g_test_add_func ("/chat/failed-turn-left-out", test_failed_turn_left_out);
      g_test_add_func ("/chat/left-out-turn-reopened", test_left_out_turn_reopened);
      g_test_add_func ("/chat/long-conversation-goes-on", test_long_conversation_goes_on);
      g_test_add_func ("/chat/focus-endings-copy", test_focus_endings_copy);
      g_test_add_func ("/chat/model-error-stays", test_model_error_stays);
      g_test_add_func ("/chat/adapter-offers-its-model", test_adapter_offers_its_model);
    }
  return gui_test_program_run (&program, "/chat/no-display");
}
