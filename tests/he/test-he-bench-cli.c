/* test-he-bench-cli.c: `tensafe-cli bench he --json` prints the documented
 * JSON (the numbers themselves are not judged here), bad options fail.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>
#include <sys/wait.h>

#include "ts-test-util.h"

static char *
run_cli (const char *const *args, int *status)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_assert_nonnull (cli);
  GPtrArray *argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) cli);
  for (size_t i = 0; args[i]; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  char *out = NULL;
  GError *error = NULL;
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_STDERR_TO_DEV_NULL,
                               NULL, NULL, &out, NULL, status, &error));
  g_assert_no_error (error);
  g_ptr_array_free (argv, TRUE);
  return out;
}

/* A parser holding @out, which must be JSON. */
static JsonParser *
parse_json (const char *out)
{
  JsonParser *parser = json_parser_new ();
  g_assert_true (json_parser_load_from_data (parser, out, -1, NULL));
  return parser;
}

static void
test_json (void)
{
  const char *args[] = { "bench", "he", "--preset", "fast", "--encrypt", "sk", "--runs", "30",
                         "--json", NULL };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_autoptr (JsonParser) parser = parse_json (out);
  JsonArray *array = json_node_get_array (json_parser_get_root (parser));
  g_assert_cmpuint (json_array_get_length (array), ==, 1);
  JsonObject *o = json_array_get_object_element (array, 0);
  g_assert_cmpstr (json_object_get_string_member (o, "preset"), ==, "fast");
  g_assert_cmpint (json_object_get_int_member (o, "ring_degree"), ==, 8192);
  g_assert_cmpint (json_object_get_int_member (o, "log_q"), ==, 200);
  g_assert_cmpstr (json_object_get_string_member (o, "encrypt"), ==, "sk");
  g_assert_cmpint (json_object_get_int_member (o, "d"), ==, 2048);
  g_assert_cmpint (json_object_get_int_member (o, "r"), ==, 32);
  /* the local evaluator's packing unless asked otherwise */
  g_assert_cmpstr (json_object_get_string_member (o, "packing"), ==, "complex");
  const char *stages[] = { "encrypt", "evaluate", "decrypt", "total" };
  for (int m = 0; m < 2; m++)
    {
      JsonObject *t = json_object_get_object_member (o, m ? "min_ms" : "median_ms");
      for (size_t s = 0; s < G_N_ELEMENTS (stages); s++)
        g_assert_cmpfloat (json_object_get_double_member (t, stages[s]), >, 0);
    }
  g_assert_cmpfloat (json_object_get_double_member (o, "max_abs_error"), <=, 1e-6);
}

/* `tensafe-cli adapter bench --json`: both splits and every stage timed;
 * the precision of docs/security.md §3.1 (plain split ~1e-12, private split
 * at lambda_s 40 ~1e-4); a lambda_s the layout cannot hold is refused. */
static void
test_adapter_bench (void)
{
  const char *args[] = { "adapter", "bench", "--ranks", "32", "--tokens", "2", "--json", NULL };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_autoptr (JsonParser) parser = parse_json (out);
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  g_assert_true (json_object_get_boolean_member (root, "ok"));
  JsonObject *m = json_array_get_object_element (json_object_get_array_member (root, "modules"),
                                                 0);
  g_assert_cmpint (json_object_get_int_member (m, "lambda_s"), ==, 40);
  const char *stages[] = { "encrypt_ms", "encrypt_private_ms", "pads_compact_offline_ms",
                           "pads_compact_offline_old_ms", "evaluate_compact_ms",
                           "evaluate_compact_fused_ms" };
  for (size_t s = 0; s < G_N_ELEMENTS (stages); s++)
    g_assert_cmpfloat (json_object_get_double_member (m, stages[s]), >, 0);
  g_assert_cmpfloat (json_object_get_double_member (m, "max_rel_error_plain"), <, 1e-9);
  double err = json_object_get_double_member (m, "max_rel_error");
  g_assert_cmpfloat (err, >, 1e-6);     /* the flood is there */
  g_assert_cmpfloat (err, <, 1e-3);
  const char *big[] = { "adapter", "bench", "--ranks", "8", "--tokens", "1", "--lambda", "60",
                        NULL };
  g_free (run_cli (big, &status));
  g_assert_false (g_spawn_check_wait_status (status, NULL));
}

/* `bench he --backend cuda`: with a GPU, the documented JSON; without one,
 * a non-zero exit with one line on stderr saying why. */
static void
test_cuda (void)
{
  const char *args[] = { "bench", "he", "--backend", "cuda", "--runs", "30", "--json", NULL };
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_assert_nonnull (cli);
  const char *argv[G_N_ELEMENTS (args) + 1] = { cli };
  for (size_t i = 0; i < G_N_ELEMENTS (args); i++)
    argv[i + 1] = args[i];
  g_autofree char *out = NULL, *err = NULL;
  int status;
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               &err, &status, NULL));
  if (!g_spawn_check_wait_status (status, NULL))
    {
      g_assert_cmpstr (out, ==, "");
      g_assert_true (g_str_has_prefix (err, "tensafe-cli bench he: --backend cuda: "));
      g_assert_true (strstr (err, "no usable NVIDIA GPU") || strstr (err, "no CUDA kernels"));
      /* exactly one line */
      g_assert_true (g_str_has_suffix (err, "\n"));
      g_assert_true (strchr (err, '\n') == err + strlen (err) - 1);
      g_test_message ("no GPU: %s", err);
      return;
    }
  g_autoptr (JsonParser) parser = parse_json (out);
  JsonObject *o = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpstr (json_object_get_string_member (o, "backend"), ==, "cuda");
  g_assert_cmpint (json_object_get_int_member (o, "d"), ==, 2048);
  g_assert_cmpint (json_object_get_int_member (o, "r"), ==, 32);
  JsonObject *t = json_object_get_object_member (o, "median_us");
  const char *stages[] = { "h2d", "encrypt", "evaluate", "decrypt", "d2h", "device", "token" };
  for (size_t s = 0; s < G_N_ELEMENTS (stages); s++)
    g_assert_cmpfloat (json_object_get_double_member (t, stages[s]), >, 0);
  g_assert_cmpfloat (json_object_get_double_member (o, "cpu_token_median_us"), >, 0);
  g_assert_cmpfloat (json_object_get_double_member (o, "max_abs_error"), <=, 1e-6);
}

/* `bench he --packing real`: the remote protocol's packing, as asked. */
static void
test_real_packing (void)
{
  const char *args[] = { "bench", "he", "--preset", "fast", "--encrypt", "sk", "--runs", "30",
                         "--packing", "real", "--json", NULL };
  int status;
  g_autofree char *out = run_cli (args, &status);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_autoptr (JsonParser) parser = parse_json (out);
  JsonObject *o = json_array_get_object_element (json_node_get_array (json_parser_get_root (parser)), 0);
  g_assert_cmpstr (json_object_get_string_member (o, "packing"), ==, "real");
  g_assert_cmpfloat (json_object_get_double_member (o, "max_abs_error"), <=, 1e-6);
}

/* `bench he --cpu-backend scalar,avx2`: one record per backend, in that
 * order, each naming its backend; exit status 3 where the CPU lacks AVX2. */
static void
test_cpu_backends (void)
{
  const char *args[] = { "bench", "he", "--preset", "fast", "--encrypt", "sk", "--runs", "30",
                         "--cpu-backend", "scalar,avx2", "--json", NULL };
  int status;
  g_autofree char *out = run_cli (args, &status);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 3)
    {
      g_test_skip ("no AVX2 and FMA on this CPU");
      return;
    }
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_autoptr (JsonParser) parser = parse_json (out);
  JsonArray *array = json_node_get_array (json_parser_get_root (parser));
  g_assert_cmpuint (json_array_get_length (array), ==, 2);
  const char *names[] = { "scalar", "avx2" };
  for (guint i = 0; i < 2; i++)
    {
      JsonObject *o = json_array_get_object_element (array, i);
      g_assert_cmpstr (json_object_get_string_member (o, "backend"), ==, names[i]);
      JsonObject *ntt = json_object_get_object_member (o, "ntt_n16384_ms");
      g_assert_cmpfloat (json_object_get_double_member (ntt, "median"), >, 0);
      g_assert_cmpfloat (json_object_get_double_member (o, "max_abs_error"), <=, 1e-6);
    }
}

static void
test_bad_options (void)
{
  const char *backend[] = { "bench", "he", "--backend", "opencl", NULL };
  const char *few[] = { "bench", "he", "--runs", "10", NULL };
  const char *kind[] = { "bench", "he", "--encrypt", "xx", NULL };
  const char *cpu[] = { "bench", "he", "--cpu-backend", "sse2", NULL };
  const char *twice[] = { "bench", "he", "--cpu-backend", "scalar,scalar", NULL };
  const char *packing[] = { "bench", "he", "--packing", "imaginary", NULL };
  const char *const *cases[] = { backend, few, kind, cpu, twice, packing };
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      int status;
      char *out = run_cli (cases[i], &status);
      g_assert_false (g_spawn_check_wait_status (status, NULL));
      g_free (out);
    }
}

/* Writes an executable shell script printing @json (with $2, the ring
 * degree asked, where it says RING) and returns its path. */
static char *
write_program (const char *dir, const char *name, const char *json)
{
  g_autofree char *text = g_strdup_printf ("#!/bin/sh\ncat <<END\n%s\nEND\n", json);
  char *path = g_build_filename (dir, name, NULL);
  g_autoptr (GString) body = g_string_new (text);

  g_string_replace (body, "RING", "$2", 0);
  g_assert_true (g_file_set_contents (path, body->str, -1, NULL));
  g_assert_cmpint (g_chmod (path, 0755), ==, 0);
  return path;
}

/* --seal: the token on SEAL beside ours. SEAL is not installed here, so
 * the program is a script speaking tools/seal-bench's output format; what
 * is checked is how the command runs it, reads it and refuses what it
 * cannot use, each refusal before any table is printed. */
static void
test_seal (void)
{
  g_autofree char *dir = g_dir_make_tmp ("seal-bench-XXXXXX", NULL);
  g_autofree char *good = write_program (dir, "good",
    "{\"library\": \"SEAL 4.4.3\", \"hexl\": true, \"ring_degree\": RING, \"encrypt\": \"sk\", "
    "\"median_ms\": {\"total\": 7.5}, \"min_ms\": {\"total\": 6.25}, \"max_abs_error\": 3e-07}");
  g_autofree char *wrong_ring = write_program (dir, "wrong-ring",
    "{\"ring_degree\": 4096, \"encrypt\": \"sk\", \"median_ms\": {\"total\": 7.5}, "
    "\"min_ms\": {\"total\": 6.25}, \"max_abs_error\": 3e-07}");
  g_autofree char *no_total = write_program (dir, "no-total",
    "{\"ring_degree\": RING, \"encrypt\": \"sk\", \"median_ms\": {}, \"min_ms\": {}, "
    "\"max_abs_error\": 3e-07}");
  g_autofree char *missing = g_build_filename (dir, "missing", NULL);
  const char *base[] = { "bench", "he", "--preset", "fast", "--encrypt", "sk", "--runs", "30",
                         "--json", "--seal", good, NULL };
  int status;
  g_autofree char *out = run_cli (base, &status);

  g_assert_true (g_spawn_check_wait_status (status, NULL));
  g_autoptr (JsonParser) parser = parse_json (out);
  JsonObject *o = json_array_get_object_element (json_node_get_array (json_parser_get_root (parser)), 0);
  JsonObject *seal = json_object_get_object_member (o, "seal");
  double ours = json_object_get_double_member (json_object_get_object_member (o, "median_ms"), "total");
  g_assert_cmpstr (json_object_get_string_member (seal, "library"), ==, "SEAL 4.4.3");
  g_assert_true (json_object_get_boolean_member (seal, "hexl"));
  g_assert_cmpfloat (json_object_get_double_member (seal, "median_ms"), ==, 7.5);
  g_assert_cmpfloat (json_object_get_double_member (seal, "min_ms"), ==, 6.25);
  g_assert_cmpfloat_with_epsilon (json_object_get_double_member (seal, "speedup"), 7.5 / ours,
                                  0.01 * 7.5 / ours);

  const char *refused[] = { wrong_ring, no_total, missing, "/bin/false" };
  for (size_t i = 0; i < G_N_ELEMENTS (refused); i++)
    {
      const char *args[] = { "bench", "he", "--preset", "fast", "--encrypt", "sk", "--runs", "30",
                             "--seal", refused[i], NULL };
      g_autofree char *text = run_cli (args, &status);
      g_assert_false (g_spawn_check_wait_status (status, NULL));
      g_assert_cmpstr (text, ==, "");
    }
  const char *cuda[] = { "bench", "he", "--backend", "cuda", "--seal", good, NULL };
  g_free (run_cli (cuda, &status));
  g_assert_false (g_spawn_check_wait_status (status, NULL));
  ts_test_remove_tree (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he/bench-cli/json", test_json);
  g_test_add_func ("/he/bench-cli/real-packing", test_real_packing);
  g_test_add_func ("/he/bench-cli/cpu-backends", test_cpu_backends);
  g_test_add_func ("/he/bench-cli/bad-options", test_bad_options);
  g_test_add_func ("/he/bench-cli/cuda", test_cuda);
  g_test_add_func ("/he/bench-cli/adapter-bench", test_adapter_bench);
  g_test_add_func ("/he/bench-cli/seal", test_seal);
  return g_test_run ();
}
