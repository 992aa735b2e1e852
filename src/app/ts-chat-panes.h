/* ts-chat-panes.h: the chat's two panes, side by side when there is room, else one above the other.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

#define TS_TYPE_CHAT_PANES (ts_chat_panes_get_type ())
G_DECLARE_FINAL_TYPE (TsChatPanes, ts_chat_panes, TS, CHAT_PANES, GtkWidget)

/* How the panes were last laid out: GTK_ORIENTATION_HORIZONTAL side by
 * side, GTK_ORIENTATION_VERTICAL one above the other. */
GtkOrientation ts_chat_panes_get_orientation (TsChatPanes *self);
/* The narrowest width, in pixels, at which the panes stand side by side
 * (property "breakpoint"). */
int ts_chat_panes_get_breakpoint (TsChatPanes *self);
void ts_chat_panes_set_breakpoint (TsChatPanes *self, int breakpoint);

G_END_DECLS
