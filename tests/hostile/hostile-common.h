/* hostile-common.h: what the hostile suite's programs share.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every attack is bounded in count and time. `--long` (before GLib's own
 * options; `make hostile-long`) multiplies the counts for a release check;
 * `make check` runs the short form. */
#pragma once

#include <glib.h>

/* Removes "--long" from the arguments; the count scale (1, or 25 with it). */
guint hostile_scale_from_args (int *argc, char **argv);
/* @n attacks, scaled. */
guint hostile_count (guint n);
/* A memory figure of process @pid in KiB from /proc/PID/status ("VmRSS",
 * or "RssAnon": its own heap and stacks, without mapped files); 0 if gone. */
guint64 hostile_status_kib (GPid pid, const char *field);
