/* ts-market-remove.c: asks before an installed adapter is deleted.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-market-remove.h"

typedef struct {
  TsMarketRemoveFunc remove;
  char *id;
} Pending;

static void
pending_free (gpointer data)
{
  Pending *p = data;

  g_free (p->id);
  g_free (p);
}

static void
response_cb (AdwMessageDialog *dialog, const char *response, GtkWidget *owner)
{
  Pending *p = g_object_get_data (G_OBJECT (dialog), "ts-pending-remove");

  if (g_strcmp0 (response, "remove") == 0)
    p->remove (owner, p->id);
}

void
ts_market_confirm_remove (GtkWidget *owner, const char *id, const char *name,
                          TsMarketRemoveFunc remove)
{
  GtkRoot *root = gtk_widget_get_root (owner);
  g_autofree char *heading = NULL;
  GtkWidget *dialog;
  Pending *p;

  g_return_if_fail (GTK_IS_WIDGET (owner));
  g_return_if_fail (id != NULL && remove != NULL);
  heading = g_strdup_printf (_("Remove “%s”?"), name != NULL ? name : id);
  dialog = adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, heading,
                                   _("Its files are deleted from this computer. This cannot "
                                     "be undone: a marketplace adapter has to be installed "
                                     "again, a reduced one made again."));
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _("_Cancel"),
                                    "remove", _("_Remove"), NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "remove",
                                              ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  p = g_new0 (Pending, 1);
  p->remove = remove;
  p->id = g_strdup (id);
  g_object_set_data_full (G_OBJECT (dialog), "ts-pending-remove", p, pending_free);
  g_signal_connect_object (dialog, "response", G_CALLBACK (response_cb), owner, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}
