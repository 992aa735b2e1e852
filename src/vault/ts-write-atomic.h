/* ts-write-atomic.h: whole-file writes that a crash cannot leave half done.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Used for the vault's key files; failures are reported in TS_KEY_ERROR
 * (ts-key-file.h) as TS_KEY_ERROR_FAILED, naming the file.
 *
 * Thread-safety: callable from any thread (for different paths).
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

/* Writes @data to a temporary file next to @path (mode 0600), fsyncs it,
 * renames it over @path and fsyncs the folder: a crash leaves either the
 * old file or the new one, never a mix. A stale temporary file from an
 * earlier crash is never read. */
gboolean ts_write_atomic (const char *path, const void *data, gsize len, GError **error);

G_END_DECLS
