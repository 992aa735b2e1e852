/* test-models.c: the Models window on a models folder of its own: the
 * catalogue listed, a GGUF imported (and a file the engine cannot run
 * refused with its reason), the imported model used in the chat, then
 * removed; a download from a local server with live progress, cancelled.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <glib/gstdio.h>

#include "gui-test-util.h"
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
    }
  status = g_test_run ();
  ts_test_remove_tree (data_home);
  return status;
}
