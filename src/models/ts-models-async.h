/* ts-models-async.h: pulls and imports on a worker, for callers with a main loop.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * ts_models_pull() and ts_models_import() block for minutes; these run them
 * on a GLib worker thread. Their progress reaches the caller's
 * thread-default main context (the one current at the _async call) with
 * ts_task_post_progress(): never after the result, and coalesced, so a
 * main loop that is slower than the disk sees the latest counters rather
 * than a queue of stale ones. Cancelling @cancellable stops as the blocking
 * functions do (G_IO_ERROR_CANCELLED; a pull resumes next time).
 */
#pragma once

#include <gio/gio.h>

#include "ts-models-catalog.h"
#include "ts-models-progress.h"

G_BEGIN_DECLS

/* ts_models_pull() of @entry into @dir. @entry is borrowed: it must stay
 * valid until @callback has run (keep its catalogue). @progress (may be
 * NULL) runs on the caller's main context with @progress_data. */
void ts_models_pull_async (const TsModelEntry *entry, const char *dir,
                           TsModelsProgressFunc progress, gpointer progress_data,
                           GCancellable *cancellable, GAsyncReadyCallback callback,
                           gpointer user_data);
/* The installed path (newly allocated), or NULL with @error set. */
char *ts_models_pull_finish (GAsyncResult *result, GError **error);

/* ts_models_import() of the GGUF at @path into @dir as @name (NULL: the
 * default name); strings are copied. */
void ts_models_import_async (const char *path, const char *dir, const char *name,
                             TsModelsProgressFunc progress, gpointer progress_data,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data);
/* The model's name (newly allocated), or NULL with @error set. */
char *ts_models_import_finish (GAsyncResult *result, GError **error);

G_END_DECLS
