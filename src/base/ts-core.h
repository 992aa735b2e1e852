/* ts-core.h: entry points of the non-GUI glue shared by app, CLI and servers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Returns the product version string (static). */
const char *ts_version (void);

G_END_DECLS
