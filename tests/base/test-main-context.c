/* test-main-context.c: ts_main_context_post() runs the function on the
 * thread iterating the context, even when the poster could have acquired it;
 * ts_task_post_progress() delivers a worker's progress before its task's
 * result, and never after it.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <gio/gio.h>

#include "ts-main-context.h"

typedef struct {
  GThread *ran_on;
  gboolean freed;
} Record;

static gboolean
record_thread (gpointer data)
{
  Record *r = data;

  r->ran_on = g_thread_self ();
  return G_SOURCE_REMOVE;
}

static void
record_free (gpointer data)
{
  ((Record *) data)->freed = TRUE;
}

static gpointer
post_from_worker (gpointer data)
{
  ts_main_context_post (NULL, record_thread, data, record_free);
  return NULL;
}

/* The main thread is not iterating while the worker posts, so the default
 * context is free to acquire: the work must still wait for the main loop. */
static void
test_post_waits_for_owner (void)
{
  Record r = { 0 };
  GThread *worker = g_thread_new ("poster", post_from_worker, &r);

  g_thread_join (worker);
  g_assert_null (r.ran_on);
  g_assert_false (r.freed);
  while (!r.freed)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (r.ran_on == g_thread_self ());
}

/* What the caller of a task saw, in order: "p" for each progress report,
 * "r" for the result. */
typedef struct {
  GString *seen;
  guint freed;
} Calls;

static gboolean
progress_seen (gpointer data)
{
  g_string_append_c (((Calls *) data)->seen, 'p');
  return G_SOURCE_REMOVE;
}

static void
progress_freed (gpointer data)
{
  ((Calls *) data)->freed++;
}

static void
task_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  ts_task_post_progress (task, progress_seen, data, progress_freed);
  ts_task_post_progress (task, progress_seen, data, progress_freed);
  g_task_return_boolean (task, TRUE);
}

static void
task_done (GObject *source, GAsyncResult *result, gpointer data)
{
  g_string_append_c (((Calls *) data)->seen, 'r');
}

static void
test_progress_before_result (void)
{
  Calls calls = { g_string_new (NULL), 0 };
  g_autoptr (GTask) task = g_task_new (NULL, NULL, task_done, &calls);

  g_task_set_task_data (task, &calls, NULL);
  g_task_run_in_thread (task, task_thread);
  while (calls.freed < 2 || !g_task_get_completed (task))
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpstr (calls.seen->str, ==, "ppr");
  g_string_free (calls.seen, TRUE);
}

/* Progress that arrives once the caller has its result is dropped (and
 * freed), so a caller may free what the progress callback uses right in
 * its result callback. */
static void
test_progress_after_result_dropped (void)
{
  Calls calls = { g_string_new (NULL), 0 };
  g_autoptr (GTask) task = g_task_new (NULL, NULL, task_done, &calls);

  g_task_return_boolean (task, TRUE);
  while (!g_task_get_completed (task))
    g_main_context_iteration (NULL, TRUE);
  ts_task_post_progress (task, progress_seen, &calls, progress_freed);
  while (calls.freed < 1)
    g_main_context_iteration (NULL, TRUE);
  g_assert_cmpstr (calls.seen->str, ==, "r");
  g_string_free (calls.seen, TRUE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/main-context/post-waits-for-owner", test_post_waits_for_owner);
  g_test_add_func ("/main-context/progress-before-result", test_progress_before_result);
  g_test_add_func ("/main-context/progress-after-result-dropped",
                   test_progress_after_result_dropped);
  return g_test_run ();
}
