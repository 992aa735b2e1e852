/* ts-adapter-base.h: which base model an adapter says it was made for.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A marketplace folder's metadata.json ("base_model"), else a PEFT folder's
 * adapter_config.json ("base_model_name_or_path"). Used to turn a shape
 * error on loading into "this adapter is for model X". Any thread. */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The base model named by the adapter at @path (a folder; a file names
 * none), newly allocated, or NULL. */
char *ts_adapter_base_model (const char *path);

/* When the adapter at @adapter_path names a base model, appends to
 * @error's message that it was made for that model, not for the one at
 * @model_path. Leaves @error as it is otherwise. */
void ts_adapter_explain_mismatch (GError *error, const char *adapter_path, const char *model_path);

G_END_DECLS
