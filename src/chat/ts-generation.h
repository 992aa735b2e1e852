/* ts-generation.h: a chat reply generated on a worker thread, streamed to a main context.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsGenerationModel holds what every reply on one model shares, read-only:
 * the weights, the tokenizer and the LoRA adapter. It is reference counted
 * and may be used from any thread.
 *
 * A TsGenerationJob renders a conversation to ChatML, creates its own
 * LmSession (and, for HE-LoRA, its own TsHeloraSession with a fresh key or
 * the key vault's) on
 * a worker thread, and generates the reply token by token. Each token, with
 * its text and per-stage timings, reaches the GMainContext that was current
 * when the job started through ts_main_context_post(); the payload
 * holds a reference on the job, so the job outlives every pending event.
 * Events arrive in order; the last one is DONE, CANCELLED or ERROR. A
 * GCancellable stops the job before the next token.
 *
 * A job is created and released on its main context; its callback runs
 * there and never after ts_generation_job_detach().
 */
#pragma once

#include <gio/gio.h>

#include "lm.h"
#include "ts-helora-session.h"
#include "ts-timings.h"

G_BEGIN_DECLS

#define TS_GENERATION_ERROR (ts_generation_error_quark ())
GQuark ts_generation_error_quark (void);

typedef enum {
  TS_GENERATION_ERROR_MODEL,     /* the model or adapter could not be loaded */
  TS_GENERATION_ERROR_PROMPT,    /* empty, or longer than the context */
  TS_GENERATION_ERROR_ENGINE,    /* the engine failed while generating */
  TS_GENERATION_ERROR_PRIVACY_BUDGET,  /* the evaluator refused: privacy budget spent */
  TS_GENERATION_ERROR_GPU,       /* the GPU failed mid-reply; the next reply uses the CPU */
} TsGenerationError;

typedef struct _TsGenerationModel TsGenerationModel;

/* Loads @model_path (GGUF) and, when @adapter_path is non-NULL, the adapter
 * (GGUF file or PEFT folder). Slow for big models: call it on a worker. */
TsGenerationModel *ts_generation_model_load (const char *model_path, const char *adapter_path,
                                             GError **error);
/* The same with several adapters active at once (ts-adapter-stack.h): each
 * of the @n @adapter_paths is loaded and they are stacked with @weights
 * (NULL: all 1). @n == 0 loads no adapter; @n == 1 with weight 1 is
 * ts_generation_model_load(). Arrays are copied. */
TsGenerationModel *ts_generation_model_load_stack (const char *model_path,
                                                   const char *const *adapter_paths,
                                                   const float *weights, guint n,
                                                   GError **error);
TsGenerationModel *ts_generation_model_ref (TsGenerationModel *self);
void ts_generation_model_unref (TsGenerationModel *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsGenerationModel, ts_generation_model_unref)

const char *ts_generation_model_get_model_path (TsGenerationModel *self);
/* NULL when the model has no adapter; the first one of a stack. */
const char *ts_generation_model_get_adapter_path (TsGenerationModel *self);
/* How many adapters are stacked (0: none), and each one's path and weight. */
guint ts_generation_model_get_n_adapters (TsGenerationModel *self);
const char *ts_generation_model_get_nth_adapter (TsGenerationModel *self, guint i, float *weight);
const LmModelInfo *ts_generation_model_get_info (TsGenerationModel *self);
/* Whether the model thinks before it answers (Qwen3, 3.5: lm_chat_can_think()). */
gboolean ts_generation_model_can_think (TsGenerationModel *self);
/* The engine's model, for other readers of the same weights (the router). */
const LmModel *ts_generation_model_get_lm (TsGenerationModel *self);
/* The adapter at @adapter_path on this model (NULL, or the path of a single
 * adapter loaded at weight 1: the load's own, which may be a stack or NULL),
 * loaded on first use, then
 * cached for the model's lifetime, so switching adapters between replies
 * never reloads the model. Borrowed. Any thread; the first call for a path
 * reads it from disk (call it on a worker). */
const LmLora *ts_generation_model_get_lora (TsGenerationModel *self, const char *adapter_path,
                                            GError **error);

/* From a main loop (ts-generation-load.c): ts_generation_model_load_stack()
 * and ts_generation_model_get_lora() on a worker. A model's read cannot
 * stop midway: cancelling returns G_IO_ERROR_CANCELLED at once, and what
 * the worker loads is dropped. */
void ts_generation_model_load_stack_async (const char *model_path,
                                           const char *const *adapter_paths,
                                           const float *weights, guint n,
                                           GCancellable *cancellable,
                                           GAsyncReadyCallback callback, gpointer user_data);
TsGenerationModel *ts_generation_model_load_stack_finish (GAsyncResult *result, GError **error);
/* Reads @adapter_path into @self's cache (a reference on @self is held). */
void ts_generation_model_load_lora_async (TsGenerationModel *self, const char *adapter_path,
                                          GCancellable *cancellable,
                                          GAsyncReadyCallback callback, gpointer user_data);
gboolean ts_generation_model_load_lora_finish (GAsyncResult *result, GError **error);

/* Turns and settings of one reply. */
/* The sampling a request and a new conversation start with (the
 * conversation's other defaults live in GSettings, checked equal by the
 * settings tests). */
#define TS_SAMPLING_DEFAULT_TOP_K 40
#define TS_SAMPLING_DEFAULT_TOP_P 1.0
#define TS_SAMPLING_DEFAULT_MIN_P 0.05
#define TS_SAMPLING_DEFAULT_REPEAT_PENALTY 1.0

typedef struct {
  char *system_prompt;          /* NULL or empty: no system turn */
  GPtrArray *turns;             /* of char*: user, assistant, user, … ending with user */
  double temperature;           /* <= 0: greedy */
  double top_p;                 /* >= 1: off */
  int top_k;                    /* <= 0: off */
  double min_p;                 /* <= 0: off */
  double repeat_penalty;        /* 1: off; applies to greedy replies too */
  guint max_tokens;
  /* Tokens of context the reply may use, prompt and answer together; 0:
   * the model's own. When the conversation does not fit, its oldest
   * exchanges are left out (the system prompt stays) and then the answer is
   * shortened to what is left; only a last prompt that cannot fit alone is
   * an error. */
  guint context_tokens;
  guint64 seed;
  /* Let a model that thinks (ts_generation_model_can_think()) think first:
   * the prompt opens its thinking and TOKEN events carry that text apart
   * from the answer. Off, or a model that does not think: the answer only. */
  gboolean thinking;
  guint n_threads;              /* engine threads (0: 1) */
  /* HE-LoRA: NULL → the engine's own plaintext LoRA; else "local" or "ws://…". */
  char *he_mode;
  char *he_preset;              /* CKKS preset; NULL: default */
  TsHeloraBackend he_backend;   /* local HE-LoRA: CPU, GPU or auto (0, the default) */
  /* HE-LoRA under the key vault's key instead of a fresh one (set with
   * ts_generation_request_set_key_pair): the secret key sealed for handover,
   * its one-time key (wiped when the request is freed) and the vault's
   * fingerprint, which the STARTED event then carries. */
  GBytes *he_sealed_key;
  guint8 he_unseal_key[32];
  char *he_key_fingerprint;
  /* The adapter of this reply (ts_generation_model_get_lora()); NULL: the
   * model's own. */
  char *adapter_path;
  /* Remote HE-LoRA in the adapter-private mode (docs/security.md §3): DP
   * cost per answer (0: masks and flooding only), flooding bits, and the
   * public key to be charged as (the key vault's, set with the key pair;
   * NULL: the session's own key). */
  gboolean he_private;
  double he_private_rho;
  guint he_private_lambda_s;
  GBytes *he_public_key;
} TsGenerationRequest;

TsGenerationRequest *ts_generation_request_new (void);
TsGenerationRequest *ts_generation_request_copy (const TsGenerationRequest *request);
void ts_generation_request_free (TsGenerationRequest *request);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsGenerationRequest, ts_generation_request_free)

/* Makes the HE-LoRA session encrypt under @pair (the key vault's unlocked
 * key, borrowed for the call; main thread) with @fingerprint shown for it;
 * he_preset becomes the pair's preset and he_public_key its public key. */
gboolean ts_generation_request_set_key_pair (TsGenerationRequest *request, const TsKeyPair *pair,
                                             const char *fingerprint, GError **error);

typedef enum {
  TS_GENERATION_EVENT_STARTED,   /* HE key made; prefill begins */
  TS_GENERATION_EVENT_TOKEN,
  TS_GENERATION_EVENT_DONE,
  TS_GENERATION_EVENT_CANCELLED,
  TS_GENERATION_EVENT_ERROR,
} TsGenerationEventKind;

typedef struct {
  TsGenerationEventKind kind;
  guint index;                  /* TOKEN: 0, 1, … */
  gint32 token_id;              /* TOKEN */
  const char *text;             /* TOKEN: answer text to append (may be empty) */
  /* TOKEN: the token belongs to the model's thinking (the closing tag
   * included); its text is then in @thinking, never in @text. */
  gboolean is_thinking;
  const char *thinking;         /* TOKEN: thinking text to append (may be empty) */
  gboolean is_end;              /* TOKEN: an end-of-turn token (no text) */
  TsTokenTimings timings;       /* TOKEN: this token's stages and bytes */
  double elapsed_ms;            /* since the job started */
  double first_token_ms;        /* time to first token (0 before it) */
  gboolean has_he;              /* HE-LoRA statistics below are valid */
  TsHeloraStats he_stats;       /* totals so far */
  char *key_fingerprint;        /* STARTED with HE: the request's he_key_fingerprint, or
                                 * hex SHA-256 of the CKKS parameters (a fresh key) */
  guint he_modules;             /* STARTED with HE: adapted modules, each evaluated per token */
  guint he_inputs;              /* STARTED with HE: encryptions per token (modules reading
                                 * the same h, e.g. of stacked adapters, share one) */
  TsHeloraBackend he_backend;   /* STARTED with HE: where it computes (CPU or CUDA) */
  guint turns_left_out;         /* STARTED: oldest turns left out so the context holds it */
  guint max_tokens;             /* STARTED: the answer's length limit, the request's or
                                 * less when the context has less room left */
  guint prompt_tokens;          /* STARTED: the prompt's length in tokens */
  guint reused_tokens;          /* STARTED: of those, already computed by the previous
                                 * reply of the same cache (fed again: the rest) */
  char *he_backend_reason;      /* STARTED with HE: why not the GPU the request asked for
                                 * (ts_helora_session_backend_reason), or NULL */
  const GError *error;          /* ERROR */
  /* DONE, CANCELLED, ERROR of an adapter-private reply: what the evaluator
   * reports its accountant has charged the session's key, asked after the
   * last answer (has_privacy FALSE when it does not report it). */
  gboolean has_privacy;
  TsHeloraPrivacyStatus privacy;
} TsGenerationEvent;

typedef struct _TsGenerationJob TsGenerationJob;

typedef void (*TsGenerationFunc) (TsGenerationJob *job, const TsGenerationEvent *event,
                                  gpointer user_data);

/* The prompt's token ids for @request's whole conversation, as a reply
 * would begin (before any turn is left out to fit the context); a GArray of
 * gint32, or NULL with @error. Any thread. */
GArray *ts_generation_prompt_tokens (TsGenerationModel *model, const TsGenerationRequest *request,
                                     GError **error);

typedef struct _TsGenerationCache TsGenerationCache;

/* Starts generating on a new thread. @request is copied. @callback runs on
 * the thread-default main context of the caller. With a @cache
 * (ts-generation-cache.h; the job holds a reference), the reply continues
 * the previous reply's session where their tokens agree. */
TsGenerationJob *ts_generation_job_start_cached (TsGenerationModel *model,
                                                 const TsGenerationRequest *request,
                                                 TsGenerationCache *cache,
                                                 GCancellable *cancellable,
                                                 TsGenerationFunc callback, gpointer user_data);
/* ts_generation_job_start_cached() without a cache. */
TsGenerationJob *ts_generation_job_start (TsGenerationModel *model,
                                          const TsGenerationRequest *request,
                                          GCancellable *cancellable,
                                          TsGenerationFunc callback, gpointer user_data);
TsGenerationJob *ts_generation_job_ref (TsGenerationJob *self);
void ts_generation_job_unref (TsGenerationJob *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsGenerationJob, ts_generation_job_unref)

/* Stops before the next token; the job then reports CANCELLED. */
void ts_generation_job_cancel (TsGenerationJob *self);
/* Cancels and drops the callback: nothing more is delivered. Main context only. */
void ts_generation_job_detach (TsGenerationJob *self);

G_END_DECLS
