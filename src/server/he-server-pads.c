/* he-server-pads.c: the pad refill thread of tensafe-he-server.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A private answer spends one pad per result ciphertext, and a pad costs a
 * few times the answer itself (two NTTs per limb). One thread per server,
 * at the lowest CPU priority, keeps the pad pool of every module of every
 * private connection at its target (a few answers' worth, lowered so that
 * all pools together stay under a memory cap): it goes round the modules
 * making one pad for each module below target, and sleeps when all are
 * full, until a worker that took pads wakes it. A worker that finds a pool
 * empty makes the pad inline (counted in /metrics): the answer is right,
 * only later.
 */
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "he-server-private.h"

typedef struct {
  TsHeloraPrivateEval *pe;     /* a reference */
  guint index;                 /* evaluator module index */
  guint pads_per_answer;
  gsize pad_bytes;
  gboolean failed;             /* a refill failed: skipped from then on */
} Entry;

struct _HePads {
  HeMetrics *metrics;
  guint answers;               /* configured target per module */
  gsize max_bytes;
  guint target;                /* in force: answers, lowered by the cap */
  GMutex lock;
  GCond cond;
  GPtrArray *entries;          /* of Entry * */
  guint cursor;                /* round robin */
  gboolean woken;
  gboolean stopping;
  GThread *thread;
};

static void
entry_free (gpointer data)
{
  Entry *e = data;
  ts_helora_private_eval_unref (e->pe);
  g_free (e);
}

/* The largest number of answers per module the cap allows (under lock). */
static void
update_target (HePads *self)
{
  gsize per_answer = 0;
  for (guint i = 0; i < self->entries->len; i++)
    {
      Entry *e = g_ptr_array_index (self->entries, i);
      per_answer += e->pads_per_answer * e->pad_bytes;
    }
  self->target = per_answer > 0 ? (guint) MIN (self->answers, self->max_bytes / per_answer)
                                : self->answers;
}

/* The next module below target, from the cursor on (under lock). */
static Entry *
next_below_target (HePads *self)
{
  guint n = self->entries->len;
  for (guint tried = 0; tried < n; tried++)
    {
      guint at = (self->cursor + tried) % n;
      Entry *e = g_ptr_array_index (self->entries, at);
      TsHeloraPadPool pool;
      if (!e->failed && ts_helora_private_eval_pool (e->pe, e->index, &pool)
          && pool.pooled < self->target * pool.pads_per_answer)
        {
          self->cursor = at + 1;     /* one pad each, in turn */
          return e;
        }
    }
  return NULL;
}

static double
thread_seconds (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* One pad for @e, unlocked; the thread's work is what /metrics rates. */
static void
refill (HePads *self, Entry *e)
{
  g_autoptr (TsHeloraPrivateEval) pe = ts_helora_private_eval_ref (e->pe);
  guint index = e->index, target = self->target;
  g_autoptr (GError) error = NULL;
  gboolean made = FALSE;
  g_mutex_unlock (&self->lock);
  double t0 = thread_seconds ();
  gboolean ok = ts_helora_private_eval_refill_one (pe, index, target, &made, &error);
  double seconds = thread_seconds () - t0;
  if (made)
    he_metrics_count_pads (self->metrics, 1, seconds, 0, 0);
  if (!ok)
    g_warning ("Refilling privacy pads: %s", error->message);
  g_mutex_lock (&self->lock);
  /* @e may have gone with its connection meanwhile: looked up again */
  for (guint i = 0; !ok && i < self->entries->len; i++)
    {
      Entry *again = g_ptr_array_index (self->entries, i);
      if (again->pe == pe && again->index == index)
        again->failed = TRUE;
    }
}

static gpointer
refill_thread (gpointer data)
{
  HePads *self = data;
#ifdef __linux__
  /* per thread on Linux: answers first, pads with what is left */
  setpriority (PRIO_PROCESS, (id_t) gettid (), 19);
#endif
  g_mutex_lock (&self->lock);
  while (!self->stopping)
    {
      Entry *e = next_below_target (self);
      if (e != NULL)
        {
          refill (self, e);
          continue;
        }
      while (!self->woken && !self->stopping)
        g_cond_wait (&self->cond, &self->lock);
      self->woken = FALSE;
    }
  g_mutex_unlock (&self->lock);
  return NULL;
}

/* /metrics: how full the pools are (rendered on request). */
static void
render_pools (GString *out, gpointer data)
{
  HePads *self = data;
  guint64 pooled = 0, target = 0;
  g_mutex_lock (&self->lock);
  for (guint i = 0; i < self->entries->len; i++)
    {
      Entry *e = g_ptr_array_index (self->entries, i);
      TsHeloraPadPool pool;
      if (ts_helora_private_eval_pool (e->pe, e->index, &pool))
        pooled += pool.pooled;
      target += (guint64) self->target * e->pads_per_answer;
    }
  g_mutex_unlock (&self->lock);
  g_string_append_printf (out,
                          "# HELP tensafe_he_pad_pool_pads Privacy pads ready in the pools of "
                          "private connections.\n"
                          "# TYPE tensafe_he_pad_pool_pads gauge\n"
                          "tensafe_he_pad_pool_pads %" G_GUINT64_FORMAT "\n"
                          "# HELP tensafe_he_pad_pool_target Pads the refill thread keeps the "
                          "pools at.\n"
                          "# TYPE tensafe_he_pad_pool_target gauge\n"
                          "tensafe_he_pad_pool_target %" G_GUINT64_FORMAT "\n"
                          "# HELP tensafe_he_pad_pool_fill Pads ready over the target (1: full).\n"
                          "# TYPE tensafe_he_pad_pool_fill gauge\n"
                          "tensafe_he_pad_pool_fill %.4f\n",
                          pooled, target, target > 0 ? (double) pooled / (double) target : 1.0);
}

HePads *
he_pads_new (HeMetrics *metrics, guint answers, gsize max_bytes, GError **error)
{
  HePads *self = g_new0 (HePads, 1);
  self->metrics = metrics;
  self->answers = self->target = answers;
  self->max_bytes = max_bytes;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  self->entries = g_ptr_array_new_with_free_func (entry_free);
  self->thread = g_thread_try_new ("he-pads", refill_thread, self, error);
  if (self->thread == NULL)
    {
      he_pads_free (self);
      return NULL;
    }
  he_metrics_add_source (metrics, render_pools, self);
  return self;
}

void
he_pads_free (HePads *self)
{
  if (self == NULL)
    return;
  if (self->thread != NULL)
    {
      he_metrics_add_source (self->metrics, NULL, NULL);
      g_mutex_lock (&self->lock);
      self->stopping = TRUE;
      g_cond_signal (&self->cond);
      g_mutex_unlock (&self->lock);
      g_thread_join (self->thread);
    }
  g_ptr_array_unref (self->entries);
  g_cond_clear (&self->cond);
  g_mutex_clear (&self->lock);
  g_free (self);
}

void
he_pads_add (HePads *self, TsHeloraPrivateEval *pe, GArray *module_map)
{
  g_mutex_lock (&self->lock);
  for (guint i = 0; i < module_map->len; i++)
    {
      Entry *e = g_new0 (Entry, 1);
      TsHeloraPadPool pool;
      e->index = g_array_index (module_map, guint, i);
      if (!ts_helora_private_eval_pool (pe, e->index, &pool))
        {
          g_free (e);
          continue;
        }
      e->pe = ts_helora_private_eval_ref (pe);
      e->pads_per_answer = pool.pads_per_answer;
      e->pad_bytes = pool.pad_bytes;
      g_ptr_array_add (self->entries, e);
    }
  update_target (self);
  self->woken = TRUE;
  g_cond_signal (&self->cond);
  g_mutex_unlock (&self->lock);
}

void
he_pads_remove (HePads *self, TsHeloraPrivateEval *pe)
{
  g_mutex_lock (&self->lock);
  for (guint i = self->entries->len; i-- > 0;)
    if (((Entry *) g_ptr_array_index (self->entries, i))->pe == pe)
      g_ptr_array_remove_index (self->entries, i);
  update_target (self);
  g_mutex_unlock (&self->lock);
}

void
he_pads_wake (HePads *self)
{
  g_mutex_lock (&self->lock);
  self->woken = TRUE;
  g_cond_signal (&self->cond);
  g_mutex_unlock (&self->lock);
}
