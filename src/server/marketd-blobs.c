/* marketd-blobs.c: the content-addressed blob store (blobs/ab/abcdef…, named by SHA-256).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"

#include <glib/gstdio.h>
#include <unistd.h>

#include "ts-market-error.h"
#include "ts-signing.h"

char *
marketd_blob_path (Marketd *self, const char *sha256)
{
  char prefix[3] = { sha256[0], sha256[1], '\0' };

  g_return_val_if_fail (ts_sha256_hex_is_valid (sha256), NULL);
  return g_build_filename (self->blobs_dir, prefix, sha256, NULL);
}

/* Copies @src_path into the store under its SHA-256; a blob already there is
 * kept (same name, same bytes).  The copy goes through a temporary file and a
 * rename, atomic on one file system (a network mount shared by several
 * servers included), and is hashed again so a file changing under us is caught. */
gboolean
marketd_blob_store (Marketd *self, const char *src_path, char **sha256_out,
                    gint64 *size_out, GError **error)
{
  g_autofree char *sha = NULL, *path = NULL, *dir = NULL, *tmp = NULL, *check = NULL;
  g_autoptr(GFile) src = NULL, dst = NULL;
  goffset size = 0;

  sha = ts_sha256_file (src_path, &size, NULL, error);
  if (sha == NULL)
    return FALSE;
  path = marketd_blob_path (self, sha);
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      dir = g_path_get_dirname (path);
      if (g_mkdir_with_parents (dir, 0755) != 0)
        {
          g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                       "Cannot create %s", dir);
          return FALSE;
        }
      /* A name of its own: servers sharing the store may copy the same blob at once. */
      tmp = g_strdup_printf ("%s.%d-%08x.tmp", path, (int) getpid (), g_random_int ());
      src = g_file_new_for_path (src_path);
      dst = g_file_new_for_path (tmp);
      if (!g_file_copy (src, dst, G_FILE_COPY_OVERWRITE, NULL, NULL, NULL, error))
        return FALSE;
      check = ts_sha256_file (tmp, NULL, NULL, error);
      if (check == NULL || g_strcmp0 (check, sha) != 0 || g_rename (tmp, path) != 0)
        {
          g_unlink (tmp);
          if (check != NULL)
            g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                         "%s changed while it was being stored", src_path);
          return FALSE;
        }
    }
  *sha256_out = g_steal_pointer (&sha);
  *size_out = size;
  return TRUE;
}
