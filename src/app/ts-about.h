/* ts-about.h: the About window, with versions and compute devices as debug info.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

G_BEGIN_DECLS

/* Shows a new About window transient for @parent (main thread only). Its
 * debug info lists versions, CPU features and the GPU probe result, which
 * arrives from a worker thread a moment later. */
void ts_about_present (GtkWindow *parent);

G_END_DECLS
