/* ts-bench-load.c: what the benchmark loads once: model, adapter (made, stacked) and prompt.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "tokenizer.h"
#include "ts-adapter-stack.h"
#include "ts-bench-runner-private.h"
#include "ts-bench-stack.h"
#include "ts-helora-adapter.h"

#define DEFAULT_PROMPT "Homomorphic encryption lets a server compute on data it cannot read."

static void
stack_clear (TsBenchStack *stack)
{
  if (stack->random_dir != NULL)
    {
      /* The random members are the last two paths. */
      for (guint i = stack->paths->len - TS_BENCH_STACK_N_MEMBERS; i < stack->paths->len; i++)
        g_unlink (g_ptr_array_index (stack->paths, i));
      g_rmdir (stack->random_dir);
      g_free (stack->random_dir);
    }
  g_clear_pointer (&stack->paths, g_ptr_array_unref);
  g_clear_pointer (&stack->weights, g_array_unref);
}

void
_ts_bench_loaded_clear (TsBenchLoaded *l)
{
  lm_lora_free (l->lora);
  lm_model_free (l->model);
  stack_clear (&l->stack);
  free (l->prompt);
}

gboolean
_ts_bench_engine_failed (GError **error, const char *what, LmStatus st, char *msg)
{
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", what,
               msg != NULL ? msg : lm_status_message (st));
  free (msg);
  return FALSE;
}

gboolean
_ts_bench_has_remote_config (const TsBenchOptions *options)
{
  for (guint i = 0; i < options->configs->len; i++)
    if (g_array_index (options->configs, TsBenchConfig, i).mode == TS_HELORA_MODE_REMOTE)
      return TRUE;
  return FALSE;
}

static void
stack_add (TsBenchStack *stack, const char *path, float weight)
{
  g_ptr_array_add (stack->paths, g_strdup (path));
  g_array_append_val (stack->weights, weight);
}

/* The random members (ts-bench-stack.h): next to the adapter for an
 * evaluator to serve, where new files are an error until it has loaded
 * them; otherwise in a temporary folder. */
static gboolean
add_random_members (const TsBenchOptions *options, const LmModel *model, TsBenchStack *stack,
                    GError **error)
{
  gboolean remote = _ts_bench_has_remote_config (options);
  g_autofree char *dir = remote ? g_path_get_dirname (options->adapter_path)
                                : g_dir_make_tmp ("tensafe-bench-stack-XXXXXX", error);
  char *paths[TS_BENCH_STACK_N_MEMBERS] = { NULL };
  guint n_written = 0;
  gboolean ok;

  if (dir == NULL)
    return FALSE;
  if (!remote)
    stack->random_dir = g_strdup (dir);
  ok = ts_bench_stack_write_members (model, options->random_stack_rank, dir, paths, &n_written,
                                     error);
  for (guint i = 0; i < TS_BENCH_STACK_N_MEMBERS; i++)
    {
      stack_add (stack, paths[i], 1.0f);
      g_free (paths[i]);
    }
  if (ok && remote && n_written > 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                   "Wrote the stack's random adapters %s and %s: let the evaluator serving "
                   "their folder load them (start it again, run it with --watch, or POST "
                   "/admin/adapters/ID/reload), then run this again",
                   (char *) g_ptr_array_index (stack->paths, stack->paths->len - 2),
                   (char *) g_ptr_array_index (stack->paths, stack->paths->len - 1));
      ok = FALSE;
    }
  return ok;
}

/* The adapter, written first when asked for, with any stack on it. */
static gboolean
load_adapter (const TsBenchOptions *options, TsBenchLoaded *l, GError **error)
{
  guint n_stacked = options->stack_paths != NULL ? options->stack_paths->len : 0;
  char *msg = NULL;
  LmStatus st;

  if (options->make_rank > 0
      && !ts_helora_adapter_write_synthetic (l->model, options->adapter_path, options->make_rank,
                                             1, NULL, error))
    return FALSE;
  if (n_stacked == 0 && options->random_stack_rank == 0)
    {
      if ((st = lm_lora_load (l->model, options->adapter_path, 1.0f, &l->lora, &msg)) != LM_OK)
        return _ts_bench_engine_failed (error, options->adapter_path, st, msg);
      return TRUE;
    }
  l->stack.paths = g_ptr_array_new_with_free_func (g_free);
  l->stack.weights = g_array_new (FALSE, FALSE, sizeof (float));
  stack_add (&l->stack, options->adapter_path, 1.0f);
  for (guint i = 0; i < n_stacked; i++)
    stack_add (&l->stack, g_ptr_array_index (options->stack_paths, i),
               g_array_index (options->stack_weights, float, i));
  if (options->random_stack_rank > 0 && !add_random_members (options, l->model, &l->stack, error))
    return FALSE;
  l->lora = ts_adapter_stack_load (l->model, (const char *const *) l->stack.paths->pdata,
                                   (const float *) l->stack.weights->data, l->stack.paths->len,
                                   error);
  return l->lora != NULL;
}

/* A fixed prompt of @n ids spread over the vocabulary. */
static void
make_prompt_ids (TsBenchLoaded *l, guint n)
{
  guint n_vocab = lm_model_info (l->model)->n_vocab;

  l->n_prompt = n;
  l->prompt = malloc (MAX (n, 1) * sizeof (int32_t));
  for (guint i = 0; i < n; i++)
    l->prompt[i] = (int32_t) (((guint64) i * 7919 + 13) % n_vocab);
}

static gboolean
copy_prompt_tokens (const GArray *tokens, TsBenchLoaded *l, GError **error)
{
  guint n_vocab = lm_model_info (l->model)->n_vocab;

  l->n_prompt = tokens->len;
  l->prompt = malloc (MAX (l->n_prompt, 1) * sizeof (int32_t));
  memcpy (l->prompt, tokens->data, l->n_prompt * sizeof (int32_t));
  for (size_t i = 0; i < l->n_prompt; i++)
    if (l->prompt[i] < 0 || (guint) l->prompt[i] >= n_vocab)
      return _ts_bench_engine_failed (error, "prompt", LM_ERR_INVALID_ARGUMENT, NULL);
  return TRUE;
}

static gboolean
tokenize_prompt (const char *prompt, TsBenchLoaded *l, GError **error)
{
  LmTokenizer *tok = NULL;
  char *msg = NULL;
  LmStatus st;

  if ((st = lm_tokenizer_new_from_gguf (lm_model_gguf (l->model), &tok, &msg)) != LM_OK)
    return _ts_bench_engine_failed (error, "tokenizer", st, msg);
  st = lm_tokenize (tok, prompt, strlen (prompt), false, &l->prompt, &l->n_prompt);
  lm_tokenizer_free (tok);
  return st == LM_OK || _ts_bench_engine_failed (error, "prompt", st, NULL);
}

static gboolean
load_prompt (const TsBenchOptions *options, TsBenchLoaded *l, GError **error)
{
  if (options->prompt_tokens != NULL)
    {
      if (!copy_prompt_tokens (options->prompt_tokens, l, error))
        return FALSE;
    }
  else if (options->n_prompt_ids > 0)
    make_prompt_ids (l, options->n_prompt_ids);
  else if (!tokenize_prompt (options->prompt != NULL ? options->prompt : DEFAULT_PROMPT, l, error))
    return FALSE;
  if (l->n_prompt == 0)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "The prompt is empty");
      return FALSE;
    }
  return TRUE;
}

gboolean
_ts_bench_load (const TsBenchOptions *options, TsBenchLoaded *l, GError **error)
{
  char *msg = NULL;
  LmStatus st;

  if ((st = lm_model_load (options->model_path, &l->model, &msg)) != LM_OK)
    return _ts_bench_engine_failed (error, options->model_path, st, msg);
  if (!load_adapter (options, l, error) || !load_prompt (options, l, error))
    return FALSE;
  for (size_t i = 0; i < lm_lora_n_modules (l->lora); i++)
    l->rank = MAX (l->rank, lm_lora_module (l->lora, i)->rank);
  return TRUE;
}
