/* ts-generation.c: a chat reply generated on a worker thread, streamed to a main context.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "chat.h"
#include "ckks-params.h"
#include "ckks-serial.h"
#include "sampler.h"
#include "tokenizer.h"
#include "ts-adapter-base.h"
#include "ts-adapter-stack.h"
#include "ts-generation-cache.h"
#include "ts-generation.h"

#include "ts-helora-ckks.h"
#include "ts-main-context.h"

G_DEFINE_QUARK (ts-generation-error-quark, ts_generation_error)

/* The session's n_batch: prefill steps of this size compute exactly what
 * one call over the whole prompt would. */
#define PREFILL_STEP 64

struct _TsGenerationModel
{
  gatomicrefcount ref_count;
  char *model_path;
  char **adapter_paths;          /* NULL-ended; empty: no adapter */
  float *weights;                /* one per adapter */
  guint n_adapters;
  LmModel *model;
  LmTokenizer *tok;
  LmLora *lora;
  GMutex lock;                   /* guards loras */
  GHashTable *loras;             /* other adapters: path → LmLora * */
};

static gboolean
set_lm_error (GError **error, int code, const char *what, LmStatus status, char *message)
{
  g_set_error (error, TS_GENERATION_ERROR, code, "%s: %s", what,
               message != NULL ? message : lm_status_message (status));
  free (message);
  return FALSE;
}

TsGenerationModel *
ts_generation_model_load (const char *model_path, const char *adapter_path, GError **error)
{
  g_return_val_if_fail (model_path != NULL, NULL);

  return ts_generation_model_load_stack (model_path, &adapter_path, NULL, adapter_path ? 1 : 0,
                                         error);
}

/* One adapter at weight 1 is loaded as it is; anything else is stacked
 * (a single adapter with another weight is a stack of one). */
static gboolean
load_adapters (TsGenerationModel *self, GError **error)
{
  char *message = NULL;
  LmStatus st;

  if (self->n_adapters == 0)
    return TRUE;
  if (self->n_adapters > 1 || self->weights[0] != 1.0f)
    {
      self->lora = ts_adapter_stack_load (self->model, (const char *const *) self->adapter_paths,
                                          self->weights, self->n_adapters, error);
      if (self->lora == NULL)
        g_prefix_error (error, "Stacked adapters: ");
      return self->lora != NULL;
    }
  if ((st = lm_lora_load (self->model, self->adapter_paths[0], 1.0f, &self->lora, &message)) != LM_OK)
    {
      g_autofree char *adapter_name = g_filename_display_basename (self->adapter_paths[0]);
      set_lm_error (error, TS_GENERATION_ERROR_MODEL, adapter_name, st, message);
      if (st == LM_ERR_SHAPE && error != NULL)
        ts_adapter_explain_mismatch (*error, self->adapter_paths[0], self->model_path);
      return FALSE;
    }
  return TRUE;
}

TsGenerationModel *
ts_generation_model_load_stack (const char *model_path, const char *const *adapter_paths,
                                const float *weights, guint n, GError **error)
{
  g_return_val_if_fail (model_path != NULL, NULL);
  g_return_val_if_fail (n == 0 || adapter_paths != NULL, NULL);

  g_autoptr (TsGenerationModel) self = g_new0 (TsGenerationModel, 1);
  g_autofree char *model_name = g_filename_display_basename (model_path);
  char *message = NULL;
  LmStatus st;

  g_atomic_ref_count_init (&self->ref_count);
  g_mutex_init (&self->lock);
  self->loras = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                       (GDestroyNotify) lm_lora_free);
  self->model_path = g_strdup (model_path);
  self->adapter_paths = g_new0 (char *, n + 1);
  self->weights = g_new (float, MAX (n, 1));
  self->n_adapters = n;
  for (guint i = 0; i < n; i++)
    {
      self->adapter_paths[i] = g_strdup (adapter_paths[i]);
      self->weights[i] = weights != NULL ? weights[i] : 1.0f;
    }
  if ((st = lm_model_load (model_path, &self->model, &message)) != LM_OK)
    return set_lm_error (error, TS_GENERATION_ERROR_MODEL, model_name, st, message), NULL;
  if ((st = lm_tokenizer_new_from_gguf (lm_model_gguf (self->model), &self->tok, &message)) != LM_OK)
    return set_lm_error (error, TS_GENERATION_ERROR_MODEL, model_name, st, message), NULL;
  if (!load_adapters (self, error))
    return NULL;
  return g_steal_pointer (&self);
}

TsGenerationModel *
ts_generation_model_ref (TsGenerationModel *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

void
ts_generation_model_unref (TsGenerationModel *self)
{
  if (self == NULL || !g_atomic_ref_count_dec (&self->ref_count))
    return;
  g_hash_table_unref (self->loras);
  g_mutex_clear (&self->lock);
  lm_lora_free (self->lora);
  lm_tokenizer_free (self->tok);
  lm_model_free (self->model);
  g_free (self->model_path);
  g_strfreev (self->adapter_paths);
  g_free (self->weights);
  g_free (self);
}

const char *
ts_generation_model_get_model_path (TsGenerationModel *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->model_path;
}

const char *
ts_generation_model_get_adapter_path (TsGenerationModel *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->adapter_paths != NULL ? self->adapter_paths[0] : NULL;
}

guint
ts_generation_model_get_n_adapters (TsGenerationModel *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->n_adapters;
}

const char *
ts_generation_model_get_nth_adapter (TsGenerationModel *self, guint i, float *weight)
{
  g_return_val_if_fail (i < self->n_adapters, NULL);
  if (weight != NULL)
    *weight = self->weights[i];
  return self->adapter_paths[i];
}

const LmModelInfo *
ts_generation_model_get_info (TsGenerationModel *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return lm_model_info (self->model);
}

/* The model's own adapter is a stack, or one adapter at another weight:
 * not the file of its first path. */
static gboolean
model_is_stacked (TsGenerationModel *self)
{
  return self->n_adapters > 1 || (self->n_adapters == 1 && self->weights[0] != 1.0f);
}

gboolean
ts_generation_model_can_think (TsGenerationModel *self)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return lm_chat_can_think (self->tok);
}

const LmModel *
ts_generation_model_get_lm (TsGenerationModel *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->model;
}

const LmLora *
ts_generation_model_get_lora (TsGenerationModel *self, const char *adapter_path,
                              GError **error)
{
  LmLora *lora;
  char *message = NULL;
  LmStatus st;

  g_return_val_if_fail (self != NULL, NULL);

  if (adapter_path == NULL || (!model_is_stacked (self)
                                && g_strcmp0 (adapter_path, self->adapter_paths[0]) == 0))
    return self->lora;
  /* Loaded under the lock: two replies asking for a new adapter at once
   * read it once. Adapters are small next to the model. */
  g_mutex_lock (&self->lock);
  lora = g_hash_table_lookup (self->loras, adapter_path);
  if (lora == NULL)
    {
      st = lm_lora_load (self->model, adapter_path, 1.0f, &lora, &message);
      if (st == LM_OK)
        g_hash_table_insert (self->loras, g_strdup (adapter_path), lora);
      else
        {
          g_autofree char *name = g_filename_display_basename (adapter_path);
          set_lm_error (error, TS_GENERATION_ERROR_MODEL, name, st, message);
          if (st == LM_ERR_SHAPE && error != NULL)
            ts_adapter_explain_mismatch (*error, adapter_path, self->model_path);
          lora = NULL;
        }
    }
  g_mutex_unlock (&self->lock);
  return lora;
}

/* A stack reaches a remote evaluator as the list of its files and weights;
 * the evaluator stacks the same files itself. (One adapter at another
 * weight needs nothing: the weight is in B, which stays here.) */
static void
set_stack_options (TsGenerationModel *model, TsHeloraOptions *options)
{
  if (model->n_adapters < 2)
    return;
  options->stacked_paths = (const char *const *) model->adapter_paths;
  options->stacked_weights = model->weights;
  options->n_stacked = model->n_adapters;
}

/* ------------------------------------------------------------------------ */

TsGenerationRequest *
ts_generation_request_new (void)
{
  TsGenerationRequest *request = g_new0 (TsGenerationRequest, 1);

  request->turns = g_ptr_array_new_with_free_func (g_free);
  request->top_p = TS_SAMPLING_DEFAULT_TOP_P;
  request->top_k = TS_SAMPLING_DEFAULT_TOP_K;
  request->min_p = TS_SAMPLING_DEFAULT_MIN_P;
  request->repeat_penalty = TS_SAMPLING_DEFAULT_REPEAT_PENALTY;
  request->max_tokens = 128;
  return request;
}

TsGenerationRequest *
ts_generation_request_copy (const TsGenerationRequest *request)
{
  g_return_val_if_fail (request != NULL, NULL);

  TsGenerationRequest *copy = g_memdup2 (request, sizeof *request);

  copy->system_prompt = g_strdup (request->system_prompt);
  copy->he_mode = g_strdup (request->he_mode);
  copy->he_preset = g_strdup (request->he_preset);
  copy->he_key_fingerprint = g_strdup (request->he_key_fingerprint);
  copy->adapter_path = g_strdup (request->adapter_path);
  if (request->he_sealed_key != NULL)
    copy->he_sealed_key = g_bytes_ref (request->he_sealed_key);
  if (request->he_public_key != NULL)
    copy->he_public_key = g_bytes_ref (request->he_public_key);
  copy->turns = g_ptr_array_new_with_free_func (g_free);
  for (guint i = 0; i < request->turns->len; i++)
    g_ptr_array_add (copy->turns, g_strdup (g_ptr_array_index (request->turns, i)));
  return copy;
}

void
ts_generation_request_free (TsGenerationRequest *request)
{
  if (request == NULL)
    return;
  g_free (request->system_prompt);
  g_free (request->he_mode);
  g_free (request->he_preset);
  g_free (request->he_key_fingerprint);
  g_free (request->adapter_path);
  g_clear_pointer (&request->he_sealed_key, g_bytes_unref);
  g_clear_pointer (&request->he_public_key, g_bytes_unref);
  OPENSSL_cleanse (request->he_unseal_key, sizeof request->he_unseal_key);
  g_ptr_array_unref (request->turns);
  g_free (request);
}

gboolean
ts_generation_request_set_key_pair (TsGenerationRequest *request, const TsKeyPair *pair,
                                    const char *fingerprint, GError **error)
{
  g_return_val_if_fail (request != NULL && pair != NULL, FALSE);

  GBytes *sealed = ts_key_pair_seal_for_handover (pair, request->he_unseal_key, error);
  gsize pk_len = ckks_public_key_serialized_size (pair->pk);
  guint8 *pk = NULL;

  if (sealed == NULL)
    return FALSE;
  g_clear_pointer (&request->he_sealed_key, g_bytes_unref);
  request->he_sealed_key = sealed;
  /* The same public key every reply: the evaluator's privacy budget for
   * this key then adds up across replies (docs/security.md §6). */
  pk = g_malloc (pk_len);
  g_clear_pointer (&request->he_public_key, g_bytes_unref);
  if (ckks_public_key_serialize (pair->pk, pk, pk_len) == CKKS_OK)
    request->he_public_key = g_bytes_new_take (g_steal_pointer (&pk), pk_len);
  g_free (pk);
  g_free (request->he_preset);
  request->he_preset = g_strdup (pair->preset);
  g_free (request->he_key_fingerprint);
  request->he_key_fingerprint = g_strdup (fingerprint);
  return TRUE;
}

/* ------------------------------------------------------------------------ */

struct _TsGenerationJob
{
  gatomicrefcount ref_count;
  TsGenerationModel *model;
  TsGenerationRequest *request;
  GCancellable *cancellable;
  GMainContext *context;
  TsGenerationFunc callback;     /* main context only; NULL once detached */
  gpointer user_data;
  GThread *thread;

  TsGenerationCache *cache;      /* a reference; NULL: a session of its own */

  /* Worker-only state. */
  const LmLora *lora;            /* this reply's adapter (the model's cache) */
  LmSession *session;
  gboolean session_ok;           /* every engine call on it succeeded */
  char *signature;               /* how it computes (the cache's key) */
  GArray *fed;                   /* gint32: the tokens the session holds */
  guint reused;                  /* of the prompt, already in a kept session */
  LmSampler *sampler;
  TsHeloraSession *helora;
  double start_ms;
  double first_token_ms;
  guint turns_left_out;          /* job_tokenize's choice */
  guint max_tokens;              /* the request's, or less to fit the context */
};

/* One event on its way to the main context; owns copies of its strings. */
typedef struct {
  TsGenerationJob *job;
  TsGenerationEvent event;
  char *text;
  char *thinking;
  GError *error;
} Delivery;

static void
delivery_free (gpointer data)
{
  Delivery *d = data;

  ts_generation_job_unref (d->job);
  g_free (d->text);
  g_free (d->thinking);
  g_free (d->event.key_fingerprint);
  g_free (d->event.he_backend_reason);
  g_clear_error (&d->error);
  g_free (d);
}

static gboolean
delivery_dispatch (gpointer data)
{
  Delivery *d = data;

  d->event.text = d->text;
  d->event.thinking = d->thinking;
  d->event.error = d->error;
  if (d->job->callback != NULL)
    d->job->callback (d->job, &d->event, d->job->user_data);
  return G_SOURCE_REMOVE;
}

/* Sends @event (copied; @text and @error too) to the main context. */
static void
deliver (TsGenerationJob *self, const TsGenerationEvent *event, const char *text,
         const GError *error)
{
  Delivery *d = g_new0 (Delivery, 1);

  d->job = ts_generation_job_ref (self);
  d->event = *event;
  d->event.key_fingerprint = g_strdup (event->key_fingerprint);
  d->event.he_backend_reason = g_strdup (event->he_backend_reason);
  /* A random or truncated model can emit bytes that are not UTF-8. */
  d->text = text != NULL ? g_utf8_make_valid (text, -1) : NULL;
  d->thinking = event->thinking != NULL ? g_utf8_make_valid (event->thinking, -1) : NULL;
  d->error = error != NULL ? g_error_copy (error) : NULL;
  d->event.elapsed_ms = ts_now_ms () - self->start_ms;
  d->event.first_token_ms = self->first_token_ms;
  if (self->helora != NULL)
    {
      d->event.has_he = TRUE;
      ts_helora_session_get_stats (self->helora, &d->event.he_stats);
    }
  ts_main_context_post (self->context, delivery_dispatch, d, delivery_free);
}

/* Hands a healthy session to the cache for the next reply, its adapter
 * hooks removed first (they point into the HE session, freed next). */
static void
keep_session (TsGenerationJob *self)
{
  if (self->cache == NULL || self->session == NULL || !self->session_ok || self->fed == NULL
      || self->fed->len != lm_session_pos (self->session))
    return;
  if (lm_session_set_lora (self->session, self->lora) != LM_OK)
    return;
  _ts_generation_cache_put (self->cache, self->model, self->lora, self->signature,
                            g_steal_pointer (&self->session), g_steal_pointer (&self->fed));
}

/* The last event; an adapter-private reply also says what the evaluator
 * has charged its key, asked after its last answer (a refusal included).
 * Frees the reply's engine and HE state first. */
static void
deliver_final (TsGenerationJob *self, TsGenerationEventKind kind, const GError *error)
{
  TsGenerationEvent event = { .kind = kind };
  g_autoptr (GError) status_error = NULL;

  if (self->helora != NULL && self->request->he_private)
    {
      event.has_privacy = ts_helora_session_privacy_status (self->helora, &event.privacy,
                                                            &status_error);
      if (!event.has_privacy)
        g_debug ("No privacy status from the evaluator: %s", status_error->message);
    }
  /* Nothing of the reply outlives its last event: the HE key is wiped and
   * this thread's OpenSSL state released before the receiver is told, so
   * a program that ends on DONE leaves no work behind on this thread. */
  lm_sampler_free (g_steal_pointer (&self->sampler));
  keep_session (self);
  lm_session_free (g_steal_pointer (&self->session));
  g_clear_pointer (&self->helora, ts_helora_session_free);
  OPENSSL_thread_stop ();
  deliver (self, &event, NULL, error);
}

/* Hex SHA-256 of the CKKS parameters the HE session uses: what the lock
 * badge shows, and what a remote evaluator checks in its hello. */
static char *
params_fingerprint (const char *preset)
{
  g_autoptr (GError) error = NULL;
  CkksContext *ctx = ts_helora_ckks_context_new (preset != NULL ? preset : TS_HELORA_DEFAULT_PRESET,
                                                 &error);
  GString *hex = g_string_new (NULL);

  if (ctx == NULL)
    return g_string_free (hex, FALSE);
  for (int i = 0; i < 32; i++)
    g_string_append_printf (hex, "%02x", ckks_context_fingerprint (ctx)[i]);
  ckks_context_free (ctx);
  return g_string_free (hex, FALSE);
}

/* Whether @r's reply starts in the model's thinking. */
static gboolean
request_thinks (TsGenerationModel *model, const TsGenerationRequest *r)
{
  return r->thinking && lm_chat_can_think (model->tok);
}

/* The chat template's ids for the system prompt and turns [@first, end).
 * Earlier answers go back as the answer text alone: their thinking is
 * never part of a turn (Qwen's templates drop it too). */
static gboolean
tokenize_turns (TsGenerationModel *model, const TsGenerationRequest *r, guint first,
                int32_t **ids, size_t *n_ids, GError **error)
{
  unsigned flags = LM_CHAT_GENERATION_PROMPT
                   | (request_thinks (model, r) ? LM_CHAT_OPEN_THINKING : LM_CHAT_NO_THINKING);
  g_autoptr (GArray) messages = g_array_new (FALSE, FALSE, sizeof (LmChatMessage));
  LmStatus st;

  if (r->system_prompt != NULL && *r->system_prompt != '\0')
    g_array_append_val (messages, ((LmChatMessage) { LM_ROLE_SYSTEM, r->system_prompt }));
  for (guint i = first; i < r->turns->len; i++)
    {
      LmChatMessage m = { i % 2 == 0 ? LM_ROLE_USER : LM_ROLE_ASSISTANT,
                          g_ptr_array_index (r->turns, i) };
      g_array_append_val (messages, m);
    }
  st = lm_chat_tokenize (model->tok, (LmChatMessage *) messages->data, messages->len, flags,
                         ids, n_ids);
  if (st != LM_OK)
    return set_lm_error (error, TS_GENERATION_ERROR_PROMPT, "Prompt", st, NULL);
  return TRUE;
}

static gboolean
tokenize_from (TsGenerationJob *self, guint first, int32_t **ids, size_t *n_ids, GError **error)
{
  return tokenize_turns (self->model, self->request, first, ids, n_ids, error);
}

GArray *
ts_generation_prompt_tokens (TsGenerationModel *model, const TsGenerationRequest *request,
                             GError **error)
{
  g_autofree int32_t *ids = NULL;
  size_t n_ids = 0;
  GArray *out;

  g_return_val_if_fail (model != NULL && request != NULL, NULL);

  if (!tokenize_turns (model, request, 0, &ids, &n_ids, error))
    return NULL;
  out = g_array_sized_new (FALSE, FALSE, sizeof (gint32), (guint) n_ids);
  g_array_append_vals (out, ids, (guint) n_ids);
  return out;
}

/* Tokens of context the reply may use: the request's, or the model's. */
static guint
context_limit (TsGenerationJob *self)
{
  const LmModelInfo *info = lm_model_info (self->model->model);
  guint model_ctx = info->n_ctx_train > 0 ? info->n_ctx_train : G_MAXUINT32;

  return self->request->context_tokens > 0 ? MIN (self->request->context_tokens, model_ctx)
                                           : model_ctx;
}

/* The prompt that fits: whole exchanges (a user turn and its answer) are
 * left out from the oldest while the prompt and the full answer do not fit
 * together, as chat applications do; then the answer gets what is left.
 * Fails only when the last prompt alone leaves no room for one token. */
static gboolean
job_tokenize (TsGenerationJob *self, int32_t **ids, size_t *n_ids, GError **error)
{
  TsGenerationRequest *r = self->request;
  guint limit = context_limit (self), first = 0;

  if (r->turns->len % 2 != 1)
    {
      g_set_error (error, TS_GENERATION_ERROR, TS_GENERATION_ERROR_PROMPT,
                   "A conversation must end with a user turn");
      return FALSE;
    }
  if (!tokenize_from (self, first, ids, n_ids, error))
    return FALSE;
  while ((guint64) *n_ids + r->max_tokens + 1 > limit && first + 1 < r->turns->len)
    {
      first += 2;
      g_clear_pointer (ids, g_free);
      if (!tokenize_from (self, first, ids, n_ids, error))
        return FALSE;
    }
  if ((guint64) *n_ids + 2 > limit)
    {
      g_set_error (error, TS_GENERATION_ERROR, TS_GENERATION_ERROR_PROMPT,
                   "This prompt alone (%zu tokens) does not fit the model's context (%u tokens)",
                   *n_ids, limit);
      return FALSE;
    }
  self->turns_left_out = first;
  self->max_tokens = (guint) MIN ((guint64) r->max_tokens, limit - *n_ids - 1);
  return TRUE;
}

static gboolean
job_attach_he (TsGenerationJob *self, GError **error)
{
  TsGenerationRequest *r = self->request;
  TsHeloraOptions options = { .params_preset = r->he_preset, .backend = r->he_backend };

  if (r->he_sealed_key != NULL)
    {
      options.sealed_key = g_bytes_get_data (r->he_sealed_key, &options.sealed_key_len);
      options.unseal_key = r->he_unseal_key;
    }
  options.private_mode = r->he_private;
  options.private_rho = r->he_private_rho;
  options.private_lambda_s = r->he_private_lambda_s;
  options.private_public_key = r->he_public_key;
  /* A routed or picked adapter is one file; only the model's own may be a stack. */
  if (self->lora == self->model->lora)
    set_stack_options (self->model, &options);
  self->helora = ts_helora_attach_with (self->session, self->lora,
                                        self->lora != self->model->lora
                                          ? r->adapter_path
                                          : ts_generation_model_get_adapter_path (self->model),
                                        r->he_mode, &options, error);
  return self->helora != NULL;
}

/* What a kept session must have been computed with to be continued: the
 * evaluator and its parameters, the key, the threads (the adapter and the
 * model are compared as such). */
static char *
session_signature (const TsGenerationRequest *r)
{
  return g_strdup_printf ("threads %u; he %s; preset %s; backend %d; private %d %.17g %u; key %s",
                          MAX (r->n_threads, 1), r->he_mode ? r->he_mode : "-",
                          r->he_preset ? r->he_preset : "-", (int) r->he_backend,
                          r->he_private, r->he_private_rho, r->he_private_lambda_s,
                          r->he_key_fingerprint ? r->he_key_fingerprint : "-");
}

/* Positions a new session holds: this reply's, and as many again (at least
 * 1024) for the turns that follow, within the context limit, so that the
 * next replies continue it instead of starting a bigger one. */
static uint32_t
session_positions (TsGenerationJob *self, size_t needed)
{
  return (uint32_t) MIN ((guint64) context_limit (self), needed + MAX (needed, 1024));
}

/* Leading tokens @ids shares with the kept session's, at most @n_ids - 1:
 * the last prompt token is always fed, its logits start the reply. */
static guint
shared_prefix (const GArray *kept, const int32_t *ids, size_t n_ids)
{
  guint n = 0;

  while (n < kept->len && n + 1 < n_ids && g_array_index (kept, gint32, n) == ids[n])
    n++;
  return n;
}

/* The previous reply's session when it fits this one, else a new one. */
static gboolean
job_open_session (TsGenerationJob *self, size_t n_ids, GArray **kept, GError **error)
{
  TsGenerationRequest *r = self->request;
  size_t needed = n_ids + self->max_tokens + 1;
  /* Exact (f32) activations: with 8-bit activation blocks the CKKS error of
   * the encrypted pane's adapter output (~1e-8) now and then flips the
   * rounding of an activation and the two panes part at a near-tie; in f32
   * they give the same tokens (helora-real-adapters: 40 of 40 answers), for
   * about 1.4 times the time per token on the real model. */
  LmSessionParams params = { .n_ctx = session_positions (self, needed),
                             .n_batch = PREFILL_STEP,
                             .n_threads = MAX (r->n_threads, 1),
                             .exact_activations = true };
  LmStatus st;

  self->signature = session_signature (r);
  if (self->cache != NULL)
    self->session = _ts_generation_cache_take (self->cache, self->model, self->lora,
                                               self->signature, kept);
  if (self->session != NULL && (lm_session_n_ctx (self->session) < needed
                                || lm_session_pos (self->session) != (*kept)->len))
    {
      lm_session_free (g_steal_pointer (&self->session));
      g_clear_pointer (kept, g_array_unref);
    }
  if (self->session == NULL && (st = lm_session_new (self->model->model, &params,
                                                     &self->session)) != LM_OK)
    return set_lm_error (error, TS_GENERATION_ERROR_ENGINE, "Session", st, NULL);
  self->session_ok = TRUE;
  /* (Re)attaching the adapter clears a kept session's hooks. */
  if ((st = lm_session_set_lora (self->session, self->lora)) != LM_OK)
    return set_lm_error (error, TS_GENERATION_ERROR_ENGINE, "Session", st, NULL);
  return TRUE;
}

static gboolean
job_prepare (TsGenerationJob *self, int32_t *ids, size_t n_ids, GError **error)
{
  TsGenerationRequest *r = self->request;
  const LmModelInfo *info = lm_model_info (self->model->model);
  LmSamplerParams sp = lm_sampler_params_greedy ();
  g_autoptr (GArray) kept = NULL;

  self->lora = ts_generation_model_get_lora (self->model, r->adapter_path, error);
  if (self->lora == NULL && r->adapter_path != NULL)
    return FALSE;
  if (!job_open_session (self, n_ids, &kept, error))
    return FALSE;
  if (r->he_mode != NULL && self->lora != NULL && !job_attach_he (self, error))
    return FALSE;
  self->reused = kept != NULL ? shared_prefix (kept, ids, n_ids) : 0;
  self->fed = g_array_sized_new (FALSE, FALSE, sizeof (gint32), (guint) n_ids + self->max_tokens);
  g_array_append_vals (self->fed, ids, self->reused);
  if (r->temperature > 0)
    {
      sp = lm_sampler_params_default (r->seed);
      sp.temperature = (float) r->temperature;
      sp.top_p = (float) CLAMP (r->top_p, 0.01, 1.0);
      sp.top_k = MAX (r->top_k, 0);
      sp.min_p = (float) CLAMP (r->min_p, 0.0, 1.0);
    }
  sp.repeat_penalty = r->repeat_penalty > 0 ? (float) r->repeat_penalty : 1.0f;
  self->sampler = lm_sampler_new (&sp, (int32_t) info->n_vocab);
  for (size_t i = 0; i < n_ids; i++)
    lm_sampler_accept (self->sampler, ids[i]);
  return TRUE;
}

static gboolean
check_engine (TsGenerationJob *self, LmStatus st, GError **error)
{
  const GError *he_error = self->helora != NULL ? ts_helora_session_last_error (self->helora) : NULL;

  if (st == LM_OK)
    return TRUE;
  self->session_ok = FALSE;
  if (st == LM_ERR_HOOK && he_error != NULL)
    {
      TsGenerationError code = TS_GENERATION_ERROR_ENGINE;

      if (g_error_matches (he_error, TS_HELORA_ERROR, TS_HELORA_ERROR_PRIVACY_BUDGET))
        code = TS_GENERATION_ERROR_PRIVACY_BUDGET;
      else if (ts_helora_session_backend (self->helora) == TS_HELORA_BACKEND_CUDA
               && g_error_matches (he_error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE))
        code = TS_GENERATION_ERROR_GPU;
      g_set_error (error, TS_GENERATION_ERROR, code, "HE-LoRA: %s", he_error->message);
      return FALSE;
    }
  return set_lm_error (error, TS_GENERATION_ERROR_ENGINE, "Generation", st, NULL);
}

/* Adds the engine's stages of the last call to @t; the byte counters come
 * from the HE session's totals, @last holding the previous ones. */
static void
collect_timings (TsGenerationJob *self, TsTokenTimings *t, TsHeloraStats *last)
{
  const LmTimings *lt = lm_session_timings (self->session);

  for (int s = 0; s < LM_N_STAGES && s < TS_N_STAGES; s++)
    t->ms[s] += lt->ms[s];
  if (self->helora != NULL)
    {
      TsHeloraStats now;

      ts_helora_session_get_stats (self->helora, &now);
      t->bytes_up += now.bytes_up - last->bytes_up;
      t->bytes_down += now.bytes_down - last->bytes_down;
      *last = now;
    }
}

/* Puts the text of token @id into @piece (NUL-ended) and says in @event
 * which part of the reply it belongs to; @last: no token follows it. */
static void
take_piece (LmChatStream *stream, gboolean thinks, int32_t id, gboolean last, char *piece,
            size_t cap, TsGenerationEvent *event)
{
  size_t len = 0;
  LmChatPart part;
  LmChatEvent chat_event = lm_chat_stream_push (stream, id, piece, cap - 1, &len, &part);

  /* A tag flushes its part's text before it switches, so what the last
   * token and the finish give together is of one part. */
  if (chat_event == LM_CHAT_STOP || last)
    len += lm_chat_stream_finish (stream, piece + len, cap - 1 - len, NULL);
  /* Thinking the request did not ask for is not shown (the prompt turned
   * it off, but a model may open a <think> anyway). */
  if (part == LM_CHAT_THINKING && !thinks)
    len = 0;
  piece[len] = '\0';
  event->token_id = id;
  event->is_end = chat_event == LM_CHAT_STOP;
  event->is_thinking = part == LM_CHAT_THINKING && thinks;
  event->thinking = event->is_thinking ? piece : "";
  event->text = event->is_thinking ? "" : piece;
}

/* Samples, delivers and feeds back tokens; @t holds the prefill's stages,
 * which belong to the first token. */
static gboolean
job_decode_loop (TsGenerationJob *self, TsTokenTimings *t, TsHeloraStats *last, GError **error)
{
  /* One more byte for the NUL the event's text ends with. */
  size_t cap = lm_chat_stream_buffer_size (self->model->tok) + 1;
  g_autofree char *piece = g_malloc (cap);
  gboolean thinks = request_thinks (self->model, self->request);
  LmChatStream stream;

  lm_chat_stream_init (&stream, self->model->tok, thinks);
  for (guint k = 0; k < self->max_tokens; k++)
    {
      TsGenerationEvent event = { .kind = TS_GENERATION_EVENT_TOKEN, .index = k };
      double t0 = ts_now_ms ();
      int32_t id;
      LmStatus st;

      if (g_cancellable_is_cancelled (self->cancellable))
        return TRUE;
      id = lm_sampler_sample (self->sampler, lm_session_logits (self->session));
      lm_sampler_accept (self->sampler, id);
      take_piece (&stream, thinks, id, k + 1 == self->max_tokens, piece, cap, &event);
      t->ms[TS_STAGE_SAMPLE] += ts_now_ms () - t0;
      if (self->first_token_ms == 0)
        self->first_token_ms = ts_now_ms () - self->start_ms;
      event.timings = *t;
      deliver (self, &event, event.text, NULL);
      if (event.is_end || k + 1 == self->max_tokens)
        return TRUE;
      memset (t, 0, sizeof *t);
      st = lm_session_decode (self->session, id);
      collect_timings (self, t, last);
      if (!check_engine (self, st, error))
        return FALSE;
      g_array_append_val (self->fed, id);
    }
  return TRUE;
}

static gboolean
job_run (TsGenerationJob *self, GError **error)
{
  g_autofree int32_t *ids = NULL;
  size_t n_ids = 0;
  TsTokenTimings t = { 0 };
  TsHeloraStats last = { 0 };
  TsGenerationEvent started = { .kind = TS_GENERATION_EVENT_STARTED };
  g_autofree char *fingerprint = NULL;
  LmStatus st;

  if (!job_tokenize (self, (int32_t **) &ids, &n_ids, error) ||
      !job_prepare (self, ids, n_ids, error))
    return FALSE;
  if (self->helora != NULL)
    fingerprint = self->request->he_key_fingerprint != NULL
      ? g_strdup (self->request->he_key_fingerprint)
      : params_fingerprint (ts_helora_session_preset (self->helora));
  started.key_fingerprint = fingerprint;
  started.turns_left_out = self->turns_left_out;
  started.max_tokens = self->max_tokens;
  started.prompt_tokens = (guint) n_ids;
  started.reused_tokens = self->reused;
  if (self->cache != NULL)
    _ts_generation_cache_set_last_reused (self->cache, self->reused);
  if (self->helora != NULL)
    {
      started.he_modules = (guint) lm_lora_n_modules (self->lora);
      started.he_inputs = ts_helora_session_n_inputs (self->helora);
      started.he_backend = ts_helora_session_backend (self->helora);
      started.he_backend_reason = (char *) ts_helora_session_backend_reason (self->helora);
    }
  deliver (self, &started, NULL, NULL);
  if (self->max_tokens == 0 || g_cancellable_is_cancelled (self->cancellable))
    return TRUE;
  /* A kept session drops what this prompt does not share (a model with
   * recurrent layers replays the shared part, through this reply's hooks). */
  if (lm_session_pos (self->session) != self->reused)
    {
      st = lm_session_rewind (self->session, self->reused);
      collect_timings (self, &t, &last);
      if (!check_engine (self, st, error))
        return FALSE;
    }
  /* In steps of the engine's own batch size (same arithmetic as one call),
   * so that Stop is honoured during a long prompt too. */
  for (size_t done = self->reused; done < n_ids; done += PREFILL_STEP)
    {
      size_t step = MIN (PREFILL_STEP, n_ids - done);

      if (g_cancellable_is_cancelled (self->cancellable))
        return TRUE;
      st = lm_session_prefill (self->session, ids + done, step, NULL);
      collect_timings (self, &t, &last);
      if (!check_engine (self, st, error))
        return FALSE;
      g_array_append_vals (self->fed, ids + done, (guint) step);
    }
  return job_decode_loop (self, &t, &last, error);
}

static gpointer
job_thread (gpointer data)
{
  TsGenerationJob *self = data;
  g_autoptr (GError) error = NULL;
  gboolean ok;

  self->start_ms = ts_now_ms ();
  ok = job_run (self, &error);
  if (!ok)
    deliver_final (self, TS_GENERATION_EVENT_ERROR, error);
  else if (g_cancellable_is_cancelled (self->cancellable))
    deliver_final (self, TS_GENERATION_EVENT_CANCELLED, NULL);
  else
    deliver_final (self, TS_GENERATION_EVENT_DONE, NULL);
  ts_generation_job_unref (self);
  return NULL;
}

TsGenerationJob *
ts_generation_job_start (TsGenerationModel *model, const TsGenerationRequest *request,
                         GCancellable *cancellable, TsGenerationFunc callback,
                         gpointer user_data)
{
  g_return_val_if_fail (model != NULL, NULL);
  g_return_val_if_fail (request != NULL, NULL);
  g_return_val_if_fail (callback != NULL, NULL);

  return ts_generation_job_start_cached (model, request, NULL, cancellable, callback, user_data);
}

TsGenerationJob *
ts_generation_job_start_cached (TsGenerationModel *model, const TsGenerationRequest *request,
                                TsGenerationCache *cache, GCancellable *cancellable,
                                TsGenerationFunc callback, gpointer user_data)
{
  g_return_val_if_fail (model != NULL, NULL);
  g_return_val_if_fail (request != NULL, NULL);
  g_return_val_if_fail (callback != NULL, NULL);

  TsGenerationJob *self = g_new0 (TsGenerationJob, 1);

  g_atomic_ref_count_init (&self->ref_count);
  self->model = ts_generation_model_ref (model);
  self->request = ts_generation_request_copy (request);
  self->cancellable = cancellable != NULL ? g_object_ref (cancellable) : g_cancellable_new ();
  self->context = g_main_context_ref_thread_default ();
  self->callback = callback;
  self->user_data = user_data;
  self->cache = cache != NULL ? ts_generation_cache_ref (cache) : NULL;
  /* The thread holds its own reference until its last event is queued. */
  self->thread = g_thread_new ("ts-generation", job_thread, ts_generation_job_ref (self));
  return self;
}

TsGenerationJob *
ts_generation_job_ref (TsGenerationJob *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

void
ts_generation_job_unref (TsGenerationJob *self)
{
  if (self == NULL || !g_atomic_ref_count_dec (&self->ref_count))
    return;
  /* The last reference is dropped either by the thread itself or after its
   * last event ran; in both cases the thread has finished its work. */
  g_thread_unref (self->thread);
  ts_generation_model_unref (self->model);
  ts_generation_request_free (self->request);
  g_clear_pointer (&self->fed, g_array_unref);
  g_free (self->signature);
  g_clear_pointer (&self->cache, ts_generation_cache_unref);
  g_object_unref (self->cancellable);
  g_main_context_unref (self->context);
  g_free (self);
}

void
ts_generation_job_cancel (TsGenerationJob *self)
{
  g_return_if_fail (self != NULL);

  g_cancellable_cancel (self->cancellable);
}

void
ts_generation_job_detach (TsGenerationJob *self)
{
  g_return_if_fail (self != NULL);

  g_cancellable_cancel (self->cancellable);
  self->callback = NULL;
}
