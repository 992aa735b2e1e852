/* ts-models-files.c: the models folder, hashing, the free-space check and the atomic install.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-files.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <sys/file.h>
#include <unistd.h>

#include "ts-models-error.h"

#define HASH_BLOCK    (1024 * 1024)
#define SPACE_MARGIN  ((gint64) 64 << 20)

static TsModelsFreeSpaceFunc free_space_func;
static gpointer free_space_data;

char *
ts_models_dir (void)
{
  const char *env = g_getenv ("TENSAFE_MODEL_DIR");

  if (env != NULL && env[0] != '\0')
    return g_strdup (env);
  return g_build_filename (g_get_user_cache_dir (), "tensafe", "models", NULL);
}

char *
ts_models_sha256_file (const char *path, gint64 *size_out, TsModelsMeter *meter,
                       GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (path != NULL, NULL);

  g_autoptr(GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  g_autofree guint8 *buf = g_malloc (HASH_BLOCK);
  gint64 total = ts_models_file_size (path), done = 0;
  int fd = g_open (path, O_RDONLY | O_CLOEXEC, 0);
  gssize n;

  if (fd < 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot open %s: %s", path,
                   g_strerror (errno));
      return NULL;
    }
  ts_models_meter_begin (meter, TS_MODELS_STAGE_VERIFY, total, 0, path);
  while ((n = read (fd, buf, HASH_BLOCK)) > 0)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        {
          close (fd);
          return NULL;
        }
      g_checksum_update (sum, buf, n);
      done += n;
      ts_models_meter_add (meter, n);
    }
  close (fd);
  if (n < 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot read %s: %s", path,
                   g_strerror (errno));
      return NULL;
    }
  if (size_out != NULL)
    *size_out = done;
  return g_strdup (g_checksum_get_string (sum));
}

static gint64
query_free_space (const char *dir)
{
  g_autofree char *probe = g_strdup (dir);
  g_autoptr(GFileInfo) info = NULL;
  g_autoptr(GFile) file = NULL;

  /* The folder may not exist yet: ask about the nearest one that does. */
  while (!g_file_test (probe, G_FILE_TEST_IS_DIR))
    {
      char *parent = g_path_get_dirname (probe);
      gboolean top = g_strcmp0 (parent, probe) == 0;
      g_free (probe);
      probe = parent;
      if (top)
        break;
    }
  file = g_file_new_for_path (probe);
  info = g_file_query_filesystem_info (file, G_FILE_ATTRIBUTE_FILESYSTEM_FREE, NULL, NULL);
  if (info == NULL || !g_file_info_has_attribute (info, G_FILE_ATTRIBUTE_FILESYSTEM_FREE))
    return -1;
  return (gint64) g_file_info_get_attribute_uint64 (info, G_FILE_ATTRIBUTE_FILESYSTEM_FREE);
}

gint64
ts_models_free_space (const char *dir)
{
  g_return_val_if_fail (dir != NULL, -1);

  if (free_space_func != NULL)
    return free_space_func (dir, free_space_data);
  return query_free_space (dir);
}

void
ts_models_set_free_space_func (TsModelsFreeSpaceFunc func, gpointer user_data)
{
  free_space_func = func;
  free_space_data = user_data;
}

gboolean
ts_models_check_free_space (const char *dir, gint64 needed, GError **error)
{
  g_return_val_if_fail (dir != NULL, FALSE);

  gint64 free_bytes = ts_models_free_space (dir);

  if (free_bytes < 0 || needed <= 0 || free_bytes >= needed + SPACE_MARGIN)
    return TRUE;
  g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NO_SPACE,
               "Not enough free space in %s: %.1f MB needed (with a 64 MiB margin), %.1f MB free",
               dir, (needed + SPACE_MARGIN) / 1e6, free_bytes / 1e6);
  return FALSE;
}

static gboolean
sync_path (const char *path, int flags, GError **error)
{
  int fd = g_open (path, flags | O_CLOEXEC, 0);
  int rc;

  if (fd < 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot open %s: %s", path,
                   g_strerror (errno));
      return FALSE;
    }
  rc = fsync (fd);
  close (fd);
  /* Some file systems cannot fsync a folder; the rename is still atomic. */
  if (rc != 0 && (flags & O_DIRECTORY) == 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot flush %s: %s", path,
                   g_strerror (errno));
      return FALSE;
    }
  return TRUE;
}

gboolean
ts_models_install_file (const char *part, const char *target, GError **error)
{
  g_return_val_if_fail (part != NULL, FALSE);
  g_return_val_if_fail (target != NULL, FALSE);

  g_autofree char *dir = g_path_get_dirname (target);

  if (!sync_path (part, O_RDONLY, error))
    return FALSE;
  if (g_rename (part, target) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot move %s to %s: %s", part,
                   target, g_strerror (errno));
      return FALSE;
    }
  return sync_path (dir, O_RDONLY | O_DIRECTORY, error);
}

int
ts_models_lock_dir (const char *dir, GError **error)
{
  g_return_val_if_fail (dir != NULL, -1);

  int fd = g_open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);

  if (fd < 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot open %s: %s", dir,
                   g_strerror (errno));
      return -1;
    }
  /* A folder lock leaves no file behind and covers the index as well. */
  if (flock (fd, LOCK_EX | LOCK_NB) != 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_BUSY,
                   "Another pull or import is working in %s; try again when it ends", dir);
      close (fd);
      return -1;
    }
  return fd;
}

void
ts_models_unlock_dir (int fd)
{
  if (fd >= 0)
    close (fd);
}

void
ts_models_remove_tree (const char *path)
{
  g_return_if_fail (path != NULL);

  g_autoptr(GDir) dir = NULL;
  const char *name;

  if (!g_file_test (path, G_FILE_TEST_IS_DIR) || g_file_test (path, G_FILE_TEST_IS_SYMLINK))
    {
      g_unlink (path);
      return;
    }
  dir = g_dir_open (path, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *child = g_build_filename (path, name, NULL);
      ts_models_remove_tree (child);
    }
  g_rmdir (path);
}

gint64
ts_models_file_size (const char *path)
{
  g_return_val_if_fail (path != NULL, -1);

  GStatBuf st;

  if (g_stat (path, &st) != 0)
    return -1;
  return (gint64) st.st_size;
}
