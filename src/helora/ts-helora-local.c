/* ts-helora-local.c: the in-process HE-LoRA evaluator: packed plaintexts and a worker pool.
 * SPDX-License-Identifier: GPL-3.0-or-later */
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
  PartScratch *scratch;        /* n_threads + 1 */
  guint max_results;           /* largest B of the plans */
};

/* One evaluate call: parts count down, the caller waits for zero. */
typedef struct {
  GMutex lock;
  GCond done;
  guint pending;
  CkksStatus status;
  const char *failed;          /* the step that failed */
} Batch;

/* The call's modules, their results numbered one after the other. */
typedef struct {
  const CkksHeloraPlan *const *plans;
  const guint *first_result;   /* of module i; first_result[n] = all results */
  guint n;
  CkksCiphertext *const *inputs;
  const TsHeloraLocalResults *results;
} Call;

/* Results [lo, hi) of the call. */
typedef struct {
  Batch *batch;
  const Call *call;
  const PartScratch *scratch;
  guint lo, hi;
} Part;

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

static void
run_part (gpointer data, gpointer user_data)
{
  Part *part = data;
  const Call *call = part->call;
  Batch *batch = part->batch;
  CkksStatus st = CKKS_OK;
  const char *failed = NULL;

  for (guint i = 0; st == CKKS_OK && i < call->n; i++)
    {
      guint lo = MAX (part->lo, call->first_result[i]);
      guint hi = MIN (part->hi, call->first_result[i + 1]);
      for (guint j = lo; st == CKKS_OK && j < hi; j++)
        st = run_result (call, part->scratch, i, j - call->first_result[i], &failed);
    }
  g_mutex_lock (&batch->lock);
  if (st != CKKS_OK && batch->status == CKKS_OK)
    {
      batch->status = st;
      batch->failed = failed;
    }
  if (--batch->pending == 0)
    g_cond_signal (&batch->done);
  g_mutex_unlock (&batch->lock);
}

TsHeloraLocal *
ts_helora_local_new (const CkksContext *ctx, guint n_threads, GError **error)
{
  TsHeloraLocal *self = g_new0 (TsHeloraLocal, 1);

  self->ctx = ctx;
  self->plans = g_ptr_array_new_with_free_func ((GDestroyNotify) ckks_helora_plan_free);
  self->n_threads = MAX (n_threads, 1);
  self->scratch = g_new0 (PartScratch, self->n_threads + 1);
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
  for (guint p = 0; p <= self->n_threads; p++)
    scratch_clear (&self->scratch[p]);
  g_free (self->scratch);
  g_mutex_clear (&self->call_lock);
  g_ptr_array_unref (self->plans);
  g_free (self);
}

/* Every part's scratch, for @layout's limbs and up to max_results results. */
static CkksStatus
scratch_fit (TsHeloraLocal *self, const CkksHeloraLayout *layout)
{
  for (guint p = 0; p <= self->n_threads; p++)
    {
      PartScratch *scratch = &self->scratch[p];
      if (scratch->result == NULL)
        {
          CkksStatus st = ckks_helora_ciphertexts_new (layout, 1, &scratch->result);
          if (st != CKKS_OK)
            return st;
        }
      scratch->slots = g_renew (CkksCiphertext *, scratch->slots, self->max_results);
      for (guint b = 0; b < self->max_results; b++)
        scratch->slots[b] = scratch->result[0];
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
  if (!ts_helora_ckks_check (scratch_fit (self, layout), "Encoding the adapter", error))
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

/* Runs the parts on the pool and the first one on the calling thread. */
static CkksStatus
run_parts (TsHeloraLocal *self, const Call *call, const char **failed)
{
  guint total = call->first_result[call->n];
  guint n_parts = MIN (self->n_threads + 1, total);
  Batch batch = { .pending = n_parts, .status = CKKS_OK };
  g_autofree Part *parts = g_new0 (Part, n_parts);

  g_mutex_init (&batch.lock);
  g_cond_init (&batch.done);
  for (guint p = 0; p < n_parts; p++)
    parts[p] = (Part) { &batch, call, &self->scratch[p], total * p / n_parts,
                        total * (p + 1) / n_parts };
  for (guint p = 1; p < n_parts; p++)
    g_thread_pool_push (self->pool, &parts[p], NULL);
  run_part (&parts[0], self);
  g_mutex_lock (&batch.lock);
  while (batch.pending > 0)
    g_cond_wait (&batch.done, &batch.lock);
  g_mutex_unlock (&batch.lock);
  g_mutex_clear (&batch.lock);
  g_cond_clear (&batch.done);
  *failed = batch.failed;
  return batch.status;
}

gboolean
ts_helora_local_evaluate (TsHeloraLocal *self, const guint *modules, guint n,
                          CkksCiphertext *const *inputs, const TsHeloraLocalResults *results,
                          GError **error)
{
  g_autofree const CkksHeloraPlan **plans = g_new (const CkksHeloraPlan *, n);
  g_autofree guint *first_result = g_new (guint, n + 1);
  Call call = { plans, first_result, n, inputs, results };
  const char *failed = NULL;
  CkksStatus st;

  g_return_val_if_fail (results != NULL && results->ready != NULL && results->now_ms != NULL,
                        FALSE);
  first_result[0] = 0;
  for (guint i = 0; i < n; i++)
    {
      g_return_val_if_fail (modules[i] < self->plans->len, FALSE);
      plans[i] = g_ptr_array_index (self->plans, modules[i]);
      first_result[i + 1] = first_result[i]
                            + (guint) ckks_helora_layout_n_outputs (ckks_helora_plan_layout (plans[i]));
    }
  if (first_result[n] == 0)
    return TRUE;
  g_mutex_lock (&self->call_lock);
  st = run_parts (self, &call, &failed);
  g_mutex_unlock (&self->call_lock);
  return ts_helora_ckks_check (st, failed != NULL ? failed : "Evaluating the adapter", error);
}
