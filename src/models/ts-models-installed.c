/* ts-models-installed.c: listing, re-hashing and removing what the models folder holds.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-installed.h"

#include <errno.h>
#include <glib/gstdio.h>

#include "ts-models-error.h"
#include "ts-models-files.h"
#include "ts-models-http.h"
#include "ts-models-pull.h"

/* The bytes of the regular files directly in @path (a chunked download's
 * chunks and the wheel in progress); 0 when it is absent. */
static gint64
folder_bytes (const char *path)
{
  g_autoptr(GDir) folder = g_dir_open (path, 0, NULL);
  const char *name;
  gint64 total = 0;

  while (folder != NULL && (name = g_dir_read_name (folder)) != NULL)
    {
      g_autofree char *file = g_build_filename (path, name, NULL);

      if (g_file_test (file, G_FILE_TEST_IS_REGULAR))
        total += MAX (ts_models_file_size (file), 0);
    }
  return total;
}

static void
fill_presence (TsModelState *s, const char *dir)
{
  g_autofree char *path = g_build_filename (dir, s->file, NULL);
  g_autofree char *part = ts_models_part_path (dir, s->file);
  g_autofree char *partial = ts_models_partial_dir (dir, s->file);

  s->installed = g_file_test (path, G_FILE_TEST_IS_REGULAR);
  s->partial = g_file_test (part, G_FILE_TEST_EXISTS) || g_file_test (partial, G_FILE_TEST_EXISTS);
  /* A chunked pull writes the .part only while joining, and removes it when the join stops. */
  s->partial_bytes = MAX (ts_models_file_size (part), 0) + folder_bytes (partial);
}

static TsModelState
state_of_entry (const TsModelEntry *e, const TsModelIndex *index, const char *dir)
{
  const TsModelRecord *r = ts_model_index_find (index, e->name);
  TsModelState s = { e->name, e->file, e->architecture, e->sha256, ts_model_entry_size (e), e,
                     FALSE, FALSE, 0 };

  if (s.sha256 == NULL && r != NULL && g_strcmp0 (r->file, e->file) == 0)
    {
      s.sha256 = r->sha256;
      s.bytes = r->bytes;
    }
  fill_presence (&s, dir);
  return s;
}

static TsModelState
state_of_import (const TsModelRecord *r, const char *dir)
{
  TsModelState s = { r->name, r->file, r->architecture, r->sha256, r->bytes, NULL, FALSE,
                     FALSE, 0 };

  fill_presence (&s, dir);
  return s;
}

GArray *
ts_models_list (const TsModelCatalog *catalog, const TsModelIndex *index, const char *dir)
{
  g_return_val_if_fail (catalog != NULL, NULL);
  g_return_val_if_fail (index != NULL, NULL);
  g_return_val_if_fail (dir != NULL, NULL);

  GArray *list = g_array_new (FALSE, FALSE, sizeof (TsModelState));

  for (guint i = 0; i < catalog->models->len; i++)
    {
      TsModelState s = state_of_entry (g_ptr_array_index (catalog->models, i), index, dir);
      g_array_append_val (list, s);
    }
  for (guint i = 0; i < index->records->len; i++)
    {
      const TsModelRecord *r = g_ptr_array_index (index->records, i);
      if (r->imported && ts_model_catalog_find (catalog, r->name) == NULL)
        {
          TsModelState s = state_of_import (r, dir);
          g_array_append_val (list, s);
        }
    }
  return list;
}

TsModelState *
ts_models_lookup (const TsModelCatalog *catalog, const TsModelIndex *index, const char *dir,
                  const char *name, GError **error)
{
  g_return_val_if_fail (catalog != NULL, NULL);
  g_return_val_if_fail (index != NULL, NULL);
  g_return_val_if_fail (name != NULL, NULL);

  const TsModelEntry *e = ts_model_catalog_find (catalog, name);
  const TsModelRecord *r = ts_model_index_find (index, name);
  TsModelState s;

  if (e != NULL)
    s = state_of_entry (e, index, dir);
  else if (r != NULL && r->imported)
    s = state_of_import (r, dir);
  else
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NOT_FOUND,
                   "No model named \"%s\" (see `tensafe-cli models list`)", name);
      return NULL;
    }
  return g_memdup2 (&s, sizeof s);
}

gboolean
ts_models_verify (const TsModelState *state, const char *dir, TsModelsMeter *meter,
                  GCancellable *cancellable, char **sha_out, GError **error)
{
  g_return_val_if_fail (state != NULL, FALSE);
  g_return_val_if_fail (dir != NULL, FALSE);

  g_autofree char *path = g_build_filename (dir, state->file, NULL);
  g_autofree char *sha = NULL;
  gint64 size = -1;

  if (!state->installed)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NOT_FOUND, "%s is not installed",
                   state->name);
      return FALSE;
    }
  sha = ts_models_sha256_file (path, &size, meter, cancellable, error);
  if (sha == NULL)
    return FALSE;
  if (sha_out != NULL)
    *sha_out = g_strdup (sha);
  if (state->entry != NULL && state->entry->bytes >= 0 && size != state->entry->bytes)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM,
                   "%s has %" G_GINT64_FORMAT " bytes; %" G_GINT64_FORMAT " were expected", path,
                   size, state->entry->bytes);
      return FALSE;
    }
  if (state->sha256 != NULL && g_strcmp0 (sha, state->sha256) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM,
                   "%s has SHA-256 %s; %s was expected", path, sha, state->sha256);
      return FALSE;
    }
  return TRUE;
}

gboolean
ts_models_remove (const TsModelState *state, const char *dir, TsModelIndex *index,
                  GError **error)
{
  g_return_val_if_fail (state != NULL, FALSE);
  g_return_val_if_fail (dir != NULL, FALSE);

  g_autofree char *path = g_build_filename (dir, state->file, NULL);
  g_autofree char *part = ts_models_part_path (dir, state->file);
  g_autofree char *partial = ts_models_partial_dir (dir, state->file);

  if (!state->installed && !state->partial)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NOT_FOUND,
                   "%s is not installed and has no unfinished download", state->name);
      return FALSE;
    }
  if (state->installed && g_unlink (path) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot remove %s: %s", path,
                   g_strerror (errno));
      return FALSE;
    }
  ts_models_http_discard (part);
  ts_models_remove_tree (partial);
  if (state->entry == NULL && ts_model_index_remove (index, state->name))
    return ts_model_index_save (index, error);
  return TRUE;
}
