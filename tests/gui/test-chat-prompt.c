/* test-chat-prompt.c: the chat's prompt takes several lines on the demo model:
 * Shift+Enter starts a new line, Enter (keypad Enter, Ctrl+Enter) sends the
 * lines as one prompt that both panes answer and the bubble shows as lines;
 * an empty or blank prompt sends nothing; the prompt grows from one line to
 * six and then scrolls; Tab moves the focus out of it.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Keys: GTK 4.8 cannot make a key event inside the process (its event
 * constructors are private, and the X server here has no XTest), so the
 * tests emit "key-pressed" on the controllers a key press would reach: the
 * prompt's own (ts_prompt_view_get_key_controller(), which the view runs
 * before the text view's) and, for Tab, the text view's. Typed text goes
 * in as the text view inserts what an input method commits
 * (gtk_text_buffer_insert_interactive_at_cursor).
 *
 * With TS_SCREENSHOT_DIR set, the page with a two-line prompt is saved
 * there as prompt-two-lines.png, and with one grown past six lines as
 * prompt-scrolled.png.
 */
#include <adwaita.h>
#include <math.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-message.h"
#include "ts-chat-page.h"
#include "ts-prompt-view.h"
#include "ts-test-util.h"

#define N_TOKENS 4

static TsChatPage *
start_app (TsApplication *app)
{
  TsChatPage *page = gui_start_chat (G_APPLICATION (app), 30);

  g_object_set (page, "max-tokens", N_TOKENS, "temperature", 0.0, NULL);
  return page;
}

static TsPromptView *
prompt_view (TsChatPage *page)
{
  GtkWidget *view = gui_find_descendant (GTK_WIDGET (page), TS_TYPE_PROMPT_VIEW);

  g_assert_nonnull (view);
  return TS_PROMPT_VIEW (view);
}

/* A key press as the prompt's key controller receives it. */
static gboolean
press (TsPromptView *view, guint keyval, GdkModifierType state)
{
  gboolean handled = FALSE;

  g_signal_emit_by_name (ts_prompt_view_get_key_controller (view), "key-pressed",
                         keyval, 0u, state, &handled);
  return handled;
}

static void
type (TsPromptView *view, const char *text)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (ts_prompt_view_get_text_view (view));

  gtk_text_buffer_insert_interactive_at_cursor (buffer, text, -1, TRUE);
}

static gboolean
prompt_has_focus (TsPromptView *view)
{
  GtkWidget *focus = gtk_root_get_focus (gtk_widget_get_root (GTK_WIDGET (view)));

  return focus != NULL && gtk_widget_is_ancestor (focus, GTK_WIDGET (view));
}

static guint
n_turns (TsChatPane *pane)
{
  g_autoptr (GPtrArray) turns = ts_chat_pane_get_turns (pane);

  return turns->len;
}

static gboolean
is_user_message (GtkWidget *widget, gconstpointer unused)
{
  return TS_IS_CHAT_MESSAGE (widget) && ts_chat_message_get_is_user (TS_CHAT_MESSAGE (widget));
}

static gboolean
shows_text (GtkWidget *widget, gconstpointer text)
{
  return GTK_IS_LABEL (widget) && g_strcmp0 (gtk_label_get_text (GTK_LABEL (widget)), text) == 0;
}

/* The user's bubble in @pane shows @text on @n_lines lines. */
static void
check_bubble (TsChatPane *pane, const char *text, int n_lines)
{
  GtkWidget *message = gui_find_widget (GTK_WIDGET (pane), is_user_message, NULL);
  GtkWidget *label;

  g_assert_nonnull (message);
  g_assert_cmpstr (ts_chat_message_get_text (TS_CHAT_MESSAGE (message)), ==, text);
  label = gui_find_widget (message, shows_text, text);
  g_assert_nonnull (label);
  g_assert_cmpint (pango_layout_get_line_count (gtk_label_get_layout (GTK_LABEL (label))), ==,
                   n_lines);
}

static gboolean
page_idle (gpointer page)
{
  return !ts_chat_page_get_busy (TS_CHAT_PAGE (page));
}

/* Enter sends the prompt; waits for both panes to answer it. */
static void
press_to_send (TsChatPage *page, guint keyval, GdkModifierType state)
{
  g_assert_true (press (prompt_view (page), keyval, state));
  g_assert_true (ts_chat_page_get_busy (page));
  gui_wait_until (page_idle, page, 30, "both panes to answer");
}

static void
check_one_exchange (TsChatPage *page, const char *prompt)
{
  for (int he = 0; he <= 1; he++)
    {
      TsChatPane *pane = ts_chat_page_get_pane (page, he);
      g_autoptr (GPtrArray) turns = ts_chat_pane_get_turns (pane);

      g_assert_cmpuint (turns->len, ==, 2);
      g_assert_cmpstr (g_ptr_array_index (turns, 0), ==, prompt);
      g_assert_cmpuint (ts_chat_pane_get_n_tokens (pane), >, 0);
      g_assert_cmpstr (ts_chat_pane_get_reply_error (pane), ==, NULL);
    }
}

static void
test_two_lines_one_prompt (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsPromptView *view = prompt_view (page);

  g_assert_true (prompt_has_focus (view));
  type (view, "line one");
  g_assert_true (press (view, GDK_KEY_Return, GDK_SHIFT_MASK));
  type (view, "line two");
  g_assert_cmpstr (ts_chat_page_get_prompt (page), ==, "line one\nline two");
  g_assert_false (ts_chat_page_get_busy (page));
  gui_save_screenshot (gtk_widget_get_ancestor (GTK_WIDGET (page), GTK_TYPE_WINDOW),
                       "prompt-two-lines.png");
  press_to_send (page, GDK_KEY_Return, 0);
  check_one_exchange (page, "line one\nline two");
  for (int he = 0; he <= 1; he++)
    check_bubble (ts_chat_page_get_pane (page, he), "line one\nline two", 2);
  g_assert_cmpstr (ts_chat_page_get_prompt (page), ==, "");
  g_assert_true (prompt_has_focus (view));
  gui_quit_app (G_APPLICATION (app), 30);
}

/* Keypad Enter and Ctrl+Enter send as well (Ctrl+Shift+Enter too: Shift
 * makes a new line only on its own). */
static void
test_other_enters_send (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsPromptView *view = prompt_view (page);

  type (view, "keypad");
  press_to_send (page, GDK_KEY_KP_Enter, 0);
  check_one_exchange (page, "keypad");
  gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL);
  type (view, "control");
  press_to_send (page, GDK_KEY_Return, GDK_CONTROL_MASK);
  check_one_exchange (page, "control");
  gtk_widget_activate_action (GTK_WIDGET (page), "chat.clear", NULL);
  type (view, "control shift");
  press_to_send (page, GDK_KEY_Return, GDK_CONTROL_MASK | GDK_SHIFT_MASK);
  check_one_exchange (page, "control shift");
  gui_quit_app (G_APPLICATION (app), 30);
}

static void
test_blank_sends_nothing (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsPromptView *view = prompt_view (page);

  g_assert_true (press (view, GDK_KEY_Return, 0));
  g_assert_false (ts_chat_page_get_busy (page));
  type (view, "  ");
  g_assert_true (press (view, GDK_KEY_Return, GDK_SHIFT_MASK));
  type (view, "\t ");
  g_assert_true (press (view, GDK_KEY_Return, 0));
  g_assert_false (ts_chat_page_get_busy (page));
  for (int he = 0; he <= 1; he++)
    g_assert_cmpuint (n_turns (ts_chat_page_get_pane (page, he)), ==, 0);
  /* Nothing sent, nothing taken: the blank lines stay as typed. */
  g_assert_cmpstr (ts_chat_page_get_prompt (page), ==, "  \n\t ");
  gui_quit_app (G_APPLICATION (app), 30);
}

static gboolean
quit_loop_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

/* Runs the main loop for @ms: the text view lays its lines out when idle. */
static void
run_for (guint ms)
{
  g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);

  g_timeout_add (ms, quit_loop_cb, loop);
  g_main_loop_run (loop);
}

/* @view's height once @text is laid out (the same over three looks). */
static int
height_with (TsPromptView *view, const char *text)
{
  int last = -1, same = 0;

  ts_chat_page_set_prompt (TS_CHAT_PAGE (gtk_widget_get_ancestor (GTK_WIDGET (view),
                                                                  TS_TYPE_CHAT_PAGE)), text);
  for (int i = 0; i < 50 && same < 3; i++)
    {
      run_for (60);
      same = gtk_widget_get_height (GTK_WIDGET (view)) == last ? same + 1 : 0;
      last = gtk_widget_get_height (GTK_WIDGET (view));
    }
  g_assert_cmpint (same, ==, 3);
  return last;
}

static char *
lines (int n)
{
  GString *s = g_string_new ("line 1");

  for (int i = 2; i <= n; i++)
    g_string_append_printf (s, "\nline %d", i);
  return g_string_free (s, FALSE);
}

static void
test_grows_then_scrolls (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsPromptView *view = prompt_view (page);
  g_autofree char *three = lines (3), *six = lines (6), *twelve = lines (12);
  int empty = height_with (view, "");
  int h1 = height_with (view, "line 1");
  int h3 = height_with (view, three);
  int h6 = height_with (view, six);
  int h12 = height_with (view, twelve);
  double line = (h3 - h1) / 2.0;
  GtkAdjustment *v;

  g_test_message ("heights: empty %d, 1 line %d, 3 %d, 6 %d, 12 %d", empty, h1, h3, h6, h12);
  /* Empty, it is one line high, about as high as an entry (34 px). */
  g_assert_cmpint (empty, ==, h1);
  g_assert_cmpint (h1, >=, 30);
  g_assert_cmpfloat (line, >=, 12);
  g_assert_cmpint (h12, ==, h6);
  g_assert_cmpfloat (fabs (h6 - (h1 + 5 * line)), <=, line / 2);
  /* Past six lines it scrolls, to the cursor at the end. */
  v = gtk_scrollable_get_vadjustment (GTK_SCROLLABLE (ts_prompt_view_get_text_view (view)));
  g_assert_cmpfloat (gtk_adjustment_get_upper (v), >, gtk_adjustment_get_page_size (v) + 4 * line);
  gui_save_screenshot (gtk_widget_get_ancestor (GTK_WIDGET (page), GTK_TYPE_WINDOW),
                       "prompt-scrolled.png");
  g_assert_cmpint (height_with (view, "back to one"), ==, h1);
  gui_quit_app (G_APPLICATION (app), 30);
}

/* The text view's own key controller: where a Tab goes after the prompt's
 * controller let it pass. */
static GtkEventController *
text_view_keys (GtkTextView *text_view)
{
  g_autoptr (GListModel) controllers = gtk_widget_observe_controllers (GTK_WIDGET (text_view));

  for (guint i = 0; i < g_list_model_get_n_items (controllers); i++)
    {
      g_autoptr (GtkEventController) c = g_list_model_get_item (controllers, i);

      if (GTK_IS_EVENT_CONTROLLER_KEY (c)
          && gtk_event_controller_get_propagation_phase (c) == GTK_PHASE_BUBBLE)
        return c;
    }
  g_assert_not_reached ();
}

static void
test_tab_leaves (void)
{
  g_autoptr (TsApplication) app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  TsChatPage *page = start_app (app);
  TsPromptView *view = prompt_view (page);
  GtkTextView *text_view = ts_prompt_view_get_text_view (view);
  GtkWidget *window = gtk_widget_get_ancestor (GTK_WIDGET (page), GTK_TYPE_WINDOW);
  gboolean handled = FALSE;

  type (view, "one");
  g_assert_true (prompt_has_focus (view));
  g_assert_true (gtk_widget_get_focusable (GTK_WIDGET (text_view)));
  g_assert_false (press (view, GDK_KEY_Tab, 0));
  /* The text view moves the focus itself (GTK 4.8) rather than insert a tab. */
  g_signal_emit_by_name (text_view_keys (text_view), "key-pressed", GDK_KEY_Tab, 0u, 0, &handled);
  g_assert_true (handled);
  g_assert_cmpstr (ts_chat_page_get_prompt (page), ==, "one");
  g_assert_nonnull (gtk_root_get_focus (GTK_ROOT (window)));
  g_assert_false (prompt_has_focus (view));
  gui_quit_app (G_APPLICATION (app), 30);
}

int
main (int argc, char **argv)
{
  GuiTestProgram program;

  if (gui_test_program_init (&program, &argc, &argv, "chat-prompt"))
    {
      g_test_add_func ("/chat-prompt/two-lines-one-prompt", test_two_lines_one_prompt);
      g_test_add_func ("/chat-prompt/other-enters-send", test_other_enters_send);
      g_test_add_func ("/chat-prompt/blank-sends-nothing", test_blank_sends_nothing);
      g_test_add_func ("/chat-prompt/grows-then-scrolls", test_grows_then_scrolls);
      g_test_add_func ("/chat-prompt/tab-leaves", test_tab_leaves);
    }
  return gui_test_program_run (&program, "/chat-prompt/no-display");
}
