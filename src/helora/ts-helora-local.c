/* ts-helora-local.c: the in-process HE-LoRA evaluator: packed plaintexts and a worker pool.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-helora-ckks.h"
#include "ts-helora-local.h"
#include "ts-helora-proto.h"

struct _TsHeloraLocal {
  const CkksContext *ctx;
  GPtrArray *plans;            /* of CkksHeloraPlan * */
  GThreadPool *pool;
};

/* One evaluate call: tasks count down, the caller waits for zero. */
typedef struct {
  GMutex lock;
  GCond done;
  guint pending;
  CkksStatus status;
} Batch;

typedef struct {
  Batch *batch;
  const CkksHeloraPlan *plan;
  CkksCiphertext *const *inputs;
  CkksCiphertext *const *outputs;
} Task;

static void
run_task (gpointer data, gpointer user_data)
{
  Task *task = data;
  Batch *batch = task->batch;
  const CkksHeloraLayout *layout = ckks_helora_plan_layout (task->plan);
  CkksStatus st = ckks_helora_evaluate (task->plan, task->inputs, ckks_helora_layout_n_inputs (layout),
                                          task->outputs, ckks_helora_layout_n_outputs (layout));

  g_mutex_lock (&batch->lock);
  if (st != CKKS_OK)
    batch->status = st;
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
  self->pool = g_thread_pool_new (run_task, self, MAX (n_threads, 1), TRUE, error);
  if (self->pool == NULL)
    {
      ts_helora_local_free (self);
      return NULL;
    }
  return self;
}

void
ts_helora_local_free (TsHeloraLocal *self)
{
  if (self == NULL)
    return;
  if (self->pool != NULL)
    g_thread_pool_free (self->pool, FALSE, TRUE);
  g_ptr_array_unref (self->plans);
  g_free (self);
}

gboolean
ts_helora_local_add_module (TsHeloraLocal *self, guint d, guint r, const float *a,
                            guint *index, GError **error)
{
  CkksHeloraPlan *plan = NULL;

  g_return_val_if_fail (self != NULL && index != NULL, FALSE);

  if (!ts_helora_ckks_check (ckks_helora_plan_new (self->ctx, d, r, a, &plan),
                             "Encoding the adapter", error))
    return FALSE;
  *index = self->plans->len;
  g_ptr_array_add (self->plans, plan);
  return TRUE;
}

gboolean
ts_helora_local_evaluate (TsHeloraLocal *self, const guint *modules, guint n,
                          CkksCiphertext *const *inputs, CkksCiphertext **const *outputs,
                          GError **error)
{
  Batch batch = { .pending = n, .status = CKKS_OK };
  g_autofree Task *tasks = g_new0 (Task, n);

  for (guint i = 0; i < n; i++)
    g_return_val_if_fail (modules[i] < self->plans->len, FALSE);
  if (n == 0)
    return TRUE;
  g_mutex_init (&batch.lock);
  g_cond_init (&batch.done);
  for (guint i = 0; i < n; i++)
    tasks[i] = (Task) { &batch, g_ptr_array_index (self->plans, modules[i]), inputs, outputs[i] };
  /* The caller runs one product itself: a single module costs no thread
   * hand-off, several run side by side on the pool. */
  for (guint i = 1; i < n; i++)
    g_thread_pool_push (self->pool, &tasks[i], NULL);
  run_task (&tasks[0], self);
  g_mutex_lock (&batch.lock);
  while (batch.pending > 0)
    g_cond_wait (&batch.done, &batch.lock);
  g_mutex_unlock (&batch.lock);
  g_mutex_clear (&batch.lock);
  g_cond_clear (&batch.done);
  return ts_helora_ckks_check (batch.status, "Evaluating the adapter", error);
}
