/* test-wire.c: the pages working together in the real window: the HE pane
 * encrypts under the Keys page's key (lock badge = vault fingerprint) and falls
 * back to an ephemeral key when it is locked; "Use in Chat" on an adapter
 * installed from a real tensafe-marketd selects it in the chat, and the turn
 * is metered to the marketplace.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <adwaita.h>

#include "gui-test-util.h"
#include "market-test-util.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-keys-page-private.h"
#include "ts-market-details.h"
#include "ts-marketplace-page-private.h"
#include "ts-window.h"

#define PROMPT "Tell me about encrypted adapters."
#define USAGE_TOKEN "wire-test-token-0123456789abcdef"

static const TsScryptParams cheap_kdf = { .log2_n = 10, .r = 8, .p = 1 };

static void
wait_until (GuiCondition condition, gpointer data, const char *what)
{
  gui_wait_until (condition, data, 60, what);
}

static gboolean
page_ready (gpointer page)
{
  return ts_chat_page_get_ready (page);
}

static gboolean
page_idle (gpointer page)
{
  return !ts_chat_page_get_busy (page);
}

static gboolean
mapped (gpointer widget)
{
  return gtk_widget_get_mapped (widget);
}

static gboolean
no_windows (gpointer app)
{
  return gtk_application_get_windows (app) == NULL;
}

static TsWindow *
start_app (TsApplication *app, TsChatPage **chat_out)
{
  TsWindow *window;

  g_assert_true (g_application_register (G_APPLICATION (app), NULL, NULL));
  ts_key_vault_set_kdf (ts_application_get_key_vault (app), &cheap_kdf);
  g_application_activate (G_APPLICATION (app));
  window = TS_WINDOW (gtk_application_get_active_window (GTK_APPLICATION (app)));
  wait_until (mapped, window, "the window");
  *chat_out = TS_CHAT_PAGE (gui_find_descendant (GTK_WIDGET (window), TS_TYPE_CHAT_PAGE));
  wait_until (page_ready, *chat_out, "the demo model");
  g_object_set (*chat_out, "max-tokens", 4, "temperature", 0.0, NULL);
  return window;
}

static void
quit_app (TsApplication *app)
{
  g_action_group_activate_action (G_ACTION_GROUP (app), "quit", NULL);
  wait_until (no_windows, app, "the windows to close");
}

/* Sends a prompt through the page's action; both panes finish with the
 * same greedy text. */
static void
send_and_compare (TsChatPage *chat)
{
  TsChatPane *plain = ts_chat_page_get_pane (chat, FALSE);
  TsChatPane *he = ts_chat_page_get_pane (chat, TRUE);

  ts_chat_page_set_prompt (chat, PROMPT);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (chat), "chat.send", NULL));
  wait_until (page_idle, chat, "both panes");
  g_assert_cmpuint (ts_chat_pane_get_n_tokens (he), >, 0);
  g_assert_nonnull (ts_chat_pane_get_reply (he));
  g_assert_cmpstr (ts_chat_pane_get_reply (he), ==, ts_chat_pane_get_reply (plain));
  /* Local evaluation still shows the ciphertext a remote one would move. */
  g_assert_cmpfloat (ts_chat_pane_get_bytes_per_token (he), >, 0);
  g_assert_cmpfloat (ts_chat_pane_get_bytes_per_token (plain), ==, 0);
}

/* ---- the vault's key ---------------------------------------------------- */

static void
store_result (GObject *source, GAsyncResult *result, gpointer data)
{
  *(GAsyncResult **) data = g_object_ref (result);
}

static gboolean
have_result (gpointer data)
{
  return *(GAsyncResult **) data != NULL;
}

static void
dismiss_unlock_prompt (TsWindow *window)
{
  TsKeysPage *keys = TS_KEYS_PAGE (gui_find_descendant (GTK_WIDGET (window), TS_TYPE_KEYS_PAGE));
  AdwMessageDialog *dialog = _ts_keys_page_get_dialog (keys);

  if (dialog == NULL)
    return;
  adw_message_dialog_response (dialog, "cancel");
  while (g_main_context_pending (NULL))
    g_main_context_iteration (NULL, FALSE);
}

static void
test_vault_key (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autoptr (GAsyncResult) result = NULL;
  g_autoptr (GError) error = NULL;
  TsChatPage *chat = NULL;
  TsKeyVault *vault;
  TsChatPane *he;
  TsWindow *window;
  g_autofree char *ephemeral = NULL;

  window = start_app (app, &chat);
  vault = ts_application_get_key_vault (app);
  he = ts_chat_page_get_pane (chat, TRUE);

  /* No key: the answer is encrypted under an ephemeral one. */
  g_assert_cmpint (ts_key_vault_get_state (vault), ==, TS_KEY_STATE_NONE);
  send_and_compare (chat);
  g_assert_true (g_str_has_prefix (ts_chat_pane_get_key_tooltip (he), "Ephemeral key"));
  ephemeral = g_strdup (ts_chat_pane_get_key_fingerprint (he));
  g_assert_nonnull (ephemeral);

  /* A key made (and so unlocked) on the Keys page's vault: the badge follows
   * at once, and the next answer is encrypted under it. */
  ts_key_vault_generate_async (vault, "fast", "a passphrase", NULL, store_result, &result);
  wait_until (have_result, &result, "the key");
  g_assert_true (ts_key_vault_generate_finish (vault, result, &error));
  g_assert_no_error (error);
  g_assert_cmpint (ts_key_vault_get_state (vault), ==, TS_KEY_STATE_UNLOCKED);
  g_assert_cmpstr (ts_chat_pane_get_key_fingerprint (he), ==, ts_key_vault_get_fingerprint (vault));
  send_and_compare (chat);
  g_assert_cmpstr (ts_chat_pane_get_key_fingerprint (he), ==, ts_key_vault_get_fingerprint (vault));
  g_assert_false (g_str_has_prefix (ts_chat_pane_get_key_tooltip (he), "Ephemeral key"));
  gui_save_screenshot (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (chat))),
                       "screenshot-chat-vault.png");

  /* Locked again: back to an ephemeral key. */
  ts_key_vault_lock (vault);
  g_assert_null (ts_chat_pane_get_key_fingerprint (he));
  send_and_compare (chat);
  g_assert_true (g_str_has_prefix (ts_chat_pane_get_key_tooltip (he), "Ephemeral key"));
  g_assert_cmpstr (ts_chat_pane_get_key_fingerprint (he), ==, ephemeral);
  /* The Keys page may have asked for the passphrase of the locked key
   * meanwhile (its start-up prompt runs when the main loop is idle). */
  dismiss_unlock_prompt (window);
  g_assert_true (ts_key_vault_delete (vault, &error));
  g_assert_no_error (error);
  quit_app (app);
}

/* ---- Use in Chat ---------------------------------------------------------- */

static gboolean
dialog_shown (gpointer unused)
{
  return gui_find_message_dialog () != NULL;
}

static gboolean
catalogue_settled (gpointer page)
{
  return !_ts_marketplace_page_get_busy (page);
}

static gboolean
details_loaded (gpointer details)
{
  return ts_market_details_get_adapter (details) != NULL;
}

static gboolean
install_done (gpointer details)
{
  return !ts_market_details_get_installing (details);
}

typedef struct {
  TsChatPage *chat;
  const char *suffix;
} AdapterWait;

static gboolean
adapter_selected (gpointer data)
{
  AdapterWait *w = data;
  const char *path = ts_chat_page_get_adapter_path (w->chat);

  return path != NULL && g_str_has_suffix (path, w->suffix) && ts_chat_page_get_ready (w->chat);
}

static gboolean
is_menu_button_labelled (GtkWidget *widget, gconstpointer label)
{
  return GTK_IS_MENU_BUTTON (widget)
         && g_strcmp0 (gtk_menu_button_get_label (GTK_MENU_BUTTON (widget)), label) == 0;
}

/* The window's header mirrors the chat's adapter picker while the chat is
 * shown, and its menu reaches the chat page's actions. */
static void
check_header_pickers (TsWindow *window, TsChatPage *chat)
{
  GtkWidget *header = gui_find_descendant (GTK_WIDGET (window), ADW_TYPE_HEADER_BAR);
  GtkMenuButton *picker = ts_chat_page_get_picker (chat, TRUE);
  GtkMenuButton *mirror = GTK_MENU_BUTTON (gui_find_widget (header, is_menu_button_labelled,
                                                            gtk_menu_button_get_label (picker)));
  AdapterWait demo = { chat, "tiny-qwen35moe-lora-f32.gguf" };

  g_assert_nonnull (mirror);
  g_assert_cmpstr (gtk_menu_button_get_label (mirror), ==, "tiny-pirate");
  g_assert_true (gtk_menu_button_get_menu_model (mirror) == gtk_menu_button_get_menu_model (picker));
  g_assert_true (gtk_widget_is_visible (GTK_WIDGET (mirror)));
  g_assert_false (gtk_widget_is_visible (GTK_WIDGET (picker)));
  ts_window_set_visible_page (window, "keys");
  g_assert_false (gtk_widget_is_visible (GTK_WIDGET (mirror)));
  ts_window_set_visible_page (window, "chat");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (mirror), "chat.use-demo", NULL));
  wait_until (adapter_selected, &demo, "the demo adapter again");
  g_assert_cmpstr (gtk_menu_button_get_label (mirror), ==, "Demo Adapter");
}

/* Installs @id through the details view, trusting its publisher as a click
 * on "Trust and Install" does. */
static TsMarketDetails *
install (TsMarketplacePage *market, const char *id)
{
  TsMarketDetails *details = _ts_marketplace_page_get_details (market);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (market), "market.show-details", "s", id));
  wait_until (details_loaded, details, "the details");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (details), "details.install", NULL));
  wait_until (dialog_shown, NULL, "the trust dialog");
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (gui_find_message_dialog ()),
                                         "_Trust and Install"),
                         "clicked");
  wait_until (install_done, details, "the install");
  g_assert_true (ts_market_details_get_installed (details));
  return details;
}

static void
test_use_in_chat (void)
{
  const char *imports[] = { market_demo_dir (), NULL };
  MarketServer *server = market_server_start (imports, "demo-account " USAGE_TOKEN "\n");
  g_autoptr (TsApplication) app = NULL;
  g_autoptr (GAsyncResult) result = NULL;
  g_autoptr (GError) error = NULL;
  TsChatPage *chat = NULL;
  TsMarketplacePage *market;
  TsMarketDetails *details;
  TsMarketUsage *usage;
  TsWindow *window;
  AdapterWait selected;

  g_setenv ("TENSAFE_MARKETPLACE_URL", server->url, TRUE);
  g_setenv ("TENSAFE_MARKET_TOKEN", USAGE_TOKEN, TRUE);
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  window = start_app (app, &chat);
  ts_window_set_visible_page (window, "market");
  market = TS_MARKETPLACE_PAGE (gui_find_descendant (GTK_WIDGET (window),
                                                     TS_TYPE_MARKETPLACE_PAGE));
  wait_until (catalogue_settled, market, "the catalogue");
  /* Usage is batched; a long delay lets the test see the queued record. */
  usage = _ts_marketplace_page_get_usage (market);
  g_assert_nonnull (usage);
  ts_market_usage_set_timing (usage, 600000, 1000, 300000);
  details = install (market, "tiny-pirate");

  /* Use in Chat: the chat is shown and, once the adapter is checked, uses it. */
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (details), "_Use in Chat"), "clicked");
  g_assert_cmpstr (ts_window_get_visible_page (window), ==, "chat");
  selected = (AdapterWait) { chat, "/tiny-pirate" };
  wait_until (adapter_selected, &selected, "the marketplace adapter in the chat");
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 0);
  send_and_compare (chat);

  /* The turn was queued for metering, and the server takes it. */
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 1);
  ts_market_usage_flush_async (usage, NULL, market_store_result, &result);
  market_wait (&result);
  g_assert_true (ts_market_usage_flush_finish (usage, result, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 0);
  check_header_pickers (window, chat);
  quit_app (app);
  g_unsetenv ("TENSAFE_MARKETPLACE_URL");
  g_unsetenv ("TENSAFE_MARKET_TOKEN");
  market_server_stop (server);
}

static void
test_no_display (void)
{
  g_test_skip ("no display: run the gui suite under xvfb-run");
}

int
main (int argc, char **argv)
{
  g_autofree char *root = market_tmpdir ();
  g_autofree char *data = g_build_filename (root, "data", NULL);
  g_autofree char *cache = g_build_filename (root, "cache", NULL);
  g_autofree char *config = g_build_filename (root, "config", NULL);
  int status;

  /* Before anything asks GLib for the XDG folders (it keeps the first answer). */
  g_setenv ("XDG_DATA_HOME", data, TRUE);
  g_setenv ("XDG_CACHE_HOME", cache, TRUE);
  g_setenv ("XDG_CONFIG_HOME", config, TRUE);
  g_setenv ("GSETTINGS_BACKEND", "memory", TRUE);
  g_unsetenv ("TENSAFE_MARKETPLACE_URL");
  g_unsetenv ("TENSAFE_MARKET_TOKEN");
  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      g_test_add_func ("/wire/no-display", test_no_display);
      return g_test_run ();
    }
  g_test_add_func ("/wire/vault-key", test_vault_key);
  g_test_add_func ("/wire/use-in-chat", test_use_in_chat);
  status = g_test_run ();
  market_rm_rf (root);
  return status;
}
