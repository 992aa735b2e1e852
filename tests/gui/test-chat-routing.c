/* test-chat-routing.c: adapter routing and the privacy budget in the real chat page.
 * Two adapters of the demo catalogue are installed with routing metadata; a
 * small set of labelled prompts is sent through the page: each reply names
 * the adapter and rule it was routed by, and its text is that adapter's
 * (compared with a model loaded with it); the user's pick overrides routing
 * and is remembered. Against a real tensafe-he-server in the adapter-private
 * mode, the ε spent shown in the HE pane grows turn after turn, and a turn
 * past the budget shows the refusal in the HE pane while the plaintext pane
 * still answers.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * With TS_SCREENSHOT_DIR set, saves screenshot-chat-routing.png there.
 */
#include <adwaita.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#include "gui-evaluator.h"
#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-privacy-accountant.h"
#include "ts-test-util.h"

#define N_TOKENS 6
#define PIRATE_PROMPT "Tell me about the pirate ship and its treasure."
#define DELTA 1e-6

static const char *const pirate_metadata =
  "{\"id\": \"tiny-pirate\", \"version\": \"1.0.0\", \"tags\": [\"demo\", \"style\", \"fun\"],"
  " \"keywords\": [\"pirate\", \"ship\", \"treasure\"],"
  " \"examples\": [\"Arr, where be the captain's parrot hiding today?\","
  "               \"Hoist the sails and swab the deck, ye scallywags!\"]}";
static const char *const formal_metadata =
  "{\"id\": \"tiny-formal\", \"version\": \"1.0.0\", \"tags\": [\"demo\", \"style\", \"business\"],"
  " \"keywords\": [\"formal\", \"letter\", \"memo\"],"
  " \"examples\": [\"Dear Sir or Madam, I am writing to inform you of our decision.\","
  "               \"Please find attached the quarterly report for your review.\"]}";
static const TsScryptParams cheap_kdf = { .log2_n = 10, .r = 8, .p = 1 };

static char *adapters_dir;

static void
wait_until (GuiCondition condition, gpointer data, const char *what)
{
  gui_wait_until (condition, data, 90, what);
}

static char *
demo_file (const char *name)
{
  return g_build_filename (TS_SOURCE_DATA_DIR, "demo", name, NULL);
}

static char *
adapter_path (const char *id)
{
  return g_build_filename (adapters_dir, id, NULL);
}

/* @dir/@id/: the demo catalogue's PEFT adapter and @metadata. */
static void
install_adapter (const char *dir, const char *id, const char *metadata)
{
  g_autofree char *target = g_build_filename (dir, id, NULL);
  g_autofree char *meta = g_build_filename (target, "metadata.json", NULL);
  const char *files[] = { "adapter_config.json", "adapter_model.safetensors" };

  g_assert_cmpint (g_mkdir_with_parents (target, 0700), ==, 0);
  for (gsize i = 0; i < G_N_ELEMENTS (files); i++)
    {
      g_autofree char *from = g_build_filename (TS_SOURCE_DATA_DIR, "market", id, files[i], NULL);
      g_autofree char *to = g_build_filename (target, files[i], NULL);
      ts_test_copy_file (from, to);
    }
  g_assert_true (g_file_set_contents (meta, metadata, -1, NULL));
}

/* ---- the reference: a model loaded with the adapter ---------------------- */

typedef struct {
  GString *text;
  gboolean done;
} Reference;

static void
reference_cb (TsGenerationJob *job, const TsGenerationEvent *event, gpointer data)
{
  Reference *r = data;

  if (event->kind == TS_GENERATION_EVENT_TOKEN)
    g_string_append (r->text, event->text);
  else if (event->kind != TS_GENERATION_EVENT_STARTED)
    {
      g_assert_null (event->error);
      r->done = TRUE;
    }
}

/* The greedy reply to @prompt alone of the demo model loaded with the
 * adapter at @adapter (never through the chat page's cache or router). */
static char *
reference_reply (const char *adapter, const char *prompt)
{
  g_autofree char *model_path = demo_file ("tiny-qwen35moe-f32.gguf");
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = ts_generation_model_load (model_path, adapter, &error);
  g_autoptr (TsGenerationRequest) request = ts_generation_request_new ();
  g_autoptr (TsGenerationJob) job = NULL;
  Reference r = { g_string_new (NULL), FALSE };

  g_assert_no_error (error);
  g_ptr_array_add (request->turns, g_strdup (prompt));
  request->max_tokens = N_TOKENS;
  job = ts_generation_job_start (model, request, NULL, reference_cb, &r);
  while (!r.done)
    g_main_context_iteration (NULL, TRUE);
  return g_string_free (r.text, FALSE);
}

/* ---- the application ----------------------------------------------------- */

static gboolean
page_idle (gpointer page)
{
  return !ts_chat_page_get_busy (page);
}

static gboolean
page_routing (gpointer page)
{
  return ts_chat_page_get_routing (page) && ts_chat_page_get_ready (page);
}

typedef struct {
  TsChatPage *page;
  const char *path;
} AdapterWait;

static gboolean
adapter_selected (gpointer data)
{
  AdapterWait *w = data;

  return g_strcmp0 (ts_chat_page_get_adapter_path (w->page), w->path) == 0;
}

static TsChatPage *
start_app (TsApplication *app)
{
  TsChatPage *page;

  g_assert_true (g_application_register (G_APPLICATION (app), NULL, NULL));
  ts_key_vault_set_kdf (ts_application_get_key_vault (app), &cheap_kdf);
  page = gui_start_chat (G_APPLICATION (app), 90);
  wait_until (page_routing, page, "the demo model and the router");
  g_object_set (page, "max-tokens", N_TOKENS, "temperature", 0.0, NULL);
  return page;
}

static void
quit_app (TsApplication *app)
{
  gui_quit_app (G_APPLICATION (app), 90);
}

/* A fresh conversation with @prompt; waits for both panes. */
static void
send_alone (TsChatPage *page, const char *prompt)
{
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL));
  ts_chat_page_set_prompt (page, prompt);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  g_assert_true (ts_chat_page_get_busy (page));
  wait_until (page_idle, page, "both panes");
}

/* Both replies carry the same note and the text of @adapter's reply. */
/* The conversation read back from history.sqlite shows the same note. */
static void
check_note_kept (TsChatPage *page, const char *shown)
{
  g_autofree char *note = g_strdup (shown);   /* @shown may belong to the reply replaced */
  g_autoptr (GError) error = NULL;

  g_assert_true (ts_chat_page_load_conversation (page, ts_chat_page_get_conversation (page),
                                                 &error));
  g_assert_no_error (error);
  g_assert_cmpstr (ts_chat_pane_get_reply_note (ts_chat_page_get_pane (page, FALSE)), ==, note);
  g_assert_cmpstr (ts_chat_pane_get_reply_note (ts_chat_page_get_pane (page, TRUE)), ==, note);
}

static void
check_turn (TsChatPage *page, const char *note, const char *adapter, const char *prompt)
{
  TsChatPane *plain = ts_chat_page_get_pane (page, FALSE);
  TsChatPane *he = ts_chat_page_get_pane (page, TRUE);
  g_autofree char *expected = reference_reply (adapter, prompt);

  g_test_message ("'%s': %s", prompt, ts_chat_pane_get_reply_note (plain));
  g_assert_cmpstr (ts_chat_pane_get_reply_note (plain), ==, note);
  g_assert_cmpstr (ts_chat_pane_get_reply_note (he), ==, note);
  g_assert_cmpstr (ts_chat_pane_get_reply (plain), ==, expected);
  g_assert_cmpstr (ts_chat_pane_get_reply (he), ==, expected);
  g_assert_null (ts_chat_pane_get_reply_error (he));
  check_note_kept (page, note);
}

/* ---- routing --------------------------------------------------------------- */

static void
test_labelled_prompts (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  g_autofree char *pirate = adapter_path ("tiny-pirate");
  g_autofree char *formal = adapter_path ("tiny-formal");
  g_autofree char *demo = demo_file ("tiny-qwen35moe-lora-f32.gguf");
  const char *embedded = "Arr, where be the captain's hat hiding today?";
  const char *note;
  double score = 0;

  g_assert_cmpstr (ts_chat_page_get_adapter_override (page), ==, "");
  g_assert_cmpstr (gtk_menu_button_get_label (ts_chat_page_get_picker (page, TRUE)), ==,
                   "Automatic");
  send_alone (page, PIRATE_PROMPT);
  check_turn (page, "routed to: tiny-pirate, 1.00 (keyword)", pirate, PIRATE_PROMPT);
  gui_save_screenshot (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))),
                       "screenshot-chat-routing.png");
  send_alone (page, "Draft a formal letter to the landlord.");
  check_turn (page, "routed to: tiny-formal, 1.00 (keyword)", formal,
              "Draft a formal letter to the landlord.");
  /* No keyword: the base model's embedding, close to a pirate example. */
  send_alone (page, embedded);
  note = ts_chat_pane_get_reply_note (ts_chat_page_get_pane (page, FALSE));
  g_assert_cmpint (sscanf (note, "routed to: tiny-pirate, %lf (embedding)", &score), ==, 1);
  g_assert_cmpfloat (score, >=, 0.3);
  g_assert_cmpfloat (score, <=, 1.0);
  check_turn (page, note, pirate, embedded);
  /* Nothing fits: the current adapter (the demo one) answers, and says so. */
  send_alone (page, "How tall is the tallest mountain?");
  check_turn (page, "not routed: no adapter fits, kept Demo Adapter", demo,
              "How tall is the tallest mountain?");
  quit_app (app);
}

/* Picking an adapter fixes it for every turn, remembered in the settings;
 * "Automatic" routes again. */
static void
test_override (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autoptr (TsApplication) app2 = NULL;
  TsChatPage *page = start_app (app);
  GSettings *settings = ts_settings_get_gsettings (ts_application_get_settings (app));
  GtkMenuButton *picker = ts_chat_page_get_picker (page, TRUE);
  g_autofree char *pirate = adapter_path ("tiny-pirate");
  g_autofree char *formal = adapter_path ("tiny-formal");
  g_autofree char *stored = NULL;

  /* Through the window's header, which mirrors the page's picker. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))),
                                             "chat.route-adapter", "s", "tiny-formal"));
  stored = g_settings_get_string (settings, "chat-adapter-override");
  g_assert_cmpstr (stored, ==, "tiny-formal");
  wait_until (adapter_selected, &(AdapterWait) { page, formal }, "the adapter switch");
  g_assert_cmpstr (gtk_menu_button_get_label (picker), ==, "tiny-formal");
  send_alone (page, PIRATE_PROMPT);
  check_turn (page, "routed to: tiny-formal, 1.00 (your choice)", formal, PIRATE_PROMPT);
  quit_app (app);

  /* A new instance remembers the choice. */
  app2 = ts_application_new (G_APPLICATION_NON_UNIQUE);
  page = start_app (app2);
  settings = ts_settings_get_gsettings (ts_application_get_settings (app2));
  g_assert_cmpstr (ts_chat_page_get_adapter_override (page), ==, "tiny-formal");
  wait_until (adapter_selected, &(AdapterWait) { page, formal }, "the remembered adapter");
  send_alone (page, PIRATE_PROMPT);
  check_turn (page, "routed to: tiny-formal, 1.00 (your choice)", formal, PIRATE_PROMPT);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.route-adapter", "s", ""));
  g_clear_pointer (&stored, g_free);
  stored = g_settings_get_string (settings, "chat-adapter-override");
  g_assert_cmpstr (stored, ==, "");
  g_assert_cmpstr (gtk_menu_button_get_label (ts_chat_page_get_picker (page, TRUE)), ==,
                   "Automatic");
  send_alone (page, PIRATE_PROMPT);
  check_turn (page, "routed to: tiny-pirate, 1.00 (keyword)", pirate, PIRATE_PROMPT);
  quit_app (app2);
}

/* ---- the privacy budget against a real evaluator ---------------------------- */

typedef struct {
  GuiEvaluator server;
  char *dir;
  char *state;
} Evaluator;

/* tensafe-he-server on 127.0.0.1:0 over both adapters, with a budget of
 * @epsilon per client and its state in e->state. */
static void
evaluator_start (Evaluator *e, double epsilon)
{
  g_autofree char *model = demo_file ("tiny-qwen35moe-f32.gguf");
  g_autofree char *budget = g_strdup_printf ("%.17g,%g", epsilon, DELTA);
  const char *args[] = { "--model", model, "--threads", "2", "--privacy-budget", budget,
                         "--privacy-state", e->state, NULL };

  gui_evaluator_start (&e->server, e->dir, args);
}

/* A key on the Keys page's vault: the budget then adds up across turns. */
static void
unlock_a_key (TsApplication *app)
{
  TsKeyVault *vault = ts_application_get_key_vault (app);
  g_autoptr (GAsyncResult) result = NULL;
  g_autoptr (GError) error = NULL;

  ts_key_vault_generate_async (vault, "fast", "a passphrase", NULL, gui_store_result, &result);
  wait_until (gui_have_result, &result, "the key");
  g_assert_true (ts_key_vault_generate_finish (vault, result, &error));
  g_assert_no_error (error);
}

/* Sends @prompt in the current conversation; returns the HE pane's error
 * (NULL when it answered). */
static const char *
send_private (TsChatPage *page, const char *prompt)
{
  ts_chat_page_set_prompt (page, prompt);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  wait_until (page_idle, page, "both panes");
  return ts_chat_pane_get_reply_error (ts_chat_page_get_pane (page, TRUE));
}

static void
test_privacy_budget (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autofree char *pirate_dir = NULL;
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) turns = NULL;
  Evaluator e = { 0 };
  TsChatPage *page;
  TsChatPane *plain, *he;
  GSettings *settings;
  const char *refused;
  double eps1, eps2, rho1, rho2, tight;

  e.dir = g_dir_make_tmp ("tensafe-evaluator-XXXXXX", &error);
  g_assert_no_error (error);
  e.state = g_build_filename (e.dir, "privacy.tsv", NULL);
  install_adapter (e.dir, "tiny-pirate", pirate_metadata);
  install_adapter (e.dir, "tiny-formal", formal_metadata);
  evaluator_start (&e, 50.0);

  page = start_app (app);
  plain = ts_chat_page_get_pane (page, FALSE);
  he = ts_chat_page_get_pane (page, TRUE);
  settings = ts_settings_get_gsettings (ts_application_get_settings (app));
  unlock_a_key (app);
  g_settings_set_string (settings, "evaluator-url", e.server.ws_url);
  g_settings_set_string (settings, "evaluator-mode", "remote");
  g_settings_set_boolean (settings, "evaluator-private", TRUE);
  g_settings_set_double (settings, "privacy-rho", 1e-4);

  g_assert_null (ts_chat_pane_get_privacy_text (he));
  g_assert_null (send_private (page, PIRATE_PROMPT));
  eps1 = ts_chat_pane_get_privacy_epsilon (he);
  g_test_message ("after one turn: %s", ts_chat_pane_get_privacy_text (he));
  g_assert_cmpfloat (eps1, >, 0);
  g_assert_true (g_str_has_prefix (ts_chat_pane_get_privacy_text (he), "privacy spent: ε "));
  g_assert_nonnull (strstr (ts_chat_pane_get_privacy_text (he), " of 50 "));
  g_assert_cmpstr (ts_chat_pane_get_reply_note (he), ==, "routed to: tiny-pirate, 1.00 (keyword)");
  /* DP noise of this size changes the text (docs/security.md §3): an
   * answer, not the plaintext one. */
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (he), >, 0);
  /* The plaintext pane is not private: no budget line there. */
  g_assert_null (ts_chat_pane_get_privacy_text (plain));

  g_assert_null (send_private (page, "Draft a formal letter to the landlord."));
  eps2 = ts_chat_pane_get_privacy_epsilon (he);
  g_test_message ("after two turns: %s", ts_chat_pane_get_privacy_text (he));
  g_assert_cmpfloat (eps2, >, eps1);
  gui_save_screenshot (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))),
                       "screenshot-chat-private.png");

  /* The same spent budget (the state file) under a budget that leaves half
   * a turn: the next turn is refused. */
  gui_evaluator_stop (&e.server);
  rho1 = ts_privacy_rho_for_epsilon (eps1, DELTA);
  rho2 = ts_privacy_rho_for_epsilon (eps2, DELTA);
  tight = ts_privacy_epsilon (rho2 + rho1 / 2, DELTA);
  evaluator_start (&e, tight);
  g_settings_set_string (settings, "evaluator-url", e.server.ws_url);
  refused = send_private (page, PIRATE_PROMPT);
  g_test_message ("refused: %s", refused);
  g_assert_nonnull (refused);
  g_assert_true (g_str_has_prefix (refused, "The evaluator refused this answer: the privacy "
                                            "budget of this key is spent"));
  /* Nothing lost: the plaintext pane answered and both panes show the
   * turn, left out of the conversation on both sides (one side failed), so
   * the next turn starts from the same history in both. */
  g_assert_null (ts_chat_pane_get_reply_error (plain));
  g_assert_cmpuint (strlen (ts_chat_pane_get_reply (plain)), >, 0);
  g_assert_nonnull (strstr (ts_chat_pane_get_reply_note (he), "Left out of the conversation"));
  g_assert_nonnull (strstr (ts_chat_pane_get_reply_note (plain), "Left out of the conversation"));
  turns = ts_chat_pane_get_turns (he);
  g_assert_cmpuint (turns->len, ==, 4);
  g_autoptr (GPtrArray) plain_turns = ts_chat_pane_get_turns (plain);
  g_assert_cmpuint (plain_turns->len, ==, 4);
  g_assert_cmpfloat (ts_chat_pane_get_privacy_epsilon (he), >=, eps2);

  /* A cost no single answer fits in (ρ 0.5 per module answer against a
   * fresh budget of ε 5): the first answer is refused, and the message
   * blames the cost and says where to lower it, not a budget "spent" at 0. */
  gui_evaluator_stop (&e.server);
  g_remove (e.state);
  evaluator_start (&e, 5.0);
  g_settings_set_string (settings, "evaluator-url", e.server.ws_url);
  g_settings_set_double (settings, "privacy-rho", 0.5);
  refused = send_private (page, PIRATE_PROMPT);
  g_test_message ("refused at the first answer: %s", refused);
  g_assert_nonnull (refused);
  g_assert_nonnull (strstr (refused, "Lower the cost per answer"));
  g_assert_null (strstr (refused, "is spent"));

  g_settings_reset (settings, "evaluator-mode");
  g_settings_reset (settings, "evaluator-url");
  g_settings_reset (settings, "evaluator-private");
  g_settings_reset (settings, "privacy-rho");
  quit_app (app);
  gui_evaluator_clear (&e.server);
  ts_test_remove_tree (e.dir);
  g_free (e.dir);
  g_free (e.state);
}

int
main (int argc, char **argv)
{
  g_autoptr (TsApplication) app = NULL;
  g_autofree char *data_home = NULL;
  int status;

  g_test_init (&argc, &argv, NULL);
  data_home = g_dir_make_tmp ("tensafe-routing-XXXXXX", NULL);
  g_assert_nonnull (data_home);
  g_setenv ("XDG_DATA_HOME", data_home, TRUE);
  if (!gtk_init_check ())
    {
      status = gui_run_without_display ("/chat-routing/no-display");
      ts_test_remove_tree (data_home);
      return status;
    }
  adw_init ();
  adapters_dir = g_build_filename (data_home, "tensafe", "adapters", NULL);
  install_adapter (adapters_dir, "tiny-pirate", pirate_metadata);
  install_adapter (adapters_dir, "tiny-formal", formal_metadata);
  /* Creating the application registers the resources the templates load from. */
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_test_add_func ("/chat-routing/labelled-prompts", test_labelled_prompts);
  g_test_add_func ("/chat-routing/override", test_override);
  g_test_add_func ("/chat-routing/privacy-budget", test_privacy_budget);
  status = g_test_run ();
  ts_test_remove_tree (data_home);
  g_free (adapters_dir);
  return status;
}
