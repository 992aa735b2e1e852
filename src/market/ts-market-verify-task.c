/* ts-market-verify-task.c: ts_market_verify_installed() on a worker, for a main loop.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-install.h"

typedef struct
{
  char *adapters_dir;
  char *id;
  char *keyring_path;
} Job;

static void
job_free (gpointer data)
{
  Job *job = data;

  g_free (job->adapters_dir);
  g_free (job->id);
  g_free (job->keyring_path);
  g_free (job);
}

/* A keyring of its own, read from the file, so the worker shares nothing
 * with the caller's thread. */
static void
verify_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  Job *job = data;
  g_autoptr (TsMarketKeyring) keyring = ts_market_keyring_new (job->keyring_path);
  GError *error = NULL;

  if (ts_market_keyring_load (keyring, &error)
      && ts_market_verify_installed (job->adapters_dir, job->id, keyring, cancellable, &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

void
ts_market_verify_installed_async (const char *adapters_dir, const char *id,
                                  const char *keyring_path, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (adapters_dir != NULL);
  g_return_if_fail (id != NULL);

  g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  Job *job = g_new0 (Job, 1);

  job->adapters_dir = g_strdup (adapters_dir);
  job->id = g_strdup (id);
  job->keyring_path = g_strdup (keyring_path);
  g_task_set_source_tag (task, ts_market_verify_installed_async);
  g_task_set_task_data (task, job, job_free);
  g_task_run_in_thread (task, verify_thread);
}

gboolean
ts_market_verify_installed_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}
