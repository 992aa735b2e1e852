/* test-key-vault.c: the key vault object: generate, reopen, unlock, change, rotate, delete.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ts-key-vault.h"
#include "ts-test-util.h"

static const TsScryptParams cheap_kdf = { .log2_n = 10, .r = 8, .p = 1 };

typedef struct {
  char *dir;
  TsKeyVault *vault;
} Fixture;

static TsKeyVault *
vault_new (const char *dir)
{
  TsKeyVault *vault = ts_key_vault_new (dir);

  ts_key_vault_set_kdf (vault, &cheap_kdf);
  return vault;
}

static void
fixture_setup (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *top = g_dir_make_tmp ("ts-key-vault-XXXXXX", &error);

  g_assert_no_error (error);
  /* A folder that does not exist yet: the vault creates it. */
  f->dir = g_build_filename (top, "tensafe", "keys", NULL);
  f->vault = vault_new (f->dir);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  g_autofree char *keys_parent = g_path_get_dirname (f->dir);
  g_autofree char *top = g_path_get_dirname (keys_parent);

  /* Progress updates queued by the worker thread hold a reference, and so
   * does a finished GTask until its thread has let go of it. */
  for (guint i = 0; i < 500 && G_OBJECT (f->vault)->ref_count > 1; i++)
    {
      while (g_main_context_iteration (NULL, FALSE))
        ;
      g_usleep (10000);
    }
  g_assert_finalize_object (f->vault);
  ts_test_remove_tree (top);
  g_free (f->dir);
}

/* Runs the main loop until an async call completes. */
typedef struct {
  GAsyncResult *result;
} Wait;

static void
wait_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  Wait *w = user_data;

  w->result = g_object_ref (result);
}

static GAsyncResult *
wait_for (Wait *w)
{
  while (w->result == NULL)
    g_main_context_iteration (NULL, TRUE);
  return w->result;
}

typedef gboolean (*FinishFunc) (TsKeyVault *, GAsyncResult *, GError **);

static gboolean
finish (TsKeyVault *vault, Wait *w, FinishFunc func, GError **error)
{
  g_autoptr (GAsyncResult) result = wait_for (w);

  return func (vault, result, error);
}

static gboolean
generate (TsKeyVault *vault, const char *passphrase, GError **error)
{
  Wait w = { NULL };

  ts_key_vault_generate_async (vault, "fast", passphrase, NULL, wait_cb, &w);
  g_assert_true (ts_key_vault_get_busy (vault));
  return finish (vault, &w, ts_key_vault_generate_finish, error);
}

static gboolean
unlock (TsKeyVault *vault, const char *passphrase, GError **error)
{
  Wait w = { NULL };

  ts_key_vault_unlock_async (vault, passphrase, NULL, wait_cb, &w);
  return finish (vault, &w, ts_key_vault_unlock_finish, error);
}

static GBytes *
read_file (const char *path)
{
  g_autoptr (GError) error = NULL;
  char *data;
  gsize len;

  g_file_get_contents (path, &data, &len, &error);
  g_assert_no_error (error);
  return g_bytes_new_take (data, len);
}

static void
count_cb (guint *count)
{
  (*count)++;
}

static void
test_generate (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  struct stat st;
  guint progress_notes = 0;

  g_assert_cmpint (ts_key_vault_get_state (f->vault), ==, TS_KEY_STATE_NONE);
  g_assert_null (ts_key_vault_get_fingerprint (f->vault));
  g_assert_null (ts_key_vault_get_key_pair (f->vault));
  g_signal_connect_swapped (f->vault, "notify::progress", G_CALLBACK (count_cb), &progress_notes);

  g_assert_true (generate (f->vault, "pass one", &error));
  g_assert_no_error (error);
  g_assert_false (ts_key_vault_get_busy (f->vault));
  g_assert_cmpfloat (ts_key_vault_get_progress (f->vault), ==, 1.0);
  g_assert_cmpuint (progress_notes, >=, 3);
  g_signal_handlers_disconnect_by_func (f->vault, count_cb, &progress_notes);
  g_assert_cmpint (ts_key_vault_get_state (f->vault), ==, TS_KEY_STATE_UNLOCKED);
  g_assert_nonnull (ts_key_vault_get_key_pair (f->vault));
  g_assert_nonnull (ts_key_vault_get_key_pair (f->vault)->sk);
  g_assert_cmpstr (ts_key_vault_get_preset (f->vault), ==, "fast");
  g_assert_cmpuint (strlen (ts_key_vault_get_fingerprint (f->vault)), ==, 79);
  g_assert_nonnull (ts_key_vault_get_created (f->vault));

  g_assert_cmpint (g_stat (f->dir, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0700);
  g_assert_cmpint (g_stat (ts_key_vault_get_path (f->vault), &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0600);

  /* A second key is refused and the first one kept. */
  g_autofree char *before = g_strdup (ts_key_vault_get_fingerprint (f->vault));
  g_assert_false (generate (f->vault, "pass two", &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_EXISTS);
  g_assert_cmpstr (ts_key_vault_get_fingerprint (f->vault), ==, before);
  g_assert_cmpint (ts_key_vault_get_state (f->vault), ==, TS_KEY_STATE_UNLOCKED);
}

/* A restart finds the key locked; a wrong passphrase changes nothing. */
static void
test_reopen_and_unlock (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyVault) reopened = NULL;
  g_autoptr (GBytes) before = NULL, after = NULL;

  g_assert_true (generate (f->vault, "right", &error));
  reopened = vault_new (f->dir);
  g_assert_cmpint (ts_key_vault_get_state (reopened), ==, TS_KEY_STATE_LOCKED);
  g_assert_cmpstr (ts_key_vault_get_fingerprint (reopened), ==,
                   ts_key_vault_get_fingerprint (f->vault));
  g_assert_null (ts_key_vault_get_key_pair (reopened));

  before = read_file (ts_key_vault_get_path (reopened));
  g_assert_false (unlock (reopened, "wrong", &error));
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_WRONG_PASSPHRASE);
  g_clear_error (&error);
  g_assert_cmpint (ts_key_vault_get_state (reopened), ==, TS_KEY_STATE_LOCKED);
  after = read_file (ts_key_vault_get_path (reopened));
  g_assert_true (g_bytes_equal (before, after));

  g_assert_true (unlock (reopened, "right", &error));
  g_assert_no_error (error);
  g_assert_cmpint (ts_key_vault_get_state (reopened), ==, TS_KEY_STATE_UNLOCKED);
  g_assert_nonnull (ts_key_vault_get_key_pair (reopened));

  ts_key_vault_lock (reopened);
  g_assert_cmpint (ts_key_vault_get_state (reopened), ==, TS_KEY_STATE_LOCKED);
  g_assert_null (ts_key_vault_get_key_pair (reopened));
  g_assert_nonnull (ts_key_vault_get_fingerprint (reopened));
}

static void
test_change_passphrase (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyVault) reopened = NULL;
  g_autofree char *fingerprint = NULL;
  Wait w = { NULL };

  g_assert_true (generate (f->vault, "old", &error));
  fingerprint = g_strdup (ts_key_vault_get_fingerprint (f->vault));

  ts_key_vault_change_passphrase_async (f->vault, "not it", "new", NULL, wait_cb, &w);
  g_assert_false (finish (f->vault, &w, ts_key_vault_change_passphrase_finish, &error));
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_WRONG_PASSPHRASE);
  g_clear_error (&error);

  w.result = NULL;
  ts_key_vault_change_passphrase_async (f->vault, "old", "new", NULL, wait_cb, &w);
  g_assert_true (finish (f->vault, &w, ts_key_vault_change_passphrase_finish, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (ts_key_vault_get_fingerprint (f->vault), ==, fingerprint);

  reopened = vault_new (f->dir);
  g_assert_false (unlock (reopened, "old", &error));
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_WRONG_PASSPHRASE);
  g_clear_error (&error);
  g_assert_true (unlock (reopened, "new", &error));
  g_assert_cmpstr (ts_key_vault_get_fingerprint (reopened), ==, fingerprint);
}

static void
test_rotate_and_delete (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *fingerprint = NULL;
  Wait w = { NULL };

  g_assert_true (generate (f->vault, "pass", &error));
  fingerprint = g_strdup (ts_key_vault_get_fingerprint (f->vault));

  ts_key_vault_rotate_async (f->vault, "wrong", NULL, wait_cb, &w);
  g_assert_false (finish (f->vault, &w, ts_key_vault_rotate_finish, &error));
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_WRONG_PASSPHRASE);
  g_clear_error (&error);
  g_assert_cmpstr (ts_key_vault_get_fingerprint (f->vault), ==, fingerprint);

  w.result = NULL;
  ts_key_vault_rotate_async (f->vault, "pass", NULL, wait_cb, &w);
  g_assert_true (finish (f->vault, &w, ts_key_vault_rotate_finish, &error));
  g_assert_no_error (error);
  g_assert_cmpstr (ts_key_vault_get_fingerprint (f->vault), !=, fingerprint);
  g_assert_cmpstr (ts_key_vault_get_preset (f->vault), ==, "fast");
  g_assert_cmpint (ts_key_vault_get_state (f->vault), ==, TS_KEY_STATE_UNLOCKED);

  g_assert_true (ts_key_vault_delete (f->vault, &error));
  g_assert_no_error (error);
  g_assert_cmpint (ts_key_vault_get_state (f->vault), ==, TS_KEY_STATE_NONE);
  g_assert_null (ts_key_vault_get_fingerprint (f->vault));
  g_assert_false (g_file_test (ts_key_vault_get_path (f->vault), G_FILE_TEST_EXISTS));
}

static void
test_busy (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  Wait first = { NULL }, second = { NULL };

  ts_key_vault_generate_async (f->vault, "fast", "a", NULL, wait_cb, &first);
  ts_key_vault_generate_async (f->vault, "fast", "b", NULL, wait_cb, &second);
  g_assert_false (finish (f->vault, &second, ts_key_vault_generate_finish, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_BUSY);
  g_clear_error (&error);
  g_assert_true (finish (f->vault, &first, ts_key_vault_generate_finish, &error));
  g_assert_no_error (error);
}

static void
test_damaged_file (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) bytes = NULL;
  g_autoptr (TsKeyVault) reopened = NULL;
  const char *path = ts_key_vault_get_path (f->vault);

  g_assert_true (generate (f->vault, "pass", &error));
  bytes = read_file (path);
  g_assert_true (g_file_set_contents (path, g_bytes_get_data (bytes, NULL),
                                      (gssize) g_bytes_get_size (bytes) - 100, &error));
  reopened = vault_new (f->dir);
  g_assert_cmpint (ts_key_vault_get_state (reopened), ==, TS_KEY_STATE_DAMAGED);
  g_assert_nonnull (ts_key_vault_get_problem (reopened));
  g_assert_null (ts_key_vault_get_fingerprint (reopened));
  g_assert_false (unlock (reopened, "pass", &error));
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_CORRUPT);
  g_assert_null (ts_key_vault_get_key_pair (reopened));
}

static void
test_export (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *out = g_build_filename (f->dir, "public.tspk", NULL);
  g_autoptr (GBytes) exported = NULL;

  g_assert_false (ts_key_vault_export_public (f->vault, out, &error));
  g_assert_error (error, TS_KEY_ERROR, TS_KEY_ERROR_NOT_FOUND);
  g_clear_error (&error);
  g_assert_true (generate (f->vault, "pass", &error));
  g_assert_true (ts_key_vault_export_public (f->vault, out, &error));
  g_assert_no_error (error);
  exported = read_file (out);
  g_assert_cmpmem (g_bytes_get_data (exported, NULL), 4, "TSPK", 4);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#define ADD(path, func) \
  g_test_add ("/key-vault/" path, Fixture, NULL, fixture_setup, func, fixture_teardown)
  ADD ("generate", test_generate);
  ADD ("reopen-and-unlock", test_reopen_and_unlock);
  ADD ("change-passphrase", test_change_passphrase);
  ADD ("rotate-and-delete", test_rotate_and_delete);
  ADD ("busy", test_busy);
  ADD ("damaged-file", test_damaged_file);
  ADD ("export", test_export);
#undef ADD
  return g_test_run ();
}
