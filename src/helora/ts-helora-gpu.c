/* ts-helora-gpu.c: the GPU backend of local HE-LoRA: one GPU session per group of modules.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Why one GPU session per group (the modules of a layer reading one h) and
 * not one per layer or per adapter: ckks_gpu_helora_session_run takes every
 * input group's h at once, but the engine's hook hands over one group's h
 * at a time (a layer's attention input, then, after attention, its FFN
 * input), so a session can only span what one hook call evaluates. The
 * price is one copy of the key and of the NTT tables per group on the
 * device (about 2 MiB at N = 16384), next to the plaintexts every backend
 * needs anyway.
 *
 * When the engine session runs on the GPU too, every module also gets the
 * engine's device hook (_ts_helora_session_gpu_attach): h is read from the
 * engine's device memory and u written back there, ordered on the engine's
 * stream by CUDA events, with no host copy and no host wait. The first
 * member of a group to be called runs the token for all; the others copy
 * their rows. The device's stage times of a token are read at the group's
 * next call (its events are complete by then) and land in that call's
 * timings.
 */
#include <string.h>

#include "ckks-gpu.h"
#include "ts-helora-ckks.h"
#include "ts-helora-session-private.h"

/* A GPU that failed mid-reply is not tried again by auto in this process:
 * its context may be unusable, and the next reply must work. */
static GMutex failure_lock;
static char *failure_reason;

void
_ts_helora_gpu_mark_failed (const char *reason)
{
  g_mutex_lock (&failure_lock);
  if (failure_reason == NULL)
    failure_reason = g_strdup (reason);
  g_mutex_unlock (&failure_lock);
}

static char *
earlier_failure (void)
{
  char *reason;

  g_mutex_lock (&failure_lock);
  reason = g_strdup (failure_reason);
  g_mutex_unlock (&failure_lock);
  return reason;
}

/* Says why the GPU is not used, once per process and reason. */
static void
log_once (const char *reason)
{
  static GMutex lock;
  static GHashTable *said;
  gboolean fresh;

  g_mutex_lock (&lock);
  if (said == NULL)
    said = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  fresh = g_hash_table_add (said, g_strdup (reason));
  g_mutex_unlock (&lock);
  if (fresh)
    g_message ("HE-LoRA does not use the GPU: %s", reason);
}

/* Why local mode cannot use the GPU before trying it, or NULL. */
static char *
local_obstacle (const TsHeloraOptions *options)
{
  char why[256] = "";
  char *failed;

  if (options->public_key)
    return g_strdup ("the GPU backend encrypts with the secret key only; "
                     "public-key encryption runs on the CPU");
  failed = earlier_failure ();
  if (failed != NULL)
    {
      char *reason = g_strdup_printf ("the GPU failed earlier in this process (%s)", failed);

      g_free (failed);
      return reason;
    }
  if (!ckks_gpu_available (why, sizeof why))
    return g_strdup (why[0] != '\0' ? why : "no usable GPU");
  return NULL;
}

static void
free_gpu_sessions (TsHeloraSession *self)
{
  for (guint i = 0; i < self->groups->len; i++)
    {
      SessionGroup *g = g_ptr_array_index (self->groups, i);

      g_clear_pointer (&g->gpu, ckks_gpu_helora_session_free);
    }
}

/* The ciphertexts of h as the CPU's secret-key encryption leaves them (the
 * seeded form), so the bytes counted per row are the same on both backends. */
static gboolean
shape_inputs (TsHeloraSession *self, SessionGroup *g, GError **error)
{
  g_autofree float *zero = g_new0 (float, g->d);
  double h_factor = 1;

  return _ts_helora_session_encrypt_row (self, g, zero, &h_factor, error);
}

/* The GPU session of one group; FALSE with @why (newly allocated). */
static gboolean
build_group (TsHeloraSession *self, SessionGroup *g, char **why)
{
  guint n = g->members->len;
  g_autofree CkksHeloraPlan **plans = g_new0 (CkksHeloraPlan *, n);
  char text[256] = "";
  CkksStatus st = CKKS_OK;

  for (guint i = 0; i < n && st == CKKS_OK; i++)
    {
      const SessionModule *m = &g_array_index (self->modules, SessionModule,
                                               g_array_index (g->members, guint, i));
      st = ckks_helora_plan_new (self->ctx, m->lm->d_in, m->lm->rank, m->lm->a, &plans[i]);
    }
  if (st == CKKS_OK)
    st = ckks_gpu_helora_session_new (self->sk, (const CkksHeloraPlan *const *) plans, n,
                                      &g->gpu, text, sizeof text);
  for (guint i = 0; i < n; i++)
    ckks_helora_plan_free (plans[i]);
  if (st == CKKS_OK && ckks_gpu_helora_session_n_groups (g->gpu) != 1)
    {
      g_clear_pointer (&g->gpu, ckks_gpu_helora_session_free);
      *why = g_strdup ("the modules reading one input need different input layouts");
      return FALSE;
    }
  if (st != CKKS_OK)
    {
      *why = text[0] != '\0' ? g_strdup (text) : g_strdup (ckks_status_message (st));
      return FALSE;
    }
  return TRUE;
}

static gboolean
build_gpu (TsHeloraSession *self, char **why, GError **error)
{
  for (guint i = 0; i < self->groups->len; i++)
    {
      SessionGroup *g = g_ptr_array_index (self->groups, i);
      const SessionModule *first = &g_array_index (self->modules, SessionModule,
                                                   g_array_index (g->members, guint, 0));

      if (!build_group (self, g, why))
        {
          char *detail = g_strdup_printf ("module %s: %s", first->lm->name, *why);

          g_free (*why);
          *why = detail;
          free_gpu_sessions (self);
          return TRUE;
        }
      if (!shape_inputs (self, g, error))
        return FALSE;
    }
  return TRUE;
}

static gboolean
choose_remote (TsHeloraSession *self, const TsHeloraOptions *options)
{
  if (options->backend == TS_HELORA_BACKEND_CUDA || ckks_gpu_available (NULL, 0))
    {
      self->backend_reason = g_strdup ("the GPU backend evaluates local HE-LoRA only; "
                                       "the remote evaluator computes the products");
      log_once (self->backend_reason);
    }
  return TRUE;
}

gboolean
_ts_helora_session_choose_backend (TsHeloraSession *self, const TsHeloraOptions *options,
                                   GError **error)
{
  g_autofree char *why = NULL;

  /* A session chooses again when it is reused for another reply. */
  self->backend = TS_HELORA_BACKEND_CPU;
  g_clear_pointer (&self->backend_reason, g_free);
  if (options->backend == TS_HELORA_BACKEND_CPU)
    return TRUE;
  if (self->mode == TS_HELORA_MODE_REMOTE)
    return choose_remote (self, options);
  if (self->mode != TS_HELORA_MODE_LOCAL)
    return TRUE;
  why = local_obstacle (options);
  if (why == NULL)
    {
      if (!build_gpu (self, &why, error))
        {
          free_gpu_sessions (self);
          return FALSE;
        }
      if (why == NULL)
        {
          self->backend = TS_HELORA_BACKEND_CUDA;
          g_info ("HE-LoRA on the GPU: %u sessions for %u modules", self->groups->len,
                  self->modules->len);
          return TRUE;
        }
    }
  if (options->backend == TS_HELORA_BACKEND_CUDA)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE,
                   "HE-LoRA cannot run on the GPU: %s", why);
      return FALSE;
    }
  /* Without an NVIDIA driver the computer has no GPU, so there is nothing
   * to explain (a chat pane would say it under every reply); the reason
   * is logged once all the same. */
  log_once (why);
  if (ckks_gpu_driver_present ())
    self->backend_reason = g_steal_pointer (&why);
  return TRUE;
}

/* The device's stages onto the engine's; what the host adds around them
 * (staging h, launching the graph, waiting) counts as upload. */
static void
add_timings (LmTimings *timings, const CkksGpuHeloraTimings *t, double wall_ms)
{
  const struct {
    LmStage stage;
    double us;
  } stages[] = {
    { LM_STAGE_UPLOAD, t->h2d_us },
    { LM_STAGE_ENCRYPT, t->encrypt_us },
    { LM_STAGE_EVALUATE, t->evaluate_us },
    { LM_STAGE_DECRYPT, t->decrypt_us },
    { LM_STAGE_DOWNLOAD, t->d2h_us },
  };
  double device_ms = 0;

  for (gsize i = 0; i < G_N_ELEMENTS (stages); i++)
    if (stages[i].us >= 0)
      {
        lm_timings_add (timings, stages[i].stage, stages[i].us * 1e-3);
        device_ms += stages[i].us * 1e-3;
      }
  if (wall_ms > device_ms)
    lm_timings_add (timings, LM_STAGE_UPLOAD, wall_ms - device_ms);
}

static gboolean
gpu_failed (CkksStatus st, GError **error)
{
  if (st != CKKS_ERR_DEVICE)
    return ts_helora_ckks_check (st, "Evaluating on the GPU", error);
  _ts_helora_gpu_mark_failed (ckks_status_message (st));
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE,
               "The GPU failed while evaluating the adapter (%s); the next reply runs on "
               "the CPU", ckks_status_message (st));
  return FALSE;
}

gboolean
_ts_helora_session_gpu_rows (TsHeloraSession *self, SessionGroup *g,
                             const LmLoraHookCall *call, const float *h, GError **error)
{
  guint n = g->members->len;
  g_autofree double **u = g_new (double *, n);

  for (guint i = 0; i < n; i++)
    u[i] = g_array_index (self->modules, SessionModule,
                          g_array_index (g->members, guint, i)).u_row;
  for (guint row = 0; row < call->n_tokens; row++)
    {
      const float *h_row = h + (gsize) row * g->d;
      CkksGpuHeloraTimings t;
      double t0 = lm_time_ms ();
      CkksStatus st = ckks_gpu_helora_session_run (g->gpu, &h_row, 1, u, n, &t);

      if (st != CKKS_OK)
        return gpu_failed (st, error);
      add_timings (call->timings, &t, lm_time_ms () - t0);
      for (guint i = 0; i < n; i++)
        {
          SessionModule *m = &g_array_index (self->modules, SessionModule,
                                             g_array_index (g->members, guint, i));
          for (guint k = 0; k < m->lm->rank; k++)
            m->u[(gsize) row * m->lm->rank + k] = (float) m->u_row[k];
        }
      _ts_helora_session_count_local_bytes (self, g);
    }
  return TRUE;
}

/* ---- the engine's device hook: h and u in GPU memory ---- */

static guint
member_of (SessionGroup *g, guint module_index)
{
  for (guint i = 0; i < g->members->len; i++)
    if (g_array_index (g->members, guint, i) == module_index)
      return i;
  g_return_val_if_reached (0);
}

/* Whether this call needs a new token: a different h or call, or a member
 * that already took the current rows (the same position again after a
 * rewind). The engine hands a group's members one device buffer of h. */
static gboolean
device_rows_stale (SessionGroup *g, const LmLoraHookCall *call, const float *h_dev, guint member)
{
  return g->dev_h != h_dev || g->dev_pos != call->pos || g->dev_rows != call->n_tokens
         || member >= 64 || (g->dev_served & ((guint64) 1 << member)) != 0;
}

/* The previous token's stages: its events are complete once the engine
 * waited for its step, which it does before the next call. */
static void
collect_device_timings (SessionGroup *g, LmTimings *timings)
{
  CkksGpuHeloraTimings t;

  if (g->dev_timings_pending && ckks_gpu_helora_session_device_timings (g->gpu, &t) == CKKS_OK)
    add_timings (timings, &t, 0);
  g->dev_timings_pending = FALSE;
}

static gboolean
compute_group_device (TsHeloraSession *self, SessionGroup *g, const LmLoraHookCall *call,
                      const float *h_dev, void *stream, GError **error)
{
  double t0 = lm_time_ms (), ms;
  CkksStatus st;

  collect_device_timings (g, call->timings);
  g->dev_h = NULL;
  st = ckks_gpu_helora_session_reserve_rows (g->gpu, call->n_tokens);
  for (guint row = 0; st == CKKS_OK && row < call->n_tokens; row++)
    {
      const float *h_row = h_dev + (gsize) row * g->d;

      st = ckks_gpu_helora_session_run_device (g->gpu, &h_row, 1, row, stream);
      if (st == CKKS_OK)
        _ts_helora_session_count_local_bytes (self, g);
    }
  if (st != CKKS_OK)
    return gpu_failed (st, error);
  g->dev_h = h_dev;
  g->dev_pos = call->pos;
  g->dev_rows = call->n_tokens;
  g->dev_served = 0;
  g->dev_timings_pending = TRUE;
  /* the host's part: enqueueing (the device's stages come with the next
   * call, see collect_device_timings) */
  ms = lm_time_ms () - t0;
  lm_timings_add (call->timings, LM_STAGE_UPLOAD, ms);
  g_mutex_lock (&self->stats_lock);
  self->stats.encryptions += call->n_tokens;
  self->stats.module_evaluations += (guint64) call->n_tokens * g->members->len;
  self->stats.he_ms += ms;
  g_mutex_unlock (&self->stats_lock);
  return TRUE;
}

/* u = A·h with h in the engine's device memory: the first member of a group
 * runs the token for every member (on the GPU session's stream, ordered
 * after the engine's work), each member copies its rows of u into @u_dev
 * on the engine's stream. Nothing waits for the GPU here. */
static LmStatus
device_hook_cb (const LmLoraHookCall *call, const float *h_dev, float *u_dev, void *stream,
                void *user_data)
{
  TsHeloraSession *self = user_data;
  SessionModule *m = &g_array_index (self->modules, SessionModule, call->module_index);
  SessionGroup *g = g_ptr_array_index (self->groups, m->group);
  guint member = member_of (g, (guint) call->module_index);

  self->device_hook_calls++;
  if (device_rows_stale (g, call, h_dev, member))
    {
      g_clear_error (&self->last_error);
      if (!compute_group_device (self, g, call, h_dev, stream, &self->last_error))
        return LM_ERR_HOOK;
    }
  if (member < 64)
    g->dev_served |= (guint64) 1 << member;
  if (ckks_gpu_helora_session_copy_u (g->gpu, member, 0, call->n_tokens, u_dev, stream)
      != CKKS_OK)
    {
      g_clear_error (&self->last_error);
      gpu_failed (CKKS_ERR_DEVICE, &self->last_error);
      return LM_ERR_HOOK;
    }
  return LM_OK;
}

gboolean
_ts_helora_session_gpu_attach (TsHeloraSession *self, LmSession *lm, GError **error)
{
  /* error tracking compares u with the plain A h on the host: keep h there */
  if (self->backend != TS_HELORA_BACKEND_CUDA || self->track_error
      || g_strcmp0 (lm_session_backend_name (lm), "cuda") != 0)
    return TRUE;
  for (guint i = 0; i < self->groups->len; i++)
    {
      SessionGroup *g = g_ptr_array_index (self->groups, i);

      g->dev_h = NULL;
      g->dev_timings_pending = FALSE;
    }
  if (lm_session_set_lora_device_hook (lm, LM_LORA_ALL_MODULES, device_hook_cb, self) != LM_OK)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_INTERNAL,
                   "Cannot route the LoRA modules through HE on the GPU");
      return FALSE;
    }
  g_info ("HE-LoRA reads h from the engine's GPU memory");
  return TRUE;
}
