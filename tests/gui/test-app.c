/* test-app.c: smoke test of the application: the window maps, every page is
 * reachable through its action, About and the shortcuts window open and
 * close, the window size reaches the settings, and quitting closes it all.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * With TS_SCREENSHOT_DIR set, the window is also rendered to PNG files there
 * (used to make docs/screenshot-main.png).
 */
#include <adwaita.h>
#include <glib/gi18n.h>
#include <locale.h>

#include "ts-application.h"
#include "ts-bench-page.h"
#include "ts-chat-page.h"
#include "ts-config.h"
#include "ts-core.h"
#include "ts-gpu.h"
#include "ts-window.h"

#include "gui-test-util.h"
#include "ts-test-util.h"

static gboolean
widget_is_mapped (gpointer widget)
{
  return gtk_widget_get_mapped (GTK_WIDGET (widget));
}

typedef struct {
  GtkApplication *app;
  GType type;
} WindowQuery;

static GtkWindow *
find_app_window (GtkApplication *app, GType type)
{
  for (GList *l = gtk_application_get_windows (app); l != NULL; l = l->next)
    if (G_TYPE_CHECK_INSTANCE_TYPE (l->data, type))
      return l->data;
  return NULL;
}

static gboolean
app_window_shown (gpointer data)
{
  WindowQuery *query = data;
  GtkWindow *window = find_app_window (query->app, query->type);

  return window != NULL && gtk_widget_get_mapped (GTK_WIDGET (window));
}

static gboolean
app_window_gone (gpointer data)
{
  WindowQuery *query = data;

  return find_app_window (query->app, query->type) == NULL;
}

static gboolean
no_windows_left (gpointer app)
{
  return gtk_application_get_windows (GTK_APPLICATION (app)) == NULL;
}

static void
visit_pages (TsWindow *window)
{
  static const char *pages[] = { "market", "keys", "bench", "chat" };
  guint notified = 0;
  gulong id;

  id = g_signal_connect_swapped (window, "notify::visible-page",
                                 G_CALLBACK (g_atomic_int_inc), &notified);
  for (gsize i = 0; i < G_N_ELEMENTS (pages); i++)
    {
      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.show-page",
                                                 "s", pages[i]));
      g_assert_cmpstr (ts_window_get_visible_page (window), ==, pages[i]);
    }
  g_assert_cmpuint (notified, ==, G_N_ELEMENTS (pages));
  g_signal_handler_disconnect (window, id);
}

static gboolean
gpu_row_filled (gpointer page)
{
  return g_strcmp0 (ts_bench_page_get_gpu_summary (page), "Probing…") != 0;
}

/* The benchmark page shows what the core's probe reports. */
static void
check_bench_page (TsWindow *window)
{
  GtkWidget *page = gui_find_descendant (GTK_WIDGET (window), TS_TYPE_BENCH_PAGE);
  g_autoptr (TsGpuInfo) info = ts_gpu_probe ();
  g_autofree char *expected = ts_gpu_info_describe (info);

  g_assert_nonnull (page);
  gtk_widget_activate_action (GTK_WIDGET (window), "win.show-page", "s", "bench");
  gui_wait_until (gpu_row_filled, page, 10, "the GPU probe");
  g_assert_cmpstr (ts_bench_page_get_gpu_summary (TS_BENCH_PAGE (page)), ==, expected);
  gui_save_screenshot (GTK_WIDGET (window), "screenshot-bench.png");
  gtk_widget_activate_action (GTK_WIDGET (window), "win.show-page", "s", "chat");
}

static void
open_and_close (TsWindow *window, const char *action, GType type)
{
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (window));
  WindowQuery query = { app, type };
  GtkWindow *shown;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), action, NULL));
  gui_wait_until (app_window_shown, &query, 10, action);
  shown = find_app_window (app, type);
  g_assert_true (gtk_window_get_transient_for (shown) == GTK_WINDOW (window));
  if (ADW_IS_ABOUT_WINDOW (shown))
    {
      g_autofree char *prefix = g_strdup_printf ("TenSafe %s\n", TS_VERSION);

      g_assert_cmpstr (adw_about_window_get_version (ADW_ABOUT_WINDOW (shown)), ==,
                       TS_VERSION);
      g_assert_true (g_str_has_prefix (
        adw_about_window_get_debug_info (ADW_ABOUT_WINDOW (shown)), prefix));
      g_assert_cmpint (adw_about_window_get_license_type (ADW_ABOUT_WINDOW (shown)), ==,
                       GTK_LICENSE_GPL_3_0);
      gui_save_screenshot (GTK_WIDGET (shown), "screenshot-about.png");
    }
  gtk_window_close (shown);
  gui_wait_until (app_window_gone, &query, 10, "the window to close");
}

static gboolean
widget_is_unmapped (gpointer widget)
{
  return !gtk_widget_get_mapped (GTK_WIDGET (widget));
}

/* GtkApplicationWindow keeps its shortcuts window aside from the
 * application's window list, and hides it on close. */
static void
open_and_close_shortcuts (TsWindow *window)
{
  GtkShortcutsWindow *shortcuts =
    gtk_application_window_get_help_overlay (GTK_APPLICATION_WINDOW (window));

  g_assert_nonnull (shortcuts);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window),
                                             "win.show-help-overlay", NULL));
  gui_wait_until (widget_is_mapped, shortcuts, 10, "the shortcuts window");
  gtk_window_close (GTK_WINDOW (shortcuts));
  gui_wait_until (widget_is_unmapped, shortcuts, 10, "the shortcuts window to close");
}

static void
check_size_reaches_settings (TsApplication *app, TsWindow *window)
{
  GSettings *settings = ts_settings_get_gsettings (ts_application_get_settings (app));

  g_assert_nonnull (settings);
  gtk_window_set_default_size (GTK_WINDOW (window), 1000, 650);
  g_assert_cmpint (g_settings_get_int (settings, "window-width"), ==, 1000);
  g_assert_cmpint (g_settings_get_int (settings, "window-height"), ==, 650);
}

static void
check_quit_accel (TsApplication *app)
{
  g_auto (GStrv) accels = gtk_application_get_accels_for_action (GTK_APPLICATION (app),
                                                                 "app.quit");

  g_assert_true (g_strv_contains ((const char * const *) accels, "<Control>q"));
}

static void
test_smoke (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autoptr (GError) error = NULL;
  TsWindow *window;

  g_assert_true (g_application_register (G_APPLICATION (app), NULL, &error));
  g_assert_no_error (error);
  g_application_activate (G_APPLICATION (app));

  window = TS_WINDOW (gtk_application_get_active_window (GTK_APPLICATION (app)));
  g_assert_nonnull (window);
  gui_wait_until (widget_is_mapped, window, 10, "the main window to map");
  g_assert_cmpstr (ts_window_get_visible_page (window), ==, "chat");
  gui_save_screenshot (GTK_WIDGET (window), "screenshot-main.png");

  visit_pages (window);
  check_bench_page (window);
  open_and_close (window, "win.about", ADW_TYPE_ABOUT_WINDOW);
  open_and_close_shortcuts (window);
  check_size_reaches_settings (app, window);
  check_quit_accel (app);

  g_action_group_activate_action (G_ACTION_GROUP (app), "quit", NULL);
  gui_wait_until (no_windows_left, app, 10, "quit to close every window");
}

static void
test_version (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
      char *argv[] = { (char *) "tensafe", (char *) "--version", NULL };

      exit (g_application_run (G_APPLICATION (app), 2, argv));
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stdout ("tensafe " TS_VERSION "\n");
}

typedef struct {
  TsChatPage *page;
  const char *adapter;
} AdapterWait;

static gboolean
adapter_loaded (gpointer data)
{
  AdapterWait *w = data;

  return gui_chat_ready (w->page)
         && g_strcmp0 (ts_chat_page_get_adapter_path (w->page), w->adapter) == 0;
}

static gboolean
demo_model_loaded (gpointer page)
{
  return gui_chat_ready (page)
         && g_strcmp0 (gtk_menu_button_get_label (ts_chat_page_get_picker (page, FALSE)),
                       _("Demo Model")) == 0;
}

/* The chat loads the model (and adapter) it had last time; the demo model,
 * chosen again, is remembered as the default. (In a process of its own,
 * like the German test: a fresh application and settings.) */
static void
remembers_model (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autofree char *model = ts_test_data_path ("hf/qwen2/qwen2.gguf");
  g_autofree char *adapter = ts_test_data_path ("hf/qwen2/lora/qwen2-lora.gguf");
  g_autoptr (GError) error = NULL;
  TsSettings *settings;
  AdapterWait wait;

  g_assert_true (g_application_register (G_APPLICATION (app), NULL, &error));
  g_assert_no_error (error);
  settings = ts_application_get_settings (app);
  ts_settings_set_chat_model (settings, model, adapter);
  g_application_activate (G_APPLICATION (app));
  wait.page = TS_CHAT_PAGE (gui_find_descendant (
    GTK_WIDGET (gtk_application_get_active_window (GTK_APPLICATION (app))), TS_TYPE_CHAT_PAGE));
  wait.adapter = adapter;
  gui_wait_until (adapter_loaded, &wait, 30, "the remembered model and adapter");
  g_assert_cmpstr (gtk_menu_button_get_label (ts_chat_page_get_picker (wait.page, FALSE)), !=,
                   _("Demo Model"));

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (wait.page), "chat.use-demo", NULL));
  gui_wait_until (demo_model_loaded, wait.page, 30, "the demo model");
  g_assert_cmpstr (ts_settings_get_chat_model (settings), ==, "");
  g_assert_cmpstr (ts_settings_get_chat_adapter (settings), ==, "");
  gui_quit_app (G_APPLICATION (app), 10);
}

static void
test_remembers_model (void)
{
  if (g_test_subprocess ())
    {
      remembers_model ();
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
}

/* The templates and code use the translation domain: with the German
 * catalogue built in this tree, the pages speak German. */
static void
test_german (void)
{
  if (g_test_subprocess ())
    {
      g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
      GtkWidget *page;
      GtkWidget *status;
      TsWindow *window;

      g_setenv ("LANGUAGE", "de", TRUE);
      setlocale (LC_ALL, "C.UTF-8");
      bindtextdomain (TS_GETTEXT_PACKAGE, TS_TEST_LOCALEDIR);
      bind_textdomain_codeset (TS_GETTEXT_PACKAGE, "UTF-8");
      textdomain (TS_GETTEXT_PACKAGE);

      g_assert_true (g_application_register (G_APPLICATION (app), NULL, NULL));
      g_application_activate (G_APPLICATION (app));
      window = TS_WINDOW (gtk_application_get_active_window (GTK_APPLICATION (app)));
      page = gui_find_descendant (GTK_WIDGET (window), TS_TYPE_BENCH_PAGE);
      status = gui_find_descendant (page, ADW_TYPE_STATUS_PAGE);
      g_print ("%s\n", adw_status_page_get_title (ADW_STATUS_PAGE (status)));
      gtk_window_destroy (GTK_WINDOW (window));
      exit (0);
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
  g_test_trap_assert_passed ();
  g_test_trap_assert_stdout ("Verschlüsselte Inferenz messen\n");
}

static void
test_no_display (void)
{
  g_test_skip ("no display: run the gui suite under xvfb-run");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      /* `make check` runs this suite under Xvfb; a bare `meson test` on a
       * machine without a display reports it skipped rather than broken. */
      g_test_add_func ("/gui/no-display", test_no_display);
      return g_test_run ();
    }
  g_test_add_func ("/gui/smoke", test_smoke);
  g_test_add_func ("/gui/version", test_version);
  g_test_add_func ("/gui/german", test_german);
  g_test_add_func ("/gui/remembers-model", test_remembers_model);
  return g_test_run ();
}
