/* ts-main-context.c: handing work from a worker thread to a main context.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-main-context.h"

typedef struct {
  GSourceFunc func;
  gpointer data;
  GDestroyNotify notify;
} Posted;

static gboolean
posted_dispatch (gpointer user_data)
{
  Posted *p = user_data;

  p->func (p->data);
  return G_SOURCE_REMOVE;
}

static void
posted_free (gpointer user_data)
{
  Posted *p = user_data;

  if (p->notify != NULL)
    p->notify (p->data);
  g_free (p);
}

void
ts_main_context_post (GMainContext *context, GSourceFunc func, gpointer data,
                      GDestroyNotify notify)
{
  g_return_if_fail (func != NULL);

  GSource *source = g_idle_source_new ();
  Posted *p = g_new (Posted, 1);

  *p = (Posted) { func, data, notify };
  g_source_set_priority (source, G_PRIORITY_DEFAULT);
  g_source_set_callback (source, posted_dispatch, p, posted_free);
  g_source_set_static_name (source, "ts_main_context_post");
  g_source_attach (source, context);
  g_source_unref (source);
}

typedef struct {
  GTask *task;
  GSourceFunc func;
  gpointer data;
  GDestroyNotify notify;
} Progress;

static gboolean
progress_dispatch (gpointer user_data)
{
  Progress *p = user_data;

  if (!g_task_get_completed (p->task))
    p->func (p->data);
  return G_SOURCE_REMOVE;
}

static void
progress_free (gpointer user_data)
{
  Progress *p = user_data;

  if (p->notify != NULL)
    p->notify (p->data);
  g_object_unref (p->task);
  g_free (p);
}

void
ts_task_post_progress (GTask *task, GSourceFunc func, gpointer data, GDestroyNotify notify)
{
  Progress *p = g_new (Progress, 1);

  g_return_if_fail (G_IS_TASK (task));
  *p = (Progress) { g_object_ref (task), func, data, notify };
  ts_main_context_post (g_task_get_context (task), progress_dispatch, p, progress_free);
}
