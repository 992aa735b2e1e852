/* bench-turns.c: time to the first token of each turn of a conversation, with the
 * pane's kept session (TsGenerationCache) and without it, turn by turn.
 *
 *   build/tests/chat/bench-turns MODEL.gguf ADAPTER [local|ws://...] [--turns N]
 *                                [--tokens N] [--threads N]
 *
 * Ten banking questions (fewer with --turns), each answered greedily with at
 * most --tokens tokens (48); the answer with the cache goes back into the
 * conversation, and the same conversation is then answered once more
 * without a cache. A benchmark program, not a test.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdio.h>
#include <stdlib.h>

#include "ts-generation-cache.h"
#include "ts-generation.h"

static const char *const questions[] = {
  "What is a savings account?", "How is interest on it computed?",
  "What is compound interest? Give a formula.", "Is my money safe in a bank?",
  "What is a checking account?", "What fees do banks charge?",
  "How do I avoid overdraft fees?", "What is a certificate of deposit?",
  "What is an IRA?", "Explain a mortgage in two sentences.",
};

typedef struct {
  GString *text;
  double first_token_ms;
  guint prompt_tokens, reused_tokens;
  gboolean done;
  GError *error;
} Reply;

static void
reply_cb (TsGenerationJob *job, const TsGenerationEvent *event, gpointer data)
{
  Reply *r = data;

  if (event->kind == TS_GENERATION_EVENT_STARTED)
    {
      r->prompt_tokens = event->prompt_tokens;
      r->reused_tokens = event->reused_tokens;
    }
  else if (event->kind == TS_GENERATION_EVENT_TOKEN)
    {
      g_string_append (r->text, event->text);
      if (r->first_token_ms == 0)
        r->first_token_ms = event->first_token_ms;
    }
  else
    {
      r->done = TRUE;
      if (event->error != NULL)
        r->error = g_error_copy (event->error);
    }
}

typedef struct {
  const char *he_mode;
  int turns, tokens, threads;
} Options;

static gboolean
answer (TsGenerationModel *model, GPtrArray *turns, const Options *o, TsGenerationCache *cache,
        Reply *r)
{
  g_autoptr (TsGenerationRequest) request = ts_generation_request_new ();
  TsGenerationJob *job;

  for (guint t = 0; t < turns->len; t++)
    g_ptr_array_add (request->turns, g_strdup (g_ptr_array_index (turns, t)));
  request->system_prompt = g_strdup ("You are a helpful assistant.");
  request->max_tokens = (guint) o->tokens;
  request->n_threads = (guint) o->threads;
  request->he_mode = g_strdup (o->he_mode);
  request->he_preset = g_strdup ("fast");
  *r = (Reply) { g_string_new (NULL) };
  job = ts_generation_job_start_cached (model, request, cache, NULL, reply_cb, r);
  while (!r->done)
    g_main_context_iteration (NULL, TRUE);
  ts_generation_job_unref (job);
  if (r->error == NULL)
    return TRUE;
  fprintf (stderr, "bench-turns: %s\n", r->error->message);
  return FALSE;
}

int
main (int argc, char **argv)
{
  Options o = { NULL, G_N_ELEMENTS (questions), 48, 1 };
  GOptionEntry entries[] = {
    { "turns", 0, 0, G_OPTION_ARG_INT, &o.turns, "Turns (at most 10)", "N" },
    { "tokens", 0, 0, G_OPTION_ARG_INT, &o.tokens, "Tokens per answer at most", "N" },
    { "threads", 0, 0, G_OPTION_ARG_INT, &o.threads, "Engine threads", "N" },
    { NULL }
  };
  g_autoptr (GOptionContext) context = g_option_context_new ("MODEL ADAPTER [local|ws://...]");
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) turns = g_ptr_array_new_with_free_func (g_free);
  g_autoptr (TsGenerationCache) cache = ts_generation_cache_new ();
  TsGenerationModel *model;

  g_option_context_add_main_entries (context, entries, NULL);
  if (!g_option_context_parse (context, &argc, &argv, &error) || argc < 3 || o.turns < 1
      || o.turns > (int) G_N_ELEMENTS (questions) || o.tokens < 1 || o.threads < 1)
    {
      fprintf (stderr, "usage: bench-turns MODEL ADAPTER [local|ws://...] [--turns N] "
                       "[--tokens N] [--threads N]\n");
      return 2;
    }
  o.he_mode = argc > 3 ? argv[3] : NULL;
  model = ts_generation_model_load (argv[1], argv[2], &error);
  if (model == NULL)
    {
      fprintf (stderr, "bench-turns: %s\n", error->message);
      return 1;
    }
  printf ("turn  prompt  reused  first token ms: kept session  afresh  (%s)\n",
          o.he_mode != NULL ? o.he_mode : "plaintext LoRA");
  for (int i = 0; i < o.turns; i++)
    {
      Reply kept, fresh;

      g_ptr_array_add (turns, g_strdup (questions[i]));
      if (!answer (model, turns, &o, cache, &kept) || !answer (model, turns, &o, NULL, &fresh))
        return 1;
      printf ("%4d  %6u  %6u  %27.1f  %6.1f\n", i + 1, kept.prompt_tokens, kept.reused_tokens,
              kept.first_token_ms, fresh.first_token_ms);
      fflush (stdout);
      g_ptr_array_add (turns, g_string_free (kept.text, FALSE));
      g_string_free (fresh.text, TRUE);
    }
  ts_generation_model_unref (model);
  return 0;
}
