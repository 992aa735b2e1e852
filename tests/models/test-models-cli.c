/* test-models-cli.c: tensafe-cli models list | pull | import | rm | verify, run as a program.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>

#include "models-test-hub.h"
#include "ts-test-util.h"

typedef struct
{
  char *dir;
  char *out;
  char *err;
} Fixture;

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  f->dir = g_dir_make_tmp ("models-cli-XXXXXX", NULL);
  g_assert_nonnull (f->dir);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  ts_test_remove_tree (f->dir);
  g_free (f->dir);
  g_free (f->out);
  g_free (f->err);
}

static char *
bytes_to_string (GBytes *bytes)
{
  return bytes ? g_strndup (g_bytes_get_data (bytes, NULL), g_bytes_get_size (bytes))
               : g_strdup ("");
}

/* Runs @argv with TENSAFE_MODEL_DIR set to @dir. */
static int
spawn (const char *dir, const char *const *argv, char **out, char **err)
{
  g_autoptr(GSubprocessLauncher) launcher = g_subprocess_launcher_new (
    G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_autoptr(GSubprocess) p = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GBytes) out_bytes = NULL, err_bytes = NULL;

  g_subprocess_launcher_setenv (launcher, "TENSAFE_MODEL_DIR", dir, TRUE);
  p = g_subprocess_launcher_spawnv (launcher, argv, &error);
  g_assert_no_error (error);
  g_subprocess_communicate (p, NULL, NULL, &out_bytes, &err_bytes, &error);
  g_assert_no_error (error);
  *out = bytes_to_string (out_bytes);
  *err = bytes_to_string (err_bytes);
  return g_subprocess_get_if_exited (p) ? g_subprocess_get_exit_status (p) : -1;
}

/* Runs tensafe-cli models ARGS...; stdout and stderr in @f. */
static int
models (Fixture *f, ...)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  const char *arg;
  va_list ap;

  g_ptr_array_add (argv, (gpointer) g_getenv ("TENSAFE_CLI"));
  g_ptr_array_add (argv, "models");
  va_start (ap, f);
  while ((arg = va_arg (ap, const char *)) != NULL)
    g_ptr_array_add (argv, (gpointer) arg);
  va_end (ap);
  g_ptr_array_add (argv, NULL);
  g_clear_pointer (&f->out, g_free);
  g_clear_pointer (&f->err, g_free);
  return spawn (f->dir, (const char *const *) argv->pdata, &f->out, &f->err);
}

static char *
file_sha (const char *path)
{
  g_autofree char *text = NULL;
  gsize len = 0;

  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  return g_compute_checksum_for_data (G_CHECKSUM_SHA256, (const guchar *) text, len);
}

static char *
in_dir (Fixture *f, const char *name)
{
  return g_build_filename (f->dir, name, NULL);
}

static void
flip_byte (const char *path, gsize at)
{
  g_autofree char *text = NULL;
  gsize len = 0;

  g_assert_true (g_file_get_contents (path, &text, &len, NULL));
  text[at] ^= 1;
  g_assert_true (g_file_set_contents (path, text, (gssize) len, NULL));
}

static void
test_import_verify_rm (Fixture *f, gconstpointer data)
{
  g_autofree char *source = ts_test_data_path ("hf/qwen2/qwen2.gguf");
  g_autofree char *target = in_dir (f, "tiny-qwen2.gguf");
  g_autofree char *index_path = in_dir (f, "models-index.json");
  g_autofree char *want = file_sha (source), *got = NULL, *index = NULL;

  g_assert_cmpint (models (f, "import", source, "--name", "tiny-qwen2", NULL), ==, 0);
  got = file_sha (target);
  g_assert_cmpstr (got, ==, want);
  g_assert_true (g_file_get_contents (index_path, &index, NULL, NULL));
  g_assert_nonnull (strstr (index, want));
  g_assert_nonnull (strstr (index, "\"architecture\" : \"qwen2\""));

  g_assert_cmpint (models (f, "list", NULL), ==, 0);
  g_assert_true (g_regex_match_simple ("^tiny-qwen2 +qwen2 .* yes \\(imported\\)$", f->out,
                                       G_REGEX_MULTILINE, 0));
  g_assert_true (g_regex_match_simple ("^qwen2.5-coder-0.5b-instruct-q4_k_m +qwen2 +0.49B +Q4_K_M"
                                       " +491 MB +592 MB +no$", f->out, G_REGEX_MULTILINE, 0));

  g_assert_cmpint (models (f, "verify", NULL), ==, 0);
  g_assert_nonnull (strstr (f->out, "1 checked, 0 failed"));
  flip_byte (target, 1000);
  g_assert_cmpint (models (f, "verify", "tiny-qwen2", NULL), ==, 1);
  g_assert_nonnull (strstr (f->out, "FAILED"));
  g_assert_nonnull (strstr (f->out, want));

  /* The same name again is refused; so is a catalogue model's name. */
  g_assert_cmpint (models (f, "import", source, "--name", "tiny-qwen2", NULL), ==, 1);
  g_assert_nonnull (strstr (f->err, "already exists"));
  g_assert_cmpint (models (f, "import", source, "--name",
                           "qwen2.5-coder-0.5b-instruct-q4_k_m", NULL), ==, 1);
  g_assert_nonnull (strstr (f->err, "catalogue model's name"));

  g_assert_cmpint (models (f, "rm", "tiny-qwen2", NULL), ==, 0);
  g_assert_cmpstr (f->out, ==, "removed tiny-qwen2\n");
  g_assert_false (g_file_test (target, G_FILE_TEST_EXISTS));
  g_assert_cmpint (models (f, "rm", "tiny-qwen2", NULL), ==, 1);
  g_assert_nonnull (strstr (f->err, "No model named \"tiny-qwen2\""));
}

/* What the engine refuses is refused with the engine's message, and nothing is left. */
static void
test_import_refused (Fixture *f, gconstpointer data)
{
  g_autofree char *refs = ts_test_data_path ("models/refs.json");
  g_autofree char *model = ts_test_data_path ("hf/qwen2/qwen2.gguf");
  g_autofree char *broken = g_build_filename (f->dir, "..", "models-cli-missing.gguf", NULL);
  g_autofree char *text = NULL;
  char *at;
  gsize len = 0;
  g_autoptr(GDir) dir = NULL;

  g_assert_cmpint (models (f, "import", refs, NULL), ==, 1);
  g_assert_nonnull (strstr (f->err, "not a GGUF file"));
  /* A tensor renamed in the header: the loader misses the original. */
  g_assert_true (g_file_get_contents (model, &text, &len, NULL));
  at = memmem (text, len, "blk.0.attn_k.bias", 17);
  g_assert_nonnull (at);
  at[16] = 'z';
  g_assert_true (g_file_set_contents (broken, text, (gssize) len, NULL));
  g_assert_cmpint (models (f, "import", broken, NULL), ==, 1);
  g_unlink (broken);
  g_assert_nonnull (strstr (f->err, "tensor blk.0.attn_k.bias is missing"));
  dir = g_dir_open (f->dir, 0, NULL);
  g_assert_null (g_dir_read_name (dir));
}

static void
test_pull (Fixture *f, gconstpointer data)
{
  ModelsTestHub *hub = models_test_hub_new ();
  g_autoptr(GBytes) body = g_bytes_new_static ("not really a model, but bytes to fetch", 38);
  g_autofree char *sha = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, body);
  g_autofree char *url = models_test_hub_url (hub, "/m.gguf");
  g_autofree char *gone = models_test_hub_url (hub, "/gone.gguf");
  g_autofree char *catalogue = g_build_filename (f->dir, "..", "models-cli-catalogue.json", NULL);
  g_autofree char *json = g_strdup_printf (
    "{\"models\": [{\"name\": \"m\", \"title\": \"M\", \"architecture\": \"qwen2\","
    " \"parameters\": \"1M\", \"quantisation\": \"Q8_0\", \"file\": \"m.gguf\", \"bytes\": 38,"
    " \"sha256\": \"%s\", \"verified\": true, \"license\": \"none\", \"context_length\": 512,"
    " \"attention\": {\"layers\": 1, \"kv_heads\": 1, \"head_dim\": 8}, \"sources\": ["
    "{\"kind\": \"http\", \"url\": \"%s\"}, {\"kind\": \"http\", \"url\": \"%s\"}]}]}",
    sha, gone, url);
  g_autofree char *target = in_dir (f, "m.gguf");
  g_autofree char *got = NULL;

  models_test_hub_serve (hub, "/m.gguf", body);
  g_assert_true (g_file_set_contents (catalogue, json, -1, NULL));
  g_assert_cmpint (models (f, "--catalogue", catalogue, "pull", "m", NULL), ==, 0);
  g_test_message ("stdout:\n%s\nstderr:\n%s", f->out, f->err);
  got = file_sha (target);
  g_assert_cmpstr (got, ==, sha);
  g_assert_nonnull (strstr (f->err, "HTTP 404"));
  g_assert_nonnull (strstr (f->err, "trying the next source"));
  g_assert_nonnull (strstr (f->out, "downloading "));
  g_assert_nonnull (strstr (f->out, "100.0%"));
  g_assert_nonnull (strstr (f->out, "m installed"));
  /* Not a terminal: plain lines, no carriage returns. */
  g_assert_null (strchr (f->out, '\r'));
  /* Pulling it again succeeds without a download. */
  models_test_hub_clear_log (hub);
  g_assert_cmpint (models (f, "--catalogue", catalogue, "pull", "m", NULL), ==, 0);
  g_assert_nonnull (strstr (f->out, "already installed"));
  {
    g_autoptr(GPtrArray) log = models_test_hub_log (hub);
    g_assert_cmpuint (log->len, ==, 0);
  }
  g_assert_cmpint (models (f, "--catalogue", catalogue, "pull", "nope", NULL), ==, 1);
  g_assert_nonnull (strstr (f->err, "no model \"nope\" in the catalogue"));
  g_unlink (catalogue);
  models_test_hub_free (hub);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add ("/models/cli/" path, Fixture, NULL, fixture_set_up, fn, \
                                  fixture_tear_down)
  ADD ("import-verify-rm", test_import_verify_rm);
  ADD ("import-refused", test_import_refused);
  ADD ("pull", test_pull);
#undef ADD
  return g_test_run ();
}
