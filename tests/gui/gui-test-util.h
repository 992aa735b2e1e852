/* gui-test-util.h: helpers for the GUI tests: waiting on the main loop, screenshots.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef gboolean (*GuiCondition) (gpointer data);

/* Iterates the default main context until @condition holds; fails the test
 * (naming @what) after @seconds. */
void gui_wait_until (GuiCondition condition, gpointer data, guint seconds, const char *what);

/* With TS_SCREENSHOT_DIR set, renders @widget to the PNG file @name there,
 * after letting layout settle; otherwise does nothing. */
void gui_save_screenshot (GtkWidget *widget, const char *name);

G_END_DECLS
