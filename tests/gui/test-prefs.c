/* test-prefs.c: the preferences window reads and writes org.tensafe.Desktop both ways
 * (through TsSettings).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <math.h>
#include <string.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-config.h"
#include "ts-gpu.h"
#include "ts-conversation-settings-dialog-private.h"
#include "ts-preferences-window.h"
#include "ts-window.h"

static GtkWidget *
child (TsPreferencesWindow *window, const char *name)
{
  GObject *object = gtk_widget_get_template_child (GTK_WIDGET (window),
                                                   TS_TYPE_PREFERENCES_WINDOW, name);

  g_assert_nonnull (object);
  return GTK_WIDGET (object);
}

static GSettings *
fresh_settings (void)
{
  GSettings *settings = g_settings_new (TS_APP_ID);
  g_autoptr (GSettingsSchema) schema = NULL;
  g_auto (GStrv) keys = NULL;

  /* The memory backend keeps values for the whole process: start clean. */
  g_object_get (settings, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    g_settings_reset (settings, keys[i]);
  return settings;
}

static void
test_settings_to_rows (void)
{
  g_autoptr (GSettings) settings = fresh_settings ();
  g_autoptr (TsSettings) typed = ts_settings_new (settings);
  TsPreferencesWindow *window;

  g_settings_set_string (settings, "evaluator-mode", "remote");
  g_settings_set_string (settings, "evaluator-url", "ws://10.0.0.7:9000/v1/helora");
  g_settings_set_string (settings, "ckks-preset", "n32768");
  g_settings_set_int (settings, "threads", 6);
  g_settings_set_boolean (settings, "use-gpu", FALSE);
  g_settings_set_string (settings, "marketplace-url", "http://market.example:8766");
  g_settings_set_string (settings, "color-scheme", "dark");
  g_settings_set_boolean (settings, "evaluator-private", TRUE);
  g_settings_set_double (settings, "privacy-rho", 0.0025);

  window = g_object_ref_sink (ts_preferences_window_new (NULL, typed));
  g_assert_cmpuint (adw_combo_row_get_selected (ADW_COMBO_ROW (child (window, "mode_row"))), ==, 2);
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (child (window, "url_row"))), ==,
                   "ws://10.0.0.7:9000/v1/helora");
  g_assert_true (gtk_widget_get_sensitive (child (window, "url_row")));
  g_assert_cmpuint (adw_combo_row_get_selected (ADW_COMBO_ROW (child (window, "preset_row"))), ==, 3);
  g_assert_cmpint (gtk_spin_button_get_value_as_int (GTK_SPIN_BUTTON (child (window, "threads_spin"))), ==, 6);
  g_assert_false (gtk_switch_get_active (GTK_SWITCH (child (window, "gpu_switch"))));
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (child (window, "market_row"))), ==,
                   "http://market.example:8766");
  g_assert_cmpuint (adw_combo_row_get_selected (ADW_COMBO_ROW (child (window, "theme_row"))), ==, 2);
  g_assert_true (gtk_switch_get_active (GTK_SWITCH (child (window, "private_switch"))));
  g_assert_cmpfloat (gtk_spin_button_get_value (GTK_SPIN_BUTTON (child (window, "rho_spin"))), ==,
                     0.0025);
  g_assert_true (gtk_widget_get_sensitive (child (window, "private_row")));

  /* Changes made elsewhere show at once. */
  g_settings_set_string (settings, "evaluator-mode", "plain");
  g_assert_cmpuint (adw_combo_row_get_selected (ADW_COMBO_ROW (child (window, "mode_row"))), ==, 0);
  g_assert_false (gtk_widget_get_sensitive (child (window, "url_row")));
  /* The private mode belongs to the remote evaluator. */
  g_assert_false (gtk_widget_get_sensitive (child (window, "private_row")));
  g_assert_false (gtk_widget_get_sensitive (child (window, "rho_row")));

  gtk_window_destroy (GTK_WINDOW (window));
  g_assert_finalize_object (window);
  g_settings_reset (settings, "evaluator-mode");
}

static void
test_rows_to_settings (void)
{
  g_autoptr (GSettings) settings = fresh_settings ();
  g_autoptr (TsSettings) typed = ts_settings_new (settings);
  TsPreferencesWindow *window = g_object_ref_sink (ts_preferences_window_new (NULL, typed));
  g_autofree char *mode = NULL, *preset = NULL, *url = NULL, *market = NULL, *scheme = NULL;

  adw_combo_row_set_selected (ADW_COMBO_ROW (child (window, "mode_row")), 1);
  adw_combo_row_set_selected (ADW_COMBO_ROW (child (window, "preset_row")), 1);
  gtk_editable_set_text (GTK_EDITABLE (child (window, "url_row")), "wss://eval.example/v1/helora");
  gtk_editable_set_text (GTK_EDITABLE (child (window, "market_row")), "https://m.example");
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (child (window, "threads_spin")), 12);
  gtk_switch_set_active (GTK_SWITCH (child (window, "gpu_switch")), TRUE);
  adw_combo_row_set_selected (ADW_COMBO_ROW (child (window, "theme_row")), 1);
  gtk_switch_set_active (GTK_SWITCH (child (window, "private_switch")), TRUE);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (child (window, "rho_spin")), 0.0001);

  g_assert_true (g_settings_get_boolean (settings, "evaluator-private"));
  g_assert_cmpfloat_with_epsilon (g_settings_get_double (settings, "privacy-rho"), 0.0001, 1e-12);
  mode = g_settings_get_string (settings, "evaluator-mode");
  preset = g_settings_get_string (settings, "ckks-preset");
  url = g_settings_get_string (settings, "evaluator-url");
  market = g_settings_get_string (settings, "marketplace-url");
  scheme = g_settings_get_string (settings, "color-scheme");
  g_assert_cmpstr (mode, ==, "local");
  g_assert_cmpstr (preset, ==, "n8192");
  g_assert_cmpstr (url, ==, "wss://eval.example/v1/helora");
  g_assert_cmpstr (market, ==, "https://m.example");
  g_assert_cmpint (g_settings_get_int (settings, "threads"), ==, 12);
  g_assert_true (g_settings_get_boolean (settings, "use-gpu"));
  g_assert_cmpstr (scheme, ==, "light");

  gtk_window_destroy (GTK_WINDOW (window));
  g_assert_finalize_object (window);
}

/* The application applies the style setting to AdwStyleManager. */
static void
test_color_scheme (void)
{
  g_autoptr (GSettings) settings = fresh_settings ();
  g_autoptr (TsSettings) typed = ts_settings_new (settings);
  AdwStyleManager *style = adw_style_manager_get_default ();

  ts_preferences_follow_color_scheme (typed);
  g_settings_set_string (settings, "color-scheme", "dark");
  g_assert_cmpint (adw_style_manager_get_color_scheme (style), ==, ADW_COLOR_SCHEME_FORCE_DARK);
  g_settings_set_string (settings, "color-scheme", "light");
  g_assert_cmpint (adw_style_manager_get_color_scheme (style), ==, ADW_COLOR_SCHEME_FORCE_LIGHT);
  g_settings_set_string (settings, "color-scheme", "default");
  g_assert_cmpint (adw_style_manager_get_color_scheme (style), ==, ADW_COLOR_SCHEME_DEFAULT);
  g_signal_handlers_disconnect_matched (typed, G_SIGNAL_MATCH_DATA, 0, 0, NULL, NULL, NULL);
}

static gboolean
probed (gpointer row)
{
  return g_strcmp0 (adw_action_row_get_subtitle (row), "Probing…") != 0;
}

/* Without a usable GPU the switch is greyed out and says why. */
static void
test_gpu_row (void)
{
  g_autoptr (GSettings) settings = fresh_settings ();
  g_autoptr (TsSettings) typed = ts_settings_new (settings);
  TsPreferencesWindow *window = g_object_ref_sink (ts_preferences_window_new (NULL, typed));
  g_autoptr (TsGpuInfo) info = ts_gpu_probe ();
  GtkWidget *row = child (window, "gpu_row");

  gui_wait_until (probed, row, 10, "the GPU probe");
  if (TS_HAVE_CUDA && info->n_devices > 0)
    g_assert_true (gtk_widget_get_sensitive (row));
  else
    {
      g_assert_false (gtk_widget_get_sensitive (row));
      g_assert_cmpuint (strlen (adw_action_row_get_subtitle (ADW_ACTION_ROW (row))), >, 0);
      if (TS_HAVE_CUDA)
        g_assert_cmpstr (adw_action_row_get_subtitle (ADW_ACTION_ROW (row)), ==, info->reason);
    }
  gtk_window_destroy (GTK_WINDOW (window));
  g_assert_finalize_object (window);
}

/* The open conversation settings dialog among the toplevels, or NULL. */
static TsConversationSettingsDialog *
find_settings_dialog (void)
{
  GListModel *toplevels = gtk_window_get_toplevels ();

  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr (GObject) w = g_list_model_get_item (toplevels, i);

      if (TS_IS_CONVERSATION_SETTINGS_DIALOG (w) && gtk_widget_get_visible (GTK_WIDGET (w)))
        return TS_CONVERSATION_SETTINGS_DIALOG (w);
    }
  return NULL;
}

static gboolean
settings_dialog_gone (gpointer unused)
{
  return find_settings_dialog () == NULL;
}

/* The Chat group's row edits the defaults of new conversations in the
 * conversation settings dialog (without its Use as Defaults). */
static void
test_conversation_defaults (void)
{
  g_autoptr (GSettings) settings = fresh_settings ();
  g_autoptr (TsSettings) typed = ts_settings_new (settings);
  TsPreferencesWindow *window = g_object_ref_sink (ts_preferences_window_new (NULL, typed));
  TsConversationSettingsDialog *dialog;

  g_assert_null (find_settings_dialog ());
  g_assert_true (gtk_widget_activate_action (child (window, "conversation_row"),
                                             "prefs.conversation-defaults", NULL));
  dialog = find_settings_dialog ();
  g_assert_nonnull (dialog);
  g_assert_cmpstr (gtk_window_get_title (GTK_WINDOW (dialog)), ==, "New Conversations");
  g_assert_false (gtk_widget_get_visible (dialog->make_default_button));
  g_assert_cmpfloat (gtk_spin_button_get_value (dialog->temperature_spin), ==, 0);
  gtk_spin_button_set_value (dialog->temperature_spin, 0.6);
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (dialog->system_view), "Be kind.", -1);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (dialog), "settings.save", NULL));
  gui_wait_until (settings_dialog_gone, NULL, 10, "the dialog to close");
  g_assert_cmpfloat (g_settings_get_double (settings, "chat-temperature"), ==, 0.6);
  {
    g_autofree char *prompt = g_settings_get_string (settings, "chat-system-prompt");

    g_assert_cmpstr (prompt, ==, "Be kind.");
  }
  gtk_window_destroy (GTK_WINDOW (window));
  g_assert_finalize_object (window);
}

static gboolean
no_windows (gpointer app)
{
  return gtk_application_get_windows (app) == NULL;
}

static gboolean
find_prefs_window (gpointer app)
{
  for (GList *l = gtk_application_get_windows (app); l != NULL; l = l->next)
    if (TS_IS_PREFERENCES_WINDOW (l->data) && gtk_widget_get_mapped (l->data))
      return TRUE;
  return FALSE;
}

/* The main menu's Preferences item opens the window over the main window. */
static void
test_window_action (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  GtkWindow *window;

  g_assert_true (g_application_register (G_APPLICATION (app), NULL, NULL));
  g_application_activate (G_APPLICATION (app));
  window = gtk_application_get_active_window (GTK_APPLICATION (app));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.preferences", NULL));
  gui_wait_until (find_prefs_window, app, 10, "the preferences window");
  for (GList *l = gtk_application_get_windows (GTK_APPLICATION (app)); l != NULL; l = l->next)
    if (TS_IS_PREFERENCES_WINDOW (l->data))
      g_assert_true (gtk_window_get_transient_for (l->data) == window);
  g_action_group_activate_action (G_ACTION_GROUP (app), "quit", NULL);
  gui_wait_until (no_windows, app, 10, "quit to close every window");
}

/* The answers a zCDP budget (epsilon, delta) lasts at @rho each, by the
 * textbook: epsilon = R + 2 sqrt (R ln (1/delta)) solved for the total R. */
static guint64
answers_by_hand (double epsilon, double delta, double rho)
{
  double l = log (1.0 / delta);
  double total = pow (sqrt (l + epsilon) - sqrt (l), 2.0);

  return (guint64) floor (total / rho);
}

static const char *
preview_at (TsPreferencesWindow *window, GSettings *settings, double rho)
{
  g_settings_set_double (settings, "privacy-rho", rho);
  return adw_action_row_get_subtitle (ADW_ACTION_ROW (child (window, "rho_preview_row")));
}

/* Preferences says in plain words what a differential-privacy cost per
 * answer means: the noise, how long an evaluator's budget (epsilon 5 at
 * delta 1e-6) lasts, and that a cost above one answer's share is refused
 * at once -- the contradiction of a first answer refused as "spent". */
static void
test_privacy_preview (void)
{
  g_autoptr (GSettings) settings = fresh_settings ();
  g_autoptr (TsSettings) typed = ts_settings_new (settings);
  TsPreferencesWindow *window;
  g_autofree char *answers = NULL, *noise = NULL, *most = NULL;

  g_settings_set_string (settings, "evaluator-mode", "remote");
  window = g_object_ref_sink (ts_preferences_window_new (NULL, typed));
  g_assert_true (gtk_widget_get_sensitive (child (window, "rho_preview_row")));

  answers = g_strdup_printf ("lasts %" G_GUINT64_FORMAT " answers",
                             answers_by_hand (5.0, 1e-6, 0.001));
  noise = g_strdup_printf ("noise of %.3g times", 1.0 / sqrt (2.0 * 0.001));
  g_assert_nonnull (strstr (preview_at (window, settings, 0.001), answers));
  g_assert_nonnull (strstr (preview_at (window, settings, 0.001), noise));
  g_assert_cmpuint (answers_by_hand (5.0, 1e-6, 0.001), ==, 385);

  /* 0.5 is more than the whole budget allows one answer */
  g_assert_cmpuint (answers_by_hand (5.0, 1e-6, 0.5), ==, 0);
  most = g_strdup_printf ("%.4f", pow (sqrt (log (1e6) + 5.0) - sqrt (log (1e6)), 2.0));
  g_assert_nonnull (strstr (preview_at (window, settings, 0.5), "first answer is refused"));
  g_assert_nonnull (strstr (preview_at (window, settings, 0.5), most));
  g_assert_nonnull (strstr (preview_at (window, settings, 0.0), "No noise"));

  /* only the remote evaluator adds noise */
  g_settings_set_string (settings, "evaluator-mode", "local");
  g_assert_false (gtk_widget_get_sensitive (child (window, "rho_preview_row")));
  gtk_window_destroy (GTK_WINDOW (window));
  g_assert_finalize_object (window);
  g_settings_reset (settings, "evaluator-mode");
  g_settings_reset (settings, "privacy-rho");
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      return gui_run_without_display ("/prefs/no-display");
    }
  adw_init ();
  /* The application class registers the resources the templates load from. */
  g_type_class_unref (g_type_class_ref (TS_TYPE_APPLICATION));
  g_test_add_func ("/prefs/settings-to-rows", test_settings_to_rows);
  g_test_add_func ("/prefs/rows-to-settings", test_rows_to_settings);
  g_test_add_func ("/prefs/color-scheme", test_color_scheme);
  g_test_add_func ("/prefs/gpu-row", test_gpu_row);
  g_test_add_func ("/prefs/conversation-defaults", test_conversation_defaults);
  g_test_add_func ("/prefs/window-action", test_window_action);
  g_test_add_func ("/prefs/privacy-preview", test_privacy_preview);
  return g_test_run ();
}
