/* thread-fixture.c: a widget-side file that starts a thread, which
 * check-no-threads.sh must refuse (the check's own test).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>

GThread *thread_fixture_start (GThreadFunc func, gpointer data);

GThread *
thread_fixture_start (GThreadFunc func, gpointer data)
{
  return g_thread_new ("fixture", func, data);
}
