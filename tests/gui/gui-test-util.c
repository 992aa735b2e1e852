/* gui-test-util.c: helpers for the GUI tests: waiting on the main loop, finding widgets, screenshots.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-settings.h"
#include "ts-test-util.h"

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
  /* A condition that holds now, but only after the timeout woke the loop,
   * changed without any main-loop event: a different bug from a hang. */
  if (timed_out && condition (data))
    g_error ("%s: waited %u s for %s, which held by then without waking the main loop",
             g_test_get_path (), seconds, what);
  if (timed_out)
    g_error ("%s: timed out after %u s waiting for %s", g_test_get_path (), seconds, what);
  g_source_remove (id);
}

GtkWidget *
gui_find_widget (GtkWidget *widget, GuiWidgetMatch match, gconstpointer data)
{
  if (match (widget, data))
    return widget;
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = gui_find_widget (child, match, data);

      if (found != NULL)
        return found;
    }
  return NULL;
}

static gboolean
is_of_type (GtkWidget *widget, gconstpointer type)
{
  return G_TYPE_CHECK_INSTANCE_TYPE (widget, GPOINTER_TO_SIZE (type));
}

GtkWidget *
gui_find_descendant (GtkWidget *widget, GType type)
{
  return gui_find_widget (widget, is_of_type, GSIZE_TO_POINTER (type));
}

static gboolean
is_button_labelled (GtkWidget *widget, gconstpointer label)
{
  return GTK_IS_BUTTON (widget) && g_strcmp0 (gtk_button_get_label (GTK_BUTTON (widget)), label) == 0;
}

GtkWidget *
gui_find_button (GtkWidget *widget, const char *label)
{
  return gui_find_widget (widget, is_button_labelled, label);
}

AdwMessageDialog *
gui_find_message_dialog (void)
{
  g_autoptr (GList) windows = gtk_window_list_toplevels ();

  for (GList *l = windows; l != NULL; l = l->next)
    if (ADW_IS_MESSAGE_DIALOG (l->data) && gtk_widget_get_visible (l->data))
      return l->data;
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

gboolean
gui_test_program_init (GuiTestProgram *program, int *argc, char ***argv, const char *name)
{
  g_autofree char *template = g_strdup_printf ("tensafe-%s-XXXXXX", name);

  g_test_init (argc, argv, NULL);
  program->data_home = g_dir_make_tmp (template, NULL);
  g_assert_nonnull (program->data_home);
  g_setenv ("XDG_DATA_HOME", program->data_home, TRUE);
  program->app = NULL;
  if (!gtk_init_check ())
    return FALSE;
  adw_init ();
  program->app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  return TRUE;
}

int
gui_test_program_run (GuiTestProgram *program, const char *no_display_path)
{
  int status = program->app != NULL ? g_test_run () : gui_run_without_display (no_display_path);

  ts_test_remove_tree (program->data_home);
  g_clear_pointer (&program->data_home, g_free);
  g_clear_object (&program->app);
  return status;
}
static void
settle (void)
{
  for (int i = 0; i < 100; i++)
    g_main_context_iteration (NULL, FALSE);
}

void
gui_save_screenshot (GtkWidget *widget, const char *name)
{
  const char *dir = g_getenv ("TS_SCREENSHOT_DIR");
  g_autoptr (GdkPaintable) paintable = NULL;
  g_autoptr (GtkSnapshot) snapshot = NULL;
  g_autoptr (GskRenderNode) node = NULL;
  g_autoptr (GdkTexture) texture = NULL;
  g_autofree char *path = NULL;

  if (dir == NULL)
    return;
  /* Transitions (stack slides, revealers) take a few hundred milliseconds. */
  settle ();
  g_usleep (400000);
  settle ();
  paintable = gtk_widget_paintable_new (widget);
  snapshot = gtk_snapshot_new ();
  gdk_paintable_snapshot (paintable, snapshot, gtk_widget_get_width (widget),
                          gtk_widget_get_height (widget));
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  texture = gsk_renderer_render_texture (gtk_native_get_renderer (GTK_NATIVE (widget)),
                                         node, NULL);
  path = g_build_filename (dir, name, NULL);
  g_assert_true (gdk_texture_save_to_png (texture, path));
  g_test_message ("screenshot: %s", path);
}

gboolean
gui_chat_ready (gpointer page)
{
  return ts_chat_page_get_ready (TS_CHAT_PAGE (page));
}

gboolean
gui_chat_idle (gpointer page)
{
  return !ts_chat_page_get_busy (TS_CHAT_PAGE (page));
}

static gboolean
widget_mapped (gpointer widget)
{
  return gtk_widget_get_mapped (GTK_WIDGET (widget));
}

static gboolean
no_windows (gpointer app)
{
  return gtk_application_get_windows (GTK_APPLICATION (app)) == NULL;
}

TsChatPage *
gui_start_chat (GApplication *app, guint seconds)
{
  GtkWindow *window;
  TsChatPage *page;

  if (!g_application_get_is_registered (app))
    g_assert_true (g_application_register (app, NULL, NULL));
  /* every test starts as a fresh install does, on the demo model, whatever
   * an earlier test of this process loaded (the settings remember it) */
  ts_settings_set_chat_model (ts_application_get_settings (TS_APPLICATION (app)), NULL, NULL);
  g_application_activate (app);
  window = gtk_application_get_active_window (GTK_APPLICATION (app));
  g_assert_nonnull (window);
  gui_wait_until (widget_mapped, window, seconds, "the main window to map");
  page = TS_CHAT_PAGE (gui_find_descendant (GTK_WIDGET (window), TS_TYPE_CHAT_PAGE));
  g_assert_nonnull (page);
  gui_wait_until (gui_chat_ready, page, seconds, "the demo model to load");
  return page;
}

void
gui_quit_app (GApplication *app, guint seconds)
{
  g_action_group_activate_action (G_ACTION_GROUP (app), "quit", NULL);
  gui_wait_until (no_windows, app, seconds, "quit to close every window");
}

void
gui_store_result (GObject *source, GAsyncResult *result, gpointer data)
{
  *(GAsyncResult **) data = g_object_ref (result);
}

gboolean
gui_have_result (gpointer data)
{
  return *(GAsyncResult **) data != NULL;
}

gboolean
gui_message_dialog_shown (gpointer unused)
{
  return gui_find_message_dialog () != NULL;
}

gboolean
gui_message_dialog_gone (gpointer unused)
{
  return gui_find_message_dialog () == NULL;
}
