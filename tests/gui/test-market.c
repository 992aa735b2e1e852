/* test-market.c: the marketplace page against a real tensafe-marketd: browse,
 * search, details, trust-on-first-install, install, "use in chat", remove (after asking),
 * and the offline banner with the cached catalogue.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * With TS_SCREENSHOT_DIR set, the page is also rendered to PNG files there
 * (used to make docs/screenshot-market.png).
 */
#include <adwaita.h>

#include "gui-test-util.h"
#include "market-test-util.h"
#include "ts-application.h"
#include "ts-market-card.h"
#include "ts-market-install.h"
#include "ts-market-trust.h"
#include "ts-marketplace-page-private.h"

static char *tmp_root;

/* The metering token of the test account. */
#define USAGE_TOKEN "gui-test-token-0123456789abcdef"
#define N_DEMO 6   /* the folders of data/market */

/* Iterates the main loop until @condition holds; fails after 20 s. */
static void
wait_until (GuiCondition condition, gpointer data, const char *what)
{
  gui_wait_until (condition, data, 20, what);
}

static guint
count_children (GtkWidget *widget)
{
  guint n = 0;

  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    n++;
  return n;
}

static TsMarketAdapter *
card_adapter (TsMarketplacePage *page, int index)
{
  GtkFlowBoxChild *child = gtk_flow_box_get_child_at_index (_ts_marketplace_page_get_grid (page),
                                                            index);

  return ts_market_card_get_adapter (TS_MARKET_CARD (gtk_flow_box_child_get_child (child)));
}

static gboolean
page_lists (TsMarketplacePage *page, const char *id)
{
  guint n = count_children (GTK_WIDGET (_ts_marketplace_page_get_grid (page)));

  for (guint i = 0; i < n; i++)
    if (g_strcmp0 (card_adapter (page, (int) i)->id, id) == 0)
      return TRUE;
  return FALSE;
}

/* A page in a window of its own, with the marketplace address in the
 * settings (as the Preferences window writes it). */
static TsMarketplacePage *
show_page_sized (const char *url, guint page_size, GtkWindow **window_out)
{
  g_autoptr (GSettings) settings = g_settings_new ("org.tensafe.Desktop");
  g_autoptr (TsSettings) typed = ts_settings_new (settings);
  GtkWindow *window = GTK_WINDOW (adw_window_new ());
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  GtkWidget *page;

  g_settings_set_string (settings, "marketplace-url", url);
  page = g_object_new (TS_TYPE_MARKETPLACE_PAGE, "settings", typed, NULL);
  g_assert_cmpstr (ts_marketplace_page_get_marketplace_url (TS_MARKETPLACE_PAGE (page)), ==, url);
  _ts_marketplace_page_set_page_size (TS_MARKETPLACE_PAGE (page), page_size);
  gtk_window_set_title (window, "Marketplace");
  gtk_window_set_default_size (window, 1100, 720);
  gtk_widget_set_vexpand (page, TRUE);
  gtk_box_append (GTK_BOX (box), adw_header_bar_new ());
  gtk_box_append (GTK_BOX (box), page);
  adw_window_set_content (ADW_WINDOW (window), box);
  gtk_window_present (window);
  *window_out = window;
  return TS_MARKETPLACE_PAGE (page);
}

static TsMarketplacePage *
show_page (const char *url, GtkWindow **window_out)
{
  return show_page_sized (url, 0, window_out);
}

static gboolean
page_settled (gpointer page)
{
  return !_ts_marketplace_page_get_busy (page);
}

static void
wait_for_catalogue (TsMarketplacePage *page, guint expected)
{
  wait_until (page_settled, page, "the catalogue");
  g_assert_cmpuint (count_children (GTK_WIDGET (_ts_marketplace_page_get_grid (page))), ==,
                    expected);
}

static gboolean
details_loaded (gpointer details)
{
  return ts_market_details_get_adapter (details) != NULL;
}

static GtkWidget *
find_row (GtkWidget *widget, const char *title)
{
  if (ADW_IS_ACTION_ROW (widget)
      && g_strcmp0 (adw_preferences_row_get_title (ADW_PREFERENCES_ROW (widget)), title) == 0)
    return widget;
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    {
      GtkWidget *found = find_row (c, title);

      if (found != NULL)
        return found;
    }
  return NULL;
}

static const char *demo_files[] = { "adapter_config.json", "adapter_model.safetensors" };

/* The details list each published file with the SHA-256 of the catalogue's
 * source file, hashed here independently. */
static void
check_details_files (TsMarketDetails *details, const char *id)
{
  for (guint i = 0; i < G_N_ELEMENTS (demo_files); i++)
    {
      g_autofree char *source = g_build_filename (market_demo_dir (), id, demo_files[i], NULL);
      g_autofree char *sha = ts_sha256_file (source, NULL, NULL, NULL);
      GtkWidget *row = find_row (GTK_WIDGET (details), demo_files[i]);

      g_assert_nonnull (row);
      g_assert_cmpstr (adw_action_row_get_subtitle (ADW_ACTION_ROW (row)), ==, sha);
    }
}

/* Answers the dialog as a click on its button does (which also closes it). */
static void
click_response (AdwMessageDialog *dialog, const char *label)
{
  GtkWidget *button = gui_find_button (GTK_WIDGET (dialog), label);

  g_assert_nonnull (button);
  g_signal_emit_by_name (button, "clicked");
  g_assert_null (gui_find_message_dialog ());
}

static gboolean
install_done (gpointer details)
{
  return !ts_market_details_get_installing (details);
}

static char *
adapters_dir (void)
{
  return g_build_filename (g_get_user_data_dir (), "tensafe", "adapters", NULL);
}

/* Installs through the Install action, answering the trust dialog the way a
 * click on "Trust and Install" does. */
static void
install_with_trust (TsMarketDetails *details)
{
  AdwMessageDialog *dialog;

  g_autofree char *keyring = g_build_filename (g_get_user_data_dir (), "tensafe",
                                               "market-keyring.json", NULL);

  /* Declined: nothing is pinned and nothing installed. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (details), "details.install", NULL));
  wait_until (gui_message_dialog_shown, NULL, "the trust dialog");
  click_response (gui_find_message_dialog (), "_Cancel");
  wait_until (install_done, details, "the declined install");
  g_assert_false (ts_market_details_get_installed (details));
  g_assert_false (g_file_test (keyring, G_FILE_TEST_EXISTS));

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (details), "details.install", NULL));
  wait_until (gui_message_dialog_shown, NULL, "the trust dialog");
  dialog = gui_find_message_dialog ();
  g_assert_true (g_str_has_prefix (adw_message_dialog_get_body (dialog), "“TenSafe Demo Publisher”"));
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), "ed25519:"));
  gui_save_screenshot (GTK_WIDGET (dialog), "screenshot-market-trust.png");
  click_response (dialog, "_Trust and Install");
  wait_until (install_done, details, "the install");
  g_assert_true (ts_market_details_get_installed (details));
  g_assert_cmpfloat (ts_market_details_get_progress (details), ==, 1.0);
}

static void
check_installed_files (const char *id)
{
  g_autofree char *dir = adapters_dir ();
  g_autofree char *keyring_path = g_build_filename (g_get_user_data_dir (), "tensafe",
                                                    "market-keyring.json", NULL);
  g_autoptr (TsMarketKeyring) keyring = ts_market_keyring_new (keyring_path);
  g_autoptr (GError) error = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (demo_files); i++)
    {
      g_autofree char *source = g_build_filename (market_demo_dir (), id, demo_files[i], NULL);
      g_autofree char *installed = g_build_filename (dir, id, demo_files[i], NULL);
      g_autofree char *want = ts_sha256_file (source, NULL, NULL, NULL);
      g_autofree char *got = ts_sha256_file (installed, NULL, NULL, &error);

      g_assert_no_error (error);
      g_assert_cmpstr (got, ==, want);
    }
  /* The key the user trusted was pinned on disk: a fresh keyring verifies. */
  g_assert_true (ts_market_keyring_load (keyring, &error));
  g_assert_true (ts_market_verify_installed (dir, id, keyring, NULL, &error));
  g_assert_no_error (error);
}

static void
use_in_chat_cb (TsMarketplacePage *page, const char *id, const char *path, char **out)
{
  g_free (*out);
  *out = g_strconcat (id, " ", path, NULL);
}

static GtkStack *
find_stack_with (GtkWidget *widget, const char *child_name)
{
  if (GTK_IS_STACK (widget) && gtk_stack_get_child_by_name (GTK_STACK (widget), child_name))
    return GTK_STACK (widget);
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    {
      GtkStack *found = find_stack_with (c, child_name);

      if (found != NULL)
        return found;
    }
  return NULL;
}

/* Shows the catalogue or the installed view, as the view switcher does. */
static void
show_view (TsMarketplacePage *page, const char *view)
{
  gtk_stack_set_visible_child_name (find_stack_with (GTK_WIDGET (page), "browse"), "browse");
  gtk_stack_set_visible_child_name (find_stack_with (GTK_WIDGET (page), "installed"), view);
}

static void
check_installed_view (TsMarketplacePage *page, const char *id, const char *name)
{
  GtkWidget *list = GTK_WIDGET (_ts_marketplace_page_get_installed_list (page));
  g_autofree char *dir = adapters_dir ();
  g_autofree char *expected = g_strdup_printf ("%s %s/%s", id, dir, id);
  g_autofree char *chosen = NULL;

  g_assert_cmpuint (count_children (list), ==, 1);
  g_assert_nonnull (find_row (list, name));
  show_view (page, "installed");
  gui_save_screenshot (gtk_widget_get_ancestor (GTK_WIDGET (page), GTK_TYPE_WINDOW),
                   "screenshot-market-installed.png");
  show_view (page, "catalogue");
  g_signal_connect (page, "use-in-chat", G_CALLBACK (use_in_chat_cb), &chosen);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "market.use-installed", "s", id));
  g_assert_cmpstr (chosen, ==, expected);
  g_signal_handlers_disconnect_by_func (page, use_in_chat_cb, &chosen);
}

/* The installed row's Remove button: it asks about @name; answered with
 * @response. */
static void
answer_remove (TsMarketplacePage *page, const char *id, const char *name, const char *response)
{
  AdwMessageDialog *dialog;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "market.remove-installed", "s",
                                             id));
  wait_until (gui_message_dialog_shown, NULL, "the remove confirmation");
  dialog = gui_find_message_dialog ();
  g_assert_nonnull (strstr (adw_message_dialog_get_heading (dialog), name));
  adw_message_dialog_response (dialog, response);
  gtk_window_destroy (GTK_WINDOW (dialog));
  wait_until (gui_message_dialog_gone, NULL, "the remove confirmation to close");
}

static void
check_remove (TsMarketplacePage *page, const char *id, const char *name)
{
  g_autofree char *dir = adapters_dir ();
  g_autofree char *path = g_build_filename (dir, id, NULL);

  /* It asks first: Cancel keeps the adapter. */
  answer_remove (page, id, name, "cancel");
  g_assert_true (g_file_test (path, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (count_children (GTK_WIDGET (_ts_marketplace_page_get_installed_list (page))),
                    ==, 1);
  answer_remove (page, id, name, "remove");
  g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (count_children (GTK_WIDGET (_ts_marketplace_page_get_installed_list (page))),
                    ==, 0);
}

/* The details' Remove asks the same way. */
static void
check_details_remove (TsMarketplacePage *page, TsMarketDetails *details, const char *id,
                      const char *name)
{
  const char *responses[] = { "cancel", "remove" };
  g_autofree char *dir = adapters_dir ();
  g_autofree char *path = g_build_filename (dir, id, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (responses); i++)
    {
      AdwMessageDialog *dialog;

      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (details), "details.remove", NULL));
      wait_until (gui_message_dialog_shown, NULL, "the remove confirmation");
      dialog = gui_find_message_dialog ();
      g_assert_nonnull (strstr (adw_message_dialog_get_heading (dialog), name));
      g_assert_true (ts_market_details_get_installed (details));
      adw_message_dialog_response (dialog, responses[i]);
      gtk_window_destroy (GTK_WINDOW (dialog));
      wait_until (gui_message_dialog_gone, NULL, "the remove confirmation to close");
    }
  g_assert_false (ts_market_details_get_installed (details));
  g_assert_cmpuint (count_children (GTK_WIDGET (_ts_marketplace_page_get_installed_list (page))),
                    ==, 0);
  g_assert_false (g_file_test (path, G_FILE_TEST_EXISTS));
}

/* The key is pinned now, so Install starts at once; a cancel right away
 * leaves nothing installed, and the next Install completes. */
static void
check_cancel_and_resume (TsMarketDetails *details, const char *id)
{
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (details), "details.install", NULL));
  g_assert_true (ts_market_details_get_installing (details));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (details), "details.cancel", NULL));
  wait_until (install_done, details, "the cancelled install");
  g_assert_false (ts_market_details_get_installed (details));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (details), "details.install", NULL));
  wait_until (install_done, details, "the resumed install");
  g_assert_true (ts_market_details_get_installed (details));
  check_installed_files (id);
}

/* A chat turn's usage reaches the marketplace (the server accepts only
 * records for adapters it has, with the account's token). */
static void
check_usage_report (TsMarketplacePage *page, const char *id)
{
  TsMarketUsage *usage;
  g_autoptr (GAsyncResult) result = NULL;
  g_autoptr (GError) error = NULL;

  g_setenv ("TENSAFE_MARKET_TOKEN", USAGE_TOKEN, TRUE);
  ts_marketplace_page_report_usage (page, id, "1.0.0", 42);
  usage = _ts_marketplace_page_get_usage (page);
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 1);
  ts_market_usage_flush_async (usage, NULL, market_store_result, &result);
  market_wait (&result);
  g_assert_true (ts_market_usage_flush_finish (usage, result, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (ts_market_usage_get_pending (usage), ==, 0);
  g_unsetenv ("TENSAFE_MARKET_TOKEN");
}

static gboolean
banner_shown (gpointer page)
{
  return gtk_revealer_get_reveal_child (_ts_marketplace_page_get_banner (page));
}

static void
close_window (GtkWindow *window)
{
  gtk_window_destroy (window);
  while (g_main_context_pending (NULL))
    g_main_context_iteration (NULL, FALSE);
}

/* Opens the filter bar, as the Filters button does. */
static void
show_filters (TsMarketplacePage *page)
{
  GtkWidget *button = gui_find_button (GTK_WIDGET (page), "_Filters");

  g_assert_nonnull (button);
  gtk_toggle_button_set_active (GTK_TOGGLE_BUTTON (button), TRUE);
}

static void
search (TsMarketplacePage *page, const char *text)
{
  gtk_editable_set_text (_ts_marketplace_page_get_search_entry (page), text);
  /* The search waits for typing to pause. */
  g_assert_true (_ts_marketplace_page_get_busy (page));
}

static void
test_browse_install_remove (void)
{
  const char *imports[] = { market_demo_dir (), NULL };
  MarketServer *server = market_server_start (imports, "demo-account " USAGE_TOKEN "\n");
  GtkWindow *window = NULL;
  TsMarketplacePage *page = show_page (server->url, &window);
  TsMarketDetails *details = _ts_marketplace_page_get_details (page);
  g_autofree char *url = g_strdup (server->url);

  wait_for_catalogue (page, N_DEMO);
  g_assert_false (gtk_revealer_get_reveal_child (_ts_marketplace_page_get_banner (page)));
  show_filters (page);
  gui_save_screenshot (GTK_WIDGET (window), "screenshot-market.png");

  /* Every word must match: "tiny" leaves out the real model's pirate adapter. */
  search (page, "pirate tiny");
  wait_for_catalogue (page, 1);
  g_assert_cmpstr (card_adapter (page, 0)->id, ==, "tiny-pirate");

  g_signal_emit_by_name (_ts_marketplace_page_get_grid (page), "child-activated",
                         gtk_flow_box_get_child_at_index (_ts_marketplace_page_get_grid (page), 0));
  wait_until (details_loaded, details, "the details");
  g_assert_cmpstr (ts_market_details_get_adapter (details)->id, ==, "tiny-pirate");
  check_details_files (details, "tiny-pirate");

  install_with_trust (details);
  check_installed_files ("tiny-pirate");
  gui_save_screenshot (GTK_WIDGET (window), "screenshot-market-details.png");
  g_assert_true (ts_market_card_get_installed (
    TS_MARKET_CARD (gtk_flow_box_child_get_child (
      gtk_flow_box_get_child_at_index (_ts_marketplace_page_get_grid (page), 0)))));
  check_installed_view (page, "tiny-pirate", "Pirate talk (tiny)");
  check_usage_report (page, "tiny-pirate");
  check_remove (page, "tiny-pirate", "Pirate talk (tiny)");
  check_cancel_and_resume (details, "tiny-pirate");
  check_details_remove (page, details, "tiny-pirate", "Pirate talk (tiny)");
  close_window (window);

  /* The server goes away: the catalogue seen before stays browsable under
   * the offline banner. */
  market_server_stop (server);
  page = show_page (url, &window);
  wait_for_catalogue (page, N_DEMO);
  g_assert_true (banner_shown (page));
  g_assert_true (ts_marketplace_page_get_offline (page));
  gui_save_screenshot (GTK_WIDGET (window), "screenshot-market-offline.png");
  details = _ts_marketplace_page_get_details (page);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "market.show-details", "s",
                                             "tiny-pirate"));
  wait_until (details_loaded, details, "the cached details");
  check_details_files (details, "tiny-pirate");
  close_window (window);
}

static void
choose (TsMarketplacePage *page, const char *filter, const char *item)
{
  GtkDropDown *dropdown = _ts_marketplace_page_get_filter (page, filter);
  GListModel *items = gtk_drop_down_get_model (dropdown);

  for (guint i = 0; i < g_list_model_get_n_items (items); i++)
    if (g_strcmp0 (gtk_string_list_get_string (GTK_STRING_LIST (items), i), item) == 0)
      {
        gtk_drop_down_set_selected (dropdown, i);
        g_assert_true (_ts_marketplace_page_get_busy (page));
        return;
      }
  g_error ("no item %s in the %s filter", item, filter);
}

/* Two cards a page: "Load more" follows the cursor; the filter menus offer
 * what the catalogue holds and narrow the list; sorting orders it. */
static void
test_filters_and_pages (void)
{
  const char *imports[] = { market_demo_dir (), NULL };
  MarketServer *server = market_server_start (imports, NULL);
  GtkWindow *window = NULL;
  TsMarketplacePage *page = show_page_sized (server->url, 2, &window);
  g_autoptr (GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

  wait_for_catalogue (page, 2);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "market.load-more", NULL));
  wait_for_catalogue (page, 4);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "market.load-more", NULL));
  wait_for_catalogue (page, 6);
  for (int i = 0; i < 6; i++)
    g_hash_table_add (seen, card_adapter (page, i)->id);
  g_assert_cmpuint (g_hash_table_size (seen), ==, 6);

  choose (page, "license", "MIT");
  wait_for_catalogue (page, 1);
  g_assert_cmpstr (card_adapter (page, 0)->id, ==, "tiny-poet");
  choose (page, "license", "Any License");
  choose (page, "rank", "Rank 16");   /* tiny-formal and the real model's two */
  wait_for_catalogue (page, 2);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "market.load-more", NULL));
  wait_for_catalogue (page, 3);
  g_assert_true (page_lists (page, "tiny-formal"));
  g_assert_true (page_lists (page, "qwen2.5-coder-0.5b-pirate"));
  g_assert_true (page_lists (page, "qwen2.5-coder-0.5b-banking"));
  choose (page, "rank", "Any Rank");
  choose (page, "price", "Up to 0.01");
  choose (page, "sort", "Lowest Price");
  wait_for_catalogue (page, 2);
  g_assert_cmpstr (card_adapter (page, 0)->id, ==, "tiny-golden");
  g_assert_cmpstr (card_adapter (page, 1)->id, ==, "tiny-poet");
  /* The chat's model narrows the list to the adapters made for it. */
  choose (page, "price", "Any Price");
  ts_marketplace_page_set_loaded_model (page, "qwen2.5-coder-0.5b-instruct-q4_k_m");
  wait_for_catalogue (page, 2);
  g_assert_true (page_lists (page, "qwen2.5-coder-0.5b-pirate"));
  g_assert_true (page_lists (page, "qwen2.5-coder-0.5b-banking"));
  close_window (window);
  market_server_stop (server);
}

/* A marketplace never reached: the banner says so and nothing is listed. */
static void
test_unreachable (void)
{
  GtkWindow *window = NULL;
  TsMarketplacePage *page = show_page ("http://127.0.0.1:1/", &window);

  wait_until (banner_shown, page, "the offline banner");
  wait_for_catalogue (page, 0);
  close_window (window);
}

/* Built and dropped without ever being shown: nothing is fetched. */
static void
test_lifecycle (void)
{
  g_autoptr (TsSettings) settings = ts_settings_new_default ();
  GtkWidget *page = g_object_ref_sink (g_object_new (TS_TYPE_MARKETPLACE_PAGE, "settings",
                                                     settings, NULL));

  g_assert_true (_ts_marketplace_page_get_busy (TS_MARKETPLACE_PAGE (page)));
  g_assert_false (ts_marketplace_page_get_offline (TS_MARKETPLACE_PAGE (page)));
  g_assert_finalize_object (page);
}

/* The application loads style.css at startup, which these tests skip. */
static void
load_app_style (void)
{
  g_autoptr (GtkCssProvider) css = gtk_css_provider_new ();

  gtk_css_provider_load_from_resource (css, "/org/tensafe/Desktop/style.css");
  gtk_style_context_add_provider_for_display (gdk_display_get_default (),
                                              GTK_STYLE_PROVIDER (css),
                                              GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
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
  g_autofree char *data = NULL, *cache = NULL, *config = NULL;
  int status;

  /* Before anything asks GLib for the XDG folders (it keeps the first answer). */
  tmp_root = market_tmpdir ();
  data = g_build_filename (tmp_root, "data", NULL);
  cache = g_build_filename (tmp_root, "cache", NULL);
  config = g_build_filename (tmp_root, "config", NULL);
  g_setenv ("XDG_DATA_HOME", data, TRUE);
  g_setenv ("XDG_CACHE_HOME", cache, TRUE);
  g_setenv ("XDG_CONFIG_HOME", config, TRUE);
  g_unsetenv ("TENSAFE_MARKETPLACE_URL");
  g_unsetenv ("TENSAFE_MARKET_TOKEN");

  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      g_test_add_func ("/market-page/no-display", test_no_display);
      return g_test_run ();
    }
  adw_init ();
  /* Creating the application registers the resources the templates load from. */
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  load_app_style ();
  g_test_add_func ("/market-page/lifecycle", test_lifecycle);
  g_test_add_func ("/market-page/browse-install-remove", test_browse_install_remove);
  g_test_add_func ("/market-page/filters-and-pages", test_filters_and_pages);
  g_test_add_func ("/market-page/unreachable", test_unreachable);
  status = g_test_run ();
  market_rm_rf (tmp_root);
  g_free (tmp_root);
  return status;
}
