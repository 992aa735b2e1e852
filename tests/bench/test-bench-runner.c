/* test-bench-runner.c: the benchmark runs plaintext and HE-LoRA on the golden model.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The greedy tokens of every configuration must be the golden adapter's
 * tokens (computed independently when the test data was made), every token
 * must carry its stages, and the exports must describe what was run.
 */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#include "ts-bench-export.h"
#include "ts-bench-runner.h"
#include "ts-bench-summary.h"
#include "ts-core.h"
#include "ts-test-util.h"

#define GOLDEN_DIR "qwen35/tiny-qwen35moe-f32/"
#define N_TOKENS 4

static TsBenchOptions *
golden_options (void)
{
  g_autofree char *model = ts_test_data_path (GOLDEN_DIR "tiny-qwen35moe-f32.gguf");
  g_autofree char *lora = ts_test_data_path (GOLDEN_DIR "lora/tiny-qwen35moe-lora-f32.gguf");
  TsBenchOptions *options = ts_bench_options_new (model, lora, N_TOKENS);
  g_autofree gint32 *prompt = NULL;
  gsize len;

  prompt = (gint32 *) ts_test_read_data (GOLDEN_DIR "prompt_tokens.bin", &len);
  options->prompt_tokens = g_array_sized_new (FALSE, FALSE, sizeof (gint32), len / 4);
  g_array_append_vals (options->prompt_tokens, prompt, len / 4);
  options->n_threads = 1;
  return options;
}

/* Runs plaintext and HE local (fast) with @options; fails the test on errors. */
static GPtrArray *
run_plain_and_local (TsBenchOptions *options)
{
  g_autoptr (GError) error = NULL;
  GPtrArray *results;

  ts_bench_options_add (options, TS_HELORA_MODE_PLAIN, NULL, NULL);
  ts_bench_options_add (options, TS_HELORA_MODE_LOCAL, "fast", NULL);
  results = ts_bench_run (options, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  return results;
}

static void
count_progress (double fraction, const char *label, gpointer user_data)
{
  double *last = user_data;

  g_assert_cmpfloat (fraction, >=, *last);
  g_assert_cmpfloat (fraction, <=, 1.0);
  *last = fraction;
}

static void
test_plain_and_local (void)
{
  g_autoptr (TsBenchOptions) options = golden_options ();
  g_autoptr (GPtrArray) results = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree gint32 *golden = NULL;
  double last = 0.0;
  gsize len;

  ts_bench_options_add (options, TS_HELORA_MODE_PLAIN, NULL, NULL);
  ts_bench_options_add (options, TS_HELORA_MODE_LOCAL, "fast", NULL);
  results = ts_bench_run (options, count_progress, &last, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (results->len, ==, 2);
  g_assert_cmpfloat (last, ==, 1.0);

  golden = (gint32 *) ts_test_read_data (GOLDEN_DIR "lora_greedy_tokens.bin", &len);
  for (guint i = 0; i < results->len; i++)
    {
      TsBenchResult *r = g_ptr_array_index (results, i);

      g_assert_cmpuint (r->n_tokens, ==, N_TOKENS);
      g_assert_cmpuint (ts_timing_series_len (r->series), ==, N_TOKENS);
      g_assert_cmpmem (r->tokens->data, N_TOKENS * 4, golden, N_TOKENS * 4);
      g_assert_cmpfloat (r->tokens_per_s, >, 0.0);
      g_assert_cmpuint (r->rank, >, 0);
      g_assert_cmpfloat (ts_timing_series_median_ms (r->series, TS_STAGE_FORWARD), >, 0.0);
      g_assert_cmpfloat (ts_timing_series_median_ms (r->series, TS_STAGE_LM_HEAD), >, 0.0);
    }
  /* Only the encrypted configuration encrypts, evaluates and decrypts. */
  TsBenchResult *plain = g_ptr_array_index (results, 0), *local = g_ptr_array_index (results, 1);
  g_assert_cmpfloat (ts_timing_series_median_ms (plain->series, TS_STAGE_ENCRYPT), ==, 0.0);
  g_assert_cmpfloat (ts_timing_series_median_ms (local->series, TS_STAGE_ENCRYPT), >, 0.0);
  g_assert_cmpfloat (ts_timing_series_median_ms (local->series, TS_STAGE_EVALUATE), >, 0.0);
  g_assert_cmpfloat (ts_timing_series_median_ms (local->series, TS_STAGE_DECRYPT), >, 0.0);
  g_assert_cmpfloat (local->max_abs_delta_error, <, 1e-2);
  g_assert_cmpstr (local->preset, ==, "fast");
  g_assert_null (plain->preset);
}

/* A padded adapter computes the same Δ: the golden tokens again; a cut one
 * runs at its smaller rank. */
static void
test_rank_sweep (void)
{
  g_autoptr (TsBenchOptions) options = golden_options ();
  g_autoptr (GPtrArray) results = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree gint32 *golden = NULL;
  guint rank = 0, ranks[2];
  gsize len;

  options->ranks = g_array_new (FALSE, FALSE, sizeof (guint));
  {
    g_autoptr (TsBenchOptions) probe = golden_options ();
    g_autoptr (GPtrArray) one = NULL;
    ts_bench_options_add (probe, TS_HELORA_MODE_PLAIN, NULL, NULL);
    probe->n_tokens = 1;
    one = ts_bench_run (probe, NULL, NULL, NULL, &error);
    g_assert_no_error (error);
    rank = ((TsBenchResult *) g_ptr_array_index (one, 0))->rank;
  }
  ranks[0] = rank * 2;
  ranks[1] = 1;
  g_array_append_vals (options->ranks, ranks, 2);
  results = run_plain_and_local (options);
  g_assert_cmpuint (results->len, ==, 4);

  golden = (gint32 *) ts_test_read_data (GOLDEN_DIR "lora_greedy_tokens.bin", &len);
  for (guint i = 0; i < 4; i++)
    {
      TsBenchResult *r = g_ptr_array_index (results, i);

      g_assert_cmpuint (r->rank, ==, ranks[i / 2]);
      g_assert_cmpuint (r->n_tokens, ==, N_TOKENS);
      g_assert_cmpint (r->mode, ==, i % 2 == 0 ? TS_HELORA_MODE_PLAIN : TS_HELORA_MODE_LOCAL);
      if (i < 2)
        g_assert_cmpmem (r->tokens->data, N_TOKENS * 4, golden, N_TOKENS * 4);
    }
}

/* The options `tensafe-cli bench helora` uses: a prompt of spread ids is
 * the same as passing those ids; public-key encryption, a local pool and
 * the thread clock still give the plaintext tokens. */
static void
test_prompt_ids_and_pk (void)
{
  g_autoptr (TsBenchOptions) by_ids = golden_options ();
  g_autoptr (TsBenchOptions) by_tokens = golden_options ();
  g_autoptr (GPtrArray) a = NULL, b = NULL;
  g_autoptr (GError) error = NULL;
  LmModel *model = NULL;
  guint n_vocab;

  g_assert_cmpint (lm_model_load (by_ids->model_path, &model, NULL), ==, LM_OK);
  n_vocab = lm_model_info (model)->n_vocab;
  lm_model_free (model);
  g_clear_pointer (&by_ids->prompt_tokens, g_array_unref);
  by_ids->n_prompt_ids = 5;
  g_array_set_size (by_tokens->prompt_tokens, 0);
  for (guint i = 0; i < by_ids->n_prompt_ids; i++)
    g_array_append_val (by_tokens->prompt_tokens, (gint32) { (gint32) ((i * 7919 + 13) % n_vocab) });
  by_ids->public_key = TRUE;
  by_ids->he_threads = 2;
  by_ids->thread_clock = TRUE;
  a = run_plain_and_local (by_ids);
  ts_bench_options_add (by_tokens, TS_HELORA_MODE_PLAIN, NULL, NULL);
  b = ts_bench_run (by_tokens, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < a->len; i++)
    {
      TsBenchResult *r = g_ptr_array_index (a, i);
      g_assert_cmpmem (r->tokens->data, N_TOKENS * 4,
                       ((TsBenchResult *) g_ptr_array_index (b, 0))->tokens->data, N_TOKENS * 4);
    }
  g_assert_cmpfloat (((TsBenchResult *) g_ptr_array_index (a, 1))->max_abs_delta_error, <, 1e-2);
}

/* make_rank writes a random adapter (one module: the one full-attention
 * layer's output projection) and benches it at that rank. */
static void
test_made_adapter (void)
{
  g_autoptr (TsBenchOptions) options = golden_options ();
  g_autofree char *dir = g_dir_make_tmp ("bench-made-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "made.gguf", NULL);
  g_autoptr (GPtrArray) results = NULL;
  g_autoptr (GError) error = NULL;
  TsBenchResult *local;

  g_free (options->adapter_path);
  options->adapter_path = g_strdup (path);
  options->make_rank = 8;
  ts_bench_options_add (options, TS_HELORA_MODE_LOCAL, "fast", NULL);
  results = ts_bench_run (options, NULL, NULL, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (g_file_test (path, G_FILE_TEST_IS_REGULAR));
  local = g_ptr_array_index (results, 0);
  g_assert_cmpuint (local->rank, ==, 8);
  g_assert_cmpuint (local->n_modules, ==, 1);
  g_assert_cmpuint (local->n_inputs, ==, 1);
  g_unlink (path);
  g_rmdir (dir);
}

/* A random stack on the golden adapter (4 modules, each its own h):
 * attention q/k/v of layer 3 (one h) and FFN gate/up of 4 layers (one h
 * each): 15 modules, 9 encryptions per decoded token, counted over the
 * decode steps only. Run locally, its files are temporary. */
static void
test_random_stack (void)
{
  g_autoptr (TsBenchOptions) options = golden_options ();
  g_autofree char *lora_dir = g_path_get_dirname (options->adapter_path);
  g_autofree char *beside = g_build_filename (lora_dir, "stack-attn-r4.gguf", NULL);
  g_autoptr (GPtrArray) results = NULL;
  TsBenchResult *plain, *local;

  options->random_stack_rank = 4;
  results = run_plain_and_local (options);
  g_assert_false (g_file_test (beside, G_FILE_TEST_EXISTS));
  plain = g_ptr_array_index (results, 0);
  local = g_ptr_array_index (results, 1);
  g_assert_cmpuint (plain->n_modules, ==, 15);
  g_assert_cmpuint (plain->n_inputs, ==, 0);
  g_assert_cmpuint (local->n_modules, ==, 15);
  g_assert_cmpuint (local->n_inputs, ==, 9);
  g_assert_cmpuint (local->encryptions, ==, 9 * N_TOKENS);
  g_assert_cmpmem (plain->tokens->data, N_TOKENS * 4, local->tokens->data, N_TOKENS * 4);
  g_assert_cmpfloat (local->max_abs_delta_error, <, 1e-2);
}

/* An adapter stacked on itself with weight -1 cancels it: the base model's
 * greedy tokens (computed independently), not the adapter's. */
static void
test_stack_paths (void)
{
  g_autoptr (TsBenchOptions) options = golden_options ();
  g_autoptr (GPtrArray) results = NULL;
  g_autofree gint32 *base = NULL;
  TsBenchResult *cancelled;
  gsize len;

  ts_bench_options_add_stacked (options, options->adapter_path, -1.0f);
  results = run_plain_and_local (options);
  base = (gint32 *) ts_test_read_data (GOLDEN_DIR "greedy_tokens.bin", &len);
  for (guint i = 0; i < results->len; i++)
    {
      cancelled = g_ptr_array_index (results, i);
      g_assert_cmpuint (cancelled->n_modules, ==, 4);
      g_assert_cmpmem (cancelled->tokens->data, N_TOKENS * 4, base, N_TOKENS * 4);
    }
}

/* The app's export: the same results inside what was measured where and
 * when (version, date, machine, model and adapter names). */
static void
check_json_document (GPtrArray *results)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_autofree char *json = ts_bench_results_to_json_document (results, "/m/tiny.gguf", NULL);
  g_autoptr (GDateTime) date = NULL;
  JsonObject *doc, *machine;

  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  doc = json_node_get_object (json_parser_get_root (parser));
  g_assert_cmpstr (json_object_get_string_member (doc, "tensafe_version"), ==, ts_version ());
  date = g_date_time_new_from_iso8601 (json_object_get_string_member (doc, "date"), NULL);
  g_assert_nonnull (date);
  g_assert_cmpstr (json_object_get_string_member (doc, "model"), ==, "tiny.gguf");
  g_assert_true (json_node_is_null (json_object_get_member (doc, "adapter")));
  machine = json_object_get_object_member (doc, "machine");
  g_assert_cmpint (json_object_get_int_member (machine, "cores"), ==, g_get_num_processors ());
  g_assert_cmpint (json_object_get_int_member (machine, "memory_bytes"), >, 0);
  g_assert_nonnull (json_object_get_string_member (machine, "os"));
  g_assert_cmpuint (json_array_get_length (json_object_get_array_member (doc, "results")), ==,
                    results->len);
}

static void
test_exports (void)
{
  g_autoptr (TsBenchOptions) options = golden_options ();
  g_autoptr (GPtrArray) results = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *csv = NULL, *json = NULL;
  g_auto (GStrv) lines = NULL;
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonArray *configs;
  JsonObject *first, *second;

  options->n_tokens = 2;
  results = run_plain_and_local (options);

  csv = ts_bench_results_to_csv (results);
  lines = g_strsplit (csv, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, 4);   /* header, two rows, "" */
  g_assert_true (g_str_has_prefix (lines[0], "configuration,mode,preset,rank,tokens,decode_tok_s,he_ms_per_module,forward_ms,"));
  for (guint i = 1; i < 3; i++)
    {
      g_auto (GStrv) head = g_strsplit (lines[0], ",", -1);
      g_auto (GStrv) row = g_strsplit (lines[i], ",", -1);
      g_assert_cmpuint (g_strv_length (row), ==, g_strv_length (head));
    }
  g_assert_true (g_str_has_prefix (lines[2], "\"HE local · fast\",local,fast,"));
  g_assert_true (g_str_has_suffix (lines[0], ",bytes_up,bytes_down,modules,distinct_inputs,"
                                             "encryptions_per_token,max_abs_delta_error"));

  json = ts_bench_results_to_json (results);
  g_assert_true (json_parser_load_from_data (parser, json, -1, &error));
  configs = json_node_get_array (json_parser_get_root (parser));
  g_assert_cmpuint (json_array_get_length (configs), ==, 2);
  first = json_array_get_object_element (configs, 0);
  g_assert_cmpstr (json_object_get_string_member (first, "mode"), ==, "plain");
  g_assert_cmpint (json_object_get_int_member (first, "tokens"), ==, 2);
  g_assert_cmpfloat (json_object_get_double_member (first, "decode_tok_s"), >, 0.0);
  g_assert_cmpfloat (json_object_get_double_member (first, "he_ms_per_module"), ==, 0.0);
  g_assert_cmpfloat (json_object_get_double_member (json_array_get_object_element (configs, 1),
                                                    "he_ms_per_module"), >, 0.0);
  g_assert_true (json_object_has_member (json_object_get_object_member (first, "median_ms"),
                                         "lm_head"));
  g_assert_cmpint (json_object_get_int_member (first, "round"), ==, 0);
  g_assert_true (json_object_has_member (first, "pads"));
  g_assert_null (json_object_get_object_member (first, "pads"));   /* not private */
  check_json_document (results);
  /* The fields `tensafe-cli bench helora --json` has always printed. */
  second = json_array_get_object_element (configs, 1);
  g_assert_cmpstr (json_object_get_string_member (second, "label"), ==, "HE local · fast");
  g_assert_cmpint (json_object_get_int_member (second, "modules"), ==, 4);
  g_assert_cmpint (json_object_get_int_member (second, "distinct_inputs"), ==, 4);
  g_assert_cmpfloat (json_object_get_double_member (second, "encryptions_per_token"), ==, 4.0);
  g_assert_cmpint (json_object_get_int_member (second, "bytes_up"), ==, 0);
  g_assert_cmpint (json_object_get_int_member (first, "distinct_inputs"), ==, 0);
  g_assert_cmpfloat (json_object_get_double_member (second, "max_abs_delta_error"), <, 1e-2);
}

static void
test_cancelled (void)
{
  g_autoptr (TsBenchOptions) options = golden_options ();
  g_autoptr (GCancellable) cancellable = g_cancellable_new ();
  g_autoptr (GError) error = NULL;

  ts_bench_options_add (options, TS_HELORA_MODE_PLAIN, NULL, NULL);
  g_cancellable_cancel (cancellable);
  g_assert_null (ts_bench_run (options, NULL, NULL, cancellable, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_CANCELLED);
}

static void
test_bad_inputs (void)
{
  g_autoptr (TsBenchOptions) options = ts_bench_options_new ("/nonexistent.gguf", "/x", 2);
  g_autoptr (TsBenchOptions) empty = golden_options ();
  g_autoptr (GError) error = NULL;

  ts_bench_options_add (options, TS_HELORA_MODE_PLAIN, NULL, NULL);
  g_assert_null (ts_bench_run (options, NULL, NULL, NULL, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  g_assert_null (ts_bench_run (empty, NULL, NULL, NULL, &error));
  g_assert_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT);
}

/* Three rounds run the configurations interleaved; the summary has one
 * row per configuration with the median over the rounds. */
static void
test_rounds (void)
{
  g_autoptr (TsBenchOptions) options = golden_options ();
  g_autoptr (GPtrArray) results = NULL;
  g_autoptr (GArray) rows = NULL;
  const TsBenchSummaryRow *local;
  double he[3];

  options->n_tokens = 2;
  options->n_rounds = 3;
  results = run_plain_and_local (options);
  g_assert_cmpuint (results->len, ==, 6);
  for (guint i = 0; i < 6; i++)
    {
      TsBenchResult *r = g_ptr_array_index (results, i);

      g_assert_cmpuint (r->round, ==, i / 2);
      g_assert_cmpint (r->mode, ==, i % 2 ? TS_HELORA_MODE_LOCAL : TS_HELORA_MODE_PLAIN);
      g_assert_false (r->pads_known);
      if (i % 2)
        he[i / 2] = r->he_ms_per_module;
    }
  rows = ts_bench_summarise (results);
  g_assert_cmpuint (rows->len, ==, 2);
  local = &g_array_index (rows, TsBenchSummaryRow, 1);
  g_assert_true (local->first == g_ptr_array_index (results, 1));
  g_assert_cmpuint (local->n_rounds, ==, 3);
  g_assert_cmpfloat (local->he_ms_per_module, ==, ts_median (he, 3));
  g_assert_cmpfloat (local->he_ms_token_median, >, 0.0);
  g_assert_true (isnan (local->overhead));
}

/* Round @round of configuration @label: one token of @he_ms HE time over
 * two modules; private ones with made-up pad figures. */
static TsBenchResult *
fake_result (const char *label, gboolean private_mode, guint round, double he_ms)
{
  TsBenchResult *r = g_new0 (TsBenchResult, 1);
  TsTokenTimings t = { { 0 } };

  r->label = g_strdup (label);
  r->mode = TS_HELORA_MODE_REMOTE;
  r->private_mode = private_mode;
  r->preset = g_strdup ("fast");
  r->round = round;
  r->n_modules = 2;
  r->n_tokens = 1;
  r->he_ms_per_module = he_ms / 2;
  r->series = ts_timing_series_new ();
  t.ms[TS_STAGE_EVALUATE] = he_ms;
  ts_timing_series_append (r->series, &t);
  r->tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  r->pads_known = private_mode;
  r->pads_inline = private_mode ? round : 0;
  r->pads_from_pool = private_mode ? 10 : 0;
  r->pads_refilled = private_mode ? 7 : 0;
  r->pads_per_module = private_mode ? 2 : 0;
  r->pad_ms = private_mode ? 0.5 : 0;
  return r;
}

/* The private row against the plain remote one: medians over the rounds
 * (an outlier round moves neither), pads summed, their CPU per module. */
static void
test_summary_overhead (void)
{
  g_autoptr (GPtrArray) results = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_bench_result_free);
  const double plain[] = { 4.0, 40.0, 4.4 }, private[] = { 4.4, 4.8, 400.0 };
  g_autoptr (GArray) rows = NULL;
  const TsBenchSummaryRow *row;

  for (guint round = 0; round < 3; round++)
    {
      g_ptr_array_add (results, fake_result ("remote", FALSE, round, plain[round]));
      g_ptr_array_add (results, fake_result ("private", TRUE, round, private[round]));
    }
  rows = ts_bench_summarise (results);
  g_assert_cmpuint (rows->len, ==, 2);
  row = &g_array_index (rows, TsBenchSummaryRow, 1);
  g_assert_cmpfloat_with_epsilon (row->he_ms_per_module, 2.4, 1e-12);
  g_assert_cmpfloat_with_epsilon (row->he_ms_token_median, 2.4, 1e-12);
  g_assert_cmpfloat_with_epsilon (row->overhead, 2.4 / 2.2 - 1, 1e-12);
  g_assert_cmpfloat_with_epsilon (row->overhead_token_median, 2.4 / 2.2 - 1, 1e-12);
  g_assert_true (row->pads_known);
  g_assert_cmpuint (row->pads_inline, ==, 0 + 1 + 2);
  g_assert_cmpuint (row->pads_from_pool, ==, 30);
  g_assert_cmpuint (row->pads_refilled, ==, 3 * 7);
  g_assert_cmpfloat (row->pad_cpu_ms_per_module, ==, 1.0);
  g_assert_true (isnan (g_array_index (rows, TsBenchSummaryRow, 0).overhead));
  g_assert_false (g_array_index (rows, TsBenchSummaryRow, 0).pads_known);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/bench-runner/plain-and-local", test_plain_and_local);
  g_test_add_func ("/bench-runner/rank-sweep", test_rank_sweep);
  g_test_add_func ("/bench-runner/prompt-ids-and-pk", test_prompt_ids_and_pk);
  g_test_add_func ("/bench-runner/made-adapter", test_made_adapter);
  g_test_add_func ("/bench-runner/random-stack", test_random_stack);
  g_test_add_func ("/bench-runner/stack-paths", test_stack_paths);
  g_test_add_func ("/bench-runner/exports", test_exports);
  g_test_add_func ("/bench-runner/rounds", test_rounds);
  g_test_add_func ("/bench-runner/summary-overhead", test_summary_overhead);
  g_test_add_func ("/bench-runner/cancelled", test_cancelled);
  g_test_add_func ("/bench-runner/bad-inputs", test_bad_inputs);
  return g_test_run ();
}
