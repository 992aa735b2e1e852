/* test-chat-narrow.c: the chat page on a laptop screen (1366×768) through a
 * demo: the window can be 1024 px wide or less before and after replies,
 * after long errors and in German, is never pushed wider than it was made,
 * and below a width the two panes stack one above the other.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * With TS_SCREENSHOT_DIR set, the window is saved there at each width
 * checked (narrow-*.png).
 */
#include <adwaita.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <locale.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-page.h"
#include "ts-chat-panes.h"
#include "ts-config.h"
#include "ts-test-util.h"

#define PROMPT "Tell me about encrypted adapters."
#define SCREEN_WIDTH 1366
#define SCREEN_HEIGHT 768
/* The narrowest laptop window the page must allow. */
#define LAPTOP_WIDTH 1024
/* Narrow enough that the panes no longer fit side by side, wide enough
 * that they do. */
#define STACKED_WIDTH 800
#define SIDE_BY_SIDE_WIDTH 1300

/* A folder path of four names with nowhere to break a line: no space, no
 * hyphen, each 10 × "encrypted_adapters_" (190 characters), as a deep
 * install folder or a long URL has; 763 characters in all. */
static char *
long_path (void)
{
  g_autofree char *name = NULL;
  GString *s = g_string_new (NULL);

  for (int i = 0; i < 10; i++)
    g_string_append (s, "encrypted_adapters_");
  name = g_string_free (s, FALSE);
  return g_strjoin (G_DIR_SEPARATOR_S, name, name, name, name, NULL);
}

/* A test message; a child process (the German run) writes it to its
 * stderr, which the suite's log keeps. */
G_GNUC_PRINTF (1, 2) static void
note (const char *format, ...)
{
  g_autofree char *text = NULL;
  va_list args;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  if (g_test_subprocess ())
    g_printerr ("# %s\n", text);
  else
    g_test_message ("%s", text);
}

static GtkWindow *
page_window (TsChatPage *page)
{
  return GTK_WINDOW (gtk_widget_get_root (GTK_WIDGET (page)));
}

/* The narrowest the window can be, in pixels. */
static int
min_width (TsChatPage *page)
{
  int min;

  gtk_widget_measure (GTK_WIDGET (page_window (page)), GTK_ORIENTATION_HORIZONTAL, -1,
                      &min, NULL, NULL, NULL);
  return min;
}

/* The window's width on the screen: its surface, decorations included. */
static int
screen_width (TsChatPage *page)
{
  return gdk_surface_get_width (gtk_native_get_surface (GTK_NATIVE (page_window (page))));
}

static int
screen_height (TsChatPage *page)
{
  return gdk_surface_get_height (gtk_native_get_surface (GTK_NATIVE (page_window (page))));
}

typedef struct {
  TsChatPage *page;
  int width;
  gboolean timed_out;
} SizeWait;

static gboolean
timeout_cb (gpointer data)
{
  *(gboolean *) data = TRUE;
  return G_SOURCE_REMOVE;
}

/* Lets the main loop run for @ms milliseconds (layout, idles). */
static void
settle (guint ms)
{
  gboolean done = FALSE;

  g_timeout_add (ms, timeout_cb, &done);
  while (!done)
    g_main_context_iteration (NULL, TRUE);
}

/* Whether the window reached @width within @seconds. */
static gboolean
wait_for_width (TsChatPage *page, int width, guint seconds)
{
  gboolean timed_out = FALSE;
  guint id = g_timeout_add_seconds (seconds, timeout_cb, &timed_out);

  while (screen_width (page) != width && !timed_out)
    g_main_context_iteration (NULL, TRUE);
  if (!timed_out)
    g_source_remove (id);
  return !timed_out;
}

/* Asks for a window @width × @height, as a user dragging its edge would,
 * and waits for it (or gives up: a window its content keeps wider never
 * gets there, and the caller's check on its width says so). */
static void
resize_window (TsChatPage *page, int width, int height)
{
  GtkWindow *window = page_window (page);

  gtk_window_set_default_size (window, width, height);
  /* the first request after the window maps can go unanswered: once more */
  if (!wait_for_width (page, width, 1))
    {
      gtk_window_set_default_size (window, width - 1, height);
      gtk_window_set_default_size (window, width, height);
      wait_for_width (page, width, 2);
    }
  settle (200);
  note ("asked for %d × %d px: the window is %d × %d px", width, height, screen_width (page),
        screen_height (page));
}

static void
screenshot (TsChatPage *page, const char *name)
{
  gui_save_screenshot (GTK_WIDGET (page_window (page)), name);
}

static gboolean
page_idle (gpointer page)
{
  return !ts_chat_page_get_busy (TS_CHAT_PAGE (page));
}

static void
finished_cb (TsChatPane *pane, int kind, const char *message, char **error_out)
{
  if (message != NULL && *error_out == NULL)
    *error_out = g_strdup (message);
}

/* Sends @prompt through the page's own action and waits for both answers;
 * returns the first error a pane reported, or NULL. */
static char *
send_prompt (TsChatPage *page, const char *prompt)
{
  char *error = NULL;
  gulong ids[2];

  for (int he = 0; he <= 1; he++)
    ids[he] = g_signal_connect (ts_chat_page_get_pane (page, he), "finished",
                                G_CALLBACK (finished_cb), &error);
  ts_chat_page_set_prompt (page, prompt);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "chat.send", NULL));
  gui_wait_until (page_idle, page, 30, "both panes to finish");
  for (int he = 0; he <= 1; he++)
    g_signal_handler_disconnect (ts_chat_page_get_pane (page, he), ids[he]);
  return error;
}

static TsChatPage *
start_app (TsApplication *app)
{
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), 30);

  g_object_set (page, "max-tokens", 6, "temperature", 0.0, NULL);
  return page;
}

/* The window fits the laptop: it can be made LAPTOP_WIDTH wide, and at the
 * screen's width it was not pushed wider. */
static void
check_fits (TsChatPage *page, const char *when)
{
  int min = min_width (page);
  int width = screen_width (page);

  note ("%s: window minimum width %d px, width %d px", when, min, width);
  g_assert_cmpint (min, <=, LAPTOP_WIDTH);
  g_assert_cmpint (width, <=, SCREEN_WIDTH);
}

/* Resized to LAPTOP_WIDTH, then STACKED_WIDTH, the window is that wide and
 * as high as the screen; then back to the screen's width. */
static void
check_narrower (TsChatPage *page, const char *lang, const char *when)
{
  const int widths[] = { LAPTOP_WIDTH, STACKED_WIDTH };

  for (gsize i = 0; i < G_N_ELEMENTS (widths); i++)
    {
      g_autofree char *name = g_strdup_printf ("narrow-%s-%s-%d.png", lang, when, widths[i]);

      resize_window (page, widths[i], SCREEN_HEIGHT);
      screenshot (page, name);
      g_assert_cmpint (screen_width (page), ==, widths[i]);
      g_assert_cmpint (screen_height (page), ==, SCREEN_HEIGHT);
    }
  resize_window (page, SCREEN_WIDTH, SCREEN_HEIGHT);
}

static gboolean
error_shown (gpointer page)
{
  return ts_chat_page_get_last_error (TS_CHAT_PAGE (page)) != NULL;
}

/* A model file deep in folders with long names fails to load: the error
 * that stays on screen names its whole path. */
static void
fail_model_load (TsChatPage *page)
{
  g_autofree char *segment = long_path ();
  g_autofree char *tmp = g_dir_make_tmp ("tensafe-narrow-XXXXXX", NULL);
  g_autofree char *dir = g_build_filename (tmp, segment, NULL);
  g_autofree char *bad = g_build_filename (dir, "broken-model.gguf", NULL);

  g_assert_cmpint (g_mkdir_with_parents (dir, 0700), ==, 0);
  g_assert_true (g_file_set_contents (bad, "GGUF", 4, NULL));
  ts_chat_page_load_model (page, bad, NULL);
  gui_wait_until (error_shown, page, 30, "the load error");
  g_assert_nonnull (strstr (ts_chat_page_get_last_error (page), "broken-model.gguf"));
  gui_wait_until (gui_chat_ready, page, 30, "the page to keep its model");
  settle (300);
  g_remove (bad);
  g_rmdir (dir);
  g_rmdir (tmp);
}

/* The HE pane's evaluator at a long URL nobody listens on: the pane shows
 * the error under its reply, the subtitle names the URL, a toast says it. */
static void
fail_remote_evaluator (TsChatPage *page, GSettings *settings, const char *lang)
{
  g_autofree char *segment = long_path ();
  g_autofree char *url = g_strdup_printf ("ws://127.0.0.1:1/%s", segment);
  g_autofree char *error = NULL;

  g_settings_set_string (settings, "evaluator-url", url);
  g_settings_set_string (settings, "evaluator-mode", "remote");
  error = send_prompt (page, "Only the plaintext side answers this.");
  g_assert_nonnull (error);
  note ("the HE pane's error: %s", error);
  /* shown in the pane, where it has to wrap */
  g_assert_nonnull (strstr (ts_chat_pane_get_reply_error (ts_chat_page_get_pane (page, TRUE)),
                            segment));
  /* in the demo's language, as the rest of the window */
  g_assert_nonnull (strstr (error, g_str_equal (lang, "de") ? "nicht erreichbar"
                                                            : "Cannot reach the evaluator"));
  settle (300);
}

/* A whole demo at the screen's width: before any reply, after a reply,
 * after a model that fails to load from a long path and an evaluator
 * unreachable at a long URL, the window was never pushed wider than the
 * screen and can still be made LAPTOP_WIDTH, then STACKED_WIDTH wide. */
static void
run_demo (const char *lang)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  GSettings *settings = ts_settings_get_gsettings (ts_application_get_settings (app));
  g_autofree char *error = NULL;

  resize_window (page, SCREEN_WIDTH, SCREEN_HEIGHT);
  check_fits (page, "before any reply");
  error = send_prompt (page, PROMPT);
  g_assert_null (error);
  check_fits (page, "after a reply");
  check_narrower (page, lang, "reply");

  fail_model_load (page);
  check_fits (page, "after a model error with a long path");
  fail_remote_evaluator (page, settings, lang);
  check_fits (page, "after an evaluator error at a long URL");
  check_narrower (page, lang, "error");
  g_settings_reset (settings, "evaluator-mode");
  g_settings_reset (settings, "evaluator-url");
  gui_quit_app (G_APPLICATION (app), 30);
}

static GtkWidget *
find_panes (TsChatPage *page)
{
  GtkWidget *panes = gui_find_descendant (GTK_WIDGET (page), TS_TYPE_CHAT_PANES);

  g_assert_nonnull (panes);
  return panes;
}

/* Where @pane is on the page. */
static graphene_rect_t
pane_bounds (TsChatPage *page, gboolean he)
{
  graphene_rect_t bounds;

  g_assert_true (gtk_widget_compute_bounds (GTK_WIDGET (ts_chat_page_get_pane (page, he)),
                                            GTK_WIDGET (page), &bounds));
  return bounds;
}

/* Both panes are shown, one above the other (@stacked) or side by side,
 * as their places on the page say. */
static void
check_arrangement (TsChatPage *page, gboolean stacked)
{
  graphene_rect_t plain = pane_bounds (page, FALSE), he = pane_bounds (page, TRUE);

  note ("window %d px: plaintext pane %.0f,%.0f %.0f×%.0f, HE pane %.0f,%.0f %.0f×%.0f",
        screen_width (page), plain.origin.x, plain.origin.y, plain.size.width,
        plain.size.height, he.origin.x, he.origin.y, he.size.width, he.size.height);
  g_assert_cmpfloat (plain.size.width, >, 0);
  g_assert_cmpfloat (plain.size.height, >, 0);
  g_assert_cmpfloat (he.size.width, >, 0);
  g_assert_cmpfloat (he.size.height, >, 0);
  if (stacked)
    {
      g_assert_cmpfloat (plain.origin.x, ==, he.origin.x);
      g_assert_cmpfloat (plain.size.width, ==, he.size.width);
      g_assert_cmpfloat (he.origin.y, >=, plain.origin.y + plain.size.height);
      g_assert_cmpint (ts_chat_panes_get_orientation (TS_CHAT_PANES (find_panes (page))), ==,
                       GTK_ORIENTATION_VERTICAL);
    }
  else
    {
      g_assert_cmpfloat (plain.origin.y, ==, he.origin.y);
      g_assert_cmpfloat (plain.size.height, ==, he.size.height);
      g_assert_cmpfloat (he.origin.x, >=, plain.origin.x + plain.size.width);
      g_assert_cmpint (ts_chat_panes_get_orientation (TS_CHAT_PANES (find_panes (page))), ==,
                       GTK_ORIENTATION_HORIZONTAL);
    }
}

/* Below the breakpoint the panes stack, and nothing keeps the window wider
 * than asked; above it they stand side by side again. */
static void
test_panes_stack (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  g_autofree char *error = send_prompt (page, PROMPT);

  g_assert_null (error);
  resize_window (page, STACKED_WIDTH, SCREEN_HEIGHT);
  screenshot (page, "narrow-stacked.png");
  g_assert_cmpint (screen_width (page), ==, STACKED_WIDTH);
  /* stacked, the panes need more height than the screen has: the page
   * scrolls instead of the window growing */
  g_assert_cmpint (screen_height (page), ==, SCREEN_HEIGHT);
  check_arrangement (page, TRUE);
  resize_window (page, SIDE_BY_SIDE_WIDTH, SCREEN_HEIGHT);
  screenshot (page, "narrow-side-by-side.png");
  g_assert_cmpint (screen_width (page), ==, SIDE_BY_SIDE_WIDTH);
  check_arrangement (page, FALSE);
  /* and back: the switch goes both ways more than once */
  resize_window (page, STACKED_WIDTH, SCREEN_HEIGHT);
  check_arrangement (page, TRUE);
  gui_quit_app (G_APPLICATION (app), 30);
}

static void
test_english_demo_fits (void)
{
  run_demo ("en");
}

/* The same in German, whose words are longer: with the catalogue built in
 * this tree, in a child process (gettext keeps the language it started with). */
static void
test_german_demo_fits (void)
{
  if (g_test_subprocess ())
    {
      g_setenv ("LANGUAGE", "de", TRUE);
      setlocale (LC_ALL, "C.UTF-8");
      bindtextdomain (TS_GETTEXT_PACKAGE, TS_TEST_LOCALEDIR);
      bind_textdomain_codeset (TS_GETTEXT_PACKAGE, "UTF-8");
      textdomain (TS_GETTEXT_PACKAGE);
      /* the catalogue is in use: the demo below is in German */
      g_assert_cmpstr (_("_Send"), ==, "_Senden");
      run_demo ("de");
      return;
    }
  g_test_trap_subprocess (NULL, 0, G_TEST_SUBPROCESS_INHERIT_STDOUT
                                   | G_TEST_SUBPROCESS_INHERIT_STDERR);
  g_test_trap_assert_passed ();
}

int
main (int argc, char **argv)
{
  GuiTestProgram program;

  if (gui_test_program_init (&program, &argc, &argv, "narrow"))
    {
      g_test_add_func ("/chat-narrow/english-demo-fits", test_english_demo_fits);
      g_test_add_func ("/chat-narrow/german-demo-fits", test_german_demo_fits);
      g_test_add_func ("/chat-narrow/panes-stack", test_panes_stack);
    }
  return gui_test_program_run (&program, "/chat-narrow/no-display");
}
