/* ts-preferences-window.h: the preferences window, every row bound to a TsSettings property.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. Rows write through to org.tensafe.Desktop at once
 * (through TsSettings' own binding); nothing is applied on close.
 */
#pragma once

#include <adwaita.h>

#include "ts-settings.h"

G_BEGIN_DECLS

#define TS_TYPE_PREFERENCES_WINDOW (ts_preferences_window_get_type ())
G_DECLARE_FINAL_TYPE (TsPreferencesWindow, ts_preferences_window, TS, PREFERENCES_WINDOW,
                      AdwPreferencesWindow)

/* A window for @settings (a reference is taken), transient for @parent
 * (may be NULL). */
TsPreferencesWindow *ts_preferences_window_new (GtkWindow *parent, TsSettings *settings);

/* Applies the "color-scheme" setting to AdwStyleManager now and whenever it
 * changes (for the lifetime of @settings). */
void ts_preferences_follow_color_scheme (TsSettings *settings);

G_END_DECLS
