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

static gboolean
fill_hello (TsHeloraSession *self, TsHeloraHello *hello, const char *adapter_path,
            const char *params_preset, GError **error)
{
  if (adapter_path == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER,
                   "Remote HE-LoRA needs the adapter's path (its id and hash)");
      return FALSE;
    }
  if (!ts_helora_adapter_sha256 (adapter_path, hello->adapter_sha256, error))
    return FALSE;
  hello->adapter_id = ts_helora_adapter_id (adapter_path);
  hello->params_id = g_strdup (params_preset ? params_preset : TS_HELORA_DEFAULT_PRESET);
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
  return TRUE;
mismatch:
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_MODULE,
               "The evaluator's adapter modules differ from ours");
  return FALSE;
}

gboolean
_ts_helora_session_hello (TsHeloraSession *self, const char *url, const char *adapter_path,
                          const char *params_preset, guint timeout_ms, GError **error)
{
  g_autoptr (TsHeloraFrame) hello = ts_helora_frame_new (TS_HELORA_FRAME_HELLO, 0);
  g_autoptr (TsHeloraFrame) ack = NULL;

  if (!fill_hello (self, &hello->u.hello, adapter_path, params_preset, error))
    return FALSE;
  self->remote = ts_helora_remote_connect (url, timeout_ms, error);
  if (self->remote == NULL)
    return FALSE;
  ack = ts_helora_remote_hello (self->remote, &hello->u.hello, error);
  return ack != NULL && check_ack (self, &ack->u.ack, error);
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
        if (!ts_helora_ckks_ciphertext_from_bytes (g_ptr_array_index (mr->blobs, b),
                                                   m->outputs[b], error))
          return FALSE;
    }
  return TRUE;
bad:
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_MALFORMED,
               "The evaluator's result does not match the request");
  return FALSE;
}

gboolean
_ts_helora_session_remote_evaluate (TsHeloraSession *self, SessionGroup *g, guint32 token,
                                    LmTimings *timings, GError **error)
{
  g_autoptr (GPtrArray) cts = NULL;
  g_autoptr (TsHeloraFrame) result = NULL;
  g_autofree guint16 *indices = g_new (guint16, g->members->len);
  guint64 up0, down0, up1, down1;
  double t0 = lm_time_ms (), t1, t2;

  ts_helora_remote_get_bytes (self->remote, &up0, &down0);
  cts = serialise_inputs (g, error);
  if (cts == NULL)
    return FALSE;
  for (guint i = 0; i < g->members->len; i++)
    indices[i] = g_array_index (self->modules, SessionModule,
                                g_array_index (g->members, guint, i)).remote_index;
  t1 = lm_time_ms ();
  lm_timings_add (timings, LM_STAGE_UPLOAD, t1 - t0);
  result = ts_helora_remote_evaluate (self->remote, token, indices, g->members->len, cts, error);
  if (result == NULL)
    return FALSE;
  t2 = lm_time_ms ();
  lm_timings_add (timings, LM_STAGE_EVALUATE, t2 - t1);
  if (!parse_results (self, g, &result->u.result, error))
    return FALSE;
  lm_timings_add (timings, LM_STAGE_DOWNLOAD, lm_time_ms () - t2);
  ts_helora_remote_get_bytes (self->remote, &up1, &down1);
  g_mutex_lock (&self->stats_lock);
  self->stats.bytes_up += up1 - up0;
  self->stats.bytes_down += down1 - down0;
  g_mutex_unlock (&self->stats_lock);
  return TRUE;
}
