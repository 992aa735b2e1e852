/* ts-helora-session.c: HE-LoRA for an engine session: keys, modules, the hook.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "ckks-serial.h"
#include "ts-helora-ckks.h"
#include "ts-helora-error.h"
#include "ts-helora-proto.h"
#include "ts-helora-session-private.h"

gboolean
ts_helora_mode_parse (const char *text, TsHeloraOptions *options, GError **error)
{
  g_return_val_if_fail (options != NULL, FALSE);

  options->remote_url = NULL;
  if (g_strcmp0 (text, "plain") == 0)
    options->mode = TS_HELORA_MODE_PLAIN;
  else if (g_strcmp0 (text, "local") == 0)
    options->mode = TS_HELORA_MODE_LOCAL;
  else if (text != NULL && (g_str_has_prefix (text, "ws://") || g_str_has_prefix (text, "wss://")))
    {
      options->mode = TS_HELORA_MODE_REMOTE;
      options->remote_url = text;
    }
  else
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                   "HE mode must be plain, local or ws://HOST:PORT, not '%s'",
                   text ? text : "");
      return FALSE;
    }
  return TRUE;
}

gboolean
ts_helora_backend_parse (const char *text, TsHeloraBackend *out, GError **error)
{
  g_return_val_if_fail (out != NULL, FALSE);

  for (TsHeloraBackend b = TS_HELORA_BACKEND_AUTO; b <= TS_HELORA_BACKEND_CUDA; b++)
    if (g_strcmp0 (text, ts_helora_backend_name (b)) == 0)
      {
        *out = b;
        return TRUE;
      }
  g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
               "The HE backend must be cpu, cuda or auto, not '%s'", text ? text : "");
  return FALSE;
}

const char *
ts_helora_backend_name (TsHeloraBackend backend)
{
  switch (backend)
    {
    case TS_HELORA_BACKEND_CPU:
      return "cpu";
    case TS_HELORA_BACKEND_CUDA:
      return "cuda";
    case TS_HELORA_BACKEND_AUTO:
    default:
      return "auto";
    }
}

/* ---- groups of modules reading the same h ---- */

/* Projections computed from one normalised hidden state in a layer. */
static guint
input_class (LmModuleKind kind)
{
  switch (kind)
    {
    case LM_MODULE_ATTN_Q:
    case LM_MODULE_ATTN_K:
    case LM_MODULE_ATTN_V:
      return 0;
    case LM_MODULE_ATTN_QKV:
    case LM_MODULE_ATTN_GATE:
    case LM_MODULE_SSM_ALPHA:
    case LM_MODULE_SSM_BETA:
      return 1;
    case LM_MODULE_FFN_GATE:
    case LM_MODULE_FFN_UP:
    case LM_MODULE_FFN_GATE_SHEXP:
    case LM_MODULE_FFN_UP_SHEXP:
      return 2;
    default:
      return 3 + (guint) kind;   /* reads its own input */
    }
}

static void
group_free (gpointer data)
{
  SessionGroup *g = data;

  ckks_gpu_helora_session_free (g->gpu);   /* wipes the key's device copy */
  if (g->inputs != NULL)
    ckks_helora_ciphertexts_free (g->inputs, g->n_inputs);
  g_array_unref (g->members);
  g_free (g->h);
  g_free (g->begun_h);
  g_free (g);
}

static guint
find_or_add_group (TsHeloraSession *self, GHashTable *by_key, const LmLoraModule *lm)
{
  guint key = lm->layer * 64 + input_class (lm->kind);
  gpointer found;
  SessionGroup *g;

  /* The same class with another d cannot share: give it its own group. */
  if (g_hash_table_lookup_extended (by_key, GUINT_TO_POINTER (key + 1), NULL, &found))
    {
      g = g_ptr_array_index (self->groups, GPOINTER_TO_UINT (found));
      if (g->d == lm->d_in)
        return GPOINTER_TO_UINT (found);
    }
  g = g_new0 (SessionGroup, 1);
  g->members = g_array_new (FALSE, FALSE, sizeof (guint));
  g->d = lm->d_in;
  g_ptr_array_add (self->groups, g);
  g_hash_table_insert (by_key, GUINT_TO_POINTER (key + 1), GUINT_TO_POINTER (self->groups->len - 1));
  return self->groups->len - 1;
}

/* A remote evaluator returns results in the complex packing, half as many
 * (the local evaluator packs its own); the adapter-private mode's flooding
 * is made for the real packing. */
static gboolean
remote_complex (const TsHeloraOptions *options)
{
  return options->mode == TS_HELORA_MODE_REMOTE && !options->private_mode
         && !options->real_packing;
}

/* A module's layout: the complex packing when asked for and the layout has
 * it (narrow layouts decode in full and have only the real one). */
static CkksStatus
module_layout (TsHeloraSession *self, const LmLoraModule *lm, CkksHeloraScales scales,
               gboolean complex_packing, CkksHeloraLayout **out)
{
  CkksStatus st = CKKS_ERR_UNSUPPORTED;

  if (complex_packing)
    st = ckks_helora_layout_new_packed (self->ctx, lm->d_in, lm->rank, scales,
                                        CKKS_HELORA_PACKING_COMPLEX, out);
  if (st == CKKS_ERR_UNSUPPORTED)
    st = ckks_helora_layout_new_scaled (self->ctx, lm->d_in, lm->rank, scales, out);
  return st;
}

/* Layouts of the mode: the private split when the evaluator floods. */
gboolean
_ts_helora_session_build_modules (TsHeloraSession *self, CkksHeloraScales scales,
                                  gboolean complex_packing, GError **error)
{
  g_autoptr (GHashTable) by_key = g_hash_table_new (NULL, NULL);

  g_array_set_size (self->modules, 0);
  g_ptr_array_set_size (self->groups, 0);
  /* asked for only where a module has it: narrow layouts keep the hello
   * any server takes */
  self->complex_packing = FALSE;
  for (gsize i = 0; i < lm_lora_n_modules (self->lora); i++)
    {
      SessionModule m = { .lm = lm_lora_module (self->lora, i) };
      SessionGroup *g;

      if (!ts_helora_ckks_check (module_layout (self, m.lm, scales, complex_packing, &m.layout),
                                 m.lm->name, error))
        return FALSE;
      if (ckks_helora_layout_packing (m.layout) == CKKS_HELORA_PACKING_COMPLEX)
        self->complex_packing = TRUE;
      m.n_outputs = ckks_helora_layout_n_outputs (m.layout);
      m.u_row = g_new0 (double, m.lm->rank);
      m.group = find_or_add_group (self, by_key, m.lm);
      g_array_append_val (self->modules, m);
      if (!ts_helora_ckks_check (ckks_helora_ciphertexts_new (m.layout, m.n_outputs,
                                                              &g_array_index (self->modules, SessionModule, i).outputs),
                                 m.lm->name, error))
        return FALSE;
      g = g_ptr_array_index (self->groups, m.group);
      g_array_append_val (g->members, i);
      if (g->inputs == NULL)
        {
          g->n_inputs = ckks_helora_layout_n_inputs (m.layout);
          if (!ts_helora_ckks_check (ckks_helora_ciphertexts_new (m.layout, g->n_inputs, &g->inputs),
                                     m.lm->name, error))
            return FALSE;
        }
    }
  return TRUE;
}

static void
module_clear (gpointer data)
{
  SessionModule *m = data;

  if (m->outputs != NULL)
    ckks_helora_ciphertexts_free (m->outputs, m->n_outputs);
  g_clear_pointer (&m->layout, ckks_helora_layout_free);
  g_free (m->u);
  g_free (m->u_row);
}

/* ---- setup ---- */

/* The vault's key, copied into this session's context through a sealed blob
 * under a one-time key, so the session does not depend on the vault's
 * lifetime. The copy's fingerprint check refuses another preset. */
static gboolean
copy_vault_key (TsHeloraSession *self, const TsKeyPair *pair, GError **error)
{
  guint8 once[32], *blob = NULL;
  gsize len = 0;
  CkksStatus st;

  if (RAND_priv_bytes (once, sizeof once) != 1)
    return ts_helora_ckks_check (CKKS_ERR_RANDOM, "Secret key", error);
  st = ckks_secret_key_seal (pair->sk, once, &blob, &len);
  if (st == CKKS_OK)
    st = ckks_secret_key_unseal (self->ctx, once, blob, len, &self->sk);
  OPENSSL_cleanse (once, sizeof once);
  if (blob != NULL)
    {
      OPENSSL_cleanse (blob, len);
      free (blob);
    }
  if (st != CKKS_OK)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                   "The key vault's key (preset %s) does not fit these parameters: %s",
                   pair->preset ? pair->preset : "?", ckks_status_message (st));
      return FALSE;
    }
  return TRUE;
}

static gboolean
make_keys (TsHeloraSession *self, const TsHeloraOptions *options, GError **error)
{
  CkksStatus st;

  if (options->key_pair != NULL)
    {
      if (!copy_vault_key (self, options->key_pair, error))
        return FALSE;
      st = CKKS_OK;
    }
  else
    st = options->sealed_key != NULL
      ? ckks_secret_key_unseal (self->ctx, options->unseal_key, options->sealed_key,
                                options->sealed_key_len, &self->sk)
      : ckks_secret_key_new (self->ctx, &self->sk);
  if (st == CKKS_ERR_AUTH || (st != CKKS_OK && options->sealed_key != NULL))
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                   "The sealed key does not open for these parameters: %s",
                   ckks_status_message (st));
      return FALSE;
    }
  if (!ts_helora_ckks_check (st, "Secret key", error))
    return FALSE;
  return !self->public_key
         || ts_helora_ckks_check (ckks_public_key_new (self->sk, &self->pk), "Public key", error);
}

static gboolean
build_local (TsHeloraSession *self, guint n_threads, GError **error)
{
  self->local = ts_helora_local_new (self->ctx, n_threads, error);
  if (self->local == NULL)
    return FALSE;
  for (guint i = 0; i < self->modules->len; i++)
    {
      SessionModule *m = &g_array_index (self->modules, SessionModule, i);
      if (!ts_helora_local_add_module (self->local, m->lm->d_in, m->lm->rank, m->lm->a,
                                       &m->local_index, error))
        return FALSE;
      m->local_layout = ts_helora_local_module_layout (self->local, m->local_index);
    }
  return TRUE;
}

#define TS_HELORA_AUTO_PRESET "auto"

/* "auto": the smallest ring the HE standard allows for the adapter's
 * widest input, since the encryption's cost grows with the ring and the
 * products' does not (the results hold as many rows either way). */
static char *
choose_preset (const LmLora *lora, const TsHeloraOptions *options)
{
  const char *named = options->params_preset != NULL ? options->params_preset
                      : options->key_pair != NULL ? options->key_pair->preset
                      : TS_HELORA_DEFAULT_PRESET;
  guint widest = 0;

  if (g_strcmp0 (named, TS_HELORA_AUTO_PRESET) != 0)
    return g_strdup (named);
  if (options->key_pair != NULL)
    return g_strdup (options->key_pair->preset);
  for (gsize i = 0; i < lm_lora_n_modules (lora); i++)
    widest = MAX (widest, lm_lora_module (lora, i)->d_in);
  return g_strdup (widest <= CKKS_PRESET_COMPACT_MAX_WIDTH ? CKKS_PRESET_COMPACT
                                                          : ckks_params_default_preset_name ());
}

TsHeloraSession *
ts_helora_session_new (const LmLora *lora, const TsHeloraOptions *options, GError **error)
{
  g_return_val_if_fail (lora != NULL, NULL);
  g_return_val_if_fail (options != NULL, NULL);

  g_autoptr (TsHeloraSession) self = g_new0 (TsHeloraSession, 1);

  self->mode = options->mode;
  self->backend = TS_HELORA_BACKEND_CPU;
  self->public_key = options->public_key;
  self->track_error = options->track_error;
  self->thread_clock = options->thread_clock && options->mode == TS_HELORA_MODE_LOCAL;
  self->lora = lora;
  self->modules = g_array_new (FALSE, TRUE, sizeof (SessionModule));
  g_array_set_clear_func (self->modules, module_clear);
  self->groups = g_ptr_array_new_with_free_func (group_free);
  g_mutex_init (&self->stats_lock);
  if (self->mode == TS_HELORA_MODE_PLAIN)
    return g_steal_pointer (&self);
  self->preset = choose_preset (lora, options);
  self->ctx = ts_helora_ckks_context_new (self->preset, error);
  if (self->ctx == NULL || !make_keys (self, options, error)
      || !_ts_helora_session_build_modules (self, options->private_mode
                                                    ? CKKS_HELORA_SCALES_PRIVACY
                                                    : CKKS_HELORA_SCALES_PLAIN,
                                            remote_complex (options), error))
    return NULL;
  if (!_ts_helora_session_choose_backend (self, options, error))
    return NULL;
  if (self->backend == TS_HELORA_BACKEND_CUDA)
    self->thread_clock = FALSE;   /* the GPU's stages are device time */
  else if (self->mode == TS_HELORA_MODE_LOCAL && !build_local (self, options->n_threads, error))
    return NULL;
  if (self->mode == TS_HELORA_MODE_REMOTE
      && !_ts_helora_session_hello (self, options, error))
    return NULL;
  return g_steal_pointer (&self);
}

void
ts_helora_session_free (TsHeloraSession *self)
{
  if (self == NULL)
    return;
  g_clear_pointer (&self->remote, ts_helora_remote_free);
  g_clear_pointer (&self->local, ts_helora_local_free);
  g_clear_pointer (&self->groups, g_ptr_array_unref);
  g_clear_pointer (&self->modules, g_array_unref);
  g_clear_pointer (&self->pk, ckks_public_key_free);
  g_clear_pointer (&self->sk, ckks_secret_key_free);   /* wipes the key */
  g_clear_pointer (&self->ctx, ckks_context_free);
  g_clear_error (&self->last_error);
  g_free (self->backend_reason);
  g_free (self->preset);
  g_mutex_clear (&self->stats_lock);
  g_free (self);
}

TsHeloraMode
ts_helora_session_mode (TsHeloraSession *self)
{
  return self->mode;
}

guint
ts_helora_session_n_inputs (TsHeloraSession *self)
{
  g_return_val_if_fail (self != NULL, 0);

  return self->groups->len;
}

void
ts_helora_session_get_stats (TsHeloraSession *self, TsHeloraStats *out)
{
  g_return_if_fail (self != NULL && out != NULL);

  g_mutex_lock (&self->stats_lock);
  *out = self->stats;
  g_mutex_unlock (&self->stats_lock);
}

void
ts_helora_session_reset_stats (TsHeloraSession *self)
{
  g_return_if_fail (self != NULL);

  g_mutex_lock (&self->stats_lock);
  memset (&self->stats, 0, sizeof self->stats);
  g_mutex_unlock (&self->stats_lock);
}

void
ts_helora_session_cancel (TsHeloraSession *self)
{
  g_return_if_fail (self != NULL);

  if (self->remote != NULL)
    ts_helora_remote_cancel (self->remote);
}

TsHeloraBackend
ts_helora_session_backend (TsHeloraSession *self)
{
  return self->backend;
}

const char *
ts_helora_session_backend_reason (TsHeloraSession *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->backend_reason;
}

const char *
ts_helora_session_preset (TsHeloraSession *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->preset;
}

const GError *
ts_helora_session_last_error (TsHeloraSession *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->last_error;
}

/* ---- one group, one call ---- */

gboolean
_ts_helora_session_encrypt_row (TsHeloraSession *self, SessionGroup *g, const float *h,
                                double *h_factor, GError **error)
{
  const SessionModule *first = &g_array_index (self->modules, SessionModule,
                                               g_array_index (g->members, guint, 0));
  CkksStatus st = self->pk != NULL
    ? ckks_helora_encrypt_pk (first->layout, self->pk, h, g->inputs,
                              ckks_helora_layout_n_inputs (first->layout), h_factor)
    : ckks_helora_encrypt_sk (first->layout, self->sk, h, g->inputs,
                              ckks_helora_layout_n_inputs (first->layout), h_factor);

  return ts_helora_ckks_check (st, "Encrypting h", error);
}

/* Δ_plain's and the error's maxima of one module's row, into the stats. */
static void
track_error (TsHeloraSession *self, const SessionModule *m, const float *h, const float *u)
{
  TsHeloraDeltaError e;

  ts_helora_delta_error (m->lm, h, u, &e);
  g_mutex_lock (&self->stats_lock);
  self->stats.max_abs_delta_error = fmax (self->stats.max_abs_delta_error, e.max_abs_error);
  self->stats.max_abs_delta_plain = fmax (self->stats.max_abs_delta_plain, e.max_abs_plain);
  g_mutex_unlock (&self->stats_lock);
}

gboolean
_ts_helora_session_decrypt_row (TsHeloraSession *self, SessionGroup *g, guint row,
                                double h_factor, GError **error)
{
  for (guint i = 0; i < g->members->len; i++)
    {
      SessionModule *m = &g_array_index (self->modules, SessionModule,
                                         g_array_index (g->members, guint, i));
      float *u = m->u + (gsize) row * m->lm->rank;

      if (!ts_helora_ckks_check (ckks_helora_decrypt (m->layout, self->sk, m->outputs,
                                                      ckks_helora_layout_n_outputs (m->layout),
                                                      h_factor, m->u_row),
                                 "Decrypting u", error))
        return FALSE;
      for (guint k = 0; k < m->lm->rank; k++)
        u[k] = (float) m->u_row[k];
    }
  return TRUE;
}

/* Outside every timed stage: a measurement, not part of the pipeline. */
static void
track_group_error (TsHeloraSession *self, SessionGroup *g, guint rows, const float *h)
{
  for (guint row = 0; self->track_error && row < rows; row++)
    for (guint i = 0; i < g->members->len; i++)
      {
        SessionModule *m = &g_array_index (self->modules, SessionModule,
                                           g_array_index (g->members, guint, i));
        track_error (self, m, h + (gsize) row * g->d, m->u + (gsize) row * m->lm->rank);
      }
}

/* The clock of the HE stages: wall time, or this thread's CPU time when the
 * session was asked to (benchmarks on a shared machine). */
static double
now_ms (TsHeloraSession *self)
{
  struct timespec ts;

  if (!self->thread_clock)
    return lm_time_ms ();
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* Local mode: the bytes one row would send to a remote evaluator and get
 * back (the serialised forms ts-helora-ckks.c writes). */
void
_ts_helora_session_count_local_bytes (TsHeloraSession *self, SessionGroup *g)
{
  guint64 up = 0, down = 0;

  for (guint k = 0; k < g->n_inputs; k++)
    up += ckks_ciphertext_serialized_size (g->inputs[k]);
  for (guint i = 0; i < g->members->len; i++)
    {
      SessionModule *m = &g_array_index (self->modules, SessionModule,
                                         g_array_index (g->members, guint, i));
      const CkksHeloraLayout *layout = m->local_layout != NULL ? m->local_layout : m->layout;
      gsize compact = ckks_helora_result_serialized_size (layout);
      gsize n_results = ckks_helora_layout_n_outputs (layout);

      for (guint k = 0; k < n_results; k++)
        down += compact > 0 ? compact : ckks_ciphertext_serialized_size (m->outputs[k]);
    }
  g_mutex_lock (&self->stats_lock);
  self->stats.ct_bytes_up += up;
  self->stats.ct_bytes_down += down;
  g_mutex_unlock (&self->stats_lock);
}

/* One local row's products and decryptions, spread over the evaluator's
 * threads: each thread decrypts the results it has just evaluated. */
typedef struct {
  TsHeloraSession *self;
  SessionGroup *g;
  double h_factor;
  GMutex lock;
  double eval_ms, decrypt_ms;   /* summed over the threads */
} LocalRow;

static double
local_row_now_ms (gpointer user_data)
{
  LocalRow *row = user_data;

  return now_ms (row->self);
}

static CkksStatus
local_row_ready (guint i, guint b, CkksCiphertext *const *results, guint n_results,
                 double eval_ms, gpointer user_data)
{
  LocalRow *row = user_data;
  SessionModule *m = &g_array_index (row->self->modules, SessionModule,
                                     g_array_index (row->g->members, guint, i));
  double t0 = now_ms (row->self);
  CkksStatus st = ckks_helora_decrypt_part (m->local_layout, row->self->sk, results, n_results, b, 1,
                                            row->h_factor, m->u_row);
  double decrypt_ms = now_ms (row->self) - t0;

  g_mutex_lock (&row->lock);
  row->eval_ms += eval_ms;
  row->decrypt_ms += decrypt_ms;
  g_mutex_unlock (&row->lock);
  return st;
}

static gboolean
evaluate_decrypt_local (TsHeloraSession *self, LocalRow *row, LmThreadPool *threads,
                        GError **error)
{
  SessionGroup *g = row->g;
  guint n = g->members->len;
  g_autofree guint *indices = g_new (guint, n);
  TsHeloraLocalResults results = { local_row_now_ms, local_row_ready, row };

  for (guint i = 0; i < n; i++)
    {
      SessionModule *m = &g_array_index (self->modules, SessionModule,
                                         g_array_index (g->members, guint, i));
      indices[i] = m->local_index;
    }
  return ts_helora_local_evaluate (self->local, indices, n, g->inputs, &results, threads, error);
}

/* The stages of a row whose products and decryptions overlapped on several
 * threads: their CPU times on the thread clock; on the wall clock, the
 * wall time of the two together, shared out in proportion to those sums. */
static void
add_local_row_timings (TsHeloraSession *self, const LmLoraHookCall *call, const LocalRow *row,
                       double wall_ms)
{
  double busy = row->eval_ms + row->decrypt_ms;
  double eval_share = busy > 0 ? row->eval_ms / busy : 0.5;

  if (self->thread_clock)
    {
      lm_timings_add (call->timings, LM_STAGE_EVALUATE, row->eval_ms);
      lm_timings_add (call->timings, LM_STAGE_DECRYPT, row->decrypt_ms);
      return;
    }
  lm_timings_add (call->timings, LM_STAGE_EVALUATE, wall_ms * eval_share);
  lm_timings_add (call->timings, LM_STAGE_DECRYPT, wall_ms * (1 - eval_share));
}

gboolean
_ts_helora_session_take_begun (TsHeloraSession *self, SessionGroup *g, const LmLoraHookCall *call,
                               const float *h, double *h_factor)
{
  gboolean begun = g->begun_valid && call->n_tokens == 1
                   && memcmp (g->begun_h, h, (gsize) g->d * sizeof *h) == 0;

  g->begun_valid = FALSE;
  if (!begun)
    return FALSE;
  *h_factor = g->begun_factor;
  g_mutex_lock (&self->stats_lock);
  self->stats.encryptions_begun++;
  g_mutex_unlock (&self->stats_lock);
  return TRUE;
}

/* Local mode: encrypt (unless the begin hook did), then evaluate and
 * decrypt on the pool, one row at a time. */
static gboolean
compute_row_local (TsHeloraSession *self, SessionGroup *g, const LmLoraHookCall *call,
                   guint row, const float *h, GError **error)
{
  LocalRow local = { self, g, 1 };
  double t0 = now_ms (self), t1;
  gboolean ok;

  if (!_ts_helora_session_take_begun (self, g, call, h, &local.h_factor)
      && !_ts_helora_session_encrypt_row (self, g, h, &local.h_factor, error))
    return FALSE;
  t1 = now_ms (self);
  lm_timings_add (call->timings, LM_STAGE_ENCRYPT, t1 - t0);
  g_mutex_init (&local.lock);
  ok = evaluate_decrypt_local (self, &local, call->pool, error);
  g_mutex_clear (&local.lock);
  if (!ok)
    return FALSE;
  add_local_row_timings (self, call, &local, now_ms (self) - t1);
  for (guint i = 0; i < g->members->len; i++)
    {
      SessionModule *m = &g_array_index (self->modules, SessionModule,
                                         g_array_index (g->members, guint, i));
      float *u = m->u + (gsize) row * m->lm->rank;
      for (guint k = 0; k < m->lm->rank; k++)
        u[k] = (float) m->u_row[k];
    }
  _ts_helora_session_count_local_bytes (self, g);
  return TRUE;
}

static void
reserve_rows (TsHeloraSession *self, SessionGroup *g, guint rows)
{
  if (rows <= g->capacity_rows)
    return;
  g->h = g_renew (float, g->h, (gsize) rows * g->d);
  for (guint i = 0; i < g->members->len; i++)
    {
      SessionModule *m = &g_array_index (self->modules, SessionModule,
                                         g_array_index (g->members, guint, i));
      m->u = g_renew (float, m->u, (gsize) rows * m->lm->rank);
    }
  g->capacity_rows = rows;
}

static gboolean
compute_group (TsHeloraSession *self, SessionGroup *g, const LmLoraHookCall *call,
               const float *h, GError **error)
{
  double t0 = now_ms (self);

  reserve_rows (self, g, call->n_tokens);
  g->cached_rows = 0;
  if (self->mode == TS_HELORA_MODE_REMOTE)
    {
      if (!_ts_helora_session_remote_rows (self, g, call, h, error))
        return FALSE;
    }
  else if (g->gpu != NULL)
    {
      if (!_ts_helora_session_gpu_rows (self, g, call, h, error))
        return FALSE;
    }
  else
    for (guint row = 0; row < call->n_tokens; row++)
      if (!compute_row_local (self, g, call, row, h + (gsize) row * g->d, error))
        return FALSE;
  memcpy (g->h, h, (gsize) call->n_tokens * g->d * sizeof (float));
  g->cached_rows = call->n_tokens;
  g_mutex_lock (&self->stats_lock);
  self->stats.encryptions += call->n_tokens;
  self->stats.module_evaluations += (guint64) call->n_tokens * g->members->len;
  self->stats.he_ms += now_ms (self) - t0;
  g_mutex_unlock (&self->stats_lock);
  track_group_error (self, g, call->n_tokens, h);
  return TRUE;
}

/* The engine's hook: u = A·h for call->n_tokens rows. The first module of a
 * group computes every member's u; the others find h unchanged and copy. */
static LmStatus
hook_cb (const LmLoraHookCall *call, const float *h, float *u, void *user_data)
{
  TsHeloraSession *self = user_data;
  SessionModule *m = &g_array_index (self->modules, SessionModule, call->module_index);
  SessionGroup *g = g_ptr_array_index (self->groups, m->group);
  gsize h_bytes = (gsize) call->n_tokens * g->d * sizeof (float);

  self->host_hook_calls++;
  if (g->cached_rows != call->n_tokens || memcmp (g->h, h, h_bytes) != 0)
    {
      g_clear_error (&self->last_error);
      if (!compute_group (self, g, call, h, &self->last_error))
        return LM_ERR_HOOK;
    }
  memcpy (u, m->u, (gsize) call->n_tokens * m->lm->rank * sizeof (float));
  return LM_OK;
}

/* The engine's begin hook (local and remote mode): encrypts a decode step's h while
 * the engine's other threads compute the module's own product, so that
 * the hook proper has only the products and decryptions left. A group's
 * first module does it; the others find it done, or u already cached. */
static LmStatus
begin_cb (const LmLoraHookCall *call, const float *h, void *user_data)
{
  TsHeloraSession *self = user_data;
  SessionModule *m = &g_array_index (self->modules, SessionModule, call->module_index);
  SessionGroup *g = g_ptr_array_index (self->groups, m->group);
  gsize h_bytes = (gsize) g->d * sizeof *h;
  double t0, ms;

  if ((g->cached_rows == 1 && memcmp (g->h, h, h_bytes) == 0)
      || (g->begun_valid && memcmp (g->begun_h, h, h_bytes) == 0))
    return LM_OK;
  g->begun_valid = FALSE;
  if (g->begun_h == NULL)
    g->begun_h = g_new (float, g->d);
  t0 = now_ms (self);
  g_clear_error (&self->last_error);
  if (!_ts_helora_session_encrypt_row (self, g, h, &g->begun_factor, &self->last_error))
    return LM_ERR_HOOK;
  ms = now_ms (self) - t0;
  lm_timings_add (call->timings, LM_STAGE_ENCRYPT, ms);
  g_mutex_lock (&self->stats_lock);
  self->stats.he_ms += ms;
  g_mutex_unlock (&self->stats_lock);
  memcpy (g->begun_h, h, h_bytes);
  g->begun_valid = TRUE;
  return LM_OK;
}

/* Begin hooks only where the hook proper would encrypt on the CPU: local
 * and remote mode (which then sends in the hook proper). */
static LmStatus
set_begin_hooks (TsHeloraSession *self, LmSession *lm)
{
  if (self->mode != TS_HELORA_MODE_LOCAL && self->mode != TS_HELORA_MODE_REMOTE)
    return LM_OK;
  for (guint i = 0; i < self->groups->len; i++)
    if (((SessionGroup *) g_ptr_array_index (self->groups, i))->gpu != NULL)
      return LM_OK;
  return lm_session_set_lora_begin_hook (lm, LM_LORA_ALL_MODULES, begin_cb, self);
}

gboolean
ts_helora_session_attach (TsHeloraSession *self, LmSession *lm, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  if (self->mode == TS_HELORA_MODE_PLAIN)
    return TRUE;
  for (guint i = 0; i < self->modules->len; i++)
    {
      LmStatus st = lm_session_set_lora_hook (lm, i, hook_cb, self);
      if (st != LM_OK)
        {
          g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL,
                       "Cannot route LoRA module %u through HE: %s", i, lm_status_message (st));
          return FALSE;
        }
    }
  if (set_begin_hooks (self, lm) != LM_OK)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL,
                   "Cannot set the LoRA modules' begin hooks");
      return FALSE;
    }
  return _ts_helora_session_gpu_attach (self, lm, error);
}

TsHeloraSession *
ts_helora_attach (LmSession *lm, const LmLora *lora, const char *lora_path,
                  const char *mode_text, const char *params_preset, GError **error)
{
  g_return_val_if_fail (lm != NULL, NULL);
  g_return_val_if_fail (lora != NULL, NULL);
  g_return_val_if_fail (mode_text != NULL, NULL);

  TsHeloraOptions options = { .params_preset = params_preset };

  return ts_helora_attach_with (lm, lora, lora_path, mode_text, &options, error);
}

TsHeloraSession *
ts_helora_attach_with (LmSession *lm, const LmLora *lora, const char *lora_path,
                       const char *mode_text, const TsHeloraOptions *base, GError **error)
{
  g_return_val_if_fail (base != NULL, NULL);

  TsHeloraOptions options = *base;
  g_autoptr (TsHeloraSession) self = NULL;

  options.adapter_path = lora_path;
  options.track_error = TRUE;
  if (!ts_helora_mode_parse (mode_text, &options, error))
    return NULL;
  if (options.private_mode && options.mode != TS_HELORA_MODE_REMOTE)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                   "The adapter-private mode needs a remote evaluator (ws://HOST:PORT)");
      return NULL;
    }
  if (lora == NULL)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED, "HE-LoRA needs an adapter (--lora)");
      return NULL;
    }
  self = ts_helora_session_new (lora, &options, error);
  if (self == NULL || !ts_helora_session_attach (self, lm, error))
    return NULL;
  return g_steal_pointer (&self);
}

char *
ts_helora_session_summary (TsHeloraSession *self)
{
  static const char *const names[] = { "plain", "local", "remote" };
  TsHeloraStats st;
  g_autofree char *line = NULL;

  g_return_val_if_fail (self != NULL, NULL);

  ts_helora_session_get_stats (self, &st);
  line = g_strdup_printf ("he %s (%s encryption%s): %" G_GUINT64_FORMAT " encryptions, %" G_GUINT64_FORMAT
                          " module evaluations, %.1f ms, %" G_GUINT64_FORMAT " bytes up, %"
                          G_GUINT64_FORMAT " bytes down, max |delta_he - delta_plain| %.3g"
                          " (max |delta_plain| %.3g)",
                          names[self->mode],
                          self->mode == TS_HELORA_MODE_PLAIN ? "no"
                          : self->public_key ? "public-key" : "secret-key",
                          self->mode != TS_HELORA_MODE_LOCAL ? ""
                          : self->backend == TS_HELORA_BACKEND_CUDA ? ", on the GPU" : ", on the CPU",
                          st.encryptions, st.module_evaluations, st.he_ms,
                          st.bytes_up, st.bytes_down, st.max_abs_delta_error,
                          st.max_abs_delta_plain);
  if (self->mode != TS_HELORA_MODE_REMOTE)
    return g_steal_pointer (&line);
  return g_strdup_printf ("%s, %" G_GUINT64_FORMAT " answers applied, %u reconnects (%"
                          G_GUINT64_FORMAT " requests resent, longest recovery %.0f ms)",
                          line, st.answers_applied, st.reconnects, st.requests_resent,
                          st.max_recovery_ms);
}
