/* cli-bench-helora.c: tensafe-cli bench helora: plain, local and remote HE-LoRA side by side.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Options in, a table or JSON out: the measuring is ts_bench_run(), the
 * same path as the app's benchmark page, and --json is its export. */
#include <gio/gio.h>
#include <stdio.h>

#include "cli.h"
#include "ckks-private.h"
#include "ts-bench-export.h"
#include "ts-bench-runner.h"

#define CMD "tensafe-cli bench helora"

typedef struct {
  char *model, *lora, *remote, *params, *make_lora;
  int threads, he_threads, n_decode, n_prompt, rank;
  gboolean json, public_key, thread_clock, stack;
  gboolean private_mode;       /* --private: the remote run in adapter-private mode */
  int lambda_s;
} BenchOptions;

static gboolean
parse_options (int *argc, char ***argv, BenchOptions *o)
{
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &o->model, "GGUF model file", "FILE" },
    { "lora", 0, 0, G_OPTION_ARG_FILENAME, &o->lora, "LoRA adapter (GGUF file or PEFT folder)", "PATH" },
    { "remote", 0, 0, G_OPTION_ARG_STRING, &o->remote, "Also run against this evaluator", "ws://HOST:PORT" },
    { "he-params", 0, 0, G_OPTION_ARG_STRING, &o->params, "CKKS preset (default: default)", "PRESET" },
    { "pk", 0, 0, G_OPTION_ARG_NONE, &o->public_key, "Public-key encryption instead of secret-key", NULL },
    { "private", 0, 0, G_OPTION_ARG_NONE, &o->private_mode, "Also run --remote in the adapter-private mode", NULL },
    { "he-lambda", 0, 0, G_OPTION_ARG_INT, &o->lambda_s, "Flooding bits of --private (default 40)", "N" },
    { "n-predict", 'n', 0, G_OPTION_ARG_INT, &o->n_decode, "Decode steps per mode (default 32)", "N" },
    { "prompt-tokens", 0, 0, G_OPTION_ARG_INT, &o->n_prompt, "Prompt length (default 16)", "N" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &o->threads, "Engine threads (default: all cores)", "N" },
    { "he-threads", 0, 0, G_OPTION_ARG_INT, &o->he_threads, "Local evaluator threads (default 1)", "N" },
    { "thread-clock", 0, 0, G_OPTION_ARG_NONE, &o->thread_clock,
      "Time local HE stages by thread CPU time (for busy machines)", NULL },
    { "json", 0, 0, G_OPTION_ARG_NONE, &o->json, "Print a JSON array, one object per mode", NULL },
    { "make-lora", 0, 0, G_OPTION_ARG_FILENAME, &o->make_lora,
      "Write a random adapter on every full-attention output projection to PATH, then bench it", "PATH" },
    { "rank", 0, 0, G_OPTION_ARG_INT, &o->rank, "Rank of --make-lora (default 32)", "R" },
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
      || o->n_prompt <= 0 || o->threads < 0 || o->he_threads < 0 || o->rank <= 0)
    {
      fprintf (stderr, "Usage: " CMD " --model FILE (--lora PATH | --make-lora PATH [--rank R])\n"
               "    [--remote ws://HOST:PORT [--private [--he-lambda N]]] [--he-params PRESET] [--pk]\n"
               "    [-n N] [--threads N] [--thread-clock] [--json] [--stack]\n");
      return FALSE;
    }
  return TRUE;
}

/* The modes to run: plain, local, then --remote (and --private) when given. */
static gboolean
add_modes (TsBenchOptions *bench, const BenchOptions *o, GError **error)
{
  TsHeloraOptions parsed = { 0 };

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
  if (o->private_mode)
    ts_bench_options_add_private (bench, o->params, parsed.remote_url,
                                  o->lambda_s > 0 ? (guint) o->lambda_s : CKKS_PRIVATE_DEFAULT_LAMBDA);
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
  return add_modes (bench, o, error) ? g_steal_pointer (&bench) : NULL;
}

static void
print_table (GPtrArray *results)
{
  printf ("%-8s %10s %12s", "mode", "tok/s", "HE ms/module");
  for (guint s = 0; s < TS_N_STAGES; s++)
    printf (" %9s", ts_stage_name (s));
  printf (" %10s %10s %10s\n", "B up/tok", "B down/tok", "max|dΔ|");
  for (guint i = 0; i < results->len; i++)
    {
      const TsBenchResult *r = g_ptr_array_index (results, i);

      printf ("%-8s %10.2f %12.3f", ts_bench_result_mode_name (r), r->tokens_per_s,
              r->he_ms_per_module);
      for (guint s = 0; s < TS_N_STAGES; s++)
        printf (" %9.3f", ts_timing_series_median_ms (r->series, s));
      printf (" %10" G_GUINT64_FORMAT " %10" G_GUINT64_FORMAT " %10.3g\n",
              ts_bench_result_per_token (r, r->bytes_up),
              ts_bench_result_per_token (r, r->bytes_down), r->max_abs_delta_error);
    }
  for (guint i = 0; i < results->len; i++)
    {
      const TsBenchResult *r = g_ptr_array_index (results, i);

      if (r->n_inputs > 0)
        printf ("%s: %u adapted modules reading %u distinct h: %.2f encryptions per token\n",
                ts_bench_result_mode_name (r), r->n_modules, r->n_inputs,
                ts_bench_result_encryptions_per_token (r));
    }
  printf ("(median ms per token by stage; HE ms/module = encrypt + upload + evaluate + download\n"
          " + decrypt per adapted module per token)\n");
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
    print_table (results);
  return 0;
}

int
cli_bench_helora (int argc, char **argv)
{
  BenchOptions o = { .n_decode = 32, .n_prompt = 16, .rank = 32 };
  int rc;

  if (!parse_options (&argc, &argv, &o))
    return 2;
  rc = run (&o);
  g_free (o.model);
  g_free (o.lora);
  g_free (o.remote);
  g_free (o.params);
  g_free (o.make_lora);
  return rc;
}
