/* ts-core.h: the program's version, for every program of src/.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Returns the product version string (static). */
const char *ts_version (void);

G_END_DECLS
