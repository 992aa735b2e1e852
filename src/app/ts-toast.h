/* ts-toast.h: a message shown as a toast over whatever window a widget is in.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Shows @message as a toast in the nearest AdwToastOverlay above @widget
 * (main thread); logs it when there is none. */
void ts_toast_show (GtkWidget *widget, const char *message);

G_END_DECLS
