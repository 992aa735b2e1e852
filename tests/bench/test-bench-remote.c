/* test-bench-remote.c: the benchmark against a real tensafe-he-server on 127.0.0.1.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Remote mode must give the golden adapter's greedy tokens like plaintext,
 * with upload and download timed and ciphertext bytes counted; the warm
 * private mode times the decode from full pad pools.
 */
#include <glib/gstdio.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include "ckks-privacy.h"
#include "ts-bench-runner.h"
#include "ts-helora-adapter.h"
#include "ts-test-util.h"

#define GOLDEN_DIR "qwen35/tiny-qwen35moe-f32/"
#define LORA_NAME "tiny-qwen35moe-lora-f32.gguf"
#define N_TOKENS 4

typedef struct {
  GSubprocess *process;
  char *dir;
  char *lora;
  char *copy;                  /* the same adapter under another name, to stack */
  char *wide;                  /* rank 32: more rows than the compact ring's copies */
  char *ws_url;
} Server;

static void
die_with_parent (gpointer data)
{
  prctl (PR_SET_PDEATHSIG, SIGTERM);
}

static void
write_wide_adapter (const char *model_path, const char *path)
{
  static const char *const kinds[] = { "attn_q", "attn_v", NULL };
  g_autoptr (GError) error = NULL;
  LmModel *model = NULL;

  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  g_assert_true (ts_helora_adapter_write_synthetic (model, path, 32, 9, kinds, &error));
  g_assert_no_error (error);
  lm_model_free (model);
}

/* tensafe-he-server on port 0 over a folder holding the golden adapter
 * twice and a rank-32 one; @data: NULL or more options, NULL-terminated. */
static void
server_start (Server *s, gconstpointer data)
{
  const char *const *extra = data;
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_autofree char *golden = ts_test_data_path (GOLDEN_DIR "lora/" LORA_NAME);
  g_autofree char *model = ts_test_data_path (GOLDEN_DIR "tiny-qwen35moe-f32.gguf");
  g_autoptr (GSubprocessLauncher) launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE);
  g_autoptr (GDataInputStream) out = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *contents = NULL, *line = NULL;
  gsize len;
  guint port;

  s->dir = g_dir_make_tmp ("ts-bench-remote-XXXXXX", &error);
  g_assert_no_error (error);
  s->lora = g_build_filename (s->dir, LORA_NAME, NULL);
  s->copy = g_build_filename (s->dir, "copy.gguf", NULL);
  g_assert_true (g_file_get_contents (golden, &contents, &len, NULL));
  g_assert_true (g_file_set_contents (s->lora, contents, (gssize) len, NULL));
  g_assert_true (g_file_set_contents (s->copy, contents, (gssize) len, NULL));
  s->wide = g_build_filename (s->dir, "wide.gguf", NULL);
  write_wide_adapter (model, s->wide);
  g_subprocess_launcher_set_child_setup (launcher, die_with_parent, NULL, NULL);
  /* With the base model, so that it can stack adapters. */
  const char *const fixed[] = { HE_SERVER_PATH, "--listen", "127.0.0.1:0", "--adapters", s->dir,
                                "--threads", "1", "--model", model };
  for (guint i = 0; i < G_N_ELEMENTS (fixed); i++)
    g_ptr_array_add (argv, (gpointer) fixed[i]);
  for (guint i = 0; extra != NULL && extra[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) extra[i]);
  g_ptr_array_add (argv, NULL);
  s->process = g_subprocess_launcher_spawnv (launcher, (const char *const *) argv->pdata, &error);
  g_assert_no_error (error);
  out = g_data_input_stream_new (g_subprocess_get_stdout_pipe (s->process));
  line = g_data_input_stream_read_line_utf8 (out, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (line);
  g_assert_cmpint (sscanf (line, "listening on http://127.0.0.1:%u/", &port), ==, 1);
  s->ws_url = g_strdup_printf ("ws://127.0.0.1:%u/v1/helora", port);
}

static void
server_stop (Server *s, gconstpointer data)
{
  g_subprocess_send_signal (s->process, SIGTERM);
  g_subprocess_wait (s->process, NULL, NULL);
  g_object_unref (s->process);
  g_unlink (s->lora);
  g_unlink (s->copy);
  g_unlink (s->wide);
  g_free (s->wide);
  g_rmdir (s->dir);
  g_free (s->lora);
  g_free (s->copy);
  g_free (s->dir);
  g_free (s->ws_url);
}

static TsBenchOptions *
options_for_adapter (const char *adapter)
{
  g_autofree char *model = ts_test_data_path (GOLDEN_DIR "tiny-qwen35moe-f32.gguf");
  TsBenchOptions *options = ts_bench_options_new (model, adapter, N_TOKENS);
  g_autofree gint32 *prompt = NULL;
  gsize len;

  prompt = (gint32 *) ts_test_read_data (GOLDEN_DIR "prompt_tokens.bin", &len);
  options->prompt_tokens = g_array_sized_new (FALSE, FALSE, sizeof (gint32), len / 4);
  g_array_append_vals (options->prompt_tokens, prompt, len / 4);
  options->n_threads = 1;
  return options;
}

static TsBenchOptions *
options_for (const Server *s)
{
  return options_for_adapter (s->lora);
}

/* Runs @options; fails the test on errors. */
static GPtrArray *
run_ok (const TsBenchOptions *options)
{
  g_autoptr (GError) error = NULL;
  GPtrArray *results = ts_bench_run (options, NULL, NULL, NULL, &error);

  g_assert_no_error (error);
  return results;
}

/* @r generated the greedy tokens in tests/data/…/@name. */
static void
assert_tokens (const TsBenchResult *r, const char *name)
{
  g_autofree char *relative = g_strconcat (GOLDEN_DIR, name, NULL);
  g_autofree gint32 *expected = NULL;
  gsize len;

  expected = (gint32 *) ts_test_read_data (relative, &len);
  g_assert_cmpuint (r->tokens->len, ==, N_TOKENS);
  g_assert_cmpmem (r->tokens->data, N_TOKENS * 4, expected, N_TOKENS * 4);
}

static void
test_remote (Server *server, gconstpointer data)
{
  g_autoptr (TsBenchOptions) options = options_for (server);
  g_autoptr (GPtrArray) results = NULL;
  g_autoptr (GError) error = NULL;
  TsBenchResult *remote;

  ts_bench_options_add (options, TS_HELORA_MODE_PLAIN, NULL, NULL);
  ts_bench_options_add (options, TS_HELORA_MODE_REMOTE, "fast", server->ws_url);
  results = run_ok (options);
  g_assert_cmpuint (results->len, ==, 2);
  remote = g_ptr_array_index (results, 1);
  assert_tokens (remote, "lora_greedy_tokens.bin");
  g_assert_cmpfloat (ts_timing_series_median_ms (remote->series, TS_STAGE_UPLOAD), >, 0.0);
  g_assert_cmpfloat (ts_timing_series_median_ms (remote->series, TS_STAGE_DOWNLOAD), >, 0.0);
  g_assert_cmpuint (remote->bytes_up, >, 0);
  g_assert_cmpuint (remote->bytes_down, >, 0);

  /* A rank sweep cannot run remotely: the server has only the adapter itself. */
  g_clear_pointer (&results, g_ptr_array_unref);
  options->ranks = g_array_new (FALSE, FALSE, sizeof (guint));
  g_array_append_val (options->ranks, (guint) { 1 });
  results = ts_bench_run (options, NULL, NULL, NULL, &error);
  g_assert_null (results);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED);
}

/* remote_real_packing reaches the session: a rank-32 adapter on the
 * compact ring (16 copies of h a result) gets half the bytes down without
 * it, and the same tokens. */
static void
test_remote_packing (Server *server, gconstpointer data)
{
  g_autoptr (TsBenchOptions) options = options_for_adapter (server->wide);
  g_autoptr (GPtrArray) complex_results = NULL, real_results = NULL;

  ts_bench_options_add (options, TS_HELORA_MODE_REMOTE, "compact", server->ws_url);
  complex_results = run_ok (options);
  options->remote_real_packing = TRUE;
  real_results = run_ok (options);
  TsBenchResult *c = g_ptr_array_index (complex_results, 0), *r = g_ptr_array_index (real_results, 0);
  g_test_message ("bytes down: complex %" G_GUINT64_FORMAT ", real %" G_GUINT64_FORMAT,
                  c->bytes_down, r->bytes_down);
  g_assert_cmpuint (c->tokens->len, ==, N_TOKENS);
  g_assert_cmpmem (c->tokens->data, N_TOKENS * 4, r->tokens->data, r->tokens->len * 4);
  g_assert_cmpuint (c->bytes_up, ==, r->bytes_up);
  g_assert_cmpuint (c->bytes_down * 10, <, r->bytes_down * 6);
}

/* The adapter-private mode through the benchmark: the golden tokens
 * (flooding at the default lambda_s moves u far less than a greedy token
 * needs, docs/security.md). */
static void
test_private (Server *server, gconstpointer data)
{
  g_autoptr (TsBenchOptions) options = options_for (server);
  g_autoptr (GPtrArray) results = NULL;
  TsBenchResult *private;

  ts_bench_options_add_private (options, "fast", server->ws_url, CKKS_PRIVACY_DEFAULT_LAMBDA);
  results = run_ok (options);
  private = g_ptr_array_index (results, 0);
  g_assert_true (private->private_mode);
  g_assert_cmpstr (private->label, ==, "HE remote private · fast");
  assert_tokens (private, "lora_greedy_tokens.bin");
  g_assert_cmpuint (private->bytes_up, >, 0);
  g_assert_cmpfloat (private->max_abs_delta_error, >, 0.0);
}

/* A stack on a remote evaluator: it stacks the same files. The golden
 * adapter with its copy at weight -1 cancels out, so the base model's
 * greedy tokens come back, with one encryption per distinct h. */
static void
test_remote_stack (Server *server, gconstpointer data)
{
  g_autoptr (TsBenchOptions) options = options_for (server);
  g_autoptr (GPtrArray) results = NULL;
  TsBenchResult *remote;

  ts_bench_options_add_stacked (options, server->copy, -1.0f);
  ts_bench_options_add (options, TS_HELORA_MODE_REMOTE, "fast", server->ws_url);
  results = run_ok (options);
  remote = g_ptr_array_index (results, 0);
  assert_tokens (remote, "greedy_tokens.bin");
  g_assert_cmpuint (remote->n_modules, ==, 4);
  g_assert_cmpuint (remote->encryptions, ==, remote->n_inputs * N_TOKENS);
}

/* Warm: the decode starts from full pools, so no pad is made inline, and
 * every pad it spends was ready (one answer per module and token). The
 * back-to-back row beside it reads the same server's figures. A server
 * that refills only between turns makes no pad during the decode. */
static void
test_private_warm (Server *server, gconstpointer data)
{
  const char *const *extra = data;
  gboolean idle = g_strv_contains (extra, "--pad-refill-idle-ms");
  g_autoptr (TsBenchOptions) options = options_for (server);
  g_autoptr (GPtrArray) results = NULL;
  TsBenchResult *warm, *back_to_back;
  guint64 spent;

  ts_bench_options_add_private_warm (options, "fast", server->ws_url, CKKS_PRIVACY_DEFAULT_LAMBDA);
  ts_bench_options_add_private (options, "fast", server->ws_url, CKKS_PRIVACY_DEFAULT_LAMBDA);
  options->n_rounds = 2;
  results = run_ok (options);
  g_assert_cmpuint (results->len, ==, 4);
  warm = g_ptr_array_index (results, 2);
  back_to_back = g_ptr_array_index (results, 3);
  g_assert_cmpuint (warm->round, ==, 1);
  g_assert_true (warm->private_warm);
  g_assert_cmpstr (warm->label, ==, "HE remote private, warm pads · fast");
  assert_tokens (warm, "lora_greedy_tokens.bin");
  g_assert_true (warm->pads_known);
  g_assert_cmpuint (warm->pads_inline, ==, 0);
  spent = warm->pads_from_pool;
  g_assert_cmpuint (spent, >=, (guint64) N_TOKENS * warm->n_modules);
  g_assert_cmpfloat (warm->pads_per_module, ==, (double) spent / (N_TOKENS * warm->n_modules));
  g_assert_cmpuint (warm->pads_ready, >=, spent);
  g_assert_cmpfloat (warm->pad_ms, >, 0.0);
  if (idle)
    g_assert_cmpuint (warm->pads_refilled, ==, 0);
  g_assert_false (back_to_back->private_warm);
  g_assert_true (back_to_back->pads_known);
  g_assert_cmpuint (back_to_back->pads_from_pool + back_to_back->pads_inline, ==, spent);
}

/* A pool smaller than the timed tokens is refused with the option to
 * change: at once when the server is configured for fewer answers, after
 * the wait when its memory cap lowers them. */
static void
test_private_warm_small_pool (Server *server, gconstpointer data)
{
  const char *const *extra = data;
  gboolean capped = extra != NULL && g_strv_contains (extra, "--pad-pool-mib");
  g_autoptr (TsBenchOptions) options = options_for (server);
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) results = NULL;
  gint64 start = g_get_monotonic_time ();

  ts_bench_options_add_private_warm (options, "fast", server->ws_url, CKKS_PRIVACY_DEFAULT_LAMBDA);
  /* a cap is only known to hold after the wait; too few answers at once */
  options->pad_wait_ms = capped ? 1000 : 60000;
  results = ts_bench_run (options, NULL, NULL, NULL, &error);
  g_assert_null (results);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_NO_SPACE);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, capped ? "--pad-pool-mib" : "--pad-pool-answers 4"));
  if (!capped)
    g_assert_cmpint (g_get_monotonic_time () - start, <, 60 * G_TIME_SPAN_SECOND);
}

/* Another client's private connection holds pools on the server: a warm
 * run does not start beside it (the pools, the memory cap and the counts
 * would be shared), and says why once its wait is over. */
static void
test_private_warm_not_alone (Server *server, gconstpointer data)
{
  g_autofree char *model_path = ts_test_data_path (GOLDEN_DIR "tiny-qwen35moe-f32.gguf");
  g_autoptr (TsBenchOptions) options = options_for (server);
  g_autoptr (TsHeloraSession) other = NULL;
  g_autoptr (GPtrArray) results = NULL;
  g_autoptr (GError) error = NULL;
  TsHeloraOptions he = { .mode = TS_HELORA_MODE_REMOTE, .remote_url = server->ws_url,
                         .params_preset = "fast", .adapter_path = server->lora,
                         .private_mode = TRUE };
  LmModel *model = NULL;
  LmLora *lora = NULL;

  g_assert_cmpint (lm_model_load (model_path, &model, NULL), ==, LM_OK);
  g_assert_cmpint (lm_lora_load (model, server->lora, 1.0f, &lora, NULL), ==, LM_OK);
  other = ts_helora_session_new (lora, &he, &error);
  g_assert_no_error (error);
  ts_bench_options_add_private_warm (options, "fast", server->ws_url, CKKS_PRIVACY_DEFAULT_LAMBDA);
  options->pad_wait_ms = 1000;
  results = ts_bench_run (options, NULL, NULL, NULL, &error);
  g_assert_null (results);
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "needs the evaluator to itself"));
  g_clear_pointer (&other, ts_helora_session_free);
  lm_lora_free (lora);
  lm_model_free (model);
}

int
main (int argc, char **argv)
{
  static const char *const pool_for_run[] = { "--pad-pool-answers", "4", NULL };
  /* twice the run: a pool never falls below 2 answers during it; the idle
   * period well above the gap between two answers on a loaded machine (under
   * ASan a token's answers can lie more than a second apart) */
  static const char *const pool_between_turns[] = { "--pad-pool-answers", "8",
                                                    "--pad-refill-idle-ms", "5000", NULL };
  static const char *const pool_too_small[] = { "--pad-pool-answers", "3", NULL };
  /* 64 answers asked for, but four modules' pads (2 of about 130 KiB per
   * answer) under a 1 MiB cap leave fewer than 4 */
  static const char *const pool_capped[] = { "--pad-pool-answers", "64", "--pad-pool-mib", "1",
                                             NULL };

  g_test_init (&argc, &argv, NULL);
  g_test_add ("/bench-remote/plain-and-remote", Server, NULL, server_start, test_remote,
              server_stop);
  g_test_add ("/bench-remote/packing", Server, NULL, server_start, test_remote_packing,
              server_stop);
  g_test_add ("/bench-remote/private", Server, NULL, server_start, test_private, server_stop);
  g_test_add ("/bench-remote/stack", Server, NULL, server_start, test_remote_stack, server_stop);
  g_test_add ("/bench-remote/private-warm", Server, pool_for_run, server_start, test_private_warm,
              server_stop);
  g_test_add ("/bench-remote/private-warm-between-turns", Server, pool_between_turns,
              server_start, test_private_warm, server_stop);
  g_test_add ("/bench-remote/private-warm-not-alone", Server, pool_for_run, server_start,
              test_private_warm_not_alone, server_stop);
  g_test_add ("/bench-remote/private-warm-too-few-answers", Server, pool_too_small, server_start,
              test_private_warm_small_pool, server_stop);
  g_test_add ("/bench-remote/private-warm-memory-cap", Server, pool_capped, server_start,
              test_private_warm_small_pool, server_stop);
  return g_test_run ();
}
