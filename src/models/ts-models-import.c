/* ts-models-import.c: checked by the engine's loader, copied atomically, recorded.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-import.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <stdlib.h>

#include "lm.h"
#include "ts-models-error.h"
#include "ts-models-files.h"
#include "ts-models-index.h"
#include "ts-models-pull.h"

#define COPY_BLOCK (1024 * 1024)

gboolean
ts_models_name_is_valid (const char *name)
{
  if (name == NULL || name[0] == '\0' || name[0] == '.' || name[0] == '-' || strlen (name) > 200)
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!g_ascii_isalnum (*p) && *p != '.' && *p != '_' && *p != '-')
      return FALSE;
  return TRUE;
}

/* The architecture, when the engine can run the file; its message otherwise. */
static char *
check_with_engine (const char *path, GError **error)
{
  LmModel *model = NULL;
  char *message = NULL;
  char *arch;
  LmStatus status = lm_model_load (path, &model, &message);

  if (status != LM_OK)
    {
      /* The engine's message names the file already. */
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_UNSUPPORTED, "%s",
                   message ? message : "the engine cannot load this file");
      free (message);
      return NULL;
    }
  arch = g_strdup (lm_arch_name (lm_model_info (model)->arch));
  lm_model_free (model);
  return arch;
}

char *
ts_models_import_name (const char *path)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autofree char *base = g_path_get_basename (path);

  if (g_str_has_suffix (base, ".gguf"))
    base[strlen (base) - 5] = '\0';
  return g_ascii_strdown (base, -1);
}

static gboolean
copy_hashing (FILE *in, FILE *out, const char *part, GChecksum *sum, TsModelsMeter *meter,
              GCancellable *cancellable, GError **error)
{
  g_autofree guint8 *buf = g_malloc (COPY_BLOCK);
  size_t n;

  while ((n = fread (buf, 1, COPY_BLOCK, in)) > 0)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      if (fwrite (buf, 1, n, out) != n)
        {
          g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write %s: %s", part,
                       g_strerror (errno));
          return FALSE;
        }
      g_checksum_update (sum, buf, n);
      ts_models_meter_add (meter, (gint64) n);
    }
  if (ferror (in))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot read the model: %s",
                   g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

/* Copies @path to @part; the SHA-256 of what was copied goes to @sha_out. */
static gboolean
copy_file (const char *path, const char *part, TsModelsMeter *meter, GCancellable *cancellable,
           char **sha_out, GError **error)
{
  g_autoptr(GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  FILE *in = g_fopen (path, "rb"), *out;
  gboolean ok;

  if (in == NULL || (out = g_fopen (part, "wb")) == NULL)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot open %s: %s",
                   in == NULL ? path : part, g_strerror (errno));
      if (in != NULL)
        fclose (in);
      return FALSE;
    }
  ts_models_meter_begin (meter, TS_MODELS_STAGE_COPY, ts_models_file_size (path), 0, path);
  ok = copy_hashing (in, out, part, sum, meter, cancellable, error);
  fclose (in);
  if (fclose (out) != 0 && ok)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write %s: %s", part,
                   g_strerror (errno));
      ok = FALSE;
    }
  if (ok)
    *sha_out = g_strdup (g_checksum_get_string (sum));
  return ok;
}

static gboolean
check_target (const char *dir, const char *name, const char *target, GError **error)
{
  if (!ts_models_name_is_valid (name))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "\"%s\" is not a valid model name (letters, digits, '.', '_', '-')", name);
      return FALSE;
    }
  if (g_file_test (target, G_FILE_TEST_EXISTS))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_EXISTS,
                   "%s already exists; remove it first or import under another name", target);
      return FALSE;
    }
  if (g_mkdir_with_parents (dir, 0755) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot create %s: %s", dir,
                   g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

static gboolean
install_and_record (const char *dir, const char *name, const char *file, const char *arch,
                    const char *part, const char *target, const char *sha, GError **error)
{
  g_autoptr(TsModelIndex) index = ts_model_index_load (dir, error);

  if (index == NULL || !ts_models_install_file (part, target, error))
    return FALSE;
  ts_model_index_put (index, name, file, arch, ts_models_file_size (target), sha, TRUE);
  if (ts_model_index_save (index, error))
    return TRUE;
  g_unlink (target);
  return FALSE;
}

char *
ts_models_import (const char *path, const char *dir, const char *name, TsModelsMeter *meter,
                  GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);
  g_return_val_if_fail (dir != NULL, NULL);

  g_autofree char *chosen = name ? g_strdup (name) : ts_models_import_name (path);
  g_autofree char *file = g_strconcat (chosen, ".gguf", NULL);
  g_autofree char *target = g_build_filename (dir, file, NULL);
  g_autofree char *part = ts_models_part_path (dir, file);
  g_autofree char *arch = NULL;
  g_autofree char *sha = NULL;
  int lock;

  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NOT_FOUND, "%s is not a file", path);
      return NULL;
    }
  if (!check_target (dir, chosen, target, error)
      || (arch = check_with_engine (path, error)) == NULL
      || !ts_models_check_free_space (dir, ts_models_file_size (path), error))
    return NULL;
  if ((lock = ts_models_lock_dir (dir, error)) < 0)
    return NULL;
  if (!copy_file (path, part, meter, cancellable, &sha, error)
      || !install_and_record (dir, chosen, file, arch, part, target, sha, error))
    {
      g_unlink (part);
      ts_models_unlock_dir (lock);
      return NULL;
    }
  ts_models_unlock_dir (lock);
  return g_steal_pointer (&chosen);
}
