/* ts-models-files.h: the models folder, hashing, the free-space check and the atomic install.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

#include "ts-models-progress.h"

G_BEGIN_DECLS

/* ${TENSAFE_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tensafe/models}, the
 * folder build-aux/fetch-model.sh and the real-model tests use. Newly allocated. */
char *ts_models_dir (void);

/* The SHA-256 of @path as lower-case hex (newly allocated), its size in
 * @size_out; progress as TS_MODELS_STAGE_VERIFY. */
char *ts_models_sha256_file (const char *path, gint64 *size_out, TsModelsMeter *meter,
                             GCancellable *cancellable, GError **error);

/* Bytes free for an unprivileged user on the file system of @dir (the
 * nearest folder that exists), -1 when unknown. */
gint64 ts_models_free_space (const char *dir);

/* Replaces the free-space query, so that a test can pretend the disk is full.
 * @func NULL restores the real one. */
typedef gint64 (*TsModelsFreeSpaceFunc) (const char *dir, gpointer user_data);
void ts_models_set_free_space_func (TsModelsFreeSpaceFunc func, gpointer user_data);

/* Fails with TS_MODELS_ERROR_NO_SPACE, naming both amounts, when fewer than
 * @needed bytes (plus a 64 MiB margin) are free in @dir. */
gboolean ts_models_check_free_space (const char *dir, gint64 needed, GError **error);

/* Flushes @part to disk and renames it to @target in the same folder, then
 * flushes the folder: the target is either absent, the old file, or whole. */
gboolean ts_models_install_file (const char *part, const char *target, GError **error);

/* Takes an exclusive lock on the folder @dir for the duration of a pull or
 * import (flock; released when the process ends). Returns the descriptor to
 * pass to ts_models_unlock_dir(), or -1 with TS_MODELS_ERROR_BUSY. */
int ts_models_lock_dir (const char *dir, GError **error);
void ts_models_unlock_dir (int fd);

/* Removes @path: a file, or a folder and everything in it. Missing is fine. */
void ts_models_remove_tree (const char *path);

/* The size of @path, -1 when it does not exist. */
gint64 ts_models_file_size (const char *path);

G_END_DECLS
