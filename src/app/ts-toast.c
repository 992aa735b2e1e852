/* ts-toast.c: a message shown as a toast over whatever window a widget is in.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>

#include "ts-toast.h"

void
ts_toast_show (GtkWidget *widget, const char *message)
{
  GtkWidget *overlay = gtk_widget_get_ancestor (widget, ADW_TYPE_TOAST_OVERLAY);
  g_autofree char *escaped = NULL;

  if (overlay == NULL)
    {
      g_message ("%s", message);
      return;
    }
  /* Toast titles are Pango markup; messages may quote server text. */
  escaped = g_markup_escape_text (message, -1);
  adw_toast_overlay_add_toast (ADW_TOAST_OVERLAY (overlay), adw_toast_new (escaped));
}
