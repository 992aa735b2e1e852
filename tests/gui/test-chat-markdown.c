/* test-chat-markdown.c: a reply's Markdown as widgets: each construct gives
 * the widget it should (a coloured code view for its language, a grid with
 * the table's cells, link labels, heading labels), streaming token by token
 * ends in the same widgets as setting the text at once, and code follows
 * the dark style.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <string.h>
#include <gtksourceview/gtksource.h>

#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-chat-message.h"

static const char reply[] =
  "# Sorting in C\n"
  "Use **qsort** from *stdlib*, see "
  "[the manual](https://man7.org/linux/man-pages/man3/qsort.3.html) "
  "or <https://en.cppreference.com>. ~~bubble sort~~ is _slow_.\n"
  "\n"
  "## Steps\n"
  "1. Write a comparator\n"
  "   - return `a - b`\n"
  "   - or ***never*** overflow\n"
  "2. Call it\n"
  "\n"
  "> Premature optimisation is the root of all evil.\n"
  "\n"
  "```c\n"
  "#include <stdlib.h>\n"
  "\n"
  "static int cmp (const void *a, const void *b) { return *(int *) a - *(int *) b; }\n"
  "```\n"
  "\n"
  "| Algorithm | Stable | Average |\n"
  "|:----------|:------:|--------:|\n"
  "| qsort | no | `n log n` |\n"
  "| merge sort | **yes** | n log n |\n"
  "\n"
  "---\n"
  "Not a link: [click](javascript:alert(1)) and <b>no html</b>.";

static gboolean
is_type (GtkWidget *widget, gconstpointer type)
{
  return G_TYPE_CHECK_INSTANCE_TYPE (widget, GPOINTER_TO_SIZE (type));
}

static GtkWidget *
find_code_view (GtkWidget *message)
{
  return gui_find_widget (message, is_type, GSIZE_TO_POINTER (GTK_SOURCE_TYPE_VIEW));
}

static const char *
cell_markup (GtkWidget *grid, int column, int row)
{
  return gtk_label_get_label (GTK_LABEL (gtk_grid_get_child_at (GTK_GRID (grid), column, row)));
}

static gboolean
has_class (GtkWidget *widget, gconstpointer name)
{
  return gtk_widget_has_css_class (widget, name);
}

static gboolean
label_markup_contains (GtkWidget *widget, gconstpointer text)
{
  return GTK_IS_LABEL (widget) && strstr (gtk_label_get_label (GTK_LABEL (widget)), text) != NULL;
}

static char *
code_text (GtkWidget *view)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (view));
  GtkTextIter start, end;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  return gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
}

static void
check_code (GtkWidget *message)
{
  GtkWidget *view = find_code_view (message);
  GtkSourceBuffer *buffer;
  g_autofree char *text = NULL;

  g_assert_nonnull (view);
  buffer = GTK_SOURCE_BUFFER (gtk_text_view_get_buffer (GTK_TEXT_VIEW (view)));
  g_assert_nonnull (gtk_source_buffer_get_language (buffer));
  g_assert_cmpstr (gtk_source_language_get_id (gtk_source_buffer_get_language (buffer)), ==, "c");
  g_assert_false (gtk_text_view_get_editable (GTK_TEXT_VIEW (view)));
  g_assert_true (gtk_text_view_get_monospace (GTK_TEXT_VIEW (view)));
  g_assert_false (gtk_source_view_get_show_line_numbers (GTK_SOURCE_VIEW (view)));
  text = code_text (view);
  g_assert_true (g_str_has_prefix (text, "#include <stdlib.h>\n\nstatic int cmp"));
  g_assert_true (g_str_has_suffix (text, "*(int *) b; }"));
}

static void
check_table (GtkWidget *message)
{
  static const char *const cells[] = {
    "Algorithm", "Stable", "Average",
    "qsort", "no", "<tt>n log n</tt>",
    "merge sort", "<b>yes</b>", "n log n",
  };
  static const float xalign[] = { 0.0f, 0.5f, 1.0f };
  GtkWidget *frame = gui_find_widget (message, has_class, "ts-md-table");
  GtkWidget *grid;

  g_assert_true (GTK_IS_FRAME (frame));
  grid = gtk_frame_get_child (GTK_FRAME (frame));
  g_assert_true (GTK_IS_GRID (grid));
  g_assert_null (gtk_grid_get_child_at (GTK_GRID (grid), 0, 3));
  g_assert_null (gtk_grid_get_child_at (GTK_GRID (grid), 3, 0));
  for (int i = 0; i < (int) G_N_ELEMENTS (cells); i++)
    {
      GtkWidget *cell = gtk_grid_get_child_at (GTK_GRID (grid), i % 3, i / 3);

      g_assert_true (GTK_IS_LABEL (cell));
      g_assert_cmpstr (gtk_label_get_label (GTK_LABEL (cell)), ==, cells[i]);
      g_assert_cmpfloat (gtk_label_get_xalign (GTK_LABEL (cell)), ==, xalign[i % 3]);
      g_assert_cmpint (gtk_widget_has_css_class (cell, "heading"), ==, i < 3);
    }
}

static gboolean
record_link (GtkLabel *label, const char *uri, char **opened)
{
  g_free (*opened);
  *opened = g_strdup (uri);
  return TRUE;  /* handled: nothing is really opened */
}

/* What activating the link around @text would open: the cursor is put in
 * it and the current link activated, as Enter on it would. */
static char *
activate_link_at (GtkWidget *label, const char *text)
{
  const char *shown = gtk_label_get_text (GTK_LABEL (label));
  const char *at = strstr (shown, text);
  int offset;
  char *opened = NULL;
  gulong id = g_signal_connect (label, "activate-link", G_CALLBACK (record_link), &opened);

  g_assert_nonnull (at);
  offset = (int) g_utf8_pointer_to_offset (shown, at) + 1;
  gtk_label_select_region (GTK_LABEL (label), offset, offset);
  g_signal_emit_by_name (label, "activate-current-link");
  g_signal_handler_disconnect (label, id);
  return opened;
}

static void
check_labels (GtkWidget *message)
{
  GtkWidget *title = gui_find_widget (message, has_class, "title-1");
  GtkWidget *sub = gui_find_widget (message, has_class, "title-2");
  GtkWidget *quote = gui_find_widget (message, has_class, "ts-md-quote");
  GtkWidget *link = gui_find_widget (message, label_markup_contains, "<a href=");
  GtkWidget *unsafe = gui_find_widget (message, label_markup_contains, "javascript");
  g_autofree char *opened = NULL;

  g_assert_true (GTK_IS_LABEL (title) && has_class (title, "ts-md-heading"));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (title)), ==, "Sorting in C");
  g_assert_true (GTK_IS_LABEL (sub));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (sub)), ==, "Steps");
  g_assert_true (GTK_IS_LABEL (quote));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (quote)), ==,
                   "Premature optimisation is the root of all evil.");
  g_assert_nonnull (gui_find_descendant (message, GTK_TYPE_SEPARATOR));
  g_assert_nonnull (link);
  opened = activate_link_at (link, "the manual");
  g_assert_cmpstr (opened, ==, "https://man7.org/linux/man-pages/man3/qsort.3.html");
  g_assert_nonnull (unsafe);
  g_assert_null (strstr (gtk_label_get_label (GTK_LABEL (unsafe)), "<a "));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (unsafe)), ==,
                   "Not a link: [click](javascript:alert(1)) and <b>no html</b>.");
  g_assert_cmpuint (ts_chat_message_count_list_items (TS_CHAT_MESSAGE (message)), ==, 4);
}

static gboolean
is_mapped (gpointer widget)
{
  return gtk_widget_get_mapped (widget) && gtk_widget_get_width (widget) > 0;
}

static gboolean
count_frame (GtkWidget *widget, GdkFrameClock *clock, gpointer frames)
{
  (*(guint *) frames)++;
  return G_SOURCE_CONTINUE;
}

static gboolean
drawn (gpointer frames)
{
  return *(guint *) frames >= 3;
}

/* A screenshot needs the window drawn at least once. */
static void
wait_for_frames (GtkWidget *window)
{
  guint frames = 0;
  guint id = gtk_widget_add_tick_callback (window, count_frame, &frames, NULL);

  gtk_widget_queue_draw (window);
  gui_wait_until (drawn, &frames, 10, "the window drawn");
  gtk_widget_remove_tick_callback (window, id);
}

static GtkWidget *
show_in_window (GtkWidget *message, GtkWidget **window_out)
{
  GtkWidget *window = gtk_window_new ();
  GtkWidget *scroller = gtk_scrolled_window_new ();

  gtk_widget_set_margin_start (message, 18);
  gtk_widget_set_margin_end (message, 18);
  gtk_widget_set_margin_top (message, 12);
  gtk_widget_set_margin_bottom (message, 12);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), message);
  gtk_scrolled_window_set_policy (GTK_SCROLLED_WINDOW (scroller), GTK_POLICY_NEVER,
                                  GTK_POLICY_AUTOMATIC);
  gtk_window_set_child (GTK_WINDOW (window), scroller);
  gtk_window_set_default_size (GTK_WINDOW (window), 720, 900);
  gtk_window_present (GTK_WINDOW (window));
  gui_wait_until (is_mapped, message, 10, "the message shown");
  *window_out = window;
  return message;
}

static void
test_constructs (void)
{
  GtkWidget *window;
  GtkWidget *message = show_in_window (ts_chat_message_new (FALSE, reply), &window);

  check_code (message);
  check_table (message);
  check_labels (message);
  g_assert_cmpuint (ts_chat_message_count_code_blocks (TS_CHAT_MESSAGE (message)), ==, 1);
  wait_for_frames (window);
  gui_save_screenshot (window, "chat-markdown.png");
  gtk_window_destroy (GTK_WINDOW (window));
}

/* The widget tree as text: each widget's type, CSS classes, margins, and
 * what it shows (label markup and alignment, code and its language, grid
 * positions). */
static void
dump (GtkWidget *widget, guint depth, GString *out)
{
  g_auto (GStrv) classes = gtk_widget_get_css_classes (widget);
  g_autofree char *joined = g_strjoinv (".", classes);
  GtkWidget *parent = gtk_widget_get_parent (widget);

  g_string_append_printf (out, "%*s%s.%s m%d", (int) depth * 2, "", G_OBJECT_TYPE_NAME (widget),
                          joined, gtk_widget_get_margin_start (widget));
  if (GTK_IS_GRID (parent))
    {
      int column, row;

      gtk_grid_query_child (GTK_GRID (parent), widget, &column, &row, NULL, NULL);
      g_string_append_printf (out, " @%d,%d", column, row);
    }
  if (GTK_IS_LABEL (widget))
    g_string_append_printf (out, " x%.1f [%s]", gtk_label_get_xalign (GTK_LABEL (widget)),
                            gtk_label_get_label (GTK_LABEL (widget)));
  if (GTK_SOURCE_IS_VIEW (widget))
    {
      GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (widget));
      GtkSourceLanguage *language = gtk_source_buffer_get_language (GTK_SOURCE_BUFFER (buffer));
      g_autofree char *text = code_text (widget);

      g_string_append_printf (out, " %s [%s]",
                              language != NULL ? gtk_source_language_get_id (language) : "-", text);
      g_string_append_c (out, '\n');
      return;  /* its children are the view's own */
    }
  g_string_append_c (out, '\n');
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    dump (c, depth + 1, out);
}

static char *
dump_message (GtkWidget *message)
{
  GString *out = g_string_new (NULL);

  dump (message, 0, out);
  return g_string_free (out, FALSE);
}

/* Tokens of 1 to @max_piece bytes, cut anywhere (inside spans, fences,
 * table rows, UTF-8 is not split since the reply is ASCII). */
static void
stream_in_pieces (TsChatMessage *message, const char *text, gsize max_piece, guint32 seed)
{
  g_autoptr (GRand) rand = g_rand_new_with_seed (seed);
  gsize len = strlen (text);

  for (gsize at = 0; at < len;)
    {
      gsize n = MIN ((gsize) g_rand_int_range (rand, 1, (gint32) max_piece + 1), len - at);
      g_autofree char *piece = g_strndup (text + at, n);

      ts_chat_message_append (message, piece);
      at += n;
    }
}

static void
test_streaming_equals_whole (void)
{
  GtkWidget *whole = g_object_ref_sink (ts_chat_message_new (FALSE, reply));
  g_autofree char *expected = dump_message (whole);

  g_assert_nonnull (strstr (expected, "GtkSourceView"));
  g_assert_nonnull (strstr (expected, "@2,2"));
  for (gsize max_piece = 1; max_piece <= 9; max_piece += 4)
    {
      GtkWidget *streamed = g_object_ref_sink (ts_chat_message_new (FALSE, ""));
      g_autofree char *got = NULL;

      stream_in_pieces (TS_CHAT_MESSAGE (streamed), reply, max_piece, (guint32) max_piece);
      got = dump_message (streamed);
      g_test_message ("pieces of up to %" G_GSIZE_FORMAT " bytes", max_piece);
      g_assert_cmpstr (got, ==, expected);
      g_assert_finalize_object (streamed);
    }
  g_assert_finalize_object (whole);
}

/* While a reply streams, the code view and the table grid that are
 * already shown stay the same widgets; the code only grows. */
static void
test_streaming_reuses_blocks (void)
{
  GtkWidget *message = g_object_ref_sink (ts_chat_message_new (FALSE, "```py\nprint(1)\n"));
  TsChatMessage *m = TS_CHAT_MESSAGE (message);
  GtkWidget *view = find_code_view (message);
  GtkSourceBuffer *buffer = GTK_SOURCE_BUFFER (gtk_text_view_get_buffer (GTK_TEXT_VIEW (view)));
  GtkWidget *grid;
  g_autofree char *code = NULL;

  g_assert_cmpstr (gtk_source_language_get_id (gtk_source_buffer_get_language (buffer)), ==,
                   "python");
  ts_chat_message_append (m, "print(2)\n```\n| a | b |\n|---|---|\n| 1 ");
  g_assert_true (find_code_view (message) == view);
  code = code_text (view);
  g_assert_cmpstr (code, ==, "print(1)\nprint(2)");
  grid = gui_find_descendant (message, GTK_TYPE_GRID);
  g_assert_nonnull (grid);
  g_assert_cmpstr (cell_markup (grid, 0, 1), ==, "1");
  g_assert_cmpstr (cell_markup (grid, 1, 1), ==, "");
  ts_chat_message_append (m, "| 2 |\n| 3 | 4 |");
  g_assert_true (gui_find_descendant (message, GTK_TYPE_GRID) == grid);
  g_assert_cmpstr (cell_markup (grid, 1, 2), ==, "4");
  /* A smaller table in its place leaves no cells of the old one behind. */
  ts_chat_message_set_text (m, "```py\nprint(1)\n```\nx | y | z\n---|---|---");
  g_assert_true (gui_find_descendant (message, GTK_TYPE_GRID) == grid);
  g_assert_nonnull (gtk_grid_get_child_at (GTK_GRID (grid), 2, 0));
  g_assert_null (gtk_grid_get_child_at (GTK_GRID (grid), 0, 1));
  g_assert_null (gtk_grid_get_child_at (GTK_GRID (grid), 1, 2));
  g_assert_finalize_object (message);
}

static const char *
scheme_id (GtkWidget *message)
{
  GtkWidget *view = find_code_view (message);
  GtkSourceBuffer *buffer = GTK_SOURCE_BUFFER (gtk_text_view_get_buffer (GTK_TEXT_VIEW (view)));

  return gtk_source_style_scheme_get_id (gtk_source_buffer_get_style_scheme (buffer));
}

static void
test_code_follows_dark (void)
{
  AdwStyleManager *style = adw_style_manager_get_default ();
  GtkWidget *message = g_object_ref_sink (ts_chat_message_new (FALSE, "```c\nint x;\n```"));

  adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_FORCE_LIGHT);
  g_assert_cmpstr (scheme_id (message), ==, "Adwaita");
  adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_FORCE_DARK);
  g_assert_cmpstr (scheme_id (message), ==, "Adwaita-dark");
  adw_style_manager_set_color_scheme (style, ADW_COLOR_SCHEME_DEFAULT);
  g_assert_finalize_object (message);
}

/* The application loads style.css at startup, which these tests skip. */
static void
load_app_style (void)
{
  g_autoptr (GtkCssProvider) css = gtk_css_provider_new ();

  gtk_css_provider_load_from_resource (css, "/org/tensafe/Desktop/style.css");
  gtk_style_context_add_provider_for_display (gdk_display_get_default (),
                                              GTK_STYLE_PROVIDER (css),
                                              GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
}

int
main (int argc, char **argv)
{
  g_autoptr (TsApplication) app = NULL;

  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    return gui_run_without_display ("/chat-markdown/no-display");
  adw_init ();
  /* Creating the application registers the resources the templates load from. */
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  load_app_style ();
  g_test_add_func ("/chat-markdown/constructs", test_constructs);
  g_test_add_func ("/chat-markdown/streaming-equals-whole", test_streaming_equals_whole);
  g_test_add_func ("/chat-markdown/streaming-reuses-blocks", test_streaming_reuses_blocks);
  g_test_add_func ("/chat-markdown/code-follows-dark", test_code_follows_dark);
  return g_test_run ();
}
