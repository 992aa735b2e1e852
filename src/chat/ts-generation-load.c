/* ts-generation-load.c: a model, or another adapter on it, loaded on a worker for a main loop.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-generation.h"

typedef struct
{
  char *model_path;
  GStrv adapter_paths;
  float *weights;
  guint n_adapters;
  TsGenerationModel *model;    /* an adapter's load: the model it goes on */
} Job;

static void
job_free (gpointer data)
{
  Job *job = data;

  g_free (job->model_path);
  g_strfreev (job->adapter_paths);
  g_free (job->weights);
  g_clear_pointer (&job->model, ts_generation_model_unref);
  g_free (job);
}

static void
load_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  Job *job = data;
  GError *error = NULL;
  TsGenerationModel *model =
    ts_generation_model_load_stack (job->model_path, (const char *const *) job->adapter_paths,
                                    job->weights, job->n_adapters, &error);

  if (model == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, model, (GDestroyNotify) ts_generation_model_unref);
}

/* Reading a big model cannot stop midway: a cancel returns at once, and
 * the worker's model is dropped when it is done. */
static GTask *
task_new (gpointer source_tag, Job *job, GCancellable *cancellable, GAsyncReadyCallback callback,
          gpointer user_data)
{
  GTask *task = g_task_new (NULL, cancellable, callback, user_data);

  g_task_set_source_tag (task, source_tag);
  g_task_set_task_data (task, job, job_free);
  g_task_set_return_on_cancel (task, TRUE);
  return task;
}

void
ts_generation_model_load_stack_async (const char *model_path, const char *const *adapter_paths,
                                      const float *weights, guint n, GCancellable *cancellable,
                                      GAsyncReadyCallback callback, gpointer user_data)
{
  Job *job = g_new0 (Job, 1);
  g_autoptr (GTask) task = NULL;

  g_return_if_fail (model_path != NULL);
  job->model_path = g_strdup (model_path);
  job->adapter_paths = g_new0 (char *, n + 1);
  job->weights = g_new (float, MAX (n, 1));
  job->n_adapters = n;
  for (guint i = 0; i < n; i++)
    {
      job->adapter_paths[i] = g_strdup (adapter_paths[i]);
      job->weights[i] = weights != NULL ? weights[i] : 1.0f;
    }
  task = task_new (ts_generation_model_load_stack_async, job, cancellable, callback, user_data);
  g_task_run_in_thread (task, load_thread);
}

TsGenerationModel *
ts_generation_model_load_stack_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

static void
lora_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  Job *job = data;
  GError *error = NULL;

  if (ts_generation_model_get_lora (job->model, job->adapter_paths[0], &error) == NULL
      && error != NULL)
    g_task_return_error (task, error);
  else
    g_task_return_boolean (task, TRUE);
}

void
ts_generation_model_load_lora_async (TsGenerationModel *self, const char *adapter_path,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data)
{
  Job *job = g_new0 (Job, 1);
  g_autoptr (GTask) task = NULL;

  g_return_if_fail (self != NULL);
  job->model = ts_generation_model_ref (self);
  job->adapter_paths = g_new0 (char *, 2);
  job->adapter_paths[0] = g_strdup (adapter_path);
  task = task_new (ts_generation_model_load_lora_async, job, cancellable, callback, user_data);
  g_task_run_in_thread (task, lora_thread);
}

gboolean
ts_generation_model_load_lora_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}
