/* ts-helora-local.c: the in-process HE-LoRA evaluator: packed plaintexts and a worker pool.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ts-helora-ckks.h"
#include "ts-helora-local.h"
#include "ts-helora-proto.h"

/* The results of one part of a call, one at a time: a single ciphertext
 * that every index of a B-long array points at, so it stays in the
 * core's cache from its evaluation to its decryption instead of every
 * module's results streaming through memory. */
typedef struct {
  CkksCiphertext **result;     /* one ciphertext */
  CkksCiphertext **slots;      /* max_results entries, all *result */
} PartScratch;

struct _TsHeloraLocal {
  const CkksContext *ctx;
  GPtrArray *plans;            /* of CkksHeloraPlan * */
  GThreadPool *pool;
  guint n_threads;
  GMutex call_lock;            /* one call at a time: the scratch is shared */
  PartScratch *scratch;        /* n_scratch: one per part of the widest call */
  guint n_scratch;
  guint max_results;           /* largest B of the plans */
};

/* One evaluate call. Its results, numbered one module after the other,
 * are claimed one at a time by whichever thread is free, and the caller
 * returns once none is left unclaimed and none is running: it never waits
 * for a worker that has not woken yet (a busy machine), and a worker that
 * wakes after the call has returned finds nothing to claim. The call is
 * reference-counted for those late workers. */
typedef struct Call Call;

typedef struct {
  Call *call;
  const PartScratch *scratch;
} Part;

struct Call {
  gint ref;
  GMutex lock;
  GCond idle;
  guint next, total, running;
  CkksStatus status;
  const char *failed;          /* the step that failed */
  const CkksHeloraPlan **plans;
  guint *first_result;         /* of module i; first_result[n] = total */
  guint n;
  CkksCiphertext *const *inputs;
  const TsHeloraLocalResults *results;
  Part *parts;                 /* one per thread, the caller's first */
};

static void
call_unref (Call *call)
{
  if (!g_atomic_int_dec_and_test (&call->ref))
    return;
  g_mutex_clear (&call->lock);
  g_cond_clear (&call->idle);
  g_free (call->plans);
  g_free (call->first_result);
  g_free (call->parts);
  g_free (call);
}

static gboolean
call_finished_locked (const Call *call)
{
  return call->running == 0 && (call->next >= call->total || call->status != CKKS_OK);
}

static CkksStatus
run_result (const Call *call, const PartScratch *scratch, guint i, guint b, const char **failed)
{
  const TsHeloraLocalResults *res = call->results;
  const CkksHeloraPlan *plan = call->plans[i];
  const CkksHeloraLayout *layout = ckks_helora_plan_layout (plan);
  guint n_results = (guint) ckks_helora_layout_n_outputs (layout);
  double t0 = res->now_ms (res->user_data);
  CkksStatus st = ckks_helora_evaluate_part (plan, call->inputs,
                                             ckks_helora_layout_n_inputs (layout),
                                             scratch->slots, n_results, b, 1);

  if (st != CKKS_OK)
    {
      *failed = "Evaluating the adapter";
      return st;
    }
  st = res->ready (i, b, scratch->slots, n_results, res->now_ms (res->user_data) - t0,
                   res->user_data);
  if (st != CKKS_OK)
    *failed = "Decrypting u";
  return st;
}

/* Claims results until none is left; false when there is none. */
static gboolean
claim (Call *call, guint *j)
{
  gboolean got;

  g_mutex_lock (&call->lock);
  got = call->next < call->total && call->status == CKKS_OK;
  if (got)
    {
      *j = call->next++;
      call->running++;
    }
  g_mutex_unlock (&call->lock);
  return got;
}

static void
finish (Call *call, CkksStatus st, const char *failed)
{
  g_mutex_lock (&call->lock);
  call->running--;
  if (st != CKKS_OK && call->status == CKKS_OK)
    {
      call->status = st;
      call->failed = failed;
    }
  if (call_finished_locked (call))
    g_cond_broadcast (&call->idle);
  g_mutex_unlock (&call->lock);
}

static void
run_part (gpointer data, gpointer user_data)
{
  Part *part = data;
  Call *call = part->call;
  guint i = 0, j;

  while (claim (call, &j))
    {
      const char *failed = NULL;
      while (j >= call->first_result[i + 1])   /* claims only grow */
        i++;
      finish (call, run_result (call, part->scratch, i, j - call->first_result[i], &failed),
              failed);
    }
  call_unref (call);
}

TsHeloraLocal *
ts_helora_local_new (const CkksContext *ctx, guint n_threads, GError **error)
{
  g_return_val_if_fail (ctx != NULL, NULL);

  TsHeloraLocal *self = g_new0 (TsHeloraLocal, 1);

  self->ctx = ctx;
  self->plans = g_ptr_array_new_with_free_func ((GDestroyNotify) ckks_helora_plan_free);
  self->n_threads = MAX (n_threads, 1);
  g_mutex_init (&self->call_lock);
  self->pool = g_thread_pool_new (run_part, self, self->n_threads, TRUE, error);
  if (self->pool == NULL)
    {
      ts_helora_local_free (self);
      return NULL;
    }
  return self;
}

static void
scratch_clear (PartScratch *scratch)
{
  if (scratch->result != NULL)
    ckks_helora_ciphertexts_free (scratch->result, 1);
  g_free (scratch->slots);
  *scratch = (PartScratch) { 0 };
}

void
ts_helora_local_free (TsHeloraLocal *self)
{
  if (self == NULL)
    return;
  if (self->pool != NULL)
    g_thread_pool_free (self->pool, FALSE, TRUE);
  for (guint p = 0; p < self->n_scratch; p++)
    scratch_clear (&self->scratch[p]);
  g_free (self->scratch);
  g_mutex_clear (&self->call_lock);
  g_ptr_array_unref (self->plans);
  g_free (self);
}

/* Part @p's scratch, for @layout's limbs and up to max_results results. */
static CkksStatus
scratch_fit_one (TsHeloraLocal *self, PartScratch *scratch, const CkksHeloraLayout *layout)
{
  if (scratch->result == NULL)
    {
      CkksStatus st = ckks_helora_ciphertexts_new (layout, 1, &scratch->result);
      if (st != CKKS_OK)
        return st;
    }
  scratch->slots = g_renew (CkksCiphertext *, scratch->slots, self->max_results);
  for (guint b = 0; b < self->max_results; b++)
    scratch->slots[b] = scratch->result[0];
  return CKKS_OK;
}

/* Scratch for @n_parts parts at least, every one fit for @layout. */
static CkksStatus
scratch_fit (TsHeloraLocal *self, guint n_parts, const CkksHeloraLayout *layout)
{
  if (n_parts > self->n_scratch)
    {
      self->scratch = g_renew (PartScratch, self->scratch, n_parts);
      memset (self->scratch + self->n_scratch, 0,
              (n_parts - self->n_scratch) * sizeof *self->scratch);
      self->n_scratch = n_parts;
    }
  for (guint p = 0; p < self->n_scratch; p++)
    {
      CkksStatus st = scratch_fit_one (self, &self->scratch[p], layout);
      if (st != CKKS_OK)
        return st;
    }
  return CKKS_OK;
}

gboolean
ts_helora_local_add_module (TsHeloraLocal *self, guint d, guint r, const float *a,
                            guint *index, GError **error)
{
  CkksHeloraPlan *plan = NULL;
  const CkksHeloraLayout *layout;
  CkksStatus st;

  g_return_val_if_fail (self != NULL && index != NULL, FALSE);

  st = ckks_helora_plan_new_packed (self->ctx, d, r, a, CKKS_HELORA_SCALES_PLAIN,
                                    CKKS_HELORA_PACKING_COMPLEX, &plan);
  /* narrow layouts decode in full and have only the real packing */
  if (st == CKKS_ERR_UNSUPPORTED)
    st = ckks_helora_plan_new (self->ctx, d, r, a, &plan);
  if (!ts_helora_ckks_check (st, "Encoding the adapter", error))
    return FALSE;
  layout = ckks_helora_plan_layout (plan);
  self->max_results = MAX (self->max_results, (guint) ckks_helora_layout_n_outputs (layout));
  if (!ts_helora_ckks_check (scratch_fit (self, self->n_threads + 1, layout),
                             "Encoding the adapter", error))
    {
      ckks_helora_plan_free (plan);
      return FALSE;
    }
  *index = self->plans->len;
  g_ptr_array_add (self->plans, plan);
  return TRUE;
}

const CkksHeloraLayout *
ts_helora_local_module_layout (TsHeloraLocal *self, guint index)
{
  g_return_val_if_fail (self != NULL && index < self->plans->len, NULL);

  return ckks_helora_plan_layout (g_ptr_array_index (self->plans, index));
}

/* One index of the engine pool's job: part @index of the call. */
static void
run_part_index (void *ctx, int index, int n)
{
  Call *call = ctx;

  run_part (&call->parts[index], NULL);
}

/* Runs a part on each thread of @threads (the caller's among them) or, with
 * none, on each of the evaluator's own and one on the calling thread. */
static CkksStatus
run_call (TsHeloraLocal *self, Call *call, LmThreadPool *threads, const char **failed)
{
  guint width;
  guint n_parts;
  CkksStatus st;

  /* the engine's pool unless it is narrower than what the evaluator was
   * asked to use (an engine on one thread) */
  if (threads != NULL && (guint) lm_thread_pool_size (threads) < self->n_threads + 1)
    threads = NULL;
  width = threads != NULL ? (guint) lm_thread_pool_size (threads) : self->n_threads + 1;
  n_parts = MIN (width, call->total);

  /* only the engine's pool can be wider than what add_module prepared */
  st = n_parts <= self->n_scratch
       ? CKKS_OK
       : scratch_fit (self, n_parts, ckks_helora_plan_layout (g_ptr_array_index (self->plans, 0)));
  if (st != CKKS_OK)
    {
      *failed = "Evaluating the adapter";
      call_unref (call);
      return st;
    }
  call->parts = g_new0 (Part, n_parts);
  for (guint p = 0; p < n_parts; p++)
    call->parts[p] = (Part) { call, &self->scratch[p] };
  g_atomic_int_set (&call->ref, (gint) n_parts + 1);
  if (threads != NULL)
    lm_thread_pool_run (threads, run_part_index, call, (int) n_parts);
  else
    {
      for (guint p = 1; p < n_parts; p++)
        g_thread_pool_push (self->pool, &call->parts[p], NULL);
      run_part (&call->parts[0], self);
    }
  g_mutex_lock (&call->lock);
  while (!call_finished_locked (call))
    g_cond_wait (&call->idle, &call->lock);
  st = call->status;
  *failed = call->failed;
  g_mutex_unlock (&call->lock);
  call_unref (call);
  return st;
}

gboolean
ts_helora_local_evaluate (TsHeloraLocal *self, const guint *modules, guint n,
                          CkksCiphertext *const *inputs, const TsHeloraLocalResults *results,
                          LmThreadPool *threads, GError **error)
{
  Call *call;
  const char *failed = NULL;
  CkksStatus st;

  g_return_val_if_fail (results != NULL && results->ready != NULL && results->now_ms != NULL,
                        FALSE);
  for (guint i = 0; i < n; i++)
    g_return_val_if_fail (modules[i] < self->plans->len, FALSE);
  call = g_new0 (Call, 1);
  g_mutex_init (&call->lock);
  g_cond_init (&call->idle);
  call->ref = 1;
  call->plans = g_new (const CkksHeloraPlan *, n);
  call->first_result = g_new0 (guint, n + 1);
  call->n = n;
  call->inputs = inputs;
  call->results = results;
  for (guint i = 0; i < n; i++)
    {
      call->plans[i] = g_ptr_array_index (self->plans, modules[i]);
      call->first_result[i + 1] = call->first_result[i]
        + (guint) ckks_helora_layout_n_outputs (ckks_helora_plan_layout (call->plans[i]));
    }
  call->total = call->first_result[n];
  if (call->total == 0)
    {
      call_unref (call);
      return TRUE;
    }
  g_mutex_lock (&self->call_lock);
  st = run_call (self, call, threads, &failed);
  g_mutex_unlock (&self->call_lock);
  return ts_helora_ckks_check (st, failed != NULL ? failed : "Evaluating the adapter", error);
}
