/* ts-models-index.h: the user's record of models: digests learnt on first download, imports.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* The file in the models folder that holds the records. */
#define TS_MODEL_INDEX_FILE "models-index.json"

typedef struct
{
  char     *name;
  char     *file;           /* in the models folder */
  char     *architecture;   /* NULL when not known */
  char     *sha256;
  gint64    bytes;
  gboolean  imported;       /* added with `models import`, not from the catalogue */
} TsModelRecord;

typedef struct
{
  char      *path;
  GPtrArray *records;       /* of TsModelRecord */
} TsModelIndex;

/* Reads @dir/models-index.json; a missing file is an empty index. */
TsModelIndex *ts_model_index_load (const char *dir, GError **error);
/* Writes the index atomically (a temporary file renamed over it). */
gboolean ts_model_index_save (const TsModelIndex *index, GError **error);
void ts_model_index_free (TsModelIndex *index);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsModelIndex, ts_model_index_free)

const TsModelRecord *ts_model_index_find (const TsModelIndex *index, const char *name);
/* Adds or replaces the record named @name. */
void ts_model_index_put (TsModelIndex *index, const char *name, const char *file,
                         const char *architecture, gint64 bytes, const char *sha256,
                         gboolean imported);
gboolean ts_model_index_remove (TsModelIndex *index, const char *name);

G_END_DECLS
