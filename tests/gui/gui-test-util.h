/* gui-test-util.h: helpers for the GUI tests: waiting on the main loop, finding widgets, screenshots.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <adwaita.h>

#include "ts-application.h"
#include "ts-chat-page.h"

G_BEGIN_DECLS

typedef gboolean (*GuiCondition) (gpointer data);

/* Iterates the main loop until @condition (@data) holds; fails the test
 * naming @what after @seconds. */
void gui_wait_until (GuiCondition condition, gpointer data, guint seconds, const char *what);

typedef gboolean (*GuiWidgetMatch) (GtkWidget *widget, gconstpointer data);

/* The first widget in @widget's tree (depth first, @widget included) that
 * @match accepts, or NULL. */
GtkWidget *gui_find_widget (GtkWidget *widget, GuiWidgetMatch match, gconstpointer data);
/* The first widget of @type in @widget's tree (depth first), or NULL. */
GtkWidget *gui_find_descendant (GtkWidget *widget, GType type);
/* The first button labelled @label (with its underline) in @widget's tree. */
GtkWidget *gui_find_button (GtkWidget *widget, const char *label);
/* A visible AdwMessageDialog among the toplevels, or NULL. */
AdwMessageDialog *gui_find_message_dialog (void);
/* Conditions for gui_wait_until(): such a dialog is shown; none is. */
gboolean gui_message_dialog_shown (gpointer unused);
gboolean gui_message_dialog_gone (gpointer unused);

/* Registers @app unless it is, activates it and waits at most @seconds for
 * its window to map and the chat page's model to be ready; returns that
 * page (the window is its root). */
TsChatPage *gui_start_chat (GApplication *app, guint seconds);
/* Activates app.quit and waits at most @seconds for every window to close. */
void gui_quit_app (GApplication *app, guint seconds);
/* Conditions on a TsChatPage: its model is loaded and nothing runs; no
 * reply is being generated. */
gboolean gui_chat_ready (gpointer page);
gboolean gui_chat_idle (gpointer page);

/* A GAsyncReadyCallback keeping a reference on the result in
 * *(GAsyncResult **) @data, and the condition that it arrived. */
void gui_store_result (GObject *source, GAsyncResult *result, gpointer data);
gboolean gui_have_result (gpointer data);

/* Registers a skipped test for machines without a display. */
int gui_run_without_display (const char *path);

/* What a GUI test program sets up before its cases: a data folder of its
 * own as $XDG_DATA_HOME (for history.sqlite and installed files; not
 * G_TEST_OPTION_ISOLATE_DIRS, which hides the system's MIME database that
 * icon loading needs), GTK and libadwaita when there is a display, and an
 * application (creating it registers the resources the templates load
 * from). */
typedef struct {
  char *data_home;
  TsApplication *app;          /* NULL without a display */
} GuiTestProgram;

/* Calls g_test_init(), then sets @program up (@name names its data folder);
 * FALSE without a display: add no cases then. */
gboolean gui_test_program_init (GuiTestProgram *program, int *argc, char ***argv,
                                const char *name);
/* Runs the cases added (without a display, one skipped case at
 * @no_display_path), removes the data folder; returns g_test_run()'s status. */
int gui_test_program_run (GuiTestProgram *program, const char *no_display_path);

/* With TS_SCREENSHOT_DIR set, renders @widget to the PNG file @name there,
 * after letting layout settle; otherwise does nothing. */
void gui_save_screenshot (GtkWidget *widget, const char *name);

G_END_DECLS
