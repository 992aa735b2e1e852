/* ts-models-installed.h: what the models folder holds: listing, re-hashing, removing.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

#include "ts-models-catalog.h"
#include "ts-models-index.h"
#include "ts-models-progress.h"

G_BEGIN_DECLS

/* One model the catalogue knows or the user imported, and its state here. */
typedef struct
{
  const char         *name;
  const char         *file;
  const char         *architecture;
  const char         *sha256;    /* the catalogue's, else the recorded one; NULL: none yet */
  gint64              bytes;     /* exact when known, else the catalogue's estimate, else -1 */
  const TsModelEntry *entry;     /* NULL for an import */
  gboolean            installed; /* the file is in the models folder */
  gboolean            partial;   /* an unfinished download is kept for resuming */
  gint64              partial_bytes; /* what it kept: the .part file and the chunks, else 0 */
} TsModelState;

/* Catalogue models first (in catalogue order), then imports; borrowed
 * strings point into @catalog and @index. A GArray of TsModelState. */
GArray *ts_models_list (const TsModelCatalog *catalog, const TsModelIndex *index,
                        const char *dir);

/* The state of @name, or NULL (with TS_MODELS_ERROR_NOT_FOUND) when neither
 * the catalogue nor the index knows it. Free with g_free(). */
TsModelState *ts_models_lookup (const TsModelCatalog *catalog, const TsModelIndex *index,
                                const char *dir, const char *name, GError **error);

/* Re-hashes @dir/@state->file: TS_MODELS_ERROR_CHECKSUM when size or digest
 * differ from @state's. The digest found goes to @sha_out (may be NULL). */
gboolean ts_models_verify (const TsModelState *state, const char *dir, TsModelsMeter *meter,
                           GCancellable *cancellable, char **sha_out, GError **error);

/* Removes the model file of @state and any unfinished download of it, and
 * forgets an import in @index (saved). A catalogue model's learnt digest
 * stays recorded, so a later download must match it. After an import is
 * forgotten, @state's strings (borrowed from @index) are gone. */
gboolean ts_models_remove (const TsModelState *state, const char *dir, TsModelIndex *index,
                           GError **error);

G_END_DECLS
