/* ts-models-pull.c: sources in order, space checked first, digest checked before install.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-pull.h"

#include <errno.h>
#include <glib/gstdio.h>

#include "ts-models-chunks.h"
#include "ts-models-error.h"
#include "ts-models-files.h"
#include "ts-models-http.h"
#include "ts-models-index.h"

#define DEFAULT_ATTEMPTS 3

typedef struct
{
  const TsModelEntry        *entry;
  const TsModelsPullOptions *options;
  SoupSession               *session;
  TsModelsMeter              meter;
  char                      *dir;
  char                      *target;
  char                      *part;
  char                      *partial;
  char                      *recorded_sha;   /* learnt on the first download */
  const char                *reference_sha;  /* the catalogue's, else the recorded one */
} Pull;

char *
ts_models_part_path (const char *dir, const char *file)
{
  g_return_val_if_fail (dir != NULL, NULL);
  g_return_val_if_fail (file != NULL, NULL);

  g_autofree char *name = g_strconcat (file, ".part", NULL);

  return g_build_filename (dir, name, NULL);
}

char *
ts_models_partial_dir (const char *dir, const char *file)
{
  g_return_val_if_fail (dir != NULL, NULL);
  g_return_val_if_fail (file != NULL, NULL);

  g_autofree char *name = g_strconcat (file, ".partial", NULL);

  return g_build_filename (dir, name, NULL);
}

static const char *
source_label (const TsModelSource *s)
{
  if (s->kind == TS_MODEL_SOURCE_HTTP)
    return s->url;
  return ((const TsModelChunk *) g_ptr_array_index (s->chunks, 0))->url;
}

/* What a source still has to put on disk: the rest of the file, and for
 * chunks the chunks and a wheel besides. */
static gint64
space_needed (const Pull *p, const TsModelSource *s)
{
  gint64 size = ts_model_entry_size (p->entry);
  gint64 scratch;

  if (size < 0)
    return -1;
  if (s->kind == TS_MODEL_SOURCE_HTTP)
    return size - MAX (ts_models_file_size (p->part), 0);
  scratch = ts_models_chunks_scratch_bytes (s);
  return scratch < 0 ? size : size + scratch;
}

static void
discard_download (const Pull *p)
{
  ts_models_http_discard (p->part);
  ts_models_remove_tree (p->partial);
}

static gboolean
check_download (Pull *p, char **sha_out, GError **error)
{
  g_autofree char *sha = NULL;
  gint64 size = -1;

  sha = ts_models_sha256_file (p->part, &size, &p->meter, p->options->cancellable, error);
  if (sha == NULL)
    return FALSE;
  if (p->entry->bytes >= 0 && size != p->entry->bytes)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM,
                   "the download has %" G_GINT64_FORMAT " bytes; the catalogue says %"
                   G_GINT64_FORMAT, size, p->entry->bytes);
      return FALSE;
    }
  if (p->reference_sha != NULL && g_strcmp0 (sha, p->reference_sha) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM,
                   "the download has SHA-256 %s; %s was expected", sha, p->reference_sha);
      return FALSE;
    }
  *sha_out = g_steal_pointer (&sha);
  return TRUE;
}

static gboolean
fetch_source (Pull *p, const TsModelSource *s, GError **error)
{
  guint attempts = p->options->attempts ? p->options->attempts : DEFAULT_ATTEMPTS;
  GCancellable *cancellable = p->options->cancellable;

  if (!ts_models_check_free_space (p->dir, space_needed (p, s), error))
    return FALSE;
  if (s->kind == TS_MODEL_SOURCE_HTTP)
    return ts_models_http_fetch (p->session, s->url, p->part, p->entry->bytes, attempts,
                                 &p->meter, cancellable, error);
  return ts_models_chunks_fetch (p->session, s, p->partial, p->part, attempts, &p->meter,
                                 cancellable, error);
}

static gboolean
record_digest (const Pull *p, const char *sha, GError **error)
{
  g_autoptr(TsModelIndex) index = ts_model_index_load (p->dir, error);

  if (index == NULL)
    return FALSE;
  ts_model_index_put (index, p->entry->name, p->entry->file, p->entry->architecture,
                      ts_models_file_size (p->target), sha, FALSE);
  return ts_model_index_save (index, error);
}

/* Wrong or damaged bytes, or a disk that failed under them: nothing worth
 * resuming. A cancel, a dropped connection, a refused request or too little
 * space keeps what an earlier attempt downloaded. */
static gboolean
is_bad_data (const GError *error)
{
  return g_error_matches (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM)
         || g_error_matches (error, TS_MODELS_ERROR, TS_MODELS_ERROR_ARCHIVE)
         || g_error_matches (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO);
}

/* One source, start to installed file. */
static gboolean
pull_from (Pull *p, const TsModelSource *s, GError **error)
{
  g_autofree char *sha = NULL;
  GError *local = NULL;

  if (!fetch_source (p, s, &local) || !check_download (p, &sha, &local)
      || !ts_models_install_file (p->part, p->target, &local))
    {
      if (is_bad_data (local))
        discard_download (p);
      g_propagate_error (error, local);
      return FALSE;
    }
  ts_models_remove_tree (p->partial);
  ts_models_http_discard (p->part);  /* the validator; the part was renamed */
  if (p->reference_sha == NULL)
    return record_digest (p, sha, error);
  return TRUE;
}

static gboolean
prepare (Pull *p, GError **error)
{
  g_autoptr(TsModelIndex) index = NULL;
  const TsModelRecord *record;

  if (g_file_test (p->target, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_EXISTS,
                   "%s is already installed (%s)", p->entry->name, p->target);
      return FALSE;
    }
  if (g_mkdir_with_parents (p->dir, 0755) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot create %s: %s", p->dir,
                   g_strerror (errno));
      return FALSE;
    }
  index = ts_model_index_load (p->dir, error);
  if (index == NULL)
    return FALSE;
  p->reference_sha = p->entry->sha256;
  record = ts_model_index_find (index, p->entry->name);
  /* A digest learnt on an earlier download pins what later ones must match. */
  if (p->reference_sha == NULL && record != NULL && g_strcmp0 (record->file, p->entry->file) == 0)
    p->reference_sha = p->recorded_sha = g_strdup (record->sha256);
  return TRUE;
}

static char *
pull_sources (Pull *p, GError **error)
{
  g_autoptr(GString) reasons = g_string_new (NULL);
  GError *first = NULL;

  for (guint i = 0; i < p->entry->sources->len; i++)
    {
      const TsModelSource *s = g_ptr_array_index (p->entry->sources, i);
      GError *local = NULL;

      if (pull_from (p, s, &local))
        {
          g_clear_error (&first);
          return g_strdup (p->target);
        }
      if (g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          g_clear_error (&first);
          g_propagate_error (error, local);
          return NULL;
        }
      /* The messages name the URL that failed. */
      g_string_append_printf (reasons, "\n  - %s", local->message);
      if (p->options->source_failed != NULL && i + 1 < p->entry->sources->len)
        p->options->source_failed (source_label (s), local, p->options->progress_data);
      if (first == NULL)
        first = local;
      else
        g_error_free (local);
    }
  g_set_error (error, TS_MODELS_ERROR, first->code, "Cannot pull %s:%s", p->entry->name,
               reasons->str);
  g_error_free (first);
  return NULL;
}

char *
ts_models_pull (const TsModelEntry *entry, const char *dir, const TsModelsPullOptions *options,
                GError **error)
{
  static const TsModelsPullOptions defaults = { 0 };
  Pull p = { 0 };
  char *path = NULL;
  int lock = -1;

  g_return_val_if_fail (entry != NULL, NULL);

  p.entry = entry;
  p.options = options ? options : &defaults;
  p.session = p.options->session ? g_object_ref (p.options->session) : ts_models_session_new ();
  p.meter.func = p.options->progress;
  p.meter.data = p.options->progress_data;
  p.dir = g_strdup (dir);
  p.target = g_build_filename (dir, entry->file, NULL);
  p.part = ts_models_part_path (dir, entry->file);
  p.partial = ts_models_partial_dir (dir, entry->file);
  if (prepare (&p, error) && (lock = ts_models_lock_dir (dir, error)) >= 0)
    path = pull_sources (&p, error);
  ts_models_unlock_dir (lock);
  g_object_unref (p.session);
  g_free (p.dir);
  g_free (p.target);
  g_free (p.part);
  g_free (p.partial);
  g_free (p.recorded_sha);
  return path;
}
