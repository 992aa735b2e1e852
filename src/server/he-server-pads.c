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
 *
 * With an idle period (--pad-refill-idle-ms), pads are made between turns
 * rather than while a turn's tokens are served: the thread waits until no
 * answer took pads for that long. Priority alone does not keep it off the
 * answers' CPU (a sibling hardware thread, the shared cache). A pool that
 * falls below the default size (2 answers) is refilled at once all the
 * same, so that a turn longer than the pool makes few pads inline. During
 * a turn answers wake the thread only when it has no deadline to look
 * again at or their pool runs low: waking a thread (and the idle CPU it
 * sleeps on) for nothing, every answer, costs the answers more than it
 * saves on a small virtual machine.
 */
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "he-server-private.h"

typedef struct {
  TsHeloraPrivacyEval *pe;     /* a reference */
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
  gint64 idle_us;              /* 0: refill at once */
  gint64 last_taken;           /* monotonic µs when an answer last took pads */
  gboolean asleep;             /* the thread waits with no deadline */
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
  ts_helora_privacy_eval_unref (e->pe);
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

/* The next module below @answers answers' worth, from the cursor on
 * (under lock). */
static Entry *
next_below (HePads *self, guint answers)
{
  guint n = self->entries->len;
  for (guint tried = 0; tried < n; tried++)
    {
      guint at = (self->cursor + tried) % n;
      Entry *e = g_ptr_array_index (self->entries, at);
      TsHeloraPadPool pool;
      if (!e->failed && ts_helora_privacy_eval_pool (e->pe, e->index, &pool)
          && pool.pooled < answers * pool.pads_per_answer)
        {
          self->cursor = at + 1;     /* one pad each, in turn */
          return e;
        }
    }
  return NULL;
}

/* What to refill now (under lock): a pool running low, or, once the
 * server has been idle long enough, any below target. NULL: nothing yet;
 * *until is then when to look again (0: when woken). */
static Entry *
next_to_refill (HePads *self, gint64 *until)
{
  guint low = MIN (self->target, HE_SERVER_DEFAULT_PAD_POOL_ANSWERS);
  Entry *e = self->idle_us > 0 ? next_below (self, low) : NULL;

  *until = 0;
  if (e != NULL)
    return e;
  if (self->idle_us > 0 && g_get_monotonic_time () < self->last_taken + self->idle_us)
    {
      *until = self->last_taken + self->idle_us;
      return NULL;
    }
  return next_below (self, self->target);
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
  g_autoptr (TsHeloraPrivacyEval) pe = ts_helora_privacy_eval_ref (e->pe);
  guint index = e->index, target = self->target;
  g_autoptr (GError) error = NULL;
  gboolean made = FALSE;
  g_mutex_unlock (&self->lock);
  double t0 = thread_seconds ();
  gboolean ok = ts_helora_privacy_eval_refill_one (pe, index, target, &made, &error);
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
      gint64 until;
      Entry *e = next_to_refill (self, &until);
      if (e != NULL)
        {
          refill (self, e);
          continue;
        }
      self->asleep = until == 0;
      while (!self->woken && !self->stopping)
        if (until == 0)
          g_cond_wait (&self->cond, &self->lock);
        else if (!g_cond_wait_until (&self->cond, &self->lock, until))
          break;       /* the idle period has passed */
      self->woken = self->asleep = FALSE;
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
  guint answers, answers_in_force;
  g_mutex_lock (&self->lock);
  answers = self->answers;
  answers_in_force = self->target;
  for (guint i = 0; i < self->entries->len; i++)
    {
      Entry *e = g_ptr_array_index (self->entries, i);
      TsHeloraPadPool pool;
      if (ts_helora_privacy_eval_pool (e->pe, e->index, &pool))
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
                          "tensafe_he_pad_pool_fill %.4f\n"
                          "# HELP tensafe_he_pad_pool_answers Answers per module the pools are "
                          "kept at (--pad-pool-answers, lowered to fit --pad-pool-mib).\n"
                          "# TYPE tensafe_he_pad_pool_answers gauge\n"
                          "tensafe_he_pad_pool_answers %u\n"
                          "# HELP tensafe_he_pad_pool_answers_configured Answers per module "
                          "asked for (--pad-pool-answers).\n"
                          "# TYPE tensafe_he_pad_pool_answers_configured gauge\n"
                          "tensafe_he_pad_pool_answers_configured %u\n",
                          pooled, target, target > 0 ? (double) pooled / (double) target : 1.0,
                          answers_in_force, answers);
}

HePads *
he_pads_new (HeMetrics *metrics, guint answers, gsize max_bytes, guint idle_ms, GError **error)
{
  HePads *self = g_new0 (HePads, 1);
  self->metrics = metrics;
  self->answers = self->target = answers;
  self->max_bytes = max_bytes;
  self->idle_us = (gint64) idle_ms * G_TIME_SPAN_MILLISECOND;
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
he_pads_add (HePads *self, TsHeloraPrivacyEval *pe, GArray *module_map)
{
  g_mutex_lock (&self->lock);
  for (guint i = 0; i < module_map->len; i++)
    {
      Entry *e = g_new0 (Entry, 1);
      TsHeloraPadPool pool;
      e->index = g_array_index (module_map, guint, i);
      if (!ts_helora_privacy_eval_pool (pe, e->index, &pool))
        {
          g_free (e);
          continue;
        }
      e->pe = ts_helora_privacy_eval_ref (pe);
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
he_pads_remove (HePads *self, TsHeloraPrivacyEval *pe)
{
  g_mutex_lock (&self->lock);
  for (guint i = self->entries->len; i-- > 0;)
    if (((Entry *) g_ptr_array_index (self->entries, i))->pe == pe)
      g_ptr_array_remove_index (self->entries, i);
  update_target (self);
  g_mutex_unlock (&self->lock);
}

/* Whether the thread must look now after pads were taken from module
 * @index of @pe (under lock): always without an idle period; with one, when
 * it has no deadline yet or that pool ran low. */
static gboolean
wake_needed (HePads *self, TsHeloraPrivacyEval *pe, guint index)
{
  TsHeloraPadPool pool;

  if (self->idle_us == 0 || self->asleep)
    return TRUE;
  return ts_helora_privacy_eval_pool (pe, index, &pool)
         && pool.pooled < MIN (self->target, HE_SERVER_DEFAULT_PAD_POOL_ANSWERS) * pool.pads_per_answer;
}

void
he_pads_taken (HePads *self, TsHeloraPrivacyEval *pe, guint index)
{
  g_mutex_lock (&self->lock);
  self->last_taken = g_get_monotonic_time ();
  if (wake_needed (self, pe, index))
    {
      self->woken = TRUE;
      g_cond_signal (&self->cond);
    }
  g_mutex_unlock (&self->lock);
}
