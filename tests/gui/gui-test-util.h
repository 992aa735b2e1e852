/* gui-test-util.h: helpers for the GUI tests: waiting on the main loop, finding widgets, screenshots.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

typedef gboolean (*GuiCondition) (gpointer data);

/* Iterates the main loop until @condition (@data) holds; fails the test
 * naming @what after @seconds. */
void gui_wait_until (GuiCondition condition, gpointer data, guint seconds, const char *what);

/* The first widget of @type in @widget's tree (depth first), or NULL. */
GtkWidget *gui_find_descendant (GtkWidget *widget, GType type);

/* Registers a skipped test for machines without a display. */
int gui_run_without_display (const char *path);

/* With TS_SCREENSHOT_DIR set, renders @widget to the PNG file @name there,
 * after letting layout settle; otherwise does nothing. */
void gui_save_screenshot (GtkWidget *widget, const char *name);

G_END_DECLS
