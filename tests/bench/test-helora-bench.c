/* test-helora-bench.c: tensafe-cli bench helora --json has the documented shape.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <gio/gio.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "ts-test-util.h"

#define GOLDEN "qwen35/tiny-qwen35moe-f32/"

/* tensafe-cli bench helora on the tiny model, -n 3 --threads 1, then
 * @args (NULL-ended); its exit status, stdout and stderr. */
static int
run_cli (const char *const *args, char **out, char **err)
{
  g_autofree char *model = ts_test_data_path (GOLDEN "tiny-qwen35moe-f32.gguf");
  const char *const head[] = { g_getenv ("TENSAFE_CLI"), "bench", "helora", "--model", model,
                               "-n", "3", "--threads", "1" };
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();

  for (guint i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (argv, (gpointer) head[i]);
  for (guint i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  return ts_test_spawn ((const char *const *) argv->pdata, out, err);
}

/* --json with the adapter option; @extra: one more option, or NULL. */
static JsonArray *
run_bench_with (JsonParser *parser, const char *adapter_option, const char *adapter,
                const char *extra)
{
  const char *args[] = { adapter_option, adapter, "--json", extra, NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (GError) error = NULL;

  g_assert_cmpint (run_cli (args, &out, &err), ==, 0);
  g_assert_true (json_parser_load_from_data (parser, out, -1, &error));
  g_assert_no_error (error);
  return json_node_get_array (json_parser_get_root (parser));
}

static JsonArray *
run_bench (JsonParser *parser, const char *adapter_option, const char *adapter)
{
  return run_bench_with (parser, adapter_option, adapter, NULL);
}

static void
check_modes (JsonArray *modes)
{
  const char *stages[] = { "forward", "encrypt", "upload", "evaluate", "download", "decrypt",
                           "lora_b", "lm_head", "sample" };
  JsonObject *plain, *local;

  g_assert_cmpuint (json_array_get_length (modes), ==, 2);
  plain = json_array_get_object_element (modes, 0);
  local = json_array_get_object_element (modes, 1);
  g_assert_cmpstr (json_object_get_string_member (plain, "mode"), ==, "plain");
  g_assert_cmpstr (json_object_get_string_member (local, "mode"), ==, "local");
  for (guint i = 0; i < G_N_ELEMENTS (stages); i++)
    g_assert_true (json_object_has_member (json_object_get_object_member (local, "median_ms"),
                                           stages[i]));
  g_assert_cmpfloat (json_object_get_double_member (plain, "decode_tok_s"), >, 0);
  g_assert_cmpfloat (json_object_get_double_member (local, "he_ms_per_module"), >, 0);
  g_assert_cmpfloat (json_object_get_double_member (
                       json_object_get_object_member (local, "median_ms"), "encrypt"), >, 0);
  g_assert_cmpint (json_object_get_int_member (local, "bytes_up"), ==, 0);
  g_assert_cmpfloat (json_object_get_double_member (local, "max_abs_delta_error"), <, 1e-5);
}

static void
test_golden_adapter (void)
{
  g_autofree char *lora = ts_test_data_path (GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf");
  g_autoptr (JsonParser) parser = json_parser_new ();

  check_modes (run_bench (parser, "--lora", lora));
}

/* --make-lora writes a rank-32 adapter on the full-attention layer that
 * loads and runs like any other. */
static void
test_made_adapter (void)
{
  g_autofree char *dir = g_dir_make_tmp ("helora-bench-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "r32.gguf", NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();

  check_modes (run_bench (parser, "--make-lora", path));
  g_assert_true (g_file_test (path, G_FILE_TEST_IS_REGULAR));
  g_unlink (path);
  g_rmdir (dir);
}

/* --stack: the golden adapter (4 modules, each its own h) with random
 * attention q/k/v (layer 3, one h) and FFN gate/up (4 layers, one h each)
 * stacked on it: 15 modules, 9 encryptions per token instead of 15. */
static void
test_stacked (void)
{
  g_autofree char *lora = ts_test_data_path (GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf");
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonArray *modes = run_bench_with (parser, "--lora", lora, "--stack");
  JsonObject *local;

  check_modes (modes);
  local = json_array_get_object_element (modes, 1);
  g_assert_cmpint (json_object_get_int_member (local, "modules"), ==, 15);
  g_assert_cmpint (json_object_get_int_member (local, "distinct_inputs"), ==, 9);
  g_assert_cmpfloat (json_object_get_double_member (local, "encryptions_per_token"), ==, 9);
}

/* Without --json: a table, one row per mode, and the encryptions line. */
static void
test_table (void)
{
  g_autofree char *lora = ts_test_data_path (GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf");
  const char *args[] = { "--lora", lora, "--he-params", "fast", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_auto (GStrv) lines = NULL;

  g_assert_cmpint (run_cli (args, &out, &err), ==, 0);
  lines = g_strsplit (out, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), >=, 4);
  g_assert_true (g_str_has_prefix (lines[0], "mode          tok/s HE ms/module   forward   encrypt"));
  g_assert_true (g_str_has_prefix (lines[1], "plain "));
  g_assert_true (g_str_has_prefix (lines[2], "local "));
  g_assert_cmpstr (lines[3], ==, "local: 4 adapted modules reading 4 distinct h: 4.00 encryptions per token");
}

/* Public-key encryption on a two-thread local evaluator, timed by the
 * thread clock, after a 4-token prompt: still exact. */
static void
test_pk_options (void)
{
  g_autofree char *lora = ts_test_data_path (GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf");
  const char *args[] = { "--lora", lora, "--pk", "--he-threads", "2", "--thread-clock",
                         "--prompt-tokens", "4", "--he-params", "fast", "--json", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  JsonObject *local;

  g_assert_cmpint (run_cli (args, &out, &err), ==, 0);
  g_assert_true (json_parser_load_from_data (parser, out, -1, &error));
  g_assert_no_error (error);
  local = json_array_get_object_element (json_node_get_array (json_parser_get_root (parser)), 1);
  g_assert_cmpstr (json_object_get_string_member (local, "preset"), ==, "fast");
  g_assert_cmpint (json_object_get_int_member (local, "tokens"), ==, 3);
  g_assert_cmpfloat (json_object_get_double_member (local, "max_abs_delta_error"), <, 1e-5);
}

/* --remote must be an evaluator address. */
static void
test_bad_remote (void)
{
  g_autofree char *lora = ts_test_data_path (GOLDEN "lora/tiny-qwen35moe-lora-f32.gguf");
  const char *args[] = { "--lora", lora, "--remote", "local", NULL };
  g_autofree char *out = NULL, *err = NULL;

  g_assert_cmpint (run_cli (args, &out, &err), ==, 1);
  g_assert_nonnull (strstr (err, "--remote wants an evaluator address"));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/helora/bench/golden-adapter", test_golden_adapter);
  g_test_add_func ("/helora/bench/made-adapter", test_made_adapter);
  g_test_add_func ("/helora/bench/stacked", test_stacked);
  g_test_add_func ("/helora/bench/table", test_table);
  g_test_add_func ("/helora/bench/pk-options", test_pk_options);
  g_test_add_func ("/helora/bench/bad-remote", test_bad_remote);
  return g_test_run ();
}
