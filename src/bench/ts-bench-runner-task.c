/* ts-bench-runner-task.c: ts_bench_run() on a worker, progress posted to the caller.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-bench-runner-private.h"

#include "ts-main-context.h"

typedef struct
{
  TsBenchOptions *options;
  TsBenchProgressFunc progress;
  gpointer progress_data;
  GTask *task;             /* the worker's, while it runs */
  GPtrArray *results;      /* filled on the worker; read once the task is done */
} Job;

static void
job_free (gpointer data)
{
  Job *job = data;

  ts_bench_options_free (job->options);
  g_ptr_array_unref (job->results);
  g_free (job);
}

typedef struct
{
  Job *job;                /* the task's: the post holds the task */
  double fraction;
  char *label;
} Progress;

static void
progress_free (gpointer data)
{
  Progress *p = data;

  g_free (p->label);
  g_free (p);
}

static gboolean
deliver (gpointer data)
{
  Progress *p = data;

  p->job->progress (p->fraction, p->label, p->job->progress_data);
  return G_SOURCE_REMOVE;
}

/* On the worker. */
static void
relay (double fraction, const char *label, gpointer user_data)
{
  Job *job = user_data;
  Progress *p = g_new (Progress, 1);

  *p = (Progress) { job, fraction, g_strdup (label) };
  ts_task_post_progress (job->task, deliver, p, progress_free);
}

static void
run_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  Job *job = task_data;
  GError *error = NULL;

  job->task = task;
  if (_ts_bench_run_into (job->options, job->progress != NULL ? relay : NULL, job,
                          job->results, cancellable, &error))
    g_task_return_pointer (task, g_ptr_array_ref (job->results), (GDestroyNotify) g_ptr_array_unref);
  else
    g_task_return_error (task, error);
}

void
ts_bench_run_async (TsBenchOptions *options, TsBenchProgressFunc progress, gpointer progress_data,
                    GCancellable *cancellable, GAsyncReadyCallback callback, gpointer user_data)
{
  g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  Job *job = g_new0 (Job, 1);

  g_return_if_fail (options != NULL);
  job->options = options;
  job->results = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_bench_result_free);
  job->progress = progress;
  job->progress_data = progress_data;
  g_task_set_source_tag (task, ts_bench_run_async);
  g_task_set_task_data (task, job, job_free);
  g_task_run_in_thread (task, run_thread);
}

GPtrArray *
ts_bench_run_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

GPtrArray *
ts_bench_run_get_finished (GAsyncResult *result)
{
  Job *job;

  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  /* The worker returned before the callback runs: it adds no more rows. */
  job = g_task_get_task_data (G_TASK (result));
  return g_ptr_array_ref (job->results);
}
