/* ts-helora-session-remote.c: the session's remote evaluator: hello and evaluate round trips.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ts-helora-ckks.h"
#include "ts-helora-evaluator.h"
#include "ts-helora-session-private.h"

static char *
module_base_name (const char *name)
{
  return g_str_has_suffix (name, ".weight") ? g_strndup (name, strlen (name) - 7) : g_strdup (name);
}

/* A stack names every adapter by id and hash, with its weight. One adapter
 * "stacked" alone is that adapter: its weight only scales B, which stays here. */
static gboolean
fill_stack (TsHeloraHello *hello, const TsHeloraOptions *options, GError **error)
{
  if (options->n_stacked > TS_HELORA_MAX_STACK)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED,
                   "A remote evaluator stacks at most %d adapters", TS_HELORA_MAX_STACK);
      return FALSE;
    }
  for (guint i = 0; i < options->n_stacked; i++)
    {
      g_autofree char *id = ts_helora_adapter_id (options->stacked_paths[i]);
      guint8 sha[TS_HELORA_HASH_SIZE];

      if (!ts_helora_adapter_sha256 (options->stacked_paths[i], sha, error))
        return FALSE;
      ts_helora_hello_add_stacked (hello, id, sha, options->stacked_weights[i]);
    }
  return TRUE;
}

static gboolean
fill_hello (TsHeloraSession *self, TsHeloraHello *hello, const TsHeloraOptions *options,
            GError **error)
{
  const char *adapter_path = options->n_stacked > 0 ? options->stacked_paths[0]
                                                    : options->adapter_path;

  if (adapter_path == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER,
                   "Remote HE-LoRA needs the adapter's path (its id and hash)");
      return FALSE;
    }
  if (options->n_stacked > 1 && !fill_stack (hello, options, error))
    return FALSE;
  if (options->n_stacked <= 1
      && !ts_helora_adapter_sha256 (adapter_path, hello->adapter_sha256, error))
    return FALSE;
  if (hello->adapter_id == NULL)
    hello->adapter_id = ts_helora_adapter_id (adapter_path);
  hello->params_id = g_strdup (self->preset);
  hello->complex_packing = self->complex_packing;
  memcpy (hello->params_sha256, ckks_context_fingerprint (self->ctx), TS_HELORA_HASH_SIZE);
  for (guint i = 0; i < self->modules->len; i++)
    g_ptr_array_add (hello->modules,
                     module_base_name (g_array_index (self->modules, SessionModule, i).lm->name));
  return TRUE;
}

/* The server must see the same shapes we packed for. */
static gboolean
check_ack (TsHeloraSession *self, const TsHeloraHelloAck *ack, GError **error)
{
  if (ack->modules->len != self->modules->len)
    goto mismatch;
  for (guint i = 0; i < self->modules->len; i++)
    {
      SessionModule *m = &g_array_index (self->modules, SessionModule, i);
      const TsHeloraModuleShape *s = &g_array_index (ack->modules, TsHeloraModuleShape, i);
      if (s->d_in != m->lm->d_in || s->rank != m->lm->rank || s->n_results != m->n_outputs)
        goto mismatch;
      m->remote_index = (guint16) i;
    }
  self->max_in_flight = MAX (ack->max_in_flight, 1);
  return TRUE;
mismatch:
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_MODULE,
               "The evaluator's adapter modules differ from ours");
  return FALSE;
}

static guint
reconnect_tries (const TsHeloraOptions *options)
{
  if (options->reconnect_tries < 0)
    return 0;
  return options->reconnect_tries > 0 ? (guint) options->reconnect_tries
                                      : TS_HELORA_REMOTE_DEFAULT_RECONNECTS;
}

/* A server that predates the complex packing refuses its flag as malformed:
 * then the layouts go back to the real packing for a second hello. */
static gboolean
refused_complex (TsHeloraSession *self, const GError *hello_error)
{
  if (!self->complex_packing
      || !g_error_matches (hello_error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED))
    return FALSE;
  g_info ("The HE-LoRA evaluator does not take the complex packing (%s); "
          "asking for the real one", hello_error->message);
  return TRUE;
}

static TsHeloraFrame *
connect_and_hello (TsHeloraSession *self, const TsHeloraOptions *options, GError **error)
{
  g_autoptr (TsHeloraFrame) hello = ts_helora_frame_new (TS_HELORA_FRAME_HELLO, 0);

  if (!fill_hello (self, &hello->u.hello, options, error)
      || !_ts_helora_session_private_request (self, options, &hello->u.hello, error))
    return NULL;
  g_clear_pointer (&self->remote, ts_helora_remote_free);
  self->remote = ts_helora_remote_connect_retrying (options->remote_url, options->timeout_ms,
                                                    options->remote_ca_file,
                                                    reconnect_tries (options), error);
  if (self->remote == NULL)
    return NULL;
  if (options->tap != NULL)
    ts_helora_remote_set_tap (self->remote, options->tap, options->tap_data);
  TsHeloraFrame *ack = ts_helora_remote_hello (self->remote, &hello->u.hello, error);
  if (ack == NULL && hello->u.hello.stack->len > 0 && error != NULL
      && g_error_matches (*error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED)
      && !self->complex_packing)
    g_prefix_error (error, "The evaluator does not take stacked adapters "
                           "(a server older than the stack request?): ");
  return ack;
}

gboolean
_ts_helora_session_hello (TsHeloraSession *self, const TsHeloraOptions *options, GError **error)
{
  g_autoptr (TsHeloraFrame) ack = NULL;
  g_autoptr (GError) hello_error = NULL;

  ack = connect_and_hello (self, options, &hello_error);
  if (ack == NULL && refused_complex (self, hello_error))
    {
      g_clear_error (&hello_error);
      if (!_ts_helora_session_build_modules (self, CKKS_HELORA_SCALES_PLAIN, FALSE, error))
        return FALSE;
      ack = connect_and_hello (self, options, &hello_error);
    }
  if (ack == NULL)
    {
      g_propagate_error (error, g_steal_pointer (&hello_error));
      return FALSE;
    }
  return check_ack (self, &ack->u.ack, error);
}

static GPtrArray *
serialise_inputs (SessionGroup *g, GError **error)
{
  g_autoptr (GPtrArray) cts = g_ptr_array_new_with_free_func ((GDestroyNotify) g_bytes_unref);

  for (guint k = 0; k < g->n_inputs; k++)
    {
      GBytes *bytes = ts_helora_ckks_ciphertext_to_bytes (g->inputs[k], error);
      if (bytes == NULL)
        return NULL;
      g_ptr_array_add (cts, bytes);
    }
  return g_steal_pointer (&cts);
}

static SessionModule *
member_by_remote_index (TsHeloraSession *self, SessionGroup *g, guint16 index)
{
  for (guint i = 0; i < g->members->len; i++)
    {
      SessionModule *m = &g_array_index (self->modules, SessionModule,
                                         g_array_index (g->members, guint, i));
      if (m->remote_index == index)
        return m;
    }
  return NULL;
}

static gboolean
parse_results (TsHeloraSession *self, SessionGroup *g, const TsHeloraResult *result,
               GError **error)
{
  if (result->modules->len != g->members->len)
    goto bad;
  for (guint i = 0; i < result->modules->len; i++)
    {
      const TsHeloraModuleResult *mr = &g_array_index (result->modules, TsHeloraModuleResult, i);
      SessionModule *m = member_by_remote_index (self, g, mr->module);
      if (m == NULL || mr->blobs->len != m->n_outputs)
        goto bad;
      for (guint b = 0; b < m->n_outputs; b++)
        if (!ts_helora_ckks_result_from_bytes (m->layout, g_ptr_array_index (mr->blobs, b),
                                               m->outputs[b], error))
          return FALSE;
    }
  return TRUE;
bad:
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED,
               "The evaluator's result does not match the request");
  return FALSE;
}

/* What the remote counts since its values in @before (bytes, reconnects). */
typedef struct {
  guint64 up, down;
  TsHeloraRemoteRecovery recovery;
} RemoteCounts;

static void
read_counts (TsHeloraSession *self, RemoteCounts *out)
{
  ts_helora_remote_get_bytes (self->remote, &out->up, &out->down);
  ts_helora_remote_get_recovery (self->remote, &out->recovery);
}

static void
count_since (TsHeloraSession *self, const RemoteCounts *before)
{
  RemoteCounts now;
  const TsHeloraRemoteRecovery *r0 = &before->recovery, *r1 = &now.recovery;

  read_counts (self, &now);
  g_mutex_lock (&self->stats_lock);
  self->stats.bytes_up += now.up - before->up;
  self->stats.bytes_down += now.down - before->down;
  self->stats.ct_bytes_up += now.up - before->up;
  self->stats.ct_bytes_down += now.down - before->down;
  self->stats.reconnects += r1->reconnects - r0->reconnects;
  self->stats.requests_resent += r1->resent - r0->resent;
  if (r1->reconnects > r0->reconnects)
    self->stats.max_recovery_ms = MAX (self->stats.max_recovery_ms, r1->max_recovery_ms);
  g_mutex_unlock (&self->stats_lock);
}

/* Encrypts row @row and sends it; returns the request id (0 on error). */
static guint64
start_row (TsHeloraSession *self, SessionGroup *g, const LmLoraHookCall *call, guint row,
           const float *h, double *h_factor, GError **error)
{
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_new (TS_HELORA_FRAME_EVALUATE, 0);
  g_autoptr (GPtrArray) cts = NULL;
  double t0 = lm_time_ms (), t1;
  guint64 id;

  if (!(row == 0 && _ts_helora_session_take_begun (self, g, call, h, h_factor))
      && !_ts_helora_session_encrypt_row (self, g, h, h_factor, error))
    return 0;
  t1 = lm_time_ms ();
  lm_timings_add (call->timings, LM_STAGE_ENCRYPT, t1 - t0);
  cts = serialise_inputs (g, error);
  if (cts == NULL)
    return 0;
  frame->u.evaluate.token_index = call->pos + row;
  for (guint i = 0; i < g->members->len; i++)
    g_array_append_val (frame->u.evaluate.modules,
                        g_array_index (self->modules, SessionModule,
                                       g_array_index (g->members, guint, i)).remote_index);
  g_ptr_array_extend_and_steal (frame->u.evaluate.ciphertexts, g_steal_pointer (&cts));
  id = ts_helora_remote_send_frame (self->remote, frame, error);
  lm_timings_add (call->timings, LM_STAGE_UPLOAD, lm_time_ms () - t1);
  return id;
}

/* Waits for row @row's result, parses and decrypts it. */
static gboolean
finish_row (TsHeloraSession *self, SessionGroup *g, const LmLoraHookCall *call, guint row,
            guint64 id, double h_factor, GError **error)
{
  double t0 = lm_time_ms (), t1, t2;
  g_autoptr (TsHeloraFrame) result = ts_helora_remote_wait_for (self->remote, id,
                                                                TS_HELORA_FRAME_RESULT, error);

  if (result == NULL)
    return FALSE;
  t1 = lm_time_ms ();
  lm_timings_add (call->timings, LM_STAGE_EVALUATE, t1 - t0);
  if (!parse_results (self, g, &result->u.result, error))
    return FALSE;
  t2 = lm_time_ms ();
  lm_timings_add (call->timings, LM_STAGE_DOWNLOAD, t2 - t1);
  if (!_ts_helora_session_decrypt_row (self, g, row, h_factor, error))
    return FALSE;
  lm_timings_add (call->timings, LM_STAGE_DECRYPT, lm_time_ms () - t2);
  g_mutex_lock (&self->stats_lock);
  self->stats.answers_applied++;
  g_mutex_unlock (&self->stats_lock);
  return TRUE;
}

/* Row t is sent once row t − window is done: a prefill keeps the server busy
 * while this thread encrypts and decrypts. In decode (one row) it is a plain
 * round trip. */
gboolean
_ts_helora_session_remote_rows (TsHeloraSession *self, SessionGroup *g,
                                const LmLoraHookCall *call, const float *h, GError **error)
{
  guint n = call->n_tokens, window = self->max_in_flight;
  g_autofree guint64 *ids = g_new0 (guint64, n);
  g_autofree double *h_factors = g_new0 (double, n);
  RemoteCounts before;

  read_counts (self, &before);
  for (guint t = 0; t < n + window; t++)
    {
      if (t >= window && t - window < n)
        {
          guint r = t - window;
          if (!finish_row (self, g, call, r, ids[r], h_factors[r], error))
            return FALSE;
        }
      if (t < n)
        {
          ids[t] = start_row (self, g, call, t, h + (gsize) t * g->d, &h_factors[t], error);
          if (ids[t] == 0)
            return FALSE;
        }
    }
  count_since (self, &before);
  return TRUE;
}
