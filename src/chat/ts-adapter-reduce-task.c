/* ts-adapter-reduce-task.c: ts_adapter_reduce() on a worker, progress posted to the caller.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-adapter-reduce.h"

#include "ts-main-context.h"

/* The request, copied: the caller may change its own meanwhile. */
typedef struct
{
  char *source, *dest_dir, *id, *name, *keyring_path;
  guint rank;
  gboolean replace;
  TsMarketAdapter *catalogue;
  TsAdapterReduceProgress progress;
  gpointer progress_data;
  GTask *task;             /* the worker's, while it runs */
} Job;

static void
job_free (gpointer data)
{
  Job *job = data;

  g_free (job->source);
  g_free (job->dest_dir);
  g_free (job->id);
  g_free (job->name);
  g_free (job->keyring_path);
  g_clear_pointer (&job->catalogue, ts_market_adapter_unref);
  g_free (job);
}

typedef struct
{
  Job *job;                /* the task's: the post holds the task */
  guint done, total;
  char *module;
} Progress;

static void
progress_free (gpointer data)
{
  Progress *p = data;

  g_free (p->module);
  g_free (p);
}

static gboolean
deliver (gpointer data)
{
  Progress *p = data;

  p->job->progress (p->done, p->total, p->module, p->job->progress_data);
  return G_SOURCE_REMOVE;
}

/* On the worker. */
static void
relay (guint done, guint total, const char *module, gpointer user_data)
{
  Job *job = user_data;
  Progress *p = g_new (Progress, 1);

  *p = (Progress) { job, done, total, g_strdup (module) };
  ts_task_post_progress (job->task, deliver, p, progress_free);
}

static void
reduce_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  Job *job = task_data;
  TsAdapterReduceRequest req = {
    .source = job->source, .dest_dir = job->dest_dir, .id = job->id, .name = job->name,
    .rank = job->rank, .replace = job->replace, .keyring_path = job->keyring_path,
    .catalogue = job->catalogue,
  };
  GError *error = NULL;
  TsAdapterReduction *red;

  job->task = task;
  red = ts_adapter_reduce (&req, job->progress != NULL ? relay : NULL, job, cancellable, &error);
  if (red != NULL)
    g_task_return_pointer (task, red, (GDestroyNotify) ts_adapter_reduction_free);
  else
    g_task_return_error (task, error);
}

void
ts_adapter_reduce_async (const TsAdapterReduceRequest *request, TsAdapterReduceProgress progress,
                         gpointer progress_data, GCancellable *cancellable,
                         GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (request != NULL);
  g_return_if_fail (request->source != NULL && request->dest_dir != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  Job *job = g_new0 (Job, 1);

  job->source = g_strdup (request->source);
  job->dest_dir = g_strdup (request->dest_dir);
  job->id = g_strdup (request->id);
  job->name = g_strdup (request->name);
  job->keyring_path = g_strdup (request->keyring_path);
  job->rank = request->rank;
  job->replace = request->replace;
  job->catalogue = request->catalogue != NULL ? ts_market_adapter_ref (request->catalogue) : NULL;
  job->progress = progress;
  job->progress_data = progress_data;
  g_task_set_source_tag (task, ts_adapter_reduce_async);
  g_task_set_task_data (task, job, job_free);
  g_task_run_in_thread (task, reduce_thread);
}

TsAdapterReduction *
ts_adapter_reduce_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}
