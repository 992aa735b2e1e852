/* test-cli-keys.c: tensafe-cli keys end to end on a temporary key directory:
 * generate, info, verify (right and wrong passphrase), passwd, export-public,
 * delete; the key file stays 0600 and the export holds no sealed key.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/wait.h>
#include <sys/stat.h>

#include "ts-key-file.h"

typedef struct {
  char *dir;
  char *keys;
} Fixture;

/* Runs tensafe-cli keys ARGS... --dir KEYS; returns the exit status. */
static int
run_keys (Fixture *f, char **out, char **err, ...)
{
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autoptr (GError) error = NULL;
  va_list ap;
  int status = -1;

  g_ptr_array_add (argv, (char *) g_getenv ("TENSAFE_CLI"));
  g_ptr_array_add (argv, "keys");
  va_start (ap, err);
  for (const char *a = va_arg (ap, const char *); a != NULL; a = va_arg (ap, const char *))
    g_ptr_array_add (argv, (char *) a);
  va_end (ap);
  g_ptr_array_add (argv, "--dir");
  g_ptr_array_add (argv, f->keys);
  g_ptr_array_add (argv, NULL);
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               out, err, &status, &error));
  g_assert_no_error (error);
  return WIFEXITED (status) ? WEXITSTATUS (status) : -1;
}

static void
reset (char **out, char **err)
{
  g_clear_pointer (out, g_free);
  g_clear_pointer (err, g_free);
}

static char *
write_secret (Fixture *f, const char *name, const char *text)
{
  char *path = g_build_filename (f->dir, name, NULL);

  g_assert_true (g_file_set_contents (path, text, -1, NULL));
  return path;
}

static void
test_lifecycle (void)
{
  Fixture f = { g_dir_make_tmp ("ts-cli-keys-XXXXXX", NULL), NULL };
  g_autofree char *pass = NULL, *wrong = NULL, *next = NULL, *pub = NULL, *key = NULL;
  g_autofree char *out = NULL, *err = NULL, *info = NULL, *exported = NULL;
  g_autoptr (TsKeyFile) file = NULL;
  gsize len = 0;
  GStatBuf st;

  f.keys = g_build_filename (f.dir, "keys", NULL);
  pass = write_secret (&f, "pass", "correct horse battery\n");
  wrong = write_secret (&f, "wrong", "correct horse\n");
  next = write_secret (&f, "next", "staple\n");
  pub = g_build_filename (f.dir, "public.tspk", NULL);
  key = g_build_filename (f.keys, "key.tskey", NULL);

  g_assert_cmpint (run_keys (&f, &out, &err, "info", NULL), ==, 1);
  reset (&out, &err);
  g_assert_cmpint (run_keys (&f, &out, &err, "generate", "--passphrase-file", pass, NULL), ==, 0);
  g_assert_true (g_str_has_prefix (out, "fingerprint: "));
  g_assert_cmpint (g_stat (key, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);
  /* The fingerprint printed is the file's own, computed independently here. */
  file = ts_key_file_load (key, NULL);
  g_assert_nonnull (file);
  info = ts_key_file_fingerprint_hex (file);
  g_assert_nonnull (strstr (out, info));
  reset (&out, &err);

  /* A second generate refuses to overwrite without --force. */
  g_assert_cmpint (run_keys (&f, &out, &err, "generate", "--passphrase-file", pass, NULL), ==, 1);
  reset (&out, &err);
  g_assert_cmpint (run_keys (&f, &out, &err, "verify", "--passphrase-file", wrong, NULL), ==, 1);
  g_assert_nonnull (strstr (err, "not correct"));
  reset (&out, &err);
  g_assert_cmpint (run_keys (&f, &out, &err, "passwd", "--passphrase-file", pass,
                             "--new-passphrase-file", next, NULL), ==, 0);
  reset (&out, &err);
  g_assert_cmpint (run_keys (&f, &out, &err, "verify", "--passphrase-file", pass, NULL), ==, 1);
  reset (&out, &err);
  g_assert_cmpint (run_keys (&f, &out, &err, "verify", "--passphrase-file", next, NULL), ==, 0);
  reset (&out, &err);

  g_assert_cmpint (run_keys (&f, &out, &err, "export-public", pub, NULL), ==, 0);
  g_assert_true (g_file_get_contents (pub, &exported, &len, NULL));
  g_assert_cmpmem (exported, 4, "TSPK", 4);
  g_assert_null (g_strstr_len (exported, (gssize) len, "TSKV"));
  reset (&out, &err);

  g_assert_cmpint (run_keys (&f, &out, &err, "delete", NULL), ==, 1);
  g_assert_true (g_file_test (key, G_FILE_TEST_EXISTS));
  reset (&out, &err);
  g_assert_cmpint (run_keys (&f, &out, &err, "delete", "--yes", NULL), ==, 0);
  g_assert_false (g_file_test (key, G_FILE_TEST_EXISTS));

  reset (&out, &err);
  g_unlink (pass);
  g_unlink (wrong);
  g_unlink (next);
  g_unlink (pub);
  g_rmdir (f.keys);
  g_rmdir (f.dir);
  g_free (f.keys);
  g_free (f.dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/cli/keys/lifecycle", test_lifecycle);
  return g_test_run ();
}
