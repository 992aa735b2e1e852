/* ts-bench-runner.c: HE-LoRA benchmark: the same greedy generation per configuration, timed per stage.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "lm.h"
#include <glib/gstdio.h>

#include "sampler.h"
#include "tokenizer.h"
#include "ts-bench-adapter.h"
#include "ts-bench-runner.h"

#define DEFAULT_PROMPT "Homomorphic encryption lets a server compute on data it cannot read."

/* ---- Options and results ---------------------------------------------- */

static void
config_clear (gpointer data)
{
  TsBenchConfig *config = data;

  g_free (config->preset);
  g_free (config->remote_url);
}

TsBenchOptions *
ts_bench_options_new (const char *model_path, const char *adapter_path, guint n_tokens)
{
  TsBenchOptions *options = g_new0 (TsBenchOptions, 1);

  options->model_path = g_strdup (model_path);
  options->adapter_path = g_strdup (adapter_path);
  options->n_tokens = n_tokens;
  options->configs = g_array_new (FALSE, TRUE, sizeof (TsBenchConfig));
  g_array_set_clear_func (options->configs, config_clear);
  return options;
}

void
ts_bench_options_free (TsBenchOptions *options)
{
  if (options == NULL)
    return;
  g_free (options->model_path);
  g_free (options->adapter_path);
  g_free (options->prompt);
  g_clear_pointer (&options->prompt_tokens, g_array_unref);
  g_clear_pointer (&options->ranks, g_array_unref);
  g_array_unref (options->configs);
  g_free (options);
}

void
ts_bench_options_add (TsBenchOptions *options, TsHeloraMode mode, const char *preset,
                      const char *remote_url)
{
  TsBenchConfig config = {
    .mode = mode,
    .preset = mode == TS_HELORA_MODE_PLAIN ? NULL : g_strdup (preset ? preset : "default"),
    .remote_url = g_strdup (remote_url),
  };

  g_array_append_val (options->configs, config);
}

void
ts_bench_result_free (TsBenchResult *result)
{
  if (result == NULL)
    return;
  g_free (result->label);
  g_free (result->preset);
  g_clear_pointer (&result->series, ts_timing_series_free);
  g_clear_pointer (&result->tokens, g_array_unref);
  g_free (result);
}

static char *
config_label (const TsBenchConfig *config)
{
  switch (config->mode)
    {
    case TS_HELORA_MODE_LOCAL:
      return g_strdup_printf ("HE local · %s", config->preset);
    case TS_HELORA_MODE_REMOTE:
      return g_strdup_printf ("HE remote · %s", config->preset);
    case TS_HELORA_MODE_PLAIN:
    default:
      return g_strdup ("plaintext");
    }
}

/* ---- Loading ---------------------------------------------------------- */

typedef struct {
  LmModel *model;
  LmLora *lora;              /* the adapter as given */
  LmTokenizer *tok;
  int32_t *prompt;
  size_t n_prompt;
  guint rank;                /* largest rank among its modules */
} Loaded;

/* The adapter one pass runs with: the original or a resized copy. */
typedef struct {
  const LmLora *lora;
  const char *path;
  guint rank;
} Adapter;

static void
loaded_clear (Loaded *l)
{
  lm_lora_free (l->lora);
  lm_tokenizer_free (l->tok);
  lm_model_free (l->model);
  free (l->prompt);
}

static gboolean
engine_failed (GError **error, const char *what, LmStatus st, char *msg)
{
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", what,
               msg != NULL ? msg : lm_status_message (st));
  free (msg);
  return FALSE;
}

static gboolean
load (const TsBenchOptions *options, Loaded *l, GError **error)
{
  const char *prompt = options->prompt != NULL ? options->prompt : DEFAULT_PROMPT;
  char *msg = NULL;
  LmStatus st;

  if ((st = lm_model_load (options->model_path, &l->model, &msg)) != LM_OK)
    return engine_failed (error, options->model_path, st, msg);
  if ((st = lm_lora_load (l->model, options->adapter_path, 1.0f, &l->lora, &msg)) != LM_OK)
    return engine_failed (error, options->adapter_path, st, msg);
  if ((st = lm_tokenizer_new_from_gguf (lm_model_gguf (l->model), &l->tok, &msg)) != LM_OK)
    return engine_failed (error, "tokenizer", st, msg);
  if (options->prompt_tokens != NULL)
    {
      guint n_vocab = lm_model_info (l->model)->n_vocab;
      l->n_prompt = options->prompt_tokens->len;
      l->prompt = malloc (MAX (l->n_prompt, 1) * sizeof (int32_t));
      memcpy (l->prompt, options->prompt_tokens->data, l->n_prompt * sizeof (int32_t));
      for (size_t i = 0; i < l->n_prompt; i++)
        if (l->prompt[i] < 0 || (guint) l->prompt[i] >= n_vocab)
          return engine_failed (error, "prompt", LM_ERR_INVALID_ARGUMENT, NULL);
    }
  else if ((st = lm_tokenize (l->tok, prompt, strlen (prompt), false, &l->prompt, &l->n_prompt)) != LM_OK)
    return engine_failed (error, "prompt", st, NULL);
  if (l->n_prompt == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "The prompt is empty");
      return FALSE;
    }
  for (size_t i = 0; i < lm_lora_n_modules (l->lora); i++)
    l->rank = MAX (l->rank, lm_lora_module (l->lora, i)->rank);
  return TRUE;
}

/* ---- One configuration ------------------------------------------------ */

typedef struct {
  const TsBenchOptions *options;
  TsBenchProgressFunc progress;
  gpointer user_data;
  guint index;               /* of the running (rank, configuration) pair */
  guint n_runs;
  const char *label;
} Reporter;

static void
report (const Reporter *r, double within)
{
  guint n = r->n_runs;

  if (r->progress != NULL)
    r->progress ((r->index + within) / n, r->label, r->user_data);
}

static TsHeloraSession *
attach_helora (const TsBenchOptions *options, const TsBenchConfig *config,
               const Adapter *adapter, LmSession *session, GError **error)
{
  TsHeloraOptions he = {
    .mode = config->mode,
    .remote_url = config->remote_url,
    .params_preset = config->preset,
    .n_threads = options->n_threads,
    .adapter_path = adapter->path,
    .track_error = TRUE,
  };
  g_autoptr (TsHeloraSession) helora = ts_helora_session_new (adapter->lora, &he, error);

  if (helora == NULL || !ts_helora_session_attach (helora, session, error))
    return NULL;
  return g_steal_pointer (&helora);
}

static void
token_timings_from_engine (const LmTimings *lm, double sample_ms, TsTokenTimings *out)
{
  memset (out, 0, sizeof *out);
  /* The engine's stages are the same list, in the same order. */
  for (int s = 0; s < LM_N_STAGES && s < TS_N_STAGES; s++)
    out->ms[s] = lm->ms[s];
  out->ms[TS_STAGE_SAMPLE] += sample_ms;
}

static gboolean
decode_steps (const Reporter *r, const Loaded *l, LmSession *session, TsHeloraSession *helora,
              TsBenchResult *result, GCancellable *cancellable, GError **error)
{
  LmSamplerParams greedy = lm_sampler_params_greedy ();
  LmSampler *sampler = lm_sampler_new (&greedy, (int32_t) lm_model_info (l->model)->n_vocab);
  TsHeloraStats before = { 0 }, after = { 0 };
  double start = ts_now_ms ();
  gboolean ok = sampler != NULL;

  if (!ok)
    g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "Cannot create the sampler");
  for (guint k = 0; ok && k < r->options->n_tokens; k++)
    {
      TsTokenTimings t;
      double t0 = ts_now_ms ();
      gint32 id = lm_sampler_sample (sampler, lm_session_logits (session));
      double sample_ms;
      LmStatus st;

      lm_sampler_accept (sampler, id);
      sample_ms = ts_now_ms () - t0;
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        {
          ok = FALSE;
          break;
        }
      g_array_append_val (result->tokens, id);
      if (helora != NULL)
        ts_helora_session_get_stats (helora, &before);
      if ((st = lm_session_decode (session, id)) != LM_OK)
        {
          const GError *why = helora != NULL ? ts_helora_session_last_error (helora) : NULL;
          ok = engine_failed (error, "decode", st, why ? strdup (why->message) : NULL);
          break;
        }
      token_timings_from_engine (lm_session_timings (session), sample_ms, &t);
      if (helora != NULL)
        {
          ts_helora_session_get_stats (helora, &after);
          t.bytes_up = after.bytes_up - before.bytes_up;
          t.bytes_down = after.bytes_down - before.bytes_down;
        }
      ts_timing_series_append (result->series, &t);
      report (r, 0.2 + 0.8 * (k + 1) / r->options->n_tokens);
    }
  result->decode_ms = ts_now_ms () - start;
  lm_sampler_free (sampler);
  return ok;
}

static TsBenchResult *
run_config (const Reporter *r, const TsBenchConfig *config, const Loaded *l,
            const Adapter *adapter, GCancellable *cancellable, GError **error)
{
  const TsBenchOptions *options = r->options;
  g_autoptr (TsBenchResult) result = g_new0 (TsBenchResult, 1);
  g_autoptr (TsHeloraSession) helora = NULL;
  LmSessionParams params = { .n_ctx = (guint32) (l->n_prompt + options->n_tokens + 1),
                             .n_threads = options->n_threads };
  LmSession *session = NULL;
  LmStatus st;
  gboolean ok = FALSE;

  result->label = g_strdup (r->label);
  result->mode = config->mode;
  result->preset = g_strdup (config->preset);
  result->rank = adapter->rank;
  result->series = ts_timing_series_new ();
  result->tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  report (r, 0.0);
  if ((st = lm_session_new (l->model, &params, &session)) != LM_OK
      || (st = lm_session_set_lora (session, adapter->lora)) != LM_OK)
    engine_failed (error, "session", st, NULL);
  else if (config->mode != TS_HELORA_MODE_PLAIN
           && (helora = attach_helora (options, config, adapter, session, error)) == NULL)
    ;
  else if ((st = lm_session_prefill (session, l->prompt, l->n_prompt, NULL)) != LM_OK)
    engine_failed (error, "prefill", st, NULL);
  else
    {
      report (r, 0.2);
      ok = decode_steps (r, l, session, helora, result, cancellable, error);
    }
  lm_session_free (session);
  if (!ok)
    return NULL;
  if (helora != NULL)
    {
      TsHeloraStats stats;
      ts_helora_session_get_stats (helora, &stats);
      result->bytes_up = stats.bytes_up;
      result->bytes_down = stats.bytes_down;
      result->max_abs_delta_error = stats.max_abs_delta_error;
      if (stats.module_evaluations > 0)
        result->he_ms_per_module = stats.he_ms / (double) stats.module_evaluations;
    }
  result->n_tokens = ts_timing_series_len (result->series);
  result->tokens_per_s = result->decode_ms > 0 ? 1000.0 * result->n_tokens / result->decode_ms : 0;
  return g_steal_pointer (&result);
}

/* Runs every configuration with @adapter, appending to @results. */
static gboolean
run_configs (const TsBenchOptions *options, const Loaded *l, const Adapter *adapter,
             Reporter *r, GPtrArray *results, GCancellable *cancellable, GError **error)
{
  for (guint i = 0; i < options->configs->len; i++, r->index++)
    {
      const TsBenchConfig *config = &g_array_index (options->configs, TsBenchConfig, i);
      g_autofree char *label = config_label (config);
      TsBenchResult *result;

      r->label = label;
      result = run_config (r, config, l, adapter, cancellable, error);
      if (result == NULL)
        return FALSE;
      g_ptr_array_add (results, result);
    }
  return TRUE;
}

/* Resizes the adapter to @rank into @dir and runs every configuration. */
static gboolean
run_rank (const TsBenchOptions *options, const Loaded *l, guint rank, const char *dir,
          Reporter *r, GPtrArray *results, GCancellable *cancellable, GError **error)
{
  g_autofree char *name = g_strdup_printf ("rank-%u.gguf", rank);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  LmLora *lora = NULL;
  char *msg = NULL;
  LmStatus st;
  gboolean ok;

  if (rank == l->rank)
    {
      Adapter same = { l->lora, options->adapter_path, l->rank };
      return run_configs (options, l, &same, r, results, cancellable, error);
    }
  if (!ts_bench_write_adapter_rank (l->lora, rank, path, error))
    return FALSE;
  if ((st = lm_lora_load (l->model, path, 1.0f, &lora, &msg)) != LM_OK)
    ok = engine_failed (error, path, st, msg);
  else
    {
      Adapter resized = { lora, path, rank };
      ok = run_configs (options, l, &resized, r, results, cancellable, error);
    }
  lm_lora_free (lora);
  g_unlink (path);
  return ok;
}

static gboolean
run_all (const TsBenchOptions *options, const Loaded *l, TsBenchProgressFunc progress,
         gpointer user_data, GPtrArray *results, GCancellable *cancellable, GError **error)
{
  guint n_ranks = options->ranks != NULL ? options->ranks->len : 0;
  Reporter r = { options, progress, user_data, 0, MAX (n_ranks, 1) * options->configs->len, NULL };
  g_autofree char *dir = NULL;
  gboolean ok = TRUE;

  if (n_ranks == 0)
    {
      Adapter given = { l->lora, options->adapter_path, l->rank };
      return run_configs (options, l, &given, &r, results, cancellable, error);
    }
  if ((dir = g_dir_make_tmp ("tensafe-bench-XXXXXX", error)) == NULL)
    return FALSE;
  for (guint i = 0; ok && i < n_ranks; i++)
    ok = run_rank (options, l, g_array_index (options->ranks, guint, i), dir, &r, results,
                   cancellable, error);
  g_rmdir (dir);
  return ok;
}

GPtrArray *
ts_bench_run (const TsBenchOptions *options, TsBenchProgressFunc progress, gpointer user_data,
              GCancellable *cancellable, GError **error)
{
  g_autoptr (GPtrArray) results = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_bench_result_free);
  Loaded l = { 0 };
  gboolean ok;

  g_return_val_if_fail (options != NULL, NULL);
  if (options->n_tokens == 0 || options->configs->len == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "Nothing to run: choose at least one configuration and one token");
      return NULL;
    }
  ok = load (options, &l, error) && run_all (options, &l, progress, user_data, results,
                                             cancellable, error);
  loaded_clear (&l);
  if (ok && progress != NULL)
    progress (1.0, NULL, user_data);
  return ok ? g_steal_pointer (&results) : NULL;
}

/* ---- Export ----------------------------------------------------------- */

static const char *
mode_name (TsHeloraMode mode)
{
  return mode == TS_HELORA_MODE_LOCAL ? "local" : mode == TS_HELORA_MODE_REMOTE ? "remote" : "plain";
}

char *
ts_bench_results_to_csv (GPtrArray *results)
{
  GString *out = g_string_new ("configuration,mode,preset,rank,tokens,decode_tok_s,he_ms_per_module");
  char num[G_ASCII_DTOSTR_BUF_SIZE];

  for (int s = 0; s < TS_N_STAGES; s++)
    g_string_append_printf (out, ",%s_ms", ts_stage_name ((TsStage) s));
  g_string_append (out, ",bytes_up,bytes_down,max_abs_delta_error\n");
  for (guint i = 0; i < results->len; i++)
    {
      const TsBenchResult *r = g_ptr_array_index (results, i);

      g_string_append_printf (out, "\"%s\",%s,%s,%u,%u,%s", r->label, mode_name (r->mode),
                              r->preset ? r->preset : "", r->rank, r->n_tokens,
                              g_ascii_formatd (num, sizeof num, "%.3f", r->tokens_per_s));
      g_string_append_printf (out, ",%s",
                              g_ascii_formatd (num, sizeof num, "%.4f", r->he_ms_per_module));
      for (int s = 0; s < TS_N_STAGES; s++)
        g_string_append_printf (out, ",%s",
                                g_ascii_formatd (num, sizeof num, "%.4f",
                                                 ts_timing_series_median_ms (r->series, (TsStage) s)));
      g_string_append_printf (out, ",%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT ",%s\n",
                              r->bytes_up, r->bytes_down,
                              g_ascii_formatd (num, sizeof num, "%.3e", r->max_abs_delta_error));
    }
  return g_string_free (out, FALSE);
}

char *
ts_bench_results_to_json (GPtrArray *results)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonGenerator) gen = json_generator_new ();
  g_autoptr (JsonNode) root = NULL;

  json_builder_begin_array (b);
  for (guint i = 0; i < results->len; i++)
    {
      const TsBenchResult *r = g_ptr_array_index (results, i);

      json_builder_begin_object (b);
      json_builder_set_member_name (b, "label");
      json_builder_add_string_value (b, r->label);
      json_builder_set_member_name (b, "mode");
      json_builder_add_string_value (b, mode_name (r->mode));
      json_builder_set_member_name (b, "preset");
      if (r->preset != NULL)
        json_builder_add_string_value (b, r->preset);
      else
        json_builder_add_null_value (b);
      json_builder_set_member_name (b, "rank");
      json_builder_add_int_value (b, r->rank);
      json_builder_set_member_name (b, "tokens");
      json_builder_add_int_value (b, r->n_tokens);
      json_builder_set_member_name (b, "decode_tok_s");
      json_builder_add_double_value (b, r->tokens_per_s);
      json_builder_set_member_name (b, "he_ms_per_module");
      json_builder_add_double_value (b, r->he_ms_per_module);
      ts_timing_series_build_medians (r->series, b);
      json_builder_set_member_name (b, "bytes_up");
      json_builder_add_int_value (b, (gint64) r->bytes_up);
      json_builder_set_member_name (b, "bytes_down");
      json_builder_add_int_value (b, (gint64) r->bytes_down);
      json_builder_set_member_name (b, "max_abs_delta_error");
      json_builder_add_double_value (b, r->max_abs_delta_error);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  return json_generator_to_data (gen, NULL);
}
