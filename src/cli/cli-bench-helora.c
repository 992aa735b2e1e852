/* cli-bench-helora.c: tensafe-cli bench helora: plain, local and remote HE-LoRA side by side.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <gio/gio.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "lm.h"
#include "ts-adapter-stack.h"
#include "ts-helora-adapter.h"
#include "ckks-private.h"
#include "ts-helora-session.h"
#include "ts-timings.h"

#define CMD "tensafe-cli bench helora"

typedef struct {
  char *model, *lora, *remote, *params, *make_lora;
  int threads, he_threads, n_decode, n_prompt, rank;
  gboolean json, public_key, thread_clock, stack;
  gboolean private_mode;       /* --private: the remote run in adapter-private mode */
  int lambda_s;
  /* --stack --remote: the stack's files, for the evaluator to stack them too */
  const char *stack_paths[3];
  float stack_weights[3];
  guint n_stack;
} BenchOptions;

typedef struct {
  const char *mode;
  TsTimingSeries *tokens;
  double decode_tok_s;
  double he_ms_per_module;
  TsHeloraStats stats;
  guint n_inputs;              /* distinct h: encryptions per token */
  guint n_modules;
} ModeResult;

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
    { "prompt-tokens", 0, 0, G_OPTION_ARG_INT, &o->n_prompt, "Prompt length (default 40)", "N" },
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

/* The engine's per-token timings under our stage names (the same list). */
static void
add_engine_timings (TsTokenTimings *t, const LmTimings *lm)
{
  for (int s = 0; s < LM_N_STAGES; s++)
    {
      TsStage stage;
      if (ts_stage_from_name (lm_stage_name ((LmStage) s), &stage))
        t->ms[stage] += lm->ms[s];
    }
}

static gint32
argmax (const float *logits, guint n)
{
  guint best = 0;

  for (guint i = 1; i < n; i++)
    if (logits[i] > logits[best])
      best = i;
  return (gint32) best;
}

/* Greedy decode of o->n_decode tokens after a prompt; per-token timings. */
static gboolean
decode_tokens (LmSession *s, const LmModel *model, const BenchOptions *o, TsHeloraSession *he,
               ModeResult *r, GError **error)
{
  guint n_vocab = lm_model_info (model)->n_vocab;
  g_autofree gint32 *prompt = g_new (gint32, o->n_prompt);
  double t0;

  for (int i = 0; i < o->n_prompt; i++)
    prompt[i] = (gint32) ((i * 7919 + 13) % n_vocab);
  if (lm_session_prefill (s, prompt, o->n_prompt, NULL) != LM_OK)
    goto failed;
  ts_helora_session_reset_stats (he);
  t0 = lm_time_ms ();
  for (int k = 0; k < o->n_decode; k++)
    {
      TsTokenTimings t = { { 0 } };
      TsHeloraStats before, after;
      double ts = lm_time_ms ();
      gint32 id = argmax (lm_session_logits (s), n_vocab);

      t.ms[TS_STAGE_SAMPLE] = lm_time_ms () - ts;
      ts_helora_session_get_stats (he, &before);
      if (lm_session_decode (s, id) != LM_OK)
        goto failed;
      ts_helora_session_get_stats (he, &after);
      add_engine_timings (&t, lm_session_timings (s));
      t.bytes_up = after.bytes_up - before.bytes_up;
      t.bytes_down = after.bytes_down - before.bytes_down;
      ts_timing_series_append (r->tokens, &t);
    }
  r->decode_tok_s = o->n_decode * 1e3 / (lm_time_ms () - t0);
  ts_helora_session_get_stats (he, &r->stats);
  r->he_ms_per_module = r->stats.module_evaluations ? r->stats.he_ms / r->stats.module_evaluations : 0;
  r->n_inputs = ts_helora_session_n_inputs (he);
  return TRUE;
failed:
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s",
               ts_helora_session_last_error (he) ? ts_helora_session_last_error (he)->message
                                                 : "the forward pass failed");
  return FALSE;
}

static gboolean
bench_mode (const LmModel *model, const LmLora *lora, const BenchOptions *o, const char *mode,
            gboolean private_mode, ModeResult *r, GError **error)
{
  TsHeloraOptions options = { .params_preset = o->params, .public_key = o->public_key,
                              .n_threads = o->he_threads ? o->he_threads : 1,
                              .adapter_path = o->lora, .track_error = TRUE,
                              .thread_clock = o->thread_clock, .private_mode = private_mode,
                              .private_lambda_s = o->lambda_s > 0 ? (guint) o->lambda_s : CKKS_PRIVATE_DEFAULT_LAMBDA,
                              .stacked_paths = o->stack_paths, .stacked_weights = o->stack_weights,
                              .n_stacked = o->n_stack };
  LmSessionParams params = { .n_ctx = (guint32) (o->n_prompt + o->n_decode + 1),
                             .n_threads = (guint32) o->threads };
  g_autoptr (TsHeloraSession) he = NULL;
  LmSession *s = NULL;
  gboolean ok;

  r->tokens = ts_timing_series_new ();
  if (!ts_helora_mode_parse (mode, &options, error))
    return FALSE;
  r->mode = private_mode ? "remote-private" : options.mode == TS_HELORA_MODE_REMOTE ? "remote" : mode;
  he = ts_helora_session_new (lora, &options, error);
  if (he == NULL)
    return FALSE;
  if (lm_session_new (model, &params, &s) != LM_OK || lm_session_set_lora (s, lora) != LM_OK)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "Cannot create an engine session");
      lm_session_free (s);
      return FALSE;
    }
  ok = ts_helora_session_attach (he, s, error) && decode_tokens (s, model, o, he, r, error);
  r->n_modules = lm_lora_n_modules (lora);
  lm_session_free (s);
  return ok;
}

static void
print_json (ModeResult *results, guint n)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = NULL;
  g_autofree char *text = NULL;

  json_builder_begin_array (b);
  for (guint i = 0; i < n; i++)
    {
      ModeResult *r = &results[i];
      TsTokenTimings sum = ts_timing_series_sum (r->tokens);
      guint len = MAX (ts_timing_series_len (r->tokens), 1);

      json_builder_begin_object (b);
      json_builder_set_member_name (b, "mode");
      json_builder_add_string_value (b, r->mode);
      json_builder_set_member_name (b, "decode_tok_s");
      json_builder_add_double_value (b, r->decode_tok_s);
      json_builder_set_member_name (b, "he_ms_per_module");
      json_builder_add_double_value (b, r->he_ms_per_module);
      ts_timing_series_build_medians (r->tokens, b);
      json_builder_set_member_name (b, "bytes_up");
      json_builder_add_int_value (b, (gint64) (sum.bytes_up / len));
      json_builder_set_member_name (b, "bytes_down");
      json_builder_add_int_value (b, (gint64) (sum.bytes_down / len));
      json_builder_set_member_name (b, "modules");
      json_builder_add_int_value (b, r->n_modules);
      json_builder_set_member_name (b, "distinct_inputs");
      json_builder_add_int_value (b, r->n_inputs);
      json_builder_set_member_name (b, "encryptions_per_token");
      json_builder_add_double_value (b, (double) r->stats.encryptions / len);
      json_builder_set_member_name (b, "max_abs_delta_error");
      json_builder_add_double_value (b, r->stats.max_abs_delta_error);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  text = json_generator_to_data (gen, NULL);
  printf ("%s\n", text);
}

static void
print_table (ModeResult *results, guint n)
{
  printf ("%-8s %10s %12s", "mode", "tok/s", "HE ms/module");
  for (guint s = 0; s < TS_N_STAGES; s++)
    printf (" %9s", ts_stage_name (s));
  printf (" %10s %10s %10s\n", "B up/tok", "B down/tok", "max|dΔ|");
  for (guint i = 0; i < n; i++)
    {
      ModeResult *r = &results[i];
      TsTokenTimings sum = ts_timing_series_sum (r->tokens);
      guint len = MAX (ts_timing_series_len (r->tokens), 1);

      printf ("%-8s %10.2f %12.3f", r->mode, r->decode_tok_s, r->he_ms_per_module);
      for (guint s = 0; s < TS_N_STAGES; s++)
        printf (" %9.3f", ts_timing_series_median_ms (r->tokens, s));
      printf (" %10" G_GUINT64_FORMAT " %10" G_GUINT64_FORMAT " %10.3g\n",
              sum.bytes_up / len, sum.bytes_down / len, r->stats.max_abs_delta_error);
    }
  for (guint i = 0; i < n; i++)
    if (results[i].n_inputs > 0)
      printf ("%s: %u adapted modules reading %u distinct h: %.2f encryptions per token\n",
              results[i].mode, results[i].n_modules, results[i].n_inputs,
              (double) results[i].stats.encryptions / MAX (ts_timing_series_len (results[i].tokens), 1));
  printf ("(median ms per token by stage; HE ms/module = encrypt + upload + evaluate + download\n"
          " + decrypt per adapted module per token)\n");
}

/* Stems of attention q/k/v on full-attention layers, or of FFN gate/up
 * (shared expert on MoE models) on every layer. */
static GPtrArray *
stack_stems (const LmModel *model, gboolean ffn)
{
  const LmModelInfo *info = lm_model_info (model);
  gboolean moe = info->arch == LM_ARCH_QWEN35MOE;
  static const char *const attn[] = { "attn_q", "attn_k", "attn_v" };
  const char *const ff[] = { moe ? "ffn_gate_shexp" : "ffn_gate", moe ? "ffn_up_shexp" : "ffn_up" };
  GPtrArray *stems = g_ptr_array_new_with_free_func (g_free);

  for (guint l = 0; l < info->n_layer; l++)
    {
      if (ffn)
        for (guint k = 0; k < G_N_ELEMENTS (ff); k++)
          g_ptr_array_add (stems, g_strdup_printf ("blk.%u.%s", l, ff[k]));
      else if (!info->is_linear[l])
        for (guint k = 0; k < G_N_ELEMENTS (attn); k++)
          g_ptr_array_add (stems, g_strdup_printf ("blk.%u.%s", l, attn[k]));
    }
  g_ptr_array_add (stems, NULL);
  return stems;
}

/* Random member @i (1: attention, 2: FFN) of --stack; the same values every run. */
static LmLora *
synth_member (const LmModel *model, guint rank, guint i, GError **error)
{
  g_autoptr (GPtrArray) stems = stack_stems (model, i == 2);
  LmLora *member = NULL;
  char *msg = NULL;

  if (lm_lora_synth (model, (const char *const *) stems->pdata, rank, 0.05f, 11 + i, &member,
                     &msg) != LM_OK)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "Cannot make a random adapter: %s",
                 msg ? msg : "?");
  free (msg);
  return member;
}

/* With --remote the evaluator stacks files: the random members live next
 * to --lora (the folder the evaluator serves) as stack-attn-rR.gguf and
 * stack-ffn-rR.gguf. Missing ones are written, and then the evaluator must
 * load them before the bench can run, so that is an error saying so. */
static LmLora *
load_member (const LmModel *model, BenchOptions *o, guint rank, guint i, gboolean *written,
             GError **error)
{
  g_autofree char *dir = g_path_get_dirname (o->lora);
  g_autofree char *name = g_strdup_printf ("stack-%s-r%u.gguf", i == 2 ? "ffn" : "attn", rank);
  char *path = g_build_filename (dir, name, NULL);
  LmLora *member = NULL;
  char *msg = NULL;

  o->stack_paths[i] = path;
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      member = synth_member (model, rank, i, error);
      if (member != NULL && ts_helora_adapter_write (model, member, path, error))
        *written = TRUE;
      g_clear_pointer (&member, lm_lora_free);
      return NULL;
    }
  if (lm_lora_load (model, path, 1.0f, &member, &msg) != LM_OK)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", path, msg ? msg : "?");
  free (msg);
  return member;
}

/* @lora with a random attention adapter and a random FFN adapter stacked on
 * it (weights 1); replaces *lora. */
static gboolean
stack_random (const LmModel *model, BenchOptions *o, guint rank, LmLora **lora, GError **error)
{
  LmLora *parts[3] = { *lora, NULL, NULL };
  const float weights[3] = { 1, 1, 1 };
  g_autoptr (GError) member_error = NULL;
  gboolean written = FALSE;
  LmLora *stacked = NULL;

  for (guint i = 1; i < 3 && member_error == NULL; i++)
    parts[i] = o->remote != NULL ? load_member (model, o, rank, i, &written, &member_error)
                                 : synth_member (model, rank, i, &member_error);
  if (member_error != NULL)
    g_propagate_error (error, g_steal_pointer (&member_error));
  else if (written)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                 "Wrote the stack's random adapters %s and %s: let the evaluator serving "
                 "their folder load them (start it again, run it with --watch, or POST "
                 "/admin/adapters/ID/reload), then run this again",
                 o->stack_paths[1], o->stack_paths[2]);
  else
    stacked = ts_adapter_stack ((const LmLora *const *) parts, weights, 3, error);
  if (stacked != NULL)
    {
      lm_lora_free (*lora);
      *lora = stacked;
      o->stack_paths[0] = o->lora;
      memcpy (o->stack_weights, weights, sizeof weights);
      o->n_stack = o->remote != NULL ? 3 : 0;
    }
  lm_lora_free (parts[1]);
  lm_lora_free (parts[2]);
  return stacked != NULL;
}

static int
run (BenchOptions *o)
{
  const char *modes[4] = { "plain", "local", o->remote, o->remote };
  guint n_modes = o->remote ? (o->private_mode ? 4 : 3) : 2;
  ModeResult results[4] = { { 0 } };
  g_autoptr (GError) error = NULL;
  LmModel *model = NULL;
  LmLora *lora = NULL;
  char *msg = NULL;
  int rc = 1;

  if (lm_model_load (o->model, &model, &msg) != LM_OK)
    {
      fprintf (stderr, CMD ": %s: %s\n", o->model, msg ? msg : "cannot load");
      free (msg);
      return 1;
    }
  if (o->make_lora != NULL)
    {
      if (!ts_helora_adapter_write_synthetic (model, o->make_lora, o->rank, 1, NULL, &error))
        goto out;
      o->lora = g_strdup (o->make_lora);
    }
  if (lm_lora_load (model, o->lora, 1.0f, &lora, &msg) != LM_OK)
    {
      fprintf (stderr, CMD ": %s: %s\n", o->lora, msg ? msg : "cannot load");
      goto out;
    }
  if (o->stack && !stack_random (model, o, MIN ((guint) o->rank, 16), &lora, &error))
    goto out;
  for (guint i = 0; i < n_modes; i++)
    if (!bench_mode (model, lora, o, modes[i], i == 3, &results[i], &error))
      goto out;
  if (o->json)
    print_json (results, n_modes);
  else
    print_table (results, n_modes);
  rc = 0;
out:
  if (error != NULL)
    fprintf (stderr, CMD ": %s\n", error->message);
  for (guint i = 0; i < n_modes; i++)
    g_clear_pointer (&results[i].tokens, ts_timing_series_free);
  free (msg);
  lm_lora_free (lora);
  lm_model_free (model);
  return rc;
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
  g_free ((char *) o.stack_paths[1]);
  g_free ((char *) o.stack_paths[2]);
  return rc;
}
