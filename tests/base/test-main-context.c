/* test-main-context.c: ts_main_context_post() runs the function on the
 * thread iterating the context, even when the poster could have acquired it.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>

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

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/main-context/post-waits-for-owner", test_post_waits_for_owner);
  return g_test_run ();
}
