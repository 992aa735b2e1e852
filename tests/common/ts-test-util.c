/* ts-test-util.c: helpers shared by every test suite.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <gio/gio.h>

#include "ts-test-util.h"

#include <glib/gstdio.h>
#include <string.h>

char *
ts_test_data_path (const char *relative)
{
  const char *dir = g_getenv ("TENSAFE_TEST_DATA");

  if (dir == NULL)
    dir = TS_TEST_DATA_DIR;
  return g_build_filename (dir, relative, NULL);
}

guint8 *
ts_test_read_data (const char *relative, gsize *len)
{
  g_autofree char *path = ts_test_data_path (relative);
  g_autoptr (GError) error = NULL;
  char *contents = NULL;

  if (!g_file_get_contents (path, &contents, len, &error))
    g_error ("test data %s: %s", path, error->message);
  return (guint8 *) contents;
}

guint64
ts_test_seed (void)
{
  const char *env = g_getenv ("TS_TEST_SEED");
  guint64 seed;

  if (env != NULL)
    seed = g_ascii_strtoull (env, NULL, 10);
  else
    seed = ((guint64) g_random_int () << 32) | g_random_int ();
  g_test_message ("random seed: %" G_GUINT64_FORMAT " (replay with TS_TEST_SEED)", seed);
  return seed;
}

int
ts_test_spawn (const char *const *argv, char **out, char **err)
{
  g_autoptr (GSubprocess) p = NULL;
  g_autoptr (GError) error = NULL;

  p = g_subprocess_newv (argv, G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE,
                         &error);
  g_assert_no_error (error);
  g_assert_true (g_subprocess_communicate_utf8 (p, NULL, NULL, out, err, &error));
  g_assert_no_error (error);
  return g_subprocess_get_exit_status (p);
}

void
ts_test_remove_tree (const char *path)
{
  g_autoptr (GDir) dir = NULL;
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

      ts_test_remove_tree (child);
    }
  g_rmdir (path);
}

char *
ts_test_real_model (const char *file, guint64 bytes, char **reason)
{
  const char *dir = g_getenv ("TENSAFE_MODEL_DIR");
  g_autofree char *cache = g_build_filename (g_get_user_cache_dir (), "tensafe", "models", NULL);
  g_autofree char *path = g_build_filename (dir != NULL ? dir : cache, file, NULL);
  GStatBuf st;
  if (g_stat (path, &st) != 0)
    {
      *reason = g_strdup_printf ("%s is absent (build-aux/fetch-model.sh puts it there)", path);
      return NULL;
    }
  if ((guint64) st.st_size != bytes)
    {
      *reason = g_strdup_printf ("%s has %" G_GUINT64_FORMAT " bytes, not %" G_GUINT64_FORMAT
                                 " (rerun build-aux/fetch-model.sh)", path, (guint64) st.st_size, bytes);
      return NULL;
    }
  *reason = NULL;
  return g_steal_pointer (&path);
}

/* A GGUF string is its length (uint64, little-endian) and its bytes:
 * matching the length too finds the vocabulary entry, not the same text
 * inside another string (a chat template). */
static void
rename_gguf_string (guint8 *data, gsize len, const char *from, const char *to)
{
  gsize n = strlen (from), found = 0;
  guint8 key[64];

  g_assert_cmpuint (n, ==, strlen (to));
  g_assert_cmpuint (8 + n, <=, sizeof key);
  for (int i = 0; i < 8; i++)
    key[i] = (guint8) ((guint64) n >> (8 * i));
  memcpy (key + 8, from, n);
  for (gsize i = 0; i + 8 + n <= len; i++)
    if (memcmp (data + i, key, 8 + n) == 0)
      {
        memcpy (data + i + 8, to, n);
        found++;
      }
  g_assert_cmpuint (found, ==, 1);
}

void
ts_test_copy_model_without_think (const char *src, const char *dest)
{
  g_autofree guint8 *data = NULL;
  g_autoptr (GError) error = NULL;
  gsize len = 0;

  g_assert_true (g_file_get_contents (src, (char **) &data, &len, &error));
  g_assert_no_error (error);
  rename_gguf_string (data, len, "<think>", "<thonk>");
  rename_gguf_string (data, len, "</think>", "</thonk>");
  g_assert_true (g_file_set_contents (dest, (const char *) data, (gssize) len, &error));
  g_assert_no_error (error);
}

void
ts_test_copy_file (const char *from, const char *to)
{
  g_autofree char *data = NULL;
  gsize len;

  g_assert_true (g_file_get_contents (from, &data, &len, NULL));
  g_assert_true (g_file_set_contents (to, data, (gssize) len, NULL));
}

void
ts_test_copy_into (const char *from_dir, const char *to_dir, const char *name)
{
  g_autofree char *from = g_build_filename (from_dir, name, NULL);
  g_autofree char *to = g_build_filename (to_dir, name, NULL);

  ts_test_copy_file (from, to);
}
