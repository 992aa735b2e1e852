/* ts-bench-runner.c: HE-LoRA benchmark: the same greedy generation per configuration, timed per stage.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "sampler.h"
#include "ts-bench-adapter.h"
#include "ts-bench-pads.h"
#include "ts-bench-runner-private.h"

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
  g_return_val_if_fail (model_path != NULL, NULL);

  TsBenchOptions *options = g_new0 (TsBenchOptions, 1);

  options->model_path = g_strdup (model_path);
  options->adapter_path = g_strdup (adapter_path);
  options->n_tokens = n_tokens;
  options->engine_backend = LM_BACKEND_CPU;
  options->he_backend = TS_HELORA_BACKEND_CPU;
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
  g_clear_pointer (&options->stack_paths, g_ptr_array_unref);
  g_clear_pointer (&options->stack_weights, g_array_unref);
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
  g_return_if_fail (options != NULL);

  TsBenchConfig config = {
    .mode = mode,
    .preset = mode == TS_HELORA_MODE_PLAIN ? NULL : g_strdup (preset ? preset : "default"),
    .remote_url = g_strdup (remote_url),
  };

  g_array_append_val (options->configs, config);
}

void
ts_bench_options_add_private (TsBenchOptions *options, const char *preset,
                              const char *remote_url, guint lambda_s)
{
  TsBenchConfig *config;

  g_return_if_fail (options != NULL);

  ts_bench_options_add (options, TS_HELORA_MODE_REMOTE, preset, remote_url);
  config = &g_array_index (options->configs, TsBenchConfig, options->configs->len - 1);
  config->private_mode = TRUE;
  config->private_lambda_s = lambda_s;
}

void
ts_bench_options_add_private_warm (TsBenchOptions *options, const char *preset,
                                   const char *remote_url, guint lambda_s)
{
  g_return_if_fail (options != NULL);

  ts_bench_options_add_private (options, preset, remote_url, lambda_s);
  g_array_index (options->configs, TsBenchConfig, options->configs->len - 1).private_warm = TRUE;
}

void
ts_bench_options_add_stacked (TsBenchOptions *options, const char *path, float weight)
{
  g_return_if_fail (options != NULL);

  if (options->stack_paths == NULL)
    {
      options->stack_paths = g_ptr_array_new_with_free_func (g_free);
      options->stack_weights = g_array_new (FALSE, FALSE, sizeof (float));
    }
  g_ptr_array_add (options->stack_paths, g_strdup (path));
  g_array_append_val (options->stack_weights, weight);
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
      if (config->private_warm)
        return g_strdup_printf ("HE remote private, warm pads · %s", config->preset);
      return g_strdup_printf (config->private_mode ? "HE remote private · %s" : "HE remote · %s",
                              config->preset);
    case TS_HELORA_MODE_PLAIN:
    default:
      return g_strdup ("plaintext");
    }
}

/* ---- Pads of the adapter-private mode ---------------------------------- */

#define DEFAULT_PAD_WAIT_MS (120 * 1000)

/* The evaluator's pad figures around one private run. */
typedef struct {
  gboolean known;            /* /metrics read so far */
  TsBenchPads start;         /* before the hello */
  TsBenchPads timed;         /* when the timed decode starts */
} PadWatch;

static guint
pad_wait_ms (const TsBenchOptions *options)
{
  return options->pad_wait_ms ? options->pad_wait_ms : DEFAULT_PAD_WAIT_MS;
}

/* Before the connection. Back to back, a server whose /metrics cannot be
 * read only leaves the pad figures out. Warm, it must be read, and the
 * connections of earlier runs must have gone: they would share the memory
 * cap (and the counts). */
static gboolean
pads_begin (const TsBenchOptions *options, const TsBenchConfig *config, PadWatch *w,
            GCancellable *cancellable, GError **error)
{
  if (!config->private_mode)
    return TRUE;
  if (config->private_warm)
    return w->known = ts_bench_pads_wait_alone (config->remote_url, pad_wait_ms (options),
                                                cancellable, &w->start, error);
  w->known = ts_bench_pads_read (config->remote_url, &w->start, NULL);
  return TRUE;
}

/* After the prompt: warm, waits until the pools hold every timed token. */
static gboolean
pads_before_decode (const TsBenchOptions *options, const TsBenchConfig *config, PadWatch *w,
                    TsBenchResult *result, GCancellable *cancellable, GError **error)
{
  double t0 = ts_now_ms ();

  if (!w->known)
    return TRUE;
  if (!config->private_warm)
    {
      w->known = ts_bench_pads_read (config->remote_url, &w->timed, NULL);
      return TRUE;
    }
  if (!ts_bench_pads_wait_full (config->remote_url, options->n_tokens, pad_wait_ms (options),
                                cancellable, &w->timed, error))
    return FALSE;
  result->pad_wait_ms = ts_now_ms () - t0;
  return TRUE;
}

/* After the decode: the pads it spent, and what the refill thread paid per
 * pad since the hello. */
static void
pads_end (const PadWatch *w, const char *url, TsBenchResult *result)
{
  guint64 answers = (guint64) result->n_tokens * result->n_modules;
  TsBenchPads end;

  if (!w->known || !ts_bench_pads_read (url, &end, NULL))
    return;
  result->pads_known = TRUE;
  result->pads_from_pool = end.from_pool - w->timed.from_pool;
  result->pads_inline = end.made_inline - w->timed.made_inline;
  result->pads_ready = w->timed.pooled;
  result->pads_refilled = end.made_refill - w->timed.made_refill;
  if (answers > 0)
    result->pads_per_module = (double) (result->pads_from_pool + result->pads_inline) / answers;
  result->pad_ms = ts_bench_pads_refill_ms_per_pad (&w->start, &end);
}

/* ---- One configuration ------------------------------------------------ */

/* The adapter one pass runs with: the original or a resized copy. */
typedef struct {
  const LmLora *lora;
  const char *path;
  guint rank;
  const TsBenchStack *stack; /* NULL: one adapter (or a resized copy) */
} Adapter;

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
  gboolean remote_stack = config->mode == TS_HELORA_MODE_REMOTE && adapter->stack != NULL;
  TsHeloraOptions he = {
    .mode = config->mode,
    .backend = options->he_backend,
    .remote_url = config->remote_url,
    .params_preset = config->preset,
    .public_key = options->public_key,
    .n_threads = options->he_threads > 0 ? options->he_threads : options->n_threads,
    .adapter_path = adapter->path,
    .stacked_paths = remote_stack ? (const char *const *) adapter->stack->paths->pdata : NULL,
    .stacked_weights = remote_stack ? (const float *) adapter->stack->weights->data : NULL,
    .n_stacked = remote_stack ? adapter->stack->paths->len : 0,
    .track_error = TRUE,
    .thread_clock = options->thread_clock,
    .real_packing = options->remote_real_packing,
    .private_mode = config->private_mode,
    .private_lambda_s = config->private_lambda_s,
  };
  g_autoptr (TsHeloraSession) helora = ts_helora_session_new (adapter->lora, &he, error);

  if (helora == NULL || !ts_helora_session_attach (helora, session, error))
    return NULL;
  return g_steal_pointer (&helora);
}

static void
token_timings_from_engine (const LmTimings *lm, double sample_ms, TsTokenTimings *out)
{
  /* The engine's stages are the same list, in the same order. */
  G_STATIC_ASSERT ((int) LM_N_STAGES == (int) TS_N_STAGES);
  G_STATIC_ASSERT ((int) LM_STAGE_SAMPLE == (int) TS_STAGE_SAMPLE);
  memset (out, 0, sizeof *out);
  for (int s = 0; s < LM_N_STAGES && s < TS_N_STAGES; s++)
    out->ms[s] = lm->ms[s];
  out->ms[TS_STAGE_SAMPLE] += sample_ms;
}

static gboolean
decode_steps (const Reporter *r, const TsBenchLoaded *l, LmSession *session, TsHeloraSession *helora,
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
          ok = _ts_bench_engine_failed (error, "decode", st, why ? strdup (why->message) : NULL);
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

static void
take_stats (TsHeloraSession *helora, TsBenchResult *result)
{
  TsHeloraStats stats;

  ts_helora_session_get_stats (helora, &stats);
  result->n_inputs = ts_helora_session_n_inputs (helora);
  result->bytes_up = stats.bytes_up;
  result->bytes_down = stats.bytes_down;
  result->encryptions = stats.encryptions;
  result->max_abs_delta_error = stats.max_abs_delta_error;
  if (stats.module_evaluations > 0)
    result->he_ms_per_module = stats.he_ms / (double) stats.module_evaluations;
}

static TsBenchResult *
run_config (const Reporter *r, const TsBenchConfig *config, const TsBenchLoaded *l,
            const Adapter *adapter, GCancellable *cancellable, GError **error)
{
  const TsBenchOptions *options = r->options;
  g_autoptr (TsBenchResult) result = g_new0 (TsBenchResult, 1);
  g_autoptr (TsHeloraSession) helora = NULL;
  LmSessionParams params = { .n_ctx = (guint32) (l->n_prompt + options->n_tokens + 1),
                             .n_threads = options->n_threads,
                             .backend = options->engine_backend,
                             .exact_activations = options->exact_activations };
  LmSession *session = NULL;
  PadWatch pads = { 0 };
  LmStatus st;
  gboolean ok = FALSE;

  result->label = g_strdup (r->label);
  result->mode = config->mode;
  result->private_mode = config->private_mode;
  result->private_warm = config->private_warm;
  result->stacked = adapter->stack != NULL;
  result->preset = g_strdup (config->preset);
  result->rank = adapter->rank;
  result->series = ts_timing_series_new ();
  result->tokens = g_array_new (FALSE, FALSE, sizeof (gint32));
  report (r, 0.0);
  if (!pads_begin (options, config, &pads, cancellable, error))
    ;
  else if ((st = lm_session_new (l->model, &params, &session)) != LM_OK
           || (st = lm_session_set_lora (session, adapter->lora)) != LM_OK)
    _ts_bench_engine_failed (error, "session", st, NULL);
  else if (config->mode != TS_HELORA_MODE_PLAIN
           && (helora = attach_helora (options, config, adapter, session, error)) == NULL)
    ;
  else if ((st = lm_session_prefill (session, l->prompt, l->n_prompt, NULL)) != LM_OK)
    _ts_bench_engine_failed (error, "prefill", st, NULL);
  else if (!pads_before_decode (options, config, &pads, result, cancellable, error))
    ;
  else
    {
      report (r, 0.2);
      /* Per-token figures describe decoding, not the prompt. */
      if (helora != NULL)
        ts_helora_session_reset_stats (helora);
      ok = decode_steps (r, l, session, helora, result, cancellable, error);
    }
  lm_session_free (session);
  if (!ok)
    return NULL;
  result->n_modules = lm_lora_n_modules (adapter->lora);
  if (helora != NULL)
    {
      take_stats (helora, result);
      g_free (result->preset);   /* what "auto" chose */
      result->preset = g_strdup (ts_helora_session_preset (helora));
    }
  result->n_tokens = ts_timing_series_len (result->series);
  result->tokens_per_s = result->decode_ms > 0 ? 1000.0 * result->n_tokens / result->decode_ms : 0;
  pads_end (&pads, config->remote_url, result);
  return g_steal_pointer (&result);
}

static guint
n_rounds (const TsBenchOptions *options)
{
  return MAX (options->n_rounds, 1);
}

/* Runs every configuration with @adapter, round after round, appending to @results. */
static gboolean
run_configs (const TsBenchOptions *options, const TsBenchLoaded *l, const Adapter *adapter,
             Reporter *r, GPtrArray *results, GCancellable *cancellable, GError **error)
{
  for (guint round = 0; round < n_rounds (options); round++)
    for (guint i = 0; i < options->configs->len; i++, r->index++)
      {
        const TsBenchConfig *config = &g_array_index (options->configs, TsBenchConfig, i);
        g_autofree char *name = config_label (config);
        /* Stacked rows must not read like the single adapter's. */
        g_autofree char *label = adapter->stack != NULL ? g_strconcat (name, " · stack", NULL)
                                                        : g_strdup (name);
        TsBenchResult *result;

        r->label = label;
        result = run_config (r, config, l, adapter, cancellable, error);
        if (result == NULL)
          return FALSE;
        result->round = round;
        g_ptr_array_add (results, result);
      }
  return TRUE;
}

/* Resizes the adapter to @rank into @dir and runs every configuration. */
static gboolean
run_rank (const TsBenchOptions *options, const TsBenchLoaded *l, guint rank, const char *dir,
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
      Adapter same = { l->lora, options->adapter_path, l->rank, l->stack.paths ? &l->stack : NULL };
      return run_configs (options, l, &same, r, results, cancellable, error);
    }
  if (_ts_bench_has_remote_config (options))
    {
      /* The server holds only the adapters installed on it. */
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                   "Rank %u differs from the adapter's (%u): resized adapters run locally only",
                   rank, l->rank);
      return FALSE;
    }
  if (!ts_bench_write_adapter_rank (l->lora, rank, path, error))
    return FALSE;
  if ((st = lm_lora_load (l->model, path, 1.0f, &lora, &msg)) != LM_OK)
    ok = _ts_bench_engine_failed (error, path, st, msg);
  else
    {
      Adapter resized = { lora, path, rank, NULL };
      ok = run_configs (options, l, &resized, r, results, cancellable, error);
    }
  lm_lora_free (lora);
  g_unlink (path);
  return ok;
}

static gboolean
run_all (const TsBenchOptions *options, const TsBenchLoaded *l, TsBenchProgressFunc progress,
         gpointer user_data, GPtrArray *results, GCancellable *cancellable, GError **error)
{
  guint n_ranks = options->ranks != NULL ? options->ranks->len : 0;
  Reporter r = { options, progress, user_data, 0,
                 MAX (n_ranks, 1) * n_rounds (options) * options->configs->len, NULL };
  g_autofree char *dir = NULL;
  gboolean ok = TRUE;

  if (n_ranks == 0)
    {
      Adapter given = { l->lora, options->adapter_path, l->rank, l->stack.paths ? &l->stack : NULL };
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

gboolean
_ts_bench_run_into (const TsBenchOptions *options, TsBenchProgressFunc progress,
                    gpointer user_data, GPtrArray *results, GCancellable *cancellable,
                    GError **error)
{
  TsBenchLoaded l = { 0 };
  gboolean ok;

  g_return_val_if_fail (options != NULL, FALSE);
  if (options->n_tokens == 0 || options->configs->len == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "Nothing to run: choose at least one configuration and one token");
      return FALSE;
    }
  ok = _ts_bench_load (options, &l, error) && run_all (options, &l, progress, user_data, results,
                                             cancellable, error);
  _ts_bench_loaded_clear (&l);
  if (ok && progress != NULL)
    progress (1.0, NULL, user_data);
  return ok;
}

GPtrArray *
ts_bench_run (const TsBenchOptions *options, TsBenchProgressFunc progress, gpointer user_data,
              GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (options != NULL, NULL);

  g_autoptr (GPtrArray) results = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_bench_result_free);

  if (!_ts_bench_run_into (options, progress, user_data, results, cancellable, error))
    return NULL;
  return g_steal_pointer (&results);
}
