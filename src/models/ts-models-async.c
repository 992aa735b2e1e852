/* ts-models-async.c: pulls and imports on a worker, progress coalesced onto the caller's context.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-async.h"

#include "ts-main-context.h"
#include "ts-models-import.h"
#include "ts-models-pull.h"

typedef struct
{
  const TsModelEntry   *entry;      /* pull */
  char                 *path;       /* import */
  char                 *name;
  char                 *dir;
  TsModelsProgressFunc  progress;
  gpointer              progress_data;
  GTask                *task;       /* the worker's, while it runs */

  /* The latest report, written by the worker and read on the main context:
   * one delivery is queued at a time, and it shows what is latest when it
   * runs. */
  GMutex                lock;
  TsModelsProgress      latest;
  char                 *latest_what;
  gboolean              queued;
} Job;

static void
job_free (gpointer data)
{
  Job *job = data;

  g_free (job->path);
  g_free (job->name);
  g_free (job->dir);
  g_free (job->latest_what);
  g_mutex_clear (&job->lock);
  g_free (job);
}

static gboolean
deliver (gpointer data)
{
  Job *job = g_task_get_task_data (data);
  TsModelsProgress progress;
  g_autofree char *what = NULL;

  g_mutex_lock (&job->lock);
  progress = job->latest;
  what = g_strdup (job->latest_what);
  job->queued = FALSE;
  g_mutex_unlock (&job->lock);
  progress.what = what;
  job->progress (&progress, job->progress_data);
  return G_SOURCE_REMOVE;
}

/* On the worker. */
static void
relay (const TsModelsProgress *progress, gpointer data)
{
  Job *job = data;
  gboolean queue;

  g_mutex_lock (&job->lock);
  job->latest = *progress;
  job->latest.what = NULL;
  if (g_strcmp0 (job->latest_what, progress->what) != 0)
    {
      g_free (job->latest_what);
      job->latest_what = g_strdup (progress->what);
    }
  queue = !job->queued;
  job->queued = TRUE;
  g_mutex_unlock (&job->lock);
  if (queue)
    ts_task_post_progress (job->task, deliver, job->task, NULL);
}

static void
return_path (GTask *task, char *result, GError *error)
{
  if (result == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, result, g_free);
}

static void
pull_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  Job *job = data;
  TsModelsPullOptions options = { .progress = job->progress != NULL ? relay : NULL,
                                  .progress_data = job, .cancellable = cancellable };
  GError *error = NULL;
  char *result;

  job->task = task;
  result = ts_models_pull (job->entry, job->dir, &options, &error);
  return_path (task, result, error);
}

static void
import_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  Job *job = data;
  TsModelsMeter meter = { .func = job->progress != NULL ? relay : NULL, .data = job };
  GError *error = NULL;
  char *result;

  job->task = task;
  result = ts_models_import (job->path, job->dir, job->name, &meter, cancellable, &error);
  return_path (task, result, error);
}

static Job *
job_new (const char *dir, TsModelsProgressFunc progress, gpointer progress_data)
{
  Job *job = g_new0 (Job, 1);

  job->dir = g_strdup (dir);
  job->progress = progress;
  job->progress_data = progress_data;
  g_mutex_init (&job->lock);
  return job;
}

void
ts_models_pull_async (const TsModelEntry *entry, const char *dir, TsModelsProgressFunc progress,
                      gpointer progress_data, GCancellable *cancellable,
                      GAsyncReadyCallback callback, gpointer user_data)
{
  g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  Job *job;

  g_return_if_fail (entry != NULL && dir != NULL);
  job = job_new (dir, progress, progress_data);
  job->entry = entry;
  g_task_set_source_tag (task, ts_models_pull_async);
  g_task_set_task_data (task, job, job_free);
  g_task_run_in_thread (task, pull_thread);
}

char *
ts_models_pull_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

void
ts_models_import_async (const char *path, const char *dir, const char *name,
                        TsModelsProgressFunc progress, gpointer progress_data,
                        GCancellable *cancellable, GAsyncReadyCallback callback,
                        gpointer user_data)
{
  g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  Job *job;

  g_return_if_fail (path != NULL && dir != NULL);
  job = job_new (dir, progress, progress_data);
  job->path = g_strdup (path);
  job->name = g_strdup (name);
  g_task_set_source_tag (task, ts_models_import_async);
  g_task_set_task_data (task, job, job_free);
  g_task_run_in_thread (task, import_thread);
}

char *
ts_models_import_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}
