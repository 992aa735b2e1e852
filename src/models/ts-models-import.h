/* ts-models-import.h: a GGUF file of the user's into the models folder.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

#include "ts-models-progress.h"

G_BEGIN_DECLS

/* Opens @path with the engine's loader, so that an architecture it does not
 * run or a missing tensor is refused with the engine's own message
 * (TS_MODELS_ERROR_UNSUPPORTED); checks the free space; copies the file to
 * @dir/NAME.gguf through NAME.gguf.part and a rename, hashing it on the way;
 * and records name, architecture, size and SHA-256 in models-index.json.
 * @name NULL: the file's base name without ".gguf", lower-cased. Names are
 * letters, digits, '.', '_' and '-'. Returns the name (newly allocated). */
char *ts_models_import (const char *path, const char *dir, const char *name,
                        TsModelsMeter *meter, GCancellable *cancellable, GError **error);

/* The name an import of @path gets by default (newly allocated). */
char *ts_models_import_name (const char *path);

/* TRUE when @name may name a model (and its file). */
gboolean ts_models_name_is_valid (const char *name);

G_END_DECLS
