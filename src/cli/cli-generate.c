/* cli-generate.c: tensafe-cli generate: prompt -> tokens with a model (+ LoRA).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat.h"
#include "cli.h"
#include "gguf.h"
#include "lm.h"
#include "sampler.h"
#include "tokenizer.h"
#include "ts-adapter-stack.h"
#include "ckks-privacy.h"
#include "ts-helora-session.h"

#define CMD "tensafe-cli generate"

typedef struct {
  char *model, *lora, *prompt, *system, *tokens, *dump_logits, *timings, *he, *he_params,
       *he_encrypt, *he_ca, *he_backend, *engine_backend;
  char **add_lora;             /* stacked on --lora: PATH[@WEIGHT] */
  int threads, n_predict, top_k, he_lambda, gpu_layers;
  gboolean chat, no_thinking, print_prompt, greedy, print_ids, he_private;
  gboolean exact;              /* --exact-activations */
  double temp, top_p;
  gint64 seed;
  TsHeloraBackend backend;     /* parsed --he-backend */
} GenerateOptions;

typedef struct {
  LmModel *model;
  LmLora *lora;
  LmTokenizer *tok;
  LmSession *session;
  LmSampler *sampler;
  int32_t *prompt;
  size_t n_prompt;
  int32_t *generated;
  size_t n_generated;
  LmTimings prefill_timings;
  LmTimings *token_timings;   /* per generated token */
  TsHeloraSession *helora;    /* --he */
  GPtrArray *stack_paths;     /* --lora then every --add-lora: what a server stacks */
  float *stack_weights;
} Generation;

static int
fail (const char *what, const char *detail)
{
  fprintf (stderr, CMD ": %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  return 1;
}

static int
fail_status (const char *what, LmStatus st, char *msg)
{
  fprintf (stderr, CMD ": %s: %s\n", what, msg ? msg : lm_status_message (st));
  free (msg);
  return 1;
}

/* A forward pass failed: when the HE-LoRA hook did, its session says why
 * (an evaluator fleet that is down, say), which the engine's status cannot. */
static int
fail_forward (const char *what, LmStatus st, TsHeloraSession *helora)
{
  const GError *why = helora != NULL && st == LM_ERR_HOOK ? ts_helora_session_last_error (helora)
                                                          : NULL;

  return fail_status (what, st, why != NULL ? g_strdup (why->message) : NULL);
}

/* Any sampling option given (they default to -1). */
static bool
wants_sampling (const GenerateOptions *o)
{
  return o->temp >= 0.0 || o->top_k >= 0 || o->top_p >= 0.0 || o->seed >= 0;
}

static bool
parse_options (int *argc, char ***argv, GenerateOptions *o)
{
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &o->model, "GGUF model file", "FILE" },
    { "lora", 0, 0, G_OPTION_ARG_FILENAME, &o->lora, "LoRA adapter: GGUF file or PEFT directory", "PATH" },
    { "threads", 't', 0, G_OPTION_ARG_INT, &o->threads, "Worker threads (default: all cores)", "N" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &o->engine_backend, "Where the model runs: cpu (default), cuda, or auto (the GPU if one can be used)", "NAME" },
    { "gpu-layers", 0, 0, G_OPTION_ARG_INT, &o->gpu_layers, "Layers on the GPU, from the first (default: all)", "N" },
    /* FILENAME: the text byte for byte, not converted from the locale's
     * character set (ASCII, as the CLI does not call setlocale). */
    { "prompt", 'p', 0, G_OPTION_ARG_FILENAME, &o->prompt, "Prompt text (may start with '-')", "TEXT" },
    { "chat", 0, 0, G_OPTION_ARG_NONE, &o->chat, "Wrap the prompt as a user turn in the model's chat template", NULL },
    { "system", 0, 0, G_OPTION_ARG_FILENAME, &o->system, "--chat: this system turn instead of the template's default", "TEXT" },
    { "no-thinking", 0, 0, G_OPTION_ARG_NONE, &o->no_thinking, "--chat: turn thinking off (models that think, as Qwen3)", NULL },
    { "print-prompt", 0, 0, G_OPTION_ARG_NONE, &o->print_prompt, "Print the prompt's token ids and exit (the weights are not read)", NULL },
    { "tokens", 0, 0, G_OPTION_ARG_STRING, &o->tokens, "Prompt as token ids", "ID,ID,..." },
    { "n-predict", 'n', 0, G_OPTION_ARG_INT, &o->n_predict, "Tokens to generate (default 32)", "N" },
    { "greedy", 0, 0, G_OPTION_ARG_NONE, &o->greedy, "Argmax sampling (the default)", NULL },
    { "temp", 0, 0, G_OPTION_ARG_DOUBLE, &o->temp, "Sampling temperature", "T" },
    { "top-k", 0, 0, G_OPTION_ARG_INT, &o->top_k, "Top-k", "K" },
    { "top-p", 0, 0, G_OPTION_ARG_DOUBLE, &o->top_p, "Top-p", "P" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &o->seed, "Sampling seed", "S" },
    { "print-ids", 0, 0, G_OPTION_ARG_NONE, &o->print_ids, "Print generated ids instead of text", NULL },
    { "exact-activations", 0, 0, G_OPTION_ARG_NONE, &o->exact, "Multiply quantized weights with f32 activations (slower; HE-LoRA's tiny error cannot flip an 8-bit rounding)", NULL },
    { "dump-logits", 0, 0, G_OPTION_ARG_FILENAME, &o->dump_logits,
      "Write the prompt's logits (float32 LE, n_prompt x n_vocab)", "FILE" },
    { "timings", 0, 0, G_OPTION_ARG_FILENAME, &o->timings, "Write per-token stage timings (JSON)", "FILE" },
    { "he", 0, 0, G_OPTION_ARG_STRING, &o->he, "Evaluate the adapter under CKKS: plain, local or ws://HOST:PORT", "MODE" },
    { "he-params", 0, 0, G_OPTION_ARG_STRING, &o->he_params, "CKKS parameter preset (fast, default, wide)", "PRESET" },
    { "add-lora", 0, 0, G_OPTION_ARG_FILENAME_ARRAY, &o->add_lora, "Stack another adapter on --lora (weight default 1; repeatable; a remote evaluator stacks the same files)", "PATH[@WEIGHT]" },
    { "he-encrypt", 0, 0, G_OPTION_ARG_STRING, &o->he_encrypt, "Encrypt h with the secret key (sk, default) or a public key (pk)", "sk|pk" },
    { "he-ca", 0, 0, G_OPTION_ARG_FILENAME, &o->he_ca, "wss://: trust only the CA certificates in this PEM file (e.g. a self-signed server certificate)", "FILE" },
    { "he-private", 0, 0, G_OPTION_ARG_NONE, &o->he_private, "Adapter-private mode on the remote evaluator (sends the public key)", NULL },
    { "he-backend", 0, 0, G_OPTION_ARG_STRING, &o->he_backend, "--he local: compute on the CPU, the GPU (cuda) or the GPU when one is usable (auto, default)", "cpu|cuda|auto" },
    { "he-lambda", 0, 0, G_OPTION_ARG_INT, &o->he_lambda, "Flooding bits of --he-private (default 40)", "N" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new ("- generate tokens with a model");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, argc, argv, &error))
    {
      fprintf (stderr, CMD ": %s\n", error->message);
      return false;
    }
  if (o->model == NULL || (o->prompt == NULL) == (o->tokens == NULL) || *argc != 1 ||
      o->n_predict < 0 || o->threads < 0 || o->gpu_layers < 0 ||
      (o->engine_backend != NULL && !lm_backend_from_name (o->engine_backend, &(LmBackend) { 0 })) ||
      (o->greedy && wants_sampling (o)) || (o->system != NULL && !o->chat) ||
      (o->he_encrypt != NULL && g_strcmp0 (o->he_encrypt, "sk") != 0
       && g_strcmp0 (o->he_encrypt, "pk") != 0)
      || (o->he_backend != NULL && !ts_helora_backend_parse (o->he_backend, &o->backend, NULL)))
    {
      fprintf (stderr, "Usage: " CMD " --model FILE [--lora PATH [--add-lora PATH[@W]]...] [--threads N]\n"
               "    [--backend cpu|cuda|auto [--gpu-layers N]]\n"
               "    (--prompt TEXT [--chat [--system TEXT] [--no-thinking]] | --tokens ID,ID,...) [-n N]\n"
               "    [--greedy | --temp T --top-k K --top-p P --seed S]\n"
               "    [--print-ids] [--print-prompt] [--dump-logits FILE] [--timings FILE]\n"
               "    [--he plain|local|ws://HOST:PORT|wss://HOST:PORT [--he-params PRESET]\n"
               "     [--he-encrypt sk|pk] [--he-ca FILE] [--he-backend cpu|cuda|auto]]\n");
      return false;
    }
  return true;
}

/* "1,2,3" -> ids, each checked against the vocabulary. */
static int
parse_token_list (const char *text, int32_t n_vocab, Generation *g)
{
  g_auto (GStrv) parts = g_strsplit (text, ",", -1);
  g->n_prompt = g_strv_length (parts);
  g->prompt = calloc (g->n_prompt ? g->n_prompt : 1, sizeof (int32_t));
  for (size_t i = 0; i < g->n_prompt; i++)
    {
      char *end;
      errno = 0;
      long v = strtol (parts[i], &end, 10);
      if (errno != 0 || end == parts[i] || *end != '\0' || v < 0 || v >= n_vocab)
        return fail ("bad token id", parts[i]);
      g->prompt[i] = (int32_t) v;
    }
  return 0;
}

/* The prompt's ids: --tokens checked against @n_vocab, or the --prompt text
 * (as a chat turn with --chat). */
static int
tokenize_prompt (const GenerateOptions *o, int32_t n_vocab, Generation *g)
{
  if (o->tokens != NULL)
    return parse_token_list (o->tokens, n_vocab, g);
  LmStatus st;
  if (o->chat)
    {
      /* A system turn first replaces the template's default one. */
      LmChatMessage msgs[2] = { { LM_ROLE_SYSTEM, o->system }, { LM_ROLE_USER, o->prompt } };
      size_t first = o->system != NULL ? 0 : 1;
      unsigned flags = LM_CHAT_GENERATION_PROMPT | (o->no_thinking ? LM_CHAT_NO_THINKING : 0);
      st = lm_chat_tokenize (g->tok, msgs + first, 2 - first, flags, &g->prompt, &g->n_prompt);
    }
  else
    st = lm_tokenize (g->tok, o->prompt, strlen (o->prompt), true, &g->prompt, &g->n_prompt);
  return st == LM_OK ? 0 : fail_status ("cannot tokenize the prompt", st, NULL);
}

/* --print-prompt: only the tokenizer of the file is loaded. */
static int
print_prompt (const GenerateOptions *o)
{
  GgufFile *file = NULL;
  Generation g = { 0 };
  char *msg = NULL;
  LmStatus st;
  int rc;
  if ((st = lm_gguf_open (o->model, &file, &msg)) != LM_OK)
    return fail_status (o->model, st, msg);
  if ((st = lm_tokenizer_new_from_gguf (file, &g.tok, &msg)) != LM_OK)
    rc = fail_status ("tokenizer", st, msg);
  else if ((rc = tokenize_prompt (o, lm_tokenizer_n_vocab (g.tok), &g)) == 0)
    {
      for (size_t i = 0; i < g.n_prompt; i++)
        printf (i ? " %d" : "%d", g.prompt[i]);
      printf ("\n");
    }
  lm_tokenizer_free (g.tok);
  free (g.prompt);
  lm_gguf_close (file);
  return rc;
}

/* Loads --add-lora PATH[@WEIGHT] into @lora and @weight; keeps the path. */
static int
load_added (Generation *g, const char *arg, LmLora **lora, float *weight)
{
  const char *at = strrchr (arg, '@');
  g_autofree char *path = at != NULL ? g_strndup (arg, at - arg) : g_strdup (arg);
  char *end = NULL, *msg = NULL;
  LmStatus st;

  *weight = at != NULL ? (float) g_ascii_strtod (at + 1, &end) : 1.0f;
  if (at != NULL && (end == at + 1 || *end != '\0'))
    return fail ("--add-lora", "expects PATH or PATH@WEIGHT");
  if ((st = lm_lora_load (g->model, path, 1.0f, lora, &msg)) != LM_OK)
    return fail_status (path, st, msg);
  g_ptr_array_add (g->stack_paths, g_steal_pointer (&path));
  return 0;
}

/* Replaces g->lora by --lora (weight 1) stacked with every --add-lora. */
static int
stack_adapters (const GenerateOptions *o, Generation *g)
{
  guint n = g_strv_length (o->add_lora) + 1, loaded = 1;
  g_autofree LmLora **loras = g_new0 (LmLora *, n);
  g_autofree float *weights = g_new (float, n);
  g_autoptr (GError) error = NULL;
  LmLora *stacked = NULL;

  if (g->lora == NULL)
    return fail ("--add-lora", "needs --lora");
  loras[0] = g->lora;
  weights[0] = 1.0f;
  g->stack_paths = g_ptr_array_new_with_free_func (g_free);
  g_ptr_array_add (g->stack_paths, g_strdup (o->lora));
  while (loaded < n && load_added (g, o->add_lora[loaded - 1], &loras[loaded], &weights[loaded]) == 0)
    loaded++;
  if (loaded == n && (stacked = ts_adapter_stack ((const LmLora *const *) loras, weights, n, &error)) == NULL)
    fail ("--add-lora", error->message);
  for (guint i = 1; i < loaded; i++)
    lm_lora_free (loras[i]);
  if (stacked == NULL)
    return 1;
  lm_lora_free (g->lora);
  g->lora = stacked;
  g->stack_weights = g_steal_pointer (&weights);
  return 0;
}

static int
load (const GenerateOptions *o, Generation *g)
{
  char *msg = NULL;
  LmStatus st = lm_model_load (o->model, &g->model, &msg);
  if (st != LM_OK)
    return fail_status (o->model, st, msg);
  if ((st = lm_tokenizer_new_from_gguf (lm_model_gguf (g->model), &g->tok, &msg)) != LM_OK)
    return fail_status ("tokenizer", st, msg);
  if (o->lora != NULL && (st = lm_lora_load (g->model, o->lora, 1.0f, &g->lora, &msg)) != LM_OK)
    return fail_status (o->lora, st, msg);
  if (o->add_lora != NULL && stack_adapters (o, g) != 0)
    return 1;
  if (tokenize_prompt (o, (int32_t) lm_model_info (g->model)->n_vocab, g) != 0)
    return 1;
  if (g->n_prompt == 0)
    return fail ("the prompt is empty", NULL);
  LmSessionParams params = { .n_ctx = (uint32_t) (g->n_prompt + (size_t) o->n_predict + 1),
                             .n_threads = (uint32_t) o->threads,
                             .gpu_layers = (uint32_t) o->gpu_layers };
  params.exact_activations = o->exact;
  if (o->engine_backend != NULL)
    lm_backend_from_name (o->engine_backend, &params.backend);
  if ((st = lm_session_new_full (g->model, &params, &g->session, &msg)) != LM_OK ||
      (st = lm_session_set_lora (g->session, g->lora)) != LM_OK)
    return fail_status ("cannot create a session", st, msg);
  if (lm_session_backend_note (g->session) != NULL)
    fprintf (stderr, CMD ": %s\n", lm_session_backend_note (g->session));
  g_autoptr (GError) he_error = NULL;
  TsHeloraOptions he_options = { .params_preset = o->he_params,
                                 .public_key = g_strcmp0 (o->he_encrypt, "pk") == 0,
                                 .remote_ca_file = o->he_ca,
                                 .private_mode = o->he_private,
                                 .backend = o->backend,
                                 .private_lambda_s = o->he_lambda > 0 ? (guint) o->he_lambda : CKKS_PRIVACY_DEFAULT_LAMBDA };
  if (g->stack_weights != NULL)
    {
      he_options.stacked_paths = (const char *const *) g->stack_paths->pdata;
      he_options.stacked_weights = g->stack_weights;
      he_options.n_stacked = g->stack_paths->len;
    }
  if (o->he != NULL &&
      (g->helora = ts_helora_attach_with (g->session, g->lora, o->lora, o->he, &he_options,
                                          &he_error)) == NULL)
    return fail ("--he", he_error->message);
  /* Greedy unless a sampling option is given; unset ones keep the defaults,
   * and without --seed the run is seeded from the clock. */
  LmSamplerParams sp = lm_sampler_params_greedy ();
  if (wants_sampling (o))
    {
      sp = lm_sampler_params_default (o->seed >= 0 ? (uint64_t) o->seed
                                                   : (uint64_t) g_get_real_time ());
      if (o->temp >= 0.0)
        sp.temperature = (float) o->temp;
      if (o->top_k >= 0)
        sp.top_k = o->top_k;
      if (o->top_p >= 0.0)
        sp.top_p = (float) o->top_p;
    }
  g->sampler = lm_sampler_new (&sp, (int32_t) lm_model_info (g->model)->n_vocab);
  g->generated = calloc ((size_t) o->n_predict + 1, sizeof (int32_t));
  g->token_timings = calloc ((size_t) o->n_predict + 1, sizeof (LmTimings));
  if (g->sampler == NULL || g->generated == NULL || g->token_timings == NULL)
    return fail ("out of memory", NULL);
  return 0;
}

static int
write_file (const char *path, const void *data, size_t len)
{
  FILE *f = fopen (path, "wb");
  if (f == NULL || fwrite (data, 1, len, f) != len)
    {
      if (f != NULL)
        fclose (f);
      return fail ("cannot write", path);
    }
  return fclose (f) == 0 ? 0 : fail ("cannot write", path);
}

static int
prefill (const GenerateOptions *o, Generation *g)
{
  size_t V = lm_model_info (g->model)->n_vocab;
  float *all = NULL;
  if (o->dump_logits != NULL && (all = malloc (g->n_prompt * V * sizeof (float))) == NULL)
    return fail ("out of memory", NULL);
  LmStatus st = lm_session_prefill (g->session, g->prompt, g->n_prompt, all);
  int rc = st == LM_OK ? 0 : fail_forward ("prefill failed", st, g->helora);
  if (rc == 0 && all != NULL)
    rc = write_file (o->dump_logits, all, g->n_prompt * V * sizeof (float));
  free (all);
  g->prefill_timings = *lm_session_timings (g->session);
  for (size_t i = 0; i < g->n_prompt; i++)
    lm_sampler_accept (g->sampler, g->prompt[i]);
  return rc;
}

/* Writes the text of @id; chat mode shows the answer, not the thinking. */
static void
emit_text (const GenerateOptions *o, Generation *g, LmChatStream *stream, int32_t id, char *buf,
           size_t cap)
{
  size_t len = 0;
  LmChatPart part = LM_CHAT_ANSWER;
  if (o->chat)
    lm_chat_stream_push (stream, id, buf, cap, &len, &part);
  else
    len = lm_detokenizer_push (&stream->detok, g->tok, id, false, buf, cap);
  if (part == LM_CHAT_ANSWER)
    fwrite (buf, 1, len, stdout);
  fflush (stdout);
}

static int
generate (const GenerateOptions *o, Generation *g)
{
  LmChatStream stream;
  size_t cap = lm_chat_stream_buffer_size (g->tok);
  g_autofree char *buf = g_malloc (cap);
  lm_chat_stream_init (&stream, g->tok, false);
  for (int k = 0; k < o->n_predict; k++)
    {
      double t0 = lm_time_ms ();
      int32_t id = lm_sampler_sample (g->sampler, lm_session_logits (g->session));
      lm_sampler_accept (g->sampler, id);
      LmTimings *t = &g->token_timings[k];
      lm_timings_add (t, LM_STAGE_SAMPLE, lm_time_ms () - t0);
      g->generated[g->n_generated++] = id;
      if (!o->print_ids)
        emit_text (o, g, &stream, id, buf, cap);
      if (lm_tokenizer_is_end (g->tok, id) || k + 1 == o->n_predict)
        break;
      LmStatus st = lm_session_decode (g->session, id);
      if (st != LM_OK)
        return fail_forward ("decode failed", st, g->helora);
      const LmTimings *d = lm_session_timings (g->session);
      for (int s = 0; s < LM_N_STAGES; s++)
        t->ms[s] += d->ms[s];
      t->n_tokens = d->n_tokens;
    }
  /* An unfinished character at the end comes out as U+FFFD. */
  LmChatPart part = LM_CHAT_ANSWER;
  size_t len = o->chat ? lm_chat_stream_finish (&stream, buf, cap, &part)
                       : lm_detokenizer_flush (&stream.detok, buf, cap);
  if (!o->print_ids)
    {
      if (part == LM_CHAT_ANSWER)
        fwrite (buf, 1, len, stdout);
      printf ("\n");
    }
  return 0;
}

static void
write_stages (FILE *f, const LmTimings *t)
{
  fprintf (f, "{");
  for (int s = 0; s < LM_N_STAGES; s++)
    fprintf (f, "%s\"%s\": %.4f", s ? ", " : "", lm_stage_name ((LmStage) s), t->ms[s]);
  fprintf (f, "}");
}

/* {"prompt_tokens": N, "prefill": {stage: ms}, "tokens": [{"id": ID, stage: ms...}]} */
static int
write_timings (const char *path, const Generation *g)
{
  FILE *f = fopen (path, "w");
  if (f == NULL)
    return fail ("cannot write", path);
  fprintf (f, "{\"prompt_tokens\": %zu, \"prefill\": ", g->n_prompt);
  write_stages (f, &g->prefill_timings);
  fprintf (f, ",\n \"tokens\": [");
  for (size_t k = 0; k < g->n_generated; k++)
    {
      fprintf (f, "%s\n  {\"id\": %d, \"ms\": ", k ? "," : "", g->generated[k]);
      write_stages (f, &g->token_timings[k]);
      fprintf (f, "}");
    }
  fprintf (f, "\n]}\n");
  return fclose (f) == 0 ? 0 : fail ("cannot write", path);
}

static void
generation_clear (Generation *g)
{
  lm_sampler_free (g->sampler);
  lm_session_free (g->session);
  ts_helora_session_free (g->helora);
  lm_lora_free (g->lora);
  g_clear_pointer (&g->stack_paths, g_ptr_array_unref);
  g_free (g->stack_weights);
  lm_tokenizer_free (g->tok);
  lm_model_free (g->model);
  free (g->prompt);
  free (g->generated);
  free (g->token_timings);
}

static void
free_options (GenerateOptions *o)
{
  g_free (o->model);
  g_free (o->lora);
  g_free (o->prompt);
  g_free (o->system);
  g_free (o->tokens);
  g_free (o->dump_logits);
  g_free (o->timings);
  g_free (o->he);
  g_free (o->he_params);
  g_free (o->he_encrypt);
  g_free (o->he_backend);
  g_free (o->he_ca);
  g_free (o->engine_backend);
  g_strfreev (o->add_lora);
}

int
cli_generate (int argc, char **argv)
{
  GenerateOptions o = { .n_predict = 32, .temp = -1.0, .top_k = -1, .top_p = -1.0, .seed = -1 };
  if (!parse_options (&argc, &argv, &o))
    return 2;
  if (o.print_prompt)
    {
      int rc = print_prompt (&o);
      free_options (&o);
      return rc;
    }
  Generation g = { 0 };
  int rc = load (&o, &g);
  if (rc == 0)
    rc = prefill (&o, &g);
  if (rc == 0)
    rc = generate (&o, &g);
  if (rc == 0 && o.print_ids)
    {
      for (size_t k = 0; k < g.n_generated; k++)
        printf (k ? " %d" : "%d", g.generated[k]);
      printf ("\n");
    }
  if (rc == 0 && o.timings != NULL)
    rc = write_timings (o.timings, &g);
  if (g.helora != NULL)
    {
      g_autofree char *summary = ts_helora_session_summary (g.helora);
      fprintf (stderr, "%s\n", summary);
    }
  generation_clear (&g);
  free_options (&o);
  return rc;
}
