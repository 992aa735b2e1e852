/* test-wire.c: the pages working together in the real window: the HE pane
 * encrypts under the Keys page's key (lock badge = vault fingerprint) and falls
 * back to an ephemeral key when it is locked; "Use in Chat" on an adapter
 * installed from a real tensafe-marketd selects it in the chat, and the turn
 * is metered to the marketplace; "Reduce Rank…" in its details makes a
 * lower-rank adapter that the engine loads, the chat lists and uses, and
 * refuses bad names, unwritable folders and unreadable adapters; its
 * progress reaches the dialog on the main thread only.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <adwaita.h>

#include <fcntl.h>
#include <glib/gstdio.h>
#include <math.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gui-test-util.h"
#include "market-test-util.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-keys-page-private.h"
#include "ts-market-details.h"
#include "ts-market-install.h"
#include "ts-marketplace-page-private.h"
#include "ts-reduce-dialog-private.h"
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
page_idle (gpointer page)
{
  return !ts_chat_page_get_busy (page);
}

static TsWindow *
start_app (TsApplication *app, TsChatPage **chat_out)
{
  g_assert_true (g_application_register (G_APPLICATION (app), NULL, NULL));
  ts_key_vault_set_kdf (ts_application_get_key_vault (app), &cheap_kdf);
  *chat_out = gui_start_chat (G_APPLICATION (app), 60);
  g_object_set (*chat_out, "max-tokens", 4, "temperature", 0.0, NULL);
  return TS_WINDOW (gtk_widget_get_root (GTK_WIDGET (*chat_out)));
}

static void
quit_app (TsApplication *app)
{
  gui_quit_app (G_APPLICATION (app), 60);
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
  ts_key_vault_generate_async (vault, "fast", "a passphrase", NULL, gui_store_result, &result);
  wait_until (gui_have_result, &result, "the key");
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

/* A menu button's text: its label, or that of the label it holds (the
 * header's pickers hold their own, to shorten long names). */
static const char *
menu_button_text (GtkMenuButton *button)
{
  GtkWidget *child = gtk_menu_button_get_child (button);
  if (GTK_IS_LABEL (child))
    return gtk_label_get_text (GTK_LABEL (child));
  return gtk_menu_button_get_label (button);
}

static gboolean
is_menu_button_labelled (GtkWidget *widget, gconstpointer label)
{
  return GTK_IS_MENU_BUTTON (widget)
         && g_strcmp0 (menu_button_text (GTK_MENU_BUTTON (widget)), label) == 0;
}

static gboolean
is_row_titled (GtkWidget *widget, gconstpointer title)
{
  return ADW_IS_PREFERENCES_ROW (widget)
         && g_strcmp0 (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (widget)), title) == 0;
}

static gboolean
is_label_with_text (GtkWidget *widget, gconstpointer text)
{
  return GTK_IS_LABEL (widget) && g_strcmp0 (gtk_label_get_text (GTK_LABEL (widget)), text) == 0;
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
  g_assert_cmpstr (menu_button_text (mirror), ==, "tiny-pirate");
  g_assert_true (gtk_menu_button_get_menu_model (mirror) == gtk_menu_button_get_menu_model (picker));
  g_assert_true (gtk_widget_is_visible (GTK_WIDGET (mirror)));
  g_assert_false (gtk_widget_is_visible (GTK_WIDGET (picker)));
  ts_window_set_visible_page (window, "keys");
  g_assert_false (gtk_widget_is_visible (GTK_WIDGET (mirror)));
  ts_window_set_visible_page (window, "chat");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (mirror), "chat.use-demo", NULL));
  wait_until (adapter_selected, &demo, "the demo adapter again");
  g_assert_cmpstr (menu_button_text (mirror), ==, "Demo Adapter");
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
  wait_until (gui_message_dialog_shown, NULL, "the trust dialog");
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

/* ---- Reduce Rank ----------------------------------------------------------- */

static char *
adapters_dir (void)
{
  return g_build_filename (g_get_user_data_dir (), "tensafe", "adapters", NULL);
}

static TsReduceDialog *
find_reduce_dialog (void)
{
  g_autoptr (GList) windows = gtk_window_list_toplevels ();

  for (GList *l = windows; l != NULL; l = l->next)
    if (TS_IS_REDUCE_DIALOG (l->data) && gtk_widget_get_visible (l->data))
      return l->data;
  return NULL;
}

static gboolean
reduce_dialog_shown (gpointer unused)
{
  return find_reduce_dialog () != NULL;
}

static gboolean
reduce_settled (gpointer dialog)
{
  return !ts_reduce_dialog_get_busy (dialog);
}

/* Opens the dialog from the details' "Reduce Rank…" button. */
static TsReduceDialog *
open_reduce_dialog (TsMarketDetails *details)
{
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (details), "Re_duce Rank…"), "clicked");
  wait_until (reduce_dialog_shown, NULL, "the reduce dialog");
  return find_reduce_dialog ();
}

/* Starts @app and installs tiny-poet from its marketplace page; returns
 * the adapter's details view. */
static TsMarketDetails *
install_poet (TsApplication *app)
{
  TsChatPage *chat = NULL;
  TsWindow *window = start_app (app, &chat);
  TsMarketplacePage *market;

  ts_window_set_visible_page (window, "market");
  market = TS_MARKETPLACE_PAGE (gui_find_descendant (GTK_WIDGET (window),
                                                     TS_TYPE_MARKETPLACE_PAGE));
  wait_until (catalogue_settled, market, "the catalogue");
  return install (market, "tiny-poet");
}

/* Starts the reduction as the "Reduce" button does, and waits for its end. */
static void
run_reduction (TsReduceDialog *dialog)
{
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (dialog), "_Reduce"), "clicked");
  wait_until (reduce_settled, dialog, "the reduction");
}

/* The folders under @dir that are not hidden (staging folders are). */
static guint
count_folders (const char *dir)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;
  guint n = 0;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_assert_false (g_str_has_prefix (name, ".reducing-"));
      n += name[0] != '.';
    }
  return n;
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* The energies the dialog reports, in its result and in its list of
 * modules, are the engine's singular values' (of the source adapter). */
static void
check_reported_energies (TsReduceDialog *dialog, const char *source, guint rank)
{
  const TsAdapterReduction *red = _ts_reduce_dialog_get_result (dialog);
  g_autofree char *model = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
  g_autoptr (GArray) want = market_lora_kept_fractions (model, source, rank, NULL);
  g_autoptr (GArray) got = g_array_new (FALSE, FALSE, sizeof (double));
  GtkWidget *group = _ts_reduce_dialog_get_modules_group (dialog);

  g_assert_cmpuint (red->modules->len, ==, want->len);
  for (guint i = 0; i < red->modules->len; i++)
    {
      const TsReducedModule *m = &g_array_index (red->modules, TsReducedModule, i);
      double frac = m->energy_kept / m->energy_total;
      GtkWidget *row = gui_find_widget (group, is_row_titled, m->name);
      g_autofree char *shown = g_strdup_printf ("%.2f %%", 100.0 * frac);

      g_assert_nonnull (row);
      g_assert_nonnull (gui_find_widget (row, is_label_with_text, shown));
      g_array_append_val (got, frac);
    }
  g_array_sort (got, compare_doubles);
  for (guint i = 0; i < got->len; i++)
    g_assert_cmpfloat (fabs (g_array_index (got, double, i) - g_array_index (want, double, i)),
                       <, 1e-9);
  g_assert_cmpfloat (red->retained_min, ==, g_array_index (got, double, 0));
  g_assert_cmpfloat (red->retained_min, <, 1.0);
  g_assert_cmpint (red->bytes_out, <, red->bytes_in);
}

/* The chat's adapter menu offers @path. */
static gboolean
menu_offers (GMenuModel *menu, const char *path)
{
  for (int i = 0; i < g_menu_model_get_n_items (menu); i++)
    {
      g_autoptr (GMenuModel) section = g_menu_model_get_item_link (menu, i, G_MENU_LINK_SECTION);
      g_autoptr (GVariant) target = g_menu_model_get_item_attribute_value (
        menu, i, G_MENU_ATTRIBUTE_TARGET, G_VARIANT_TYPE_STRING);

      if (target != NULL && g_str_equal (g_variant_get_string (target, NULL), path))
        return TRUE;
      if (section != NULL && menu_offers (section, path))
        return TRUE;
    }
  return FALSE;
}

static gboolean
usage_queued (gpointer usage)
{
  return ts_market_usage_get_pending (usage) > 0;
}

/* tiny-poet (rank 8) → 4 from its details: the result, the engine, the
 * installed list, the chat's picker, a turn with it, and its metering as
 * tiny-poet. */
static void
test_reduce_rank (void)
{
  const char *imports[] = { market_demo_dir (), NULL };
  MarketServer *server = market_server_start (imports, "demo-account " USAGE_TOKEN "\n");
  g_autoptr (TsApplication) app = NULL;
  g_autoptr (GAsyncResult) result = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *store = adapters_dir ();
  g_autofree char *source = g_build_filename (store, "tiny-poet", NULL);
  g_autofree char *reduced = g_build_filename (store, "tiny-poet-r4", NULL);
  g_autofree char *model = NULL;
  g_autoptr (GArray) ranks = NULL;
  TsChatPage *chat = NULL;
  TsMarketplacePage *market;
  TsMarketDetails *details;
  TsReduceDialog *dialog;
  TsMarketUsage *usage;
  TsWindow *window;
  AdapterWait selected;
  double lower, upper;
  guint max_rank = 0;

  g_setenv ("TENSAFE_MARKETPLACE_URL", server->url, TRUE);
  g_setenv ("TENSAFE_MARKET_TOKEN", USAGE_TOKEN, TRUE);
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  window = start_app (app, &chat);
  ts_window_set_visible_page (window, "market");
  market = TS_MARKETPLACE_PAGE (gui_find_descendant (GTK_WIDGET (window),
                                                     TS_TYPE_MARKETPLACE_PAGE));
  wait_until (catalogue_settled, market, "the catalogue");
  usage = _ts_marketplace_page_get_usage (market);
  ts_market_usage_set_timing (usage, 600000, 1000, 300000);
  details = install (market, "tiny-poet");

  /* The dialog proposes half the rank, bounded by 1 … 7, and a name. */
  dialog = open_reduce_dialog (details);
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "setup");
  gtk_spin_button_get_range (_ts_reduce_dialog_get_rank_spin (dialog), &lower, &upper);
  g_assert_cmpfloat (lower, ==, 1);
  g_assert_cmpfloat (upper, ==, 7);
  g_assert_cmpint (gtk_spin_button_get_value_as_int (_ts_reduce_dialog_get_rank_spin (dialog)),
                   ==, 4);
  g_assert_cmpstr (gtk_editable_get_text (_ts_reduce_dialog_get_name_entry (dialog)), ==,
                   "tiny-poet-r4");
  gui_save_screenshot (GTK_WIDGET (dialog), "screenshot-reduce-setup.png");
  run_reduction (dialog);
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "done");
  g_assert_null (_ts_reduce_dialog_get_error (dialog));
  g_assert_cmpstr (_ts_reduce_dialog_get_result (dialog)->path, ==, reduced);
  g_assert_cmpuint (_ts_reduce_dialog_get_result (dialog)->rank_out, ==, 4);
  gui_save_screenshot (GTK_WIDGET (dialog), "screenshot-reduce.png");

  /* On disk, for the engine: rank 4 in every module, energies as reported. */
  g_assert_cmpuint (count_folders (store), ==, 2);
  check_reported_energies (dialog, source, 4);
  model = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
  ranks = market_lora_kept_fractions (model, reduced, 4, &max_rank);
  g_assert_cmpuint (max_rank, ==, 4);
  for (guint i = 0; i < ranks->len; i++)
    g_assert_cmpfloat (g_array_index (ranks, double, i), >, 1.0 - 1e-9);   /* nothing to drop */

  /* In the installed list at once, under the name it was given. */
  g_assert_nonnull (gui_find_widget (GTK_WIDGET (_ts_marketplace_page_get_installed_list (market)),
                                     is_row_titled, "Verse and rhyme (tiny), rank 4"));

  /* Use in Chat: the chat shows, checks it and uses it; its picker lists it. */
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (dialog), "_Use in Chat"), "clicked");
  g_assert_cmpstr (ts_window_get_visible_page (window), ==, "chat");
  selected = (AdapterWait) { chat, "/tiny-poet-r4" };
  wait_until (adapter_selected, &selected, "the reduced adapter in the chat");
  g_assert_true (menu_offers (gtk_menu_button_get_menu_model (ts_chat_page_get_picker (chat, TRUE)),
                              reduced));
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 0);
  send_and_compare (chat);

  /* Metered as tiny-poet: the server takes only adapters it lists. */
  wait_until (usage_queued, usage, "the usage record");
  ts_market_usage_flush_async (usage, NULL, market_store_result, &result);
  market_wait (&result);
  g_assert_true (ts_market_usage_flush_finish (usage, result, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 0);

  /* Its details come from its own files and say where it came from. */
  ts_window_set_visible_page (window, "market");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (market), "market.show-details", "s",
                                             "tiny-poet-r4"));
  wait_until (details_loaded, details, "the reduced adapter's details");
  g_assert_cmpstr (ts_market_details_get_adapter (details)->name, ==,
                   "Verse and rhyme (tiny), rank 4");
  g_assert_true (ts_market_details_get_installed (details));
  g_assert_false (gtk_widget_get_visible (gui_find_button (GTK_WIDGET (details), "_Reinstall")));
  g_assert_nonnull (gui_find_widget (GTK_WIDGET (details), is_row_titled, "Reduced From"));
  gui_save_screenshot (GTK_WIDGET (window), "screenshot-market-reduced.png");
  quit_app (app);
  g_unsetenv ("TENSAFE_MARKETPLACE_URL");
  g_unsetenv ("TENSAFE_MARKET_TOKEN");
  market_server_stop (server);
}

static void
answer (const char *label)
{
  AdwMessageDialog *question;

  wait_until (gui_message_dialog_shown, NULL, "the question");
  question = gui_find_message_dialog ();
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (question), label), "clicked");
}

/* A file replaced by a FIFO: whoever reads it waits until it is fed. */
typedef struct
{
  char *path;
  char *contents;
  int fd;
} HeldFile;

static void
hold_keyring (HeldFile *held)
{
  held->path = g_build_filename (g_get_user_data_dir (), "tensafe", "market-keyring.json", NULL);
  g_assert_true (g_file_get_contents (held->path, &held->contents, NULL, NULL));
  g_assert_cmpint (g_unlink (held->path), ==, 0);
  g_assert_cmpint (mkfifo (held->path, 0600), ==, 0);
}

/* A writer can open the FIFO once the reader has it open. */
static gboolean
fifo_opened (gpointer data)
{
  HeldFile *held = data;

  held->fd = open (held->path, O_WRONLY | O_NONBLOCK);
  return held->fd >= 0;
}

/* Feeds the waiting reader the old contents, and puts the file back. */
static void
release_keyring (HeldFile *held)
{
  wait_until (fifo_opened, held, "the worker reading the keyring");
  g_assert_cmpint (write (held->fd, held->contents, strlen (held->contents)), ==,
                   (gssize) strlen (held->contents));
  close (held->fd);
  g_assert_cmpint (g_unlink (held->path), ==, 0);
  g_assert_true (g_file_set_contents (held->path, held->contents, -1, NULL));
  g_clear_pointer (&held->path, g_free);
  g_clear_pointer (&held->contents, g_free);
}

/* A bad name, an unwritable folder, a name in use (asked before replacing),
 * a cancel and an unreadable adapter: each explained, nothing half-written. */
static void
test_reduce_errors (void)
{
  const char *imports[] = { market_demo_dir (), NULL };
  MarketServer *server = market_server_start (imports, NULL);
  g_autoptr (TsApplication) app = NULL;
  g_autofree char *store = adapters_dir ();
  g_autofree char *root = g_path_get_dirname (g_get_user_data_dir ());
  g_autofree char *blocker = g_build_filename (root, "a-file", NULL);
  g_autofree char *unwritable = g_build_filename (blocker, "adapters", NULL);
  g_autofree char *taken = g_build_filename (store, "tiny-poet-r2", NULL);
  g_autofree char *marker = g_build_filename (taken, "old-file", NULL);
  g_autofree char *weights = g_build_filename (store, "tiny-poet", "adapter_model.safetensors",
                                               NULL);
  TsMarketDetails *details;
  TsReduceDialog *dialog;
  GtkSpinButton *spin;
  GtkEditable *name;
  HeldFile held = { 0 };

  g_setenv ("TENSAFE_MARKETPLACE_URL", server->url, TRUE);
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  details = install_poet (app);
  dialog = open_reduce_dialog (details);
  spin = _ts_reduce_dialog_get_rank_spin (dialog);
  name = _ts_reduce_dialog_get_name_entry (dialog);

  /* The rank cannot reach the adapter's own. */
  gtk_spin_button_set_value (spin, 8);
  g_assert_cmpint (gtk_spin_button_get_value_as_int (spin), ==, 7);
  gtk_spin_button_set_value (spin, 2);
  g_assert_cmpstr (gtk_editable_get_text (name), ==, "tiny-poet-r2");

  /* A name that is no folder name cannot be used. */
  gtk_editable_set_text (name, "../escape");
  g_assert_false (gtk_widget_get_sensitive (gui_find_button (GTK_WIDGET (dialog), "_Reduce")));
  gtk_editable_set_text (name, "tiny-poet");
  g_assert_false (gtk_widget_get_sensitive (gui_find_button (GTK_WIDGET (dialog), "_Reduce")));
  gtk_editable_set_text (name, "tiny-poet-r2");

  /* A folder that cannot be made: explained, nothing written. */
  g_assert_true (g_file_set_contents (blocker, "not a folder", -1, NULL));
  _ts_reduce_dialog_set_location (dialog, unwritable);
  run_reduction (dialog);
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "setup");
  g_assert_nonnull (_ts_reduce_dialog_get_error (dialog));
  g_assert_nonnull (strstr (_ts_reduce_dialog_get_error (dialog), unwritable));
  g_assert_false (g_file_test (unwritable, G_FILE_TEST_EXISTS));
  gui_save_screenshot (GTK_WIDGET (dialog), "screenshot-reduce-error.png");
  _ts_reduce_dialog_set_location (dialog, store);
  g_assert_null (_ts_reduce_dialog_get_error (dialog));

  /* A name in use: asked first; declined, nothing changes; accepted, replaced. */
  g_assert_cmpint (g_mkdir_with_parents (taken, 0755), ==, 0);
  g_assert_true (g_file_set_contents (marker, "old", -1, NULL));
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (dialog), "_Reduce"), "clicked");
  answer ("_Cancel");
  g_assert_false (ts_reduce_dialog_get_busy (dialog));
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "setup");
  g_assert_true (g_file_test (marker, G_FILE_TEST_EXISTS));
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (dialog), "_Reduce"), "clicked");
  answer ("_Replace");
  wait_until (reduce_settled, dialog, "the reduction");
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "done");
  g_assert_false (g_file_test (marker, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (count_folders (store), ==, 2);
  gtk_window_close (GTK_WINDOW (dialog));

  /* Cancel while it runs: the worker is held reading the pinned keys (a FIFO
   * here) until Cancel was pressed; then nothing is written. */
  dialog = open_reduce_dialog (details);
  hold_keyring (&held);
  gtk_spin_button_set_value (_ts_reduce_dialog_get_rank_spin (dialog), 3);
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (dialog), "_Reduce"), "clicked");
  g_assert_true (ts_reduce_dialog_get_busy (dialog));
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "running");
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (dialog), "_Cancel"), "clicked");
  release_keyring (&held);
  wait_until (reduce_settled, dialog, "the cancelled reduction");
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "setup");
  g_assert_null (_ts_reduce_dialog_get_error (dialog));
  g_assert_null (_ts_reduce_dialog_get_result (dialog));
  g_assert_cmpuint (count_folders (store), ==, 2);
  gtk_window_close (GTK_WINDOW (dialog));

  /* An adapter whose files are damaged cannot be reduced, and says why. */
  g_assert_true (g_file_set_contents (weights, "damaged", -1, NULL));
  dialog = open_reduce_dialog (details);
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "problem");
  g_assert_false (gtk_widget_get_visible (gui_find_button (GTK_WIDGET (dialog), "_Reduce")));
  gtk_window_close (GTK_WINDOW (dialog));
  g_assert_cmpuint (count_folders (store), ==, 2);
  quit_app (app);
  g_unsetenv ("TENSAFE_MARKETPLACE_URL");
  market_server_stop (server);
}

/* The worker's progress reaches the dialog through the main loop only:
 * while the main thread runs no iteration the default context is free for
 * the worker to acquire, and the progress bar still must not move until
 * the main thread iterates again (GTK is not thread-safe). */
static void
test_reduce_progress (void)
{
  const char *imports[] = { market_demo_dir (), NULL };
  MarketServer *server = market_server_start (imports, NULL);
  g_autoptr (TsApplication) app = NULL;
  g_autofree char *store = adapters_dir ();
  g_autofree char *reduced = g_build_filename (store, "tiny-poet-r4", NULL);
  gint64 deadline;
  TsReduceDialog *dialog;
  GtkProgressBar *bar;

  g_setenv ("TENSAFE_MARKETPLACE_URL", server->url, TRUE);
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  dialog = open_reduce_dialog (install_poet (app));
  bar = GTK_PROGRESS_BAR (gui_find_descendant (GTK_WIDGET (dialog), GTK_TYPE_PROGRESS_BAR));
  g_assert_nonnull (bar);

  /* From the click until the new adapter is in place: no iteration. */
  g_signal_emit_by_name (gui_find_button (GTK_WIDGET (dialog), "_Reduce"), "clicked");
  deadline = g_get_monotonic_time () + 60 * G_USEC_PER_SEC;
  while (!g_file_test (reduced, G_FILE_TEST_IS_DIR))
    {
      g_assert_cmpint (g_get_monotonic_time (), <, deadline);
      g_usleep (2000);
    }
  g_assert_cmpfloat (gtk_progress_bar_get_fraction (bar), ==, 0.0);
  g_assert_cmpstr (gtk_progress_bar_get_text (bar), ==, "Checking the adapter…");

  wait_until (reduce_settled, dialog, "the reduction");
  g_assert_cmpstr (_ts_reduce_dialog_get_page (dialog), ==, "done");
  g_assert_cmpstr (_ts_reduce_dialog_get_result (dialog)->path, ==, reduced);
  quit_app (app);
  g_unsetenv ("TENSAFE_MARKETPLACE_URL");
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
  g_test_add_func ("/wire/reduce-rank", test_reduce_rank);
  g_test_add_func ("/wire/reduce-errors", test_reduce_errors);
  g_test_add_func ("/wire/reduce-progress", test_reduce_progress);
  status = g_test_run ();
  market_rm_rf (root);
  return status;
}
