/* ts-file-chooser.h: a file chooser (the portal's, through GtkFileChooserNative) for one path.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * GTK 4.8 has no GtkFileDialog; GtkFileChooserNative goes through the file
 * chooser portal where there is one (Flatpak) and is GTK's own dialog
 * elsewhere. Main-thread only.
 */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Called once the user accepted: @path is the chosen local file, or NULL
 * when the choice has no local path (a remote location). Not called on
 * cancel. @owner is alive (the chooser holds a reference). */
typedef void (*TsFileChosenFunc) (GtkWidget *owner, const char *path, gpointer user_data);

/* Shows a modal chooser over @owner's window. @current_name: the proposed
 * name when saving (NULL otherwise); @filter: borrowed, may be NULL;
 * @user_data must outlive the dialog (a static string, or @owner's). */
void ts_file_chooser_run (GtkWidget *owner, GtkFileChooserAction action, const char *title,
                          const char *accept_label, const char *current_name,
                          GtkFileFilter *filter, TsFileChosenFunc callback, gpointer user_data);

G_END_DECLS
