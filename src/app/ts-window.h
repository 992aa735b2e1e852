/* ts-window.h: the main window: header bar, primary menu and the four pages.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. Actions (installed on the class, so tests can drive them
 * with gtk_widget_activate_action()):
 *   win.show-page(s)  "chat", "market", "keys" or "bench"  (Alt+1 … Alt+4)
 *   win.about         the About window
 *   win.preferences   preferences (placeholder for now)
 */
#pragma once

#include <adwaita.h>

#include "ts-application.h"

G_BEGIN_DECLS

#define TS_TYPE_WINDOW (ts_window_get_type ())
G_DECLARE_FINAL_TYPE (TsWindow, ts_window, TS, WINDOW, AdwApplicationWindow)

TsWindow *ts_window_new (TsApplication *app);

/* The name of the page shown ("chat", ...); property "visible-page". */
const char *ts_window_get_visible_page (TsWindow *self);
void ts_window_set_visible_page (TsWindow *self, const char *name);

G_END_DECLS
