/* ts-preferences-window.h: the preferences window, every row bound to GSettings.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. Rows write through to org.tensafe.Desktop at once
 * (g_settings_bind); nothing is applied on close.
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define TS_TYPE_PREFERENCES_WINDOW (ts_preferences_window_get_type ())
G_DECLARE_FINAL_TYPE (TsPreferencesWindow, ts_preferences_window, TS, PREFERENCES_WINDOW,
                      AdwPreferencesWindow)

/* A window for @settings (borrowed; must be the org.tensafe.Desktop schema),
 * transient for @parent (may be NULL). */
TsPreferencesWindow *ts_preferences_window_new (GtkWindow *parent, GSettings *settings);

/* Applies the "color-scheme" setting to AdwStyleManager now and whenever it
 * changes (for the application's lifetime). */
void ts_preferences_follow_color_scheme (GSettings *settings);

G_END_DECLS
