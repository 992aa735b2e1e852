/* ts-file-chooser.c: a file chooser (the portal's, through GtkFileChooserNative) for one path.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-file-chooser.h"

typedef struct {
  GtkWidget *owner;          /* ref */
  TsFileChosenFunc callback;
  gpointer user_data;
} Chooser;

static void
response_cb (GtkNativeDialog *dialog, int response, gpointer data)
{
  Chooser *chooser = data;
  g_autoptr (GFile) file = NULL;
  g_autofree char *path = NULL;

  if (response == GTK_RESPONSE_ACCEPT)
    {
      file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      path = file != NULL ? g_file_get_path (file) : NULL;
      chooser->callback (chooser->owner, path, chooser->user_data);
    }
  g_object_unref (chooser->owner);
  g_free (chooser);
  g_object_unref (dialog);
}

void
ts_file_chooser_run (GtkWidget *owner, GtkFileChooserAction action, const char *title,
                     const char *accept_label, const char *current_name, GtkFileFilter *filter,
                     TsFileChosenFunc callback, gpointer user_data)
{
  GtkRoot *root = gtk_widget_get_root (owner);
  GtkFileChooserNative *dialog =
    gtk_file_chooser_native_new (title, GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, action,
                                 accept_label, _("_Cancel"));
  Chooser *chooser = g_new0 (Chooser, 1);

  chooser->owner = g_object_ref (owner);
  chooser->callback = callback;
  chooser->user_data = user_data;
  if (current_name != NULL)
    gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), current_name);
  if (filter != NULL)
    gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_signal_connect (dialog, "response", G_CALLBACK (response_cb), chooser);
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}
