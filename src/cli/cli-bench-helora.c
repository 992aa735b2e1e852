/* cli-bench-helora.c: tensafe-cli bench helora: plain, local and remote HE-LoRA side by side.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Options in, a table or JSON out: the measuring is ts_bench_run(), the
 * same path as the app's benchmark page, and --json is its export. With
 * --rounds or a private row, a summary follows the table: medians over the
 * rounds and the private rows' cost against the plain remote row. */
#include <gio/gio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ckks-privacy.h"
#include "ts-bench-export.h"
#include "ts-bench-runner.h"
#include "ts-bench-summary.h"

#define CMD "tensafe-cli bench helora"

typedef struct {
  char *model, *lora, *remote, *params, *make_lora;
  char *engine_backend, *he_backend;  /* --backend, --he-backend */
  char *remote_packing;        /* --remote-packing */
  LmBackend engine;            /* parsed --backend */
  TsHeloraBackend he;          /* parsed --he-backend */
  int threads, he_threads, n_decode, n_prompt, rank;
  gboolean json, public_key, thread_clock, stack, exact;
  gboolean private_mode;       /* --private: the remote run in adapter-private mode */
  gboolean private_warm;       /* --private-warm: that, timed from full pad pools, too */
  int lambda_s;
  int rounds, pad_wait_s;
} BenchOptions;

static gboolean
parse_options (int *argc, char ***argv, BenchOptions *o)
{
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &o->model, "GGUF model file", "FILE" },
    { "lora", 0, 0, G_OPTION_ARG_FILENAME, &o->lora, "LoRA adapter (GGUF file or PEFT folder)", "PATH" },
    { "remote", 0, 0, G_OPTION_ARG_STRING, &o->remote, "Also run against this evaluator", "ws://HOST:PORT" },
    { "he-params", 0, 0, G_OPTION_ARG_STRING, &o->params,
      "CKKS preset (default: default; auto: compact, N = 4096, for inputs of up to 1024 values, "
      "fast above)", "PRESET" },
    { "pk", 0, 0, G_OPTION_ARG_NONE, &o->public_key, "Public-key encryption instead of secret-key", NULL },
    { "remote-packing", 0, 0, G_OPTION_ARG_STRING, &o->remote_packing,
      "Results of --remote: complex (default: half the results where a layout has it) or real", "P" },
    { "private", 0, 0, G_OPTION_ARG_NONE, &o->private_mode, "Also run --remote in the adapter-private mode", NULL },
    { "private-warm", 0, 0, G_OPTION_ARG_NONE, &o->private_warm,
      "Also run --remote privately with the decode timed once the evaluator's pad pools are full "
      "(pads made in idle time, as between chat turns), next to the back-to-back --private row; "
      "the evaluator needs --pad-pool-answers of at least -n", NULL },
    { "pad-wait", 0, 0, G_OPTION_ARG_INT, &o->pad_wait_s,
      "Longest wait with --private-warm for earlier private connections to close, then for full pad pools (default 120)", "SECONDS" },
    { "he-lambda", 0, 0, G_OPTION_ARG_INT, &o->lambda_s, "Flooding bits of --private (default 40)", "N" },
    { "rounds", 0, 0, G_OPTION_ARG_INT, &o->rounds,
      "Run every mode this many times, interleaved, and summarise the medians (default 1)", "N" },
    { "n-predict", 'n', 0, G_OPTION_ARG_INT, &o->n_decode, "Decode steps per mode (default 32)", "N" },
    { "prompt-tokens", 0, 0, G_OPTION_ARG_INT, &o->n_prompt, "Prompt length (default 16)", "N" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &o->threads, "Engine threads (default: all cores)", "N" },
    { "he-threads", 0, 0, G_OPTION_ARG_INT, &o->he_threads, "Local evaluator threads (default 1)", "N" },
    { "thread-clock", 0, 0, G_OPTION_ARG_NONE, &o->thread_clock,
      "Time local HE stages by thread CPU time (for busy machines)", NULL },
    { "exact-activations", 0, 0, G_OPTION_ARG_NONE, &o->exact,
      "Multiply quantised weights with f32 activations, as the chat does", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &o->json, "Print a JSON array, one object per mode", NULL },
    { "make-lora", 0, 0, G_OPTION_ARG_FILENAME, &o->make_lora,
      "Write a random adapter on every full-attention output projection to PATH, then bench it", "PATH" },
    { "rank", 0, 0, G_OPTION_ARG_INT, &o->rank, "Rank of --make-lora (default 32)", "R" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &o->engine_backend,
      "Where the model runs: cpu (default), cuda or auto", "NAME" },
    { "he-backend", 0, 0, G_OPTION_ARG_STRING, &o->he_backend,
      "Where local HE-LoRA computes: cpu (default), cuda or auto", "NAME" },
    { "stack", 0, 0, G_OPTION_ARG_NONE, &o->stack,
      "Stack two random adapters on the given one (attention q/k/v of every full-attention layer; FFN gate/up of every layer) and bench the stack; "
      "with --remote they are files next to --lora (written when missing), which the evaluator must serve", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- HE-LoRA cost per token, per mode");
  g_autoptr (GError) error = NULL;

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, argc, argv, &error))
    {
      fprintf (stderr, CMD ": %s\n", error->message);
      return FALSE;
    }
  if (o->model == NULL || (o->lora == NULL) == (o->make_lora == NULL) || o->n_decode <= 0
      || o->n_prompt <= 0 || o->threads < 0 || o->he_threads < 0 || o->rank <= 0
      || o->rounds <= 0 || o->pad_wait_s <= 0
      || (o->remote_packing != NULL && strcmp (o->remote_packing, "complex") != 0
          && strcmp (o->remote_packing, "real") != 0)
      || (o->engine_backend != NULL && !lm_backend_from_name (o->engine_backend, &o->engine))
      || (o->he_backend != NULL && !ts_helora_backend_parse (o->he_backend, &o->he, NULL)))
    {
      fprintf (stderr, "Usage: " CMD " --model FILE (--lora PATH | --make-lora PATH [--rank R])\n"
               "    [--remote ws://HOST:PORT [--remote-packing complex|real] [--private]\n"
               "     [--private-warm [--pad-wait S]] [--he-lambda N]]\n"
               "    [--he-params PRESET] [--pk] [-n N] [--rounds N] [--threads N] [--thread-clock]\n"
               "    [--json] [--stack] [--backend cpu|cuda|auto] [--he-backend cpu|cuda|auto]\n"
               "    [--exact-activations]\n");
      return FALSE;
    }
  return TRUE;
}

/* The modes to run: plain, local, then --remote (and --private) when given. */
static gboolean
add_modes (TsBenchOptions *bench, const BenchOptions *o, GError **error)
{
  TsHeloraOptions parsed = { 0 };
  guint lambda_s = o->lambda_s > 0 ? (guint) o->lambda_s : CKKS_PRIVACY_DEFAULT_LAMBDA;

  ts_bench_options_add (bench, TS_HELORA_MODE_PLAIN, NULL, NULL);
  ts_bench_options_add (bench, TS_HELORA_MODE_LOCAL, o->params, NULL);
  if (o->remote == NULL)
    return TRUE;
  if (!ts_helora_mode_parse (o->remote, &parsed, error))
    return FALSE;
  if (parsed.mode != TS_HELORA_MODE_REMOTE)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "--remote wants an evaluator address (ws://HOST:PORT), not “%s”", o->remote);
      return FALSE;
    }
  ts_bench_options_add (bench, TS_HELORA_MODE_REMOTE, o->params, parsed.remote_url);
  /* warm first: the back-to-back row then starts from the pools it drained */
  if (o->private_warm)
    ts_bench_options_add_private_warm (bench, o->params, parsed.remote_url, lambda_s);
  if (o->private_mode || o->private_warm)
    ts_bench_options_add_private (bench, o->params, parsed.remote_url, lambda_s);
  return TRUE;
}

static TsBenchOptions *
bench_options (const BenchOptions *o, GError **error)
{
  const char *adapter = o->make_lora != NULL ? o->make_lora : o->lora;
  g_autoptr (TsBenchOptions) bench = ts_bench_options_new (o->model, adapter, (guint) o->n_decode);

  if (o->make_lora != NULL)
    bench->make_rank = (guint) o->rank;
  if (o->stack)
    bench->random_stack_rank = MIN ((guint) o->rank, 16);
  bench->n_prompt_ids = (guint) o->n_prompt;
  bench->n_threads = (guint) o->threads;
  bench->he_threads = o->he_threads > 0 ? (guint) o->he_threads : 1;
  bench->public_key = o->public_key;
  bench->thread_clock = o->thread_clock;
  bench->exact_activations = o->exact;
  bench->remote_real_packing = g_strcmp0 (o->remote_packing, "real") == 0;
  bench->n_rounds = (guint) o->rounds;
  bench->pad_wait_ms = (guint) o->pad_wait_s * 1000;
  bench->engine_backend = o->engine;
  bench->he_backend = o->he;
  return add_modes (bench, o, error) ? g_steal_pointer (&bench) : NULL;
}

/* The widest mode name among @results (at least "mode"'s column of 8). */
static int
mode_width (GPtrArray *results)
{
  int width = 8;

  for (guint i = 0; i < results->len; i++)
    width = MAX (width, (int) strlen (ts_bench_result_mode_name (g_ptr_array_index (results, i))));
  return width;
}

static void
print_table (GPtrArray *results, gboolean rounds)
{
  int width = mode_width (results);

  printf ("%-*s", width, "mode");
  if (rounds)
    printf (" %5s", "round");
  printf (" %10s %12s", "tok/s", "HE ms/module");
  for (guint s = 0; s < TS_N_STAGES; s++)
    printf (" %9s", ts_stage_name (s));
  printf (" %10s %10s %10s\n", "B up/tok", "B down/tok", "max|dΔ|");
  for (guint i = 0; i < results->len; i++)
    {
      const TsBenchResult *r = g_ptr_array_index (results, i);

      printf ("%-*s", width, ts_bench_result_mode_name (r));
      if (rounds)
        printf (" %5u", r->round + 1);
      printf (" %10.2f %12.3f", r->tokens_per_s, r->he_ms_per_module);
      for (guint s = 0; s < TS_N_STAGES; s++)
        printf (" %9.3f", ts_timing_series_median_ms (r->series, s));
      printf (" %10" G_GUINT64_FORMAT " %10" G_GUINT64_FORMAT " %10.3g\n",
              ts_bench_result_per_token (r, r->bytes_up),
              ts_bench_result_per_token (r, r->bytes_down), r->max_abs_delta_error);
    }
  for (guint i = 0; i < results->len; i++)
    {
      const TsBenchResult *r = g_ptr_array_index (results, i);

      if (r->n_inputs > 0 && r->round == 0)
        printf ("%s: %u adapted modules reading %u distinct h: %.2f encryptions per token\n",
                ts_bench_result_mode_name (r), r->n_modules, r->n_inputs,
                ts_bench_result_encryptions_per_token (r));
    }
  printf ("(median ms per token by stage; HE ms/module = encrypt + upload + evaluate + download\n"
          " + decrypt per adapted module per token)\n");
}

/* "+4.2%", or "-" when there is nothing to compare with. */
static void
print_overhead (double overhead)
{
  if (isnan (overhead))
    printf (" %10s", "-");
  else
    printf (" %+9.1f%%", 100.0 * overhead);
}

/* Medians over the rounds; the private rows against the plain remote one. */
static void
print_summary (GPtrArray *results)
{
  g_autoptr (GArray) rows = ts_bench_summarise (results);
  int width = mode_width (results);

  printf ("\n%-*s %6s %10s %12s %10s %12s %10s %8s %9s %9s %10s\n", width, "mode", "rounds",
          "tok/s", "HE ms/module", "vs remote", "token median", "vs remote", "inline", "from pool",
          "refilled", "pads ms/mod");
  for (guint i = 0; i < rows->len; i++)
    {
      const TsBenchSummaryRow *row = &g_array_index (rows, TsBenchSummaryRow, i);

      printf ("%-*s %6u %10.2f %12.3f", width, ts_bench_result_mode_name (row->first),
              row->n_rounds, row->tokens_per_s, row->he_ms_per_module);
      print_overhead (row->overhead);
      printf (" %12.3f", row->he_ms_token_median);
      print_overhead (row->overhead_token_median);
      if (row->pads_known)
        printf (" %8" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT " %9" G_GUINT64_FORMAT " %10.3f\n",
                row->pads_inline, row->pads_from_pool, row->pads_refilled,
                row->pad_cpu_ms_per_module);
      else
        printf (" %8s %9s %9s %10s\n", "-", "-", "-", "-");
    }
  printf ("(medians over the rounds: HE ms/module of each round, and of every token; vs remote:\n"
          " against the plain remote row; pads made inline, taken from a pool and made by the\n"
          " refill thread over the timed decodes, and the refill thread's CPU ms for the pads of\n"
          " one module answer, from the evaluator's /metrics)\n");
}

static gboolean
has_private_row (GPtrArray *results)
{
  for (guint i = 0; i < results->len; i++)
    if (((const TsBenchResult *) g_ptr_array_index (results, i))->private_mode)
      return TRUE;
  return FALSE;
}

static int
run (const BenchOptions *o)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsBenchOptions) bench = bench_options (o, &error);
  g_autoptr (GPtrArray) results = NULL;
  g_autofree char *json = NULL;

  if (bench != NULL)
    results = ts_bench_run (bench, NULL, NULL, NULL, &error);
  if (results == NULL)
    {
      fprintf (stderr, CMD ": %s\n", error->message);
      return 1;
    }
  if (o->json)
    {
      json = ts_bench_results_to_json (results);
      printf ("%s\n", json);
    }
  else
    {
      print_table (results, o->rounds > 1);
      if (o->rounds > 1 || has_private_row (results))
        print_summary (results);
    }
  return 0;
}

int
cli_bench_helora (int argc, char **argv)
{
  BenchOptions o = { .n_decode = 32, .n_prompt = 16, .rank = 32, .rounds = 1, .pad_wait_s = 120,
                     .engine = LM_BACKEND_CPU, .he = TS_HELORA_BACKEND_CPU };
  int rc;

  if (!parse_options (&argc, &argv, &o))
    return 2;
  rc = run (&o);
  g_free (o.model);
  g_free (o.lora);
  g_free (o.remote);
  g_free (o.params);
  g_free (o.make_lora);
  g_free (o.engine_backend);
  g_free (o.he_backend);
  g_free (o.remote_packing);
  return rc;
}
