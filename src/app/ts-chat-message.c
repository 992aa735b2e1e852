/* ts-chat-message.c: one chat message, its Markdown rendered as widgets.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include <gtksourceview/gtksource.h>

#include "ts-chat-message.h"
#include "ts-markdown.h"

struct _TsChatMessage
{
  AdwBin parent_instance;

  GtkLabel *note_label;
  TsThinkingBlock *thinking_block;
  GtkBox *blocks;
  GtkLabel *error_label;
  GtkLabel *ending_label;
  GString *text;
  gboolean is_user;
  gboolean excluded;
  TsChatTurn *turn;              /* what it shows, when it is a turn's view */
};

G_DEFINE_FINAL_TYPE (TsChatMessage, ts_chat_message, ADW_TYPE_BIN)

char *
ts_chat_message_inline_markup (const char *text)
{
  return ts_markdown_inline (text);
}

static GtkWidget *
text_label_new (void)
{
  GtkWidget *label = gtk_label_new (NULL);

  gtk_label_set_wrap (GTK_LABEL (label), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_xalign (GTK_LABEL (label), 0);
  gtk_label_set_selectable (GTK_LABEL (label), TRUE);
  gtk_widget_set_hexpand (label, TRUE);
  return label;
}

/* Sets @label's markup unless it already shows it (a streamed reply
 * updates every block on each token; most did not change). */
static void
label_set_markup_if_changed (GtkLabel *label, const char *markup)
{
  if (g_strcmp0 (gtk_label_get_label (label), markup) != 0)
    gtk_label_set_markup (label, markup);
}

static void
label_set_inline (GtkLabel *label, const char *source)
{
  g_autofree char *markup = ts_markdown_inline (source);

  label_set_markup_if_changed (label, markup);
}

/* ---- code blocks ---- */

static void
copy_code_cb (GtkButton *button, GtkTextView *view)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (view);
  GtkTextIter start, end;
  g_autofree char *text = NULL;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  text = gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
  gdk_clipboard_set_text (gtk_widget_get_clipboard (GTK_WIDGET (button)), text);
}

/* The info string's language: a GtkSourceView id ("c", "rust"), or the
 * file extension it is often written as ("py", "rs", "sh"). */
static GtkSourceLanguage *
code_language (const char *name)
{
  GtkSourceLanguageManager *manager = gtk_source_language_manager_get_default ();
  GtkSourceLanguage *language;
  g_autofree char *file_name = NULL;

  if (name == NULL || *name == '\0')
    return NULL;
  language = gtk_source_language_manager_get_language (manager, name);
  if (language != NULL)
    return language;
  file_name = g_strconcat ("code.", name, NULL);
  return gtk_source_language_manager_guess_language (manager, file_name, NULL);
}

static void
code_follow_dark (GtkSourceBuffer *buffer)
{
  GtkSourceStyleSchemeManager *schemes = gtk_source_style_scheme_manager_get_default ();
  gboolean dark = adw_style_manager_get_dark (adw_style_manager_get_default ());

  const char *id = dark ? "Adwaita-dark" : "Adwaita";

  gtk_source_buffer_set_style_scheme (buffer,
                                      gtk_source_style_scheme_manager_get_scheme (schemes, id));
}

static GtkWidget *
code_view_new (void)
{
  GtkSourceBuffer *buffer = gtk_source_buffer_new (NULL);
  GtkWidget *view = gtk_source_view_new_with_buffer (buffer);

  gtk_text_view_set_editable (GTK_TEXT_VIEW (view), FALSE);
  gtk_text_view_set_cursor_visible (GTK_TEXT_VIEW (view), FALSE);
  gtk_text_view_set_monospace (GTK_TEXT_VIEW (view), TRUE);
  /* Wrapped, so a long line never makes the chat wider than its pane. */
  gtk_text_view_set_wrap_mode (GTK_TEXT_VIEW (view), GTK_WRAP_CHAR);
  gtk_widget_set_hexpand (view, TRUE);
  code_follow_dark (buffer);
  g_signal_connect_object (adw_style_manager_get_default (), "notify::dark",
                           G_CALLBACK (code_follow_dark), buffer, G_CONNECT_SWAPPED);
  g_object_unref (buffer);
  return view;
}

static GtkWidget *
code_block_new (GtkWidget **view_out)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *view = code_view_new ();
  GtkWidget *copy = gtk_button_new_from_icon_name ("edit-copy-symbolic");

  gtk_widget_add_css_class (box, "ts-code-block");
  gtk_widget_add_css_class (box, "card");
  gtk_widget_add_css_class (copy, "flat");
  gtk_widget_set_valign (copy, GTK_ALIGN_START);
  gtk_widget_set_tooltip_text (copy, _("Copy Code"));
  g_signal_connect (copy, "clicked", G_CALLBACK (copy_code_cb), view);
  gtk_box_append (GTK_BOX (box), view);
  gtk_box_append (GTK_BOX (box), copy);
  *view_out = view;
  return box;
}

/* Streaming appends to the code: only the new end is inserted (and
 * coloured), not the whole block again. */
static void
code_block_update (GtkWidget *widget, const TsMdBlock *block)
{
  GtkTextView *view = g_object_get_data (G_OBJECT (widget), "ts-block-view");
  GtkSourceBuffer *buffer = GTK_SOURCE_BUFFER (gtk_text_view_get_buffer (view));
  const char *shown = g_object_get_data (G_OBJECT (widget), "ts-block-code");
  const char *language = g_object_get_data (G_OBJECT (widget), "ts-block-language");
  gsize shown_len = shown != NULL ? strlen (shown) : 0;

  if (g_strcmp0 (language, block->language) != 0)
    {
      gtk_source_buffer_set_language (buffer, code_language (block->language));
      g_object_set_data_full (G_OBJECT (widget), "ts-block-language",
                              g_strdup (block->language), g_free);
    }
  if (g_strcmp0 (shown, block->text->str) == 0)
    return;
  if (shown != NULL && g_str_has_prefix (block->text->str, shown))
    {
      GtkTextIter end;

      gtk_text_buffer_get_end_iter (GTK_TEXT_BUFFER (buffer), &end);
      gtk_text_buffer_insert (GTK_TEXT_BUFFER (buffer), &end, block->text->str + shown_len, -1);
    }
  else
    gtk_text_buffer_set_text (GTK_TEXT_BUFFER (buffer), block->text->str, -1);
  g_object_set_data_full (G_OBJECT (widget), "ts-block-code", g_strdup (block->text->str), g_free);
}

/* ---- tables ---- */

static GtkWidget *
table_new (GtkWidget **grid_out)
{
  GtkWidget *frame = gtk_frame_new (NULL);
  GtkWidget *grid = gtk_grid_new ();

  gtk_widget_add_css_class (frame, "ts-md-table");
  gtk_grid_set_column_spacing (GTK_GRID (grid), 18);
  gtk_grid_set_row_spacing (GTK_GRID (grid), 6);
  gtk_frame_set_child (GTK_FRAME (frame), grid);
  gtk_widget_set_halign (frame, GTK_ALIGN_START);
  *grid_out = grid;
  return frame;
}

static float
align_xalign (TsMdAlign align)
{
  return align == TS_MD_ALIGN_CENTER ? 0.5f : align == TS_MD_ALIGN_RIGHT ? 1.0f : 0.0f;
}

static void
table_cell_update (GtkGrid *grid, const TsMdBlock *block, guint row, guint column)
{
  GtkWidget *cell = gtk_grid_get_child_at (grid, (int) column, (int) row);

  if (cell == NULL)
    {
      cell = text_label_new ();
      gtk_widget_set_hexpand (cell, FALSE);
      if (row == 0)
        gtk_widget_add_css_class (cell, "heading");
      gtk_grid_attach (grid, cell, (int) column, (int) row, 1, 1);
    }
  gtk_label_set_xalign (GTK_LABEL (cell), align_xalign (block->align[column]));
  label_set_inline (GTK_LABEL (cell), ts_markdown_table_cell (block, row, column));
}

/* Cells are kept where they are and only rows still arriving change. */
static void
table_update (GtkWidget *widget, const TsMdBlock *block)
{
  GtkGrid *grid = g_object_get_data (G_OBJECT (widget), "ts-block-grid");
  guint rows = ts_markdown_table_rows (block);
  GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (grid));

  /* Cells beyond the table's rows or columns (the text changed) go. */
  while (child != NULL)
    {
      GtkWidget *next = gtk_widget_get_next_sibling (child);
      int column, row;

      gtk_grid_query_child (grid, child, &column, &row, NULL, NULL);
      if ((guint) column >= block->n_columns || (guint) row >= rows)
        gtk_grid_remove (grid, child);
      child = next;
    }
  for (guint r = 0; r < rows; r++)
    for (guint c = 0; c < block->n_columns; c++)
      table_cell_update (grid, block, r, c);
}

/* ---- text blocks ---- */

static GtkWidget *
list_item_new (GtkWidget **label_out, GtkWidget **marker_out)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);

  *marker_out = gtk_label_new (NULL);
  gtk_widget_set_valign (*marker_out, GTK_ALIGN_START);
  *label_out = text_label_new ();
  gtk_box_append (GTK_BOX (box), *marker_out);
  gtk_box_append (GTK_BOX (box), *label_out);
  return box;
}

static void
heading_update (GtkWidget *label, guint level)
{
  static const char *const classes[] = { "title-1", "title-2", "title-3", "title-4" };
  guint wanted = MIN (level, 4) - 1;

  for (guint i = 0; i < G_N_ELEMENTS (classes); i++)
    if (i != wanted)
      gtk_widget_remove_css_class (label, classes[i]);
  gtk_widget_add_css_class (label, classes[wanted]);
}

static GtkWidget *
block_widget_new (TsMdKind kind)
{
  GtkWidget *widget, *label = NULL, *marker = NULL, *view = NULL, *grid = NULL;

  if (kind == TS_MD_CODE)
    widget = code_block_new (&view);
  else if (kind == TS_MD_LIST_ITEM)
    widget = list_item_new (&label, &marker);
  else if (kind == TS_MD_TABLE)
    widget = table_new (&grid);
  else if (kind == TS_MD_RULE)
    widget = gtk_separator_new (GTK_ORIENTATION_HORIZONTAL);
  else
    widget = label = text_label_new ();
  if (kind == TS_MD_HEADING)
    gtk_widget_add_css_class (label, "ts-md-heading");
  if (kind == TS_MD_QUOTE)
    {
      gtk_widget_add_css_class (label, "ts-md-quote");
      gtk_widget_add_css_class (label, "dim-label");
    }
  g_object_set_data (G_OBJECT (widget), "ts-block-kind", GINT_TO_POINTER (kind + 1));
  g_object_set_data (G_OBJECT (widget), "ts-block-label", label);
  g_object_set_data (G_OBJECT (widget), "ts-block-marker", marker);
  g_object_set_data (G_OBJECT (widget), "ts-block-view", view);
  g_object_set_data (G_OBJECT (widget), "ts-block-grid", grid);
  return widget;
}

static void
block_widget_update (GtkWidget *widget, const TsMdBlock *block)
{
  GtkLabel *label = g_object_get_data (G_OBJECT (widget), "ts-block-label");
  GtkLabel *marker = g_object_get_data (G_OBJECT (widget), "ts-block-marker");

  if (block->kind == TS_MD_CODE)
    code_block_update (widget, block);
  else if (block->kind == TS_MD_TABLE)
    table_update (widget, block);
  if (label == NULL)
    return;
  if (marker != NULL)
    {
      gtk_label_set_text (marker, block->marker);
      gtk_widget_set_margin_start (GTK_WIDGET (marker), 8 + 18 * (int) block->level);
    }
  if (block->kind == TS_MD_HEADING)
    heading_update (GTK_WIDGET (label), block->level);
  if (block->kind == TS_MD_QUOTE)
    gtk_widget_set_margin_start (GTK_WIDGET (label), 12 * ((int) block->level - 1));
  label_set_inline (label, block->text->str);
}

static TsMdKind
widget_kind (GtkWidget *widget)
{
  return (TsMdKind) (GPOINTER_TO_INT (g_object_get_data (G_OBJECT (widget), "ts-block-kind")) - 1);
}

/* Brings the block widgets in line with the text, reusing those that still
 * show a block of the same kind. */
static void
render (TsChatMessage *self)
{
  g_autoptr (GPtrArray) blocks = ts_markdown_parse (self->text->str);
  GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (self->blocks));

  for (guint i = 0; i < blocks->len; i++)
    {
      TsMdBlock *block = g_ptr_array_index (blocks, i);

      while (child != NULL && widget_kind (child) != block->kind)
        {
          GtkWidget *next = gtk_widget_get_next_sibling (child);

          gtk_box_remove (self->blocks, child);
          child = next;
        }
      if (child == NULL)
        {
          GtkWidget *widget = block_widget_new (block->kind);

          gtk_box_append (self->blocks, widget);
          block_widget_update (widget, block);
          continue;
        }
      block_widget_update (child, block);
      child = gtk_widget_get_next_sibling (child);
    }
  while (child != NULL)
    {
      GtkWidget *next = gtk_widget_get_next_sibling (child);

      gtk_box_remove (self->blocks, child);
      child = next;
    }
}
static guint
count_kind (TsChatMessage *self, TsMdKind kind)
{
  guint n = 0;

  for (GtkWidget *c = gtk_widget_get_first_child (GTK_WIDGET (self->blocks)); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    n += widget_kind (c) == kind;
  return n;
}

guint
ts_chat_message_count_code_blocks (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), 0);
  return count_kind (self, TS_MD_CODE);
}

guint
ts_chat_message_count_list_items (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), 0);
  return count_kind (self, TS_MD_LIST_ITEM);
}

const char *
ts_chat_message_get_text (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), NULL);
  return self->text->str;
}

void
ts_chat_message_set_text (TsChatMessage *self, const char *text)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  g_string_assign (self->text, text != NULL ? text : "");
  render (self);
}

void
ts_chat_message_append (TsChatMessage *self, const char *text)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  if (text == NULL || *text == '\0')
    return;
  g_string_append (self->text, text);
  /* The answer has started: the thinking above it is done. */
  ts_thinking_block_finish (self->thinking_block, TRUE);
  render (self);
}

void
ts_chat_message_append_thinking (TsChatMessage *self, const char *text, guint n_tokens)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  ts_thinking_block_append (self->thinking_block, text, n_tokens);
}

void
ts_chat_message_end_thinking (TsChatMessage *self)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  ts_thinking_block_finish (self->thinking_block, self->text->len > 0);
}

void
ts_chat_message_set_thinking (TsChatMessage *self, const char *thinking)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  ts_thinking_block_set_text (self->thinking_block, thinking);
}

const char *
ts_chat_message_get_thinking (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), NULL);
  return ts_thinking_block_get_text (self->thinking_block);
}

TsThinkingBlock *
ts_chat_message_get_thinking_block (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), NULL);
  return gtk_widget_get_visible (GTK_WIDGET (self->thinking_block)) ? self->thinking_block : NULL;
}

/* Shows @text in @label, or hides it for NULL. */
static void
set_optional_label (GtkLabel *label, const char *text)
{
  gtk_label_set_text (label, text != NULL ? text : "");
  gtk_widget_set_visible (GTK_WIDGET (label), text != NULL);
}

void
ts_chat_message_set_note (TsChatMessage *self, const char *note)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  set_optional_label (self->note_label, note);
}

const char *
ts_chat_message_get_note (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), NULL);
  return gtk_widget_get_visible (GTK_WIDGET (self->note_label))
         ? gtk_label_get_text (self->note_label) : NULL;
}

void
ts_chat_message_set_error (TsChatMessage *self, const char *error)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  set_optional_label (self->error_label, error);
}

const char *
ts_chat_message_get_error (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), NULL);
  return gtk_widget_get_visible (GTK_WIDGET (self->error_label))
         ? gtk_label_get_text (self->error_label) : NULL;
}

void
ts_chat_message_set_excluded (TsChatMessage *self, gboolean excluded)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  self->excluded = excluded;
  if (excluded)
    gtk_widget_add_css_class (GTK_WIDGET (self), "dim-label");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (self), "dim-label");
}

gboolean
ts_chat_message_get_excluded (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), FALSE);
  return self->excluded;
}

void
ts_chat_message_set_ending (TsChatMessage *self, const char *ending)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  set_optional_label (self->ending_label, ending);
}

const char *
ts_chat_message_get_ending (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), NULL);
  return gtk_widget_get_visible (GTK_WIDGET (self->ending_label))
         ? gtk_label_get_text (self->ending_label) : NULL;
}

gboolean
ts_chat_message_get_is_user (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), FALSE);
  return self->is_user;
}

static void
ts_chat_message_finalize (GObject *object)
{
  TsChatMessage *self = TS_CHAT_MESSAGE (object);

  g_clear_object (&self->turn);
  g_string_free (self->text, TRUE);
  G_OBJECT_CLASS (ts_chat_message_parent_class)->finalize (object);
}

static void
ts_chat_message_class_init (TsChatMessageClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = ts_chat_message_finalize;
  gtk_source_init ();
  g_type_ensure (TS_TYPE_THINKING_BLOCK);
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-chat-message.ui");
  gtk_widget_class_bind_template_child (widget_class, TsChatMessage, note_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatMessage, thinking_block);
  gtk_widget_class_bind_template_child (widget_class, TsChatMessage, blocks);
  gtk_widget_class_bind_template_child (widget_class, TsChatMessage, error_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatMessage, ending_label);
}

static void
ts_chat_message_init (TsChatMessage *self)
{
  self->text = g_string_new (NULL);
  gtk_widget_init_template (GTK_WIDGET (self));
}

void
ts_chat_message_add_button (TsChatMessage *self, GtkWidget *button)
{
  g_return_if_fail (TS_IS_CHAT_MESSAGE (self));
  g_return_if_fail (GTK_IS_WIDGET (button));
  gtk_widget_set_halign (button, GTK_ALIGN_END);
  gtk_box_append (GTK_BOX (adw_bin_get_child (ADW_BIN (self))), button);
}

GtkWidget *
ts_chat_message_new (gboolean is_user, const char *text)
{
  TsChatMessage *self = g_object_new (TS_TYPE_CHAT_MESSAGE, NULL);

  self->is_user = is_user;
  gtk_widget_add_css_class (GTK_WIDGET (self), is_user ? "ts-user-message" : "ts-reply-message");
  ts_chat_message_set_text (self, text);
  return GTK_WIDGET (self);
}

/* Streamed text arrives as a longer text: only what was added is appended
 * (cheap, and it ends the thinking as the answer starts); anything else is
 * set afresh. */
static void
show_turn_text (TsChatMessage *self)
{
  const char *text = ts_chat_turn_get_text (self->turn);

  if (g_str_has_prefix (text, self->text->str))
    ts_chat_message_append (self, text + self->text->len);
  else
    ts_chat_message_set_text (self, text);
}

/* Streaming thinking is appended (the count too, when only it changed); a
 * finished one (history) is shown whole. */
static void
show_turn_thinking (TsChatMessage *self)
{
  const char *thinking = ts_chat_turn_get_thinking (self->turn);
  const char *shown = ts_chat_message_get_thinking (self);

  if (ts_chat_turn_get_thinking_active (self->turn) && g_str_has_prefix (thinking, shown))
    ts_chat_message_append_thinking (self, thinking + strlen (shown),
                                     ts_chat_turn_get_thinking_tokens (self->turn));
  else if (!ts_chat_turn_get_thinking_active (self->turn))
    ts_chat_message_set_thinking (self, thinking);
}

static void
turn_notify_cb (TsChatTurn *turn, GParamSpec *pspec, TsChatMessage *self)
{
  const char *name = g_param_spec_get_name (pspec);

  if (g_str_equal (name, "text"))
    show_turn_text (self);
  else if (g_str_equal (name, "thinking"))
    show_turn_thinking (self);
  else if (g_str_equal (name, "thinking-tokens") && ts_chat_turn_get_thinking_active (turn))
    show_turn_thinking (self);
  else if (g_str_equal (name, "thinking-active") && !ts_chat_turn_get_thinking_active (turn))
    ts_chat_message_end_thinking (self);
  else if (g_str_equal (name, "note"))
    ts_chat_message_set_note (self, ts_chat_turn_get_note (turn));
  else if (g_str_equal (name, "error"))
    ts_chat_message_set_error (self, ts_chat_turn_get_error (turn));
  else if (g_str_equal (name, "ending"))
    ts_chat_message_set_ending (self, ts_chat_turn_get_ending (turn));
  else if (g_str_equal (name, "excluded"))
    ts_chat_message_set_excluded (self, ts_chat_turn_get_excluded (turn));
}

GtkWidget *
ts_chat_message_new_for_turn (TsChatTurn *turn)
{
  TsChatMessage *self;

  g_return_val_if_fail (TS_IS_CHAT_TURN (turn), NULL);
  self = TS_CHAT_MESSAGE (ts_chat_message_new (ts_chat_turn_get_is_user (turn),
                                               ts_chat_turn_get_text (turn)));
  self->turn = g_object_ref (turn);
  ts_chat_message_set_note (self, ts_chat_turn_get_note (turn));
  ts_chat_message_set_error (self, ts_chat_turn_get_error (turn));
  ts_chat_message_set_ending (self, ts_chat_turn_get_ending (turn));
  ts_chat_message_set_excluded (self, ts_chat_turn_get_excluded (turn));
  if (*ts_chat_turn_get_thinking (turn) != '\0')
    show_turn_thinking (self);
  g_signal_connect_object (turn, "notify", G_CALLBACK (turn_notify_cb), self, 0);
  return GTK_WIDGET (self);
}

TsChatTurn *
ts_chat_message_get_turn (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), NULL);
  return self->turn;
}
