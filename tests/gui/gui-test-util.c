/* gui-test-util.c: helpers for the GUI tests: waiting on the main loop, finding widgets.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "gui-test-util.h"

static gboolean
timeout_cb (gpointer data)
{
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

void
gui_wait_until (GuiCondition condition, gpointer data, guint seconds, const char *what)
{
  gboolean timed_out = FALSE;
  guint id = g_timeout_add_seconds (seconds, timeout_cb, &timed_out);

  while (!condition (data) && !timed_out)
    g_main_context_iteration (NULL, TRUE);
  if (timed_out)
    g_error ("timed out waiting for %s", what);
  g_source_remove (id);
}

GtkWidget *
gui_find_descendant (GtkWidget *widget, GType type)
{
  if (G_TYPE_CHECK_INSTANCE_TYPE (widget, type))
    return widget;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = gui_find_descendant (child, type);

      if (found != NULL)
        return found;
    }
  return NULL;
}

static void
no_display (void)
{
  g_test_skip ("no display: run the gui suite under xvfb-run");
}

int
gui_run_without_display (const char *path)
{
  g_test_add_func (path, no_display);
  return g_test_run ();
}
