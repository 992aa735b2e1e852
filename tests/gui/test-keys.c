/* test-keys.c: the keys page drives the real vault: generate and seal, restart,
 * unlock with a wrong then the right passphrase, damaged file, delete.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <glib/gstdio.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-keys-page-private.h"
#include "ts-window.h"
#include "ts-test-util.h"

static const TsScryptParams cheap_kdf = { .log2_n = 10, .r = 8, .p = 1 };
static char *data_home;

static void
wait_until (GuiCondition condition, gpointer data, const char *what)
{
  gui_wait_until (condition, data, 20, what);
}

typedef struct {
  TsApplication *app;
  TsWindow *window;
  TsKeysPage *page;
  TsKeyVault *vault;
} Running;

static gboolean
mapped (gpointer widget)
{
  return gtk_widget_get_mapped (widget);
}

/* Starts the application as `tensafe` would, on the keys page. */
static void
start (Running *r)
{
  g_autoptr (GError) error = NULL;

  r->app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_assert_true (g_application_register (G_APPLICATION (r->app), NULL, &error));
  g_assert_no_error (error);
  r->vault = ts_application_get_key_vault (r->app);
  ts_key_vault_set_kdf (r->vault, &cheap_kdf);
  g_application_activate (G_APPLICATION (r->app));
  r->window = TS_WINDOW (gtk_application_get_active_window (GTK_APPLICATION (r->app)));
  wait_until (mapped, r->window, "the window");
  ts_window_set_visible_page (r->window, "keys");
  r->page = TS_KEYS_PAGE (gui_find_descendant (GTK_WIDGET (r->window), TS_TYPE_KEYS_PAGE));
  g_assert_true (ts_keys_page_get_vault (r->page) == r->vault);
}

static gboolean
no_windows (gpointer app)
{
  return gtk_application_get_windows (app) == NULL;
}

static void
stop (Running *r)
{
  g_action_group_activate_action (G_ACTION_GROUP (r->app), "quit", NULL);
  wait_until (no_windows, r->app, "the windows to close");
  g_clear_object (&r->app);
}

static gboolean
dialog_shown (gpointer page)
{
  AdwMessageDialog *dialog = _ts_keys_page_get_dialog (page);

  return dialog != NULL && gtk_widget_get_mapped (GTK_WIDGET (dialog));
}

/* Fills the dialog's passphrase entries and picks @response. */
static void
answer (Running *r, const char *response, const char *const *passphrases)
{
  AdwMessageDialog *dialog;

  wait_until (dialog_shown, r->page, "a dialog");
  dialog = _ts_keys_page_get_dialog (r->page);
  for (guint i = 0; passphrases != NULL && passphrases[i] != NULL; i++)
    gtk_editable_set_text (_ts_keys_page_dialog_entry (dialog, i), passphrases[i]);
  g_assert_true (adw_message_dialog_get_response_enabled (dialog, response));
  adw_message_dialog_response (dialog, response);
}

static gboolean
vault_idle (gpointer vault)
{
  return !ts_key_vault_get_busy (vault);
}

static void
check_copy_fingerprint (Running *r, const char *fingerprint)
{
  GdkClipboard *clipboard = gtk_widget_get_clipboard (GTK_WIDGET (r->page));
  GValue value = G_VALUE_INIT;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (r->page), "keys.copy-fingerprint", NULL));
  g_value_init (&value, G_TYPE_STRING);
  g_assert_true (gdk_content_provider_get_value (gdk_clipboard_get_content (clipboard), &value, NULL));
  g_assert_cmpstr (g_value_get_string (&value), ==, fingerprint);
  g_value_unset (&value);
}

static void
test_generate_restart_unlock (void)
{
  Running r = { NULL };
  const char *new_pass[] = { "sesame", "sesame", NULL };
  const char *wrong[] = { "not sesame", NULL };
  const char *right[] = { "sesame", NULL };
  g_autofree char *fingerprint = NULL;
  AdwMessageDialog *first;

  start (&r);
  g_assert_cmpstr (_ts_keys_page_get_view (r.page), ==, "none");
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_NONE);

  /* The preset chosen in the preferences is the one proposed. */
  g_settings_set_string (ts_settings_get_gsettings (ts_application_get_settings (r.app)),
                         "ckks-preset", "n8192");
  /* Generate: mismatching confirmation keeps the button off. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (r.page), "keys.generate", NULL));
  wait_until (dialog_shown, r.page, "the generate dialog");
  gtk_editable_set_text (_ts_keys_page_dialog_entry (_ts_keys_page_get_dialog (r.page), 0), "a");
  gtk_editable_set_text (_ts_keys_page_dialog_entry (_ts_keys_page_get_dialog (r.page), 1), "b");
  g_assert_false (adw_message_dialog_get_response_enabled (_ts_keys_page_get_dialog (r.page),
                                                           "generate"));
  answer (&r, "generate", new_pass);
  wait_until (vault_idle, r.vault, "the key to be generated");
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_UNLOCKED);
  g_assert_cmpstr (_ts_keys_page_get_view (r.page), ==, "key");
  g_assert_cmpstr (_ts_keys_page_get_last_toast (r.page), ==, "Key generated and sealed");
  g_assert_cmpstr (ts_key_vault_get_preset (r.vault), ==, "fast");
  fingerprint = g_strdup (ts_key_vault_get_fingerprint (r.vault));
  g_assert_cmpstr (_ts_keys_page_get_row_text (r.page, "fingerprint"), ==, fingerprint);
  g_assert_cmpuint (strlen (_ts_keys_page_get_row_text (r.page, "created")), >, 0);
  check_copy_fingerprint (&r, fingerprint);
  stop (&r);

  /* Restart: the sealed key is found and the passphrase asked for. */
  start (&r);
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_LOCKED);
  g_assert_cmpstr (_ts_keys_page_get_row_text (r.page, "fingerprint"), ==, fingerprint);
  wait_until (dialog_shown, r.page, "the unlock dialog on start");
  first = _ts_keys_page_get_dialog (r.page);
  answer (&r, "unlock", wrong);
  wait_until (vault_idle, r.vault, "the wrong passphrase to be tried");
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_LOCKED);
  g_assert_cmpstr (_ts_keys_page_get_last_toast (r.page), ==, "The passphrase is not correct");
  /* ...and asked for again. */
  wait_until (dialog_shown, r.page, "the unlock dialog again");
  g_assert_true (_ts_keys_page_get_dialog (r.page) != first);
  answer (&r, "unlock", right);
  wait_until (vault_idle, r.vault, "the key to unlock");
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_UNLOCKED);
  g_assert_nonnull (ts_key_vault_get_key_pair (r.vault));
  g_assert_cmpstr (ts_key_vault_get_fingerprint (r.vault), ==, fingerprint);
  g_assert_cmpstr (_ts_keys_page_get_last_toast (r.page), ==, "Key unlocked");

  /* Lock, then delete with confirmation. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (r.page), "keys.lock", NULL));
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_LOCKED);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (r.page), "keys.delete", NULL));
  answer (&r, "delete", NULL);
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_NONE);
  g_assert_cmpstr (_ts_keys_page_get_view (r.page), ==, "none");
  g_assert_false (g_file_test (ts_key_vault_get_path (r.vault), G_FILE_TEST_EXISTS));
  stop (&r);
}

static void
test_damaged_key_file (void)
{
  g_autofree char *dir = g_build_filename (data_home, "tensafe", "keys", NULL);
  g_autofree char *path = g_build_filename (dir, "key.tskey", NULL);
  g_autoptr (GError) error = NULL;
  Running r = { NULL };

  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  g_assert_true (g_file_set_contents (path, "TSKV\1\0\0\0 truncated", -1, &error));
  start (&r);
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_DAMAGED);
  g_assert_cmpstr (_ts_keys_page_get_view (r.page), ==, "damaged");
  /* No unlock prompt for a file that cannot be opened. */
  for (guint i = 0; i < 20; i++)
    g_main_context_iteration (NULL, FALSE);
  g_assert_null (_ts_keys_page_get_dialog (r.page));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (r.page), "keys.delete", NULL));
  answer (&r, "delete", NULL);
  g_assert_cmpint (ts_key_vault_get_state (r.vault), ==, TS_KEY_STATE_NONE);
  stop (&r);
}

int
main (int argc, char **argv)
{
  g_autoptr (GError) error = NULL;
  int rc;

  /* Before GLib reads it: keys go to a folder of this test's own. */
  data_home = g_dir_make_tmp ("ts-test-keys-XXXXXX", &error);
  g_assert_no_error (error);
  g_setenv ("XDG_DATA_HOME", data_home, TRUE);

  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      return gui_run_without_display ("/keys/no-display");
    }
  g_test_add_func ("/keys/generate-restart-unlock", test_generate_restart_unlock);
  g_test_add_func ("/keys/damaged-key-file", test_damaged_key_file);
  rc = g_test_run ();
  ts_test_remove_tree (data_home);
  g_free (data_home);
  return rc;
}
