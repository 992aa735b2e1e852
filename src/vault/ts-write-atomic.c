/* ts-write-atomic.c: whole-file writes that a crash cannot leave half done.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <unistd.h>

#include "ts-key-file.h"
#include "ts-write-atomic-private.h"

static gboolean
io_failed (GError **error, const char *what, const char *path, int saved_errno)
{
  g_set_error (error, TS_KEY_ERROR, TS_KEY_ERROR_FAILED, "Could not %s %s: %s",
               what, path, g_strerror (saved_errno));
  return FALSE;
}

static gboolean
write_all (int fd, const guint8 *data, gsize len)
{
  while (len > 0)
    {
      ssize_t n = write (fd, data, len);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return FALSE;
      data += n;
      len -= (gsize) n;
    }
  return TRUE;
}

/* Makes the rename itself durable. */
static void
sync_folder (const char *path)
{
  g_autofree char *dir = g_path_get_dirname (path);
  int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

  if (fd >= 0)
    {
      fsync (fd);
      close (fd);
    }
}

gboolean
_ts_write_atomic_until (const char *path, const void *data, gsize len, TsWriteStop stop,
                        GError **error)
{
  g_autofree char *tmp = g_strconcat (path, ".XXXXXX", NULL);
  gsize part = stop == TS_WRITE_STOP_MID_DATA ? len / 2 : len;
  int fd = g_mkstemp_full (tmp, O_WRONLY | O_CLOEXEC, 0600);

  if (fd < 0)
    return io_failed (error, "create a file next to", path, errno);
  if (!write_all (fd, data, part) || fsync (fd) != 0)
    {
      int saved = errno;
      close (fd);
      g_unlink (tmp);
      return io_failed (error, "write", tmp, saved);
    }
  if (close (fd) != 0)
    {
      int saved = errno;
      g_unlink (tmp);
      return io_failed (error, "write", tmp, saved);
    }
  if (stop != TS_WRITE_COMPLETE)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED, "Write stopped before the rename");
      return FALSE;
    }
  if (g_rename (tmp, path) != 0)
    {
      int saved = errno;
      g_unlink (tmp);
      return io_failed (error, "replace", path, saved);
    }
  sync_folder (path);
  return TRUE;
}

gboolean
ts_write_atomic (const char *path, const void *data, gsize len, GError **error)
{
  g_return_val_if_fail (path != NULL, FALSE);
  g_return_val_if_fail (data != NULL || len == 0, FALSE);

  return _ts_write_atomic_until (path, data, len, TS_WRITE_COMPLETE, error);
}
