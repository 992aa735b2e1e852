/* ts-generation-cache.c: one kept engine session per pane, taken and put back by replies.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-generation-cache.h"

struct _TsGenerationCache
{
  gatomicrefcount ref_count;
  GMutex lock;
  LmSession *session;            /* NULL: nothing kept */
  TsGenerationModel *model;      /* a reference: the session's model */
  const LmLora *lora;            /* the session's adapter (the model's cache) */
  char *signature;
  GArray *ids;                   /* gint32: the tokens in the session */
  guint last_reused;
};

TsGenerationCache *
ts_generation_cache_new (void)
{
  TsGenerationCache *self = g_new0 (TsGenerationCache, 1);

  g_atomic_ref_count_init (&self->ref_count);
  g_mutex_init (&self->lock);
  return self;
}

TsGenerationCache *
ts_generation_cache_ref (TsGenerationCache *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

/* Called with the lock held. */
static void
drop_kept (TsGenerationCache *self)
{
  g_clear_pointer (&self->session, lm_session_free);
  g_clear_pointer (&self->model, ts_generation_model_unref);
  g_clear_pointer (&self->signature, g_free);
  g_clear_pointer (&self->ids, g_array_unref);
  self->lora = NULL;
}

void
ts_generation_cache_clear (TsGenerationCache *self)
{
  g_return_if_fail (self != NULL);

  g_mutex_lock (&self->lock);
  drop_kept (self);
  g_mutex_unlock (&self->lock);
}

void
ts_generation_cache_unref (TsGenerationCache *self)
{
  if (self == NULL || !g_atomic_ref_count_dec (&self->ref_count))
    return;
  ts_generation_cache_clear (self);
  g_mutex_clear (&self->lock);
  g_free (self);
}

guint
ts_generation_cache_get_last_reused (TsGenerationCache *self)
{
  guint n;

  g_return_val_if_fail (self != NULL, 0);
  g_mutex_lock (&self->lock);
  n = self->last_reused;
  g_mutex_unlock (&self->lock);
  return n;
}

void
_ts_generation_cache_set_last_reused (TsGenerationCache *self, guint n_tokens)
{
  g_mutex_lock (&self->lock);
  self->last_reused = n_tokens;
  g_mutex_unlock (&self->lock);
}

LmSession *
_ts_generation_cache_take (TsGenerationCache *self, TsGenerationModel *model, const LmLora *lora,
                           const char *signature, GArray **ids)
{
  LmSession *session = NULL;

  g_mutex_lock (&self->lock);
  if (self->session != NULL && self->model == model && self->lora == lora
      && g_strcmp0 (self->signature, signature) == 0)
    {
      session = g_steal_pointer (&self->session);
      *ids = g_steal_pointer (&self->ids);
    }
  drop_kept (self);
  g_mutex_unlock (&self->lock);
  return session;
}

void
_ts_generation_cache_put (TsGenerationCache *self, TsGenerationModel *model, const LmLora *lora,
                          const char *signature, LmSession *session, GArray *ids)
{
  g_mutex_lock (&self->lock);
  drop_kept (self);
  self->session = session;
  self->model = ts_generation_model_ref (model);
  self->lora = lora;
  self->signature = g_strdup (signature);
  self->ids = ids;
  g_mutex_unlock (&self->lock);
}
