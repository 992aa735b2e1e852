/* test-models.c: the Models window on a models folder of its own: the
 * catalogue listed, a GGUF imported (and a file the engine cannot run
 * refused with its reason), the imported model used in the chat, then
 * removed; a download from a local server with live progress, paused and
 * resumed with a Range request, or cancelled, running or paused.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <glib/gstdio.h>

#include "gui-test-util.h"
#include "models-test-hub.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-models-dialog.h"
#include "ts-test-util.h"

#define TINY "qwen35/tiny-qwen35moe-f32/tiny-qwen35moe-f32.gguf"

static gboolean
dialog_idle (gpointer dialog)
{
  return !ts_models_dialog_get_busy (TS_MODELS_DIALOG (dialog));
}

static gboolean
picker_shows_tiny (gpointer page)
{
  const char *label = gtk_menu_button_get_label (ts_chat_page_get_picker (page, FALSE));

  return g_strcmp0 (label, "tiny-qwen35moe-f32") == 0;
}

/* Whether @menu (sections included) has an item running @action on @target. */
static gboolean
menu_has (GMenuModel *menu, const char *action, const char *target)
{
  for (int i = 0; i < g_menu_model_get_n_items (menu); i++)
    {
      g_autofree char *a = NULL, *t = NULL;
      g_autoptr (GMenuModel) section = g_menu_model_get_item_link (menu, i, G_MENU_LINK_SECTION);

      if (section != NULL && menu_has (section, action, target))
        return TRUE;
      if (g_menu_model_get_item_attribute (menu, i, G_MENU_ATTRIBUTE_ACTION, "s", &a)
          && g_menu_model_get_item_attribute (menu, i, G_MENU_ATTRIBUTE_TARGET, "s", &t)
          && g_strcmp0 (a, action) == 0 && g_strcmp0 (t, target) == 0)
        return TRUE;
    }
  return FALSE;
}

static void
test_import_use_remove (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-models-gui-XXXXXX", NULL);
  g_autofree char *tiny = ts_test_data_path (TINY);
  g_autofree char *elsewhere = g_dir_make_tmp ("tensafe-models-src-XXXXXX", NULL);
  g_autofree char *bad = g_build_filename (elsewhere, "not-a-model.gguf", NULL);
  g_autofree char *installed = g_build_filename (dir, "tiny-qwen35moe-f32.gguf", NULL);
  TsChatPage *page;
  TsModelsDialog *dialog;
  guint catalogue;

  g_setenv ("TENSAFE_MODEL_DIR", dir, TRUE);
  page = gui_start_chat (G_APPLICATION (app), 30);
  dialog = ts_models_dialog_new (GTK_WINDOW (gtk_widget_get_root (GTK_WIDGET (page))), page);
  gtk_window_present (GTK_WINDOW (dialog));
  catalogue = ts_models_dialog_count_rows (dialog);
  g_assert_cmpuint (catalogue, >=, 15);
  g_assert_cmpuint (ts_models_dialog_count_installed (dialog), ==, 0);

  /* a file the engine cannot run: refused with the reason, nothing added */
  g_assert_true (g_file_set_contents (bad, "GGUF but not really", -1, NULL));
  ts_models_dialog_import (dialog, bad);
  gui_wait_until (dialog_idle, dialog, 30, "the refused import");
  g_test_message ("refused: %s", ts_models_dialog_get_error (dialog));
  g_assert_nonnull (ts_models_dialog_get_error (dialog));
  g_assert_null (strstr (ts_models_dialog_get_error (dialog), "already exists"));
  g_assert_cmpuint (ts_models_dialog_count_rows (dialog), ==, catalogue);
  g_remove (bad);
  g_rmdir (elsewhere);

  ts_models_dialog_import (dialog, tiny);
  g_assert_true (ts_models_dialog_get_busy (dialog));
  gui_wait_until (dialog_idle, dialog, 30, "the import");
  g_assert_null (ts_models_dialog_get_error (dialog));
  g_assert_cmpuint (ts_models_dialog_count_rows (dialog), ==, catalogue + 1);
  g_assert_cmpuint (ts_models_dialog_count_installed (dialog), ==, 1);
  g_assert_true (g_file_test (installed, G_FILE_TEST_IS_REGULAR));
  gui_save_screenshot (GTK_WIDGET (dialog), "screenshot-models.png");

  /* "Use" loads it into the chat (the demo model's picker label changes) */
  g_object_ref (dialog);
  ts_models_dialog_use (dialog, "tiny-qwen35moe-f32");
  gui_wait_until (picker_shows_tiny, page, 30, "the imported model in the chat");
  /* the chat's model picker lists the installed model, and loads it from the
   * header (the window forwards chat.use-model) */
  g_assert_true (menu_has (gtk_menu_button_get_menu_model (ts_chat_page_get_picker (page, FALSE)),
                           "chat.use-model", installed));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (gtk_widget_get_root (GTK_WIDGET (page))),
                                             "chat.use-model", "s", installed));

  ts_models_dialog_remove (dialog, "tiny-qwen35moe-f32");
  g_assert_null (ts_models_dialog_get_error (dialog));
  g_assert_false (g_file_test (installed, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (ts_models_dialog_count_rows (dialog), ==, catalogue);
  gtk_window_destroy (GTK_WINDOW (dialog));
  g_object_unref (dialog);
  gui_quit_app (G_APPLICATION (app), 30);
  ts_test_remove_tree (dir);
  g_unsetenv ("TENSAFE_MODEL_DIR");
}

/* ---- downloads from a local server that stalls mid-way ---- */

#define BODY_BYTES 400000
#define STALL_AFTER 150000

typedef struct
{
  ModelsTestHub  *hub;
  GBytes         *body;
  char           *sha;
  char           *root;      /* the catalogue and the models folder */
  char           *dir;
  char           *part;
  char           *etag;
  char           *partial;
  char           *installed;
  TsModelsDialog *dialog;
} Download;

/* A one-model catalogue whose only source is the hub's /model.gguf. */
static void
write_catalogue (Download *d, const char *path)
{
  g_autofree char *url = models_test_hub_url (d->hub, "/model.gguf");
  g_autofree char *json = g_strdup_printf (
    "{\"models\": [{\"name\": \"test-model\", \"title\": \"Test\", \"architecture\": \"qwen2\","
    " \"parameters\": \"1M\", \"quantisation\": \"Q8_0\", \"file\": \"test-model.gguf\","
    " \"bytes\": %d, \"approx_bytes\": %d, \"sha256\": \"%s\", \"verified\": true,"
    " \"license\": \"none\", \"context_length\": 512,"
    " \"attention\": {\"layers\": 1, \"kv_heads\": 1, \"head_dim\": 8},"
    " \"sources\": [{\"kind\": \"http\", \"url\": \"%s\"}]}]}",
    BODY_BYTES, BODY_BYTES, d->sha, url);

  g_assert_true (g_file_set_contents (path, json, -1, NULL));
}

static void
open_dialog (Download *d)
{
  d->dialog = ts_models_dialog_new (NULL, NULL);
  g_object_ref_sink (d->dialog);
  gtk_window_present (GTK_WINDOW (d->dialog));
  g_assert_null (ts_models_dialog_get_error (d->dialog));
  g_assert_cmpuint (ts_models_dialog_count_rows (d->dialog), ==, 1);
}

static void
close_dialog (Download *d)
{
  gtk_window_destroy (GTK_WINDOW (d->dialog));
  g_clear_object (&d->dialog);
}

/* Serves BODY_BYTES of seeded random bytes; the first request stalls after
 * STALL_AFTER of them. */
static void
download_set_up (Download *d)
{
  GRand *rand = g_rand_new_with_seed ((guint32) ts_test_seed ());
  guint8 *bytes = g_malloc (BODY_BYTES);
  g_autofree char *catalogue = NULL;

  for (gsize i = 0; i < BODY_BYTES; i++)
    bytes[i] = (guint8) g_rand_int (rand);
  g_rand_free (rand);
  d->body = g_bytes_new_take (bytes, BODY_BYTES);
  d->sha = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, d->body);
  d->hub = models_test_hub_new ();
  models_test_hub_serve (d->hub, "/model.gguf", d->body);
  models_test_hub_stall (d->hub, "/model.gguf", STALL_AFTER, 1);
  d->root = g_dir_make_tmp ("tensafe-models-dl-XXXXXX", NULL);
  d->dir = g_build_filename (d->root, "models", NULL);
  d->part = g_build_filename (d->dir, "test-model.gguf.part", NULL);
  d->etag = g_build_filename (d->dir, "test-model.gguf.part.etag", NULL);
  d->partial = g_build_filename (d->dir, "test-model.gguf.partial", NULL);
  d->installed = g_build_filename (d->dir, "test-model.gguf", NULL);
  catalogue = g_build_filename (d->root, "catalogue.json", NULL);
  write_catalogue (d, catalogue);
  g_setenv ("TENSAFE_MODELS_CATALOG", catalogue, TRUE);
  g_setenv ("TENSAFE_MODEL_DIR", d->dir, TRUE);
  open_dialog (d);
}

static void
download_tear_down (Download *d)
{
  if (d->dialog != NULL)
    {
      gui_wait_until (dialog_idle, d->dialog, 30, "the download to stop");
      close_dialog (d);
    }
  g_unsetenv ("TENSAFE_MODELS_CATALOG");
  g_unsetenv ("TENSAFE_MODEL_DIR");
  models_test_hub_free (d->hub);
  ts_test_remove_tree (d->root);
  g_free (d->root);
  g_free (d->dir);
  g_free (d->part);
  g_free (d->etag);
  g_free (d->partial);
  g_free (d->installed);
  g_free (d->sha);
  g_bytes_unref (d->body);
}

static gint64
size_of (const char *path)
{
  GStatBuf st;

  return g_stat (path, &st) == 0 ? (gint64) st.st_size : -1;
}

/* Clicks the button labelled @label in the window, which must be there and
 * clickable. */
static void
click (Download *d, const char *label)
{
  GtkWidget *button = gui_find_button (GTK_WIDGET (d->dialog), label);

  g_assert_nonnull (button);
  g_assert_true (gtk_widget_is_sensitive (button));
  g_signal_emit_by_name (button, "clicked");
}

static gboolean
has_button (Download *d, const char *label)
{
  return gui_find_button (GTK_WIDGET (d->dialog), label) != NULL;
}

/* The server sent all it will send, the part file holds it, and the bar
 * shows it (after its first half second of "Starting…"). */
static gboolean
stalled_with_progress (gpointer data)
{
  Download *d = data;
  GtkWidget *bar = gui_find_descendant (GTK_WIDGET (d->dialog), GTK_TYPE_PROGRESS_BAR);

  return bar != NULL && size_of (d->part) == STALL_AFTER
         && gtk_progress_bar_get_fraction (GTK_PROGRESS_BAR (bar)) > 0
         && strstr (gtk_progress_bar_get_text (GTK_PROGRESS_BAR (bar)), "%") != NULL;
}

/* Starts the download with its button and waits until it sits at STALL_AFTER. */
static void
start_and_stall (Download *d)
{
  GtkWidget *bar;
  const char *status;

  click (d, "_Download");
  g_assert_true (ts_models_dialog_get_busy (d->dialog));
  gui_wait_until (stalled_with_progress, d, 30, "the download to reach the stall");
  bar = gui_find_descendant (GTK_WIDGET (d->dialog), GTK_TYPE_PROGRESS_BAR);
  g_assert_cmpfloat_with_epsilon (gtk_progress_bar_get_fraction (GTK_PROGRESS_BAR (bar)),
                                  (double) STALL_AFTER / BODY_BYTES, 1e-9);
  status = ts_models_dialog_get_row_status (d->dialog, "test-model");
  g_test_message ("while stalled: %s", status);
  g_assert_true (g_str_has_prefix (status, "38 % · "));
  g_assert_true (has_button (d, "_Pause"));
  g_assert_true (has_button (d, "_Cancel"));
  g_assert_false (has_button (d, "_Download"));
}

/* The row of a paused download: what was kept, Resume and Cancel. */
static void
assert_paused (Download *d)
{
  g_autofree char *kept = g_format_size (STALL_AFTER);
  g_autofree char *size = g_format_size (BODY_BYTES);
  g_autofree char *expected = g_strdup_printf ("Paused · %s of %s", kept, size);

  g_assert_false (ts_models_dialog_get_busy (d->dialog));
  g_assert_null (ts_models_dialog_get_error (d->dialog));
  g_assert_cmpint (size_of (d->part), ==, STALL_AFTER);
  g_assert_cmpstr (ts_models_dialog_get_row_status (d->dialog, "test-model"), ==, expected);
  g_assert_true (has_button (d, "_Resume"));
  g_assert_true (has_button (d, "_Cancel"));
  g_assert_false (has_button (d, "_Pause"));
  g_assert_false (has_button (d, "_Download"));
  g_assert_cmpuint (ts_models_dialog_count_installed (d->dialog), ==, 0);
}

/* Nothing of the download is left, and the row offers it again. */
static void
assert_discarded (Download *d)
{
  g_assert_false (ts_models_dialog_get_busy (d->dialog));
  g_assert_null (ts_models_dialog_get_error (d->dialog));
  g_assert_cmpstr (ts_models_dialog_get_last_toast (d->dialog), ==,
                   "Download cancelled; nothing was kept");
  g_assert_false (g_file_test (d->part, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (d->etag, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (d->partial, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (d->installed, G_FILE_TEST_EXISTS));
  g_assert_null (ts_models_dialog_get_row_status (d->dialog, "test-model"));
  g_assert_true (has_button (d, "_Download"));
  g_assert_false (has_button (d, "_Resume"));
  g_assert_false (has_button (d, "_Cancel"));
}

/* Pause keeps the first STALL_AFTER bytes; Resume asks for the rest only
 * and installs the served file. */
static void
test_download_pause_resume (void)
{
  Download d = { 0 };
  g_autoptr (GPtrArray) log = NULL;
  g_autofree char *resumed = g_strdup_printf ("/model.gguf bytes=%d- if-range", STALL_AFTER);
  g_autofree char *contents = NULL, *sha = NULL;
  gsize length = 0;

  download_set_up (&d);
  start_and_stall (&d);
  click (&d, "_Pause");
  gui_wait_until (dialog_idle, d.dialog, 30, "the pause");
  assert_paused (&d);
  gui_save_screenshot (GTK_WIDGET (d.dialog), "screenshot-models-paused.png");

  models_test_hub_clear_log (d.hub);
  click (&d, "_Resume");
  gui_wait_until (dialog_idle, d.dialog, 30, "the resumed download");
  g_assert_null (ts_models_dialog_get_error (d.dialog));
  log = models_test_hub_log (d.hub);
  g_assert_cmpuint (log->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (log, 0), ==, resumed);

  g_assert_true (g_file_get_contents (d.installed, &contents, &length, NULL));
  g_assert_cmpuint (length, ==, BODY_BYTES);
  sha = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) contents, length);
  g_assert_cmpstr (sha, ==, d.sha);
  g_assert_false (g_file_test (d.part, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (d.etag, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (d.partial, G_FILE_TEST_EXISTS));
  g_assert_cmpuint (ts_models_dialog_count_installed (d.dialog), ==, 1);
  g_assert_null (ts_models_dialog_get_row_status (d.dialog, "test-model"));
  g_assert_true (has_button (&d, "_Use"));
  download_tear_down (&d);
}

/* Cancel while it runs deletes what arrived. */
static void
test_download_cancel (void)
{
  Download d = { 0 };

  download_set_up (&d);
  start_and_stall (&d);
  click (&d, "_Cancel");
  gui_wait_until (dialog_idle, d.dialog, 30, "the cancel");
  assert_discarded (&d);
  download_tear_down (&d);
}

/* A paused download survives the window (a new one shows it paused), and
 * its Cancel deletes what arrived. */
static void
test_download_pause_then_cancel (void)
{
  Download d = { 0 };

  download_set_up (&d);
  start_and_stall (&d);
  ts_models_dialog_pause (d.dialog);
  gui_wait_until (dialog_idle, d.dialog, 30, "the pause");
  assert_paused (&d);
  close_dialog (&d);

  open_dialog (&d);
  assert_paused (&d);
  click (&d, "_Cancel");
  assert_discarded (&d);
  download_tear_down (&d);
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
  g_autofree char *data_home = NULL;
  int status;

  g_test_init (&argc, &argv, NULL);
  data_home = g_dir_make_tmp ("tensafe-models-home-XXXXXX", NULL);
  g_setenv ("XDG_DATA_HOME", data_home, TRUE);
  if (!gtk_init_check ())
    g_test_add_func ("/models/no-display", test_no_display);
  else
    {
      adw_init ();
      /* Creating the application registers the resources the templates load from. */
      app = ts_application_new (G_APPLICATION_NON_UNIQUE);
      g_test_add_func ("/models/import-use-remove", test_import_use_remove);
      g_test_add_func ("/models/download-pause-resume", test_download_pause_resume);
      g_test_add_func ("/models/download-cancel", test_download_cancel);
      g_test_add_func ("/models/download-pause-then-cancel", test_download_pause_then_cancel);
    }
  status = g_test_run ();
  ts_test_remove_tree (data_home);
  return status;
}
