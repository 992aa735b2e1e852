/* ts-chat-message.c: one chat message, rendered as light markdown.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-chat-message.h"

typedef enum {
  BLOCK_PARAGRAPH,
  BLOCK_LIST_ITEM,
  BLOCK_CODE,
} BlockKind;

typedef struct {
  BlockKind kind;
  char *marker;           /* list items: "•" or "3." */
  GString *text;
} Block;

struct _TsChatMessage
{
  AdwBin parent_instance;

  GtkLabel *note_label;
  GtkBox *blocks;
  GtkLabel *error_label;
  GtkLabel *ending_label;
  GString *text;
  gboolean is_user;
  gboolean excluded;
};

G_DEFINE_FINAL_TYPE (TsChatMessage, ts_chat_message, ADW_TYPE_BIN)

static void
block_free (gpointer data)
{
  Block *b = data;

  g_free (b->marker);
  g_string_free (b->text, TRUE);
  g_free (b);
}

static Block *
block_new (GPtrArray *blocks, BlockKind kind, const char *marker, const char *text)
{
  Block *b = g_new0 (Block, 1);

  b->kind = kind;
  b->marker = g_strdup (marker);
  b->text = g_string_new (text);
  g_ptr_array_add (blocks, b);
  return b;
}

/* "- x", "* x", "+ x" → "•"; "12. x" → "12."; else NULL. *rest: the item text. */
static char *
list_marker (const char *line, const char **rest)
{
  const char *p = line;

  if ((p[0] == '-' || p[0] == '*' || p[0] == '+') && p[1] == ' ')
    {
      *rest = p + 2;
      return g_strdup ("•");
    }
  while (g_ascii_isdigit (*p))
    p++;
  if (p > line && p - line < 4 && p[0] == '.' && p[1] == ' ')
    {
      *rest = p + 2;
      return g_strndup (line, (gsize) (p - line + 1));
    }
  return NULL;
}

static void
parse_line (GPtrArray *blocks, Block **current, const char *line)
{
  const char *rest = NULL;
  g_autofree char *marker = NULL;

  if (*current != NULL && (*current)->kind == BLOCK_CODE)
    {
      if (g_str_has_prefix (line, "```"))
        *current = NULL;
      else
        g_string_append_printf ((*current)->text, "%s%s", (*current)->text->len ? "\n" : "", line);
      return;
    }
  if (g_str_has_prefix (line, "```"))
    *current = block_new (blocks, BLOCK_CODE, NULL, "");
  else if (line[strspn (line, " \t")] == '\0')
    *current = NULL;
  else if ((marker = list_marker (line, &rest)) != NULL)
    *current = block_new (blocks, BLOCK_LIST_ITEM, marker, rest);
  else if (*current != NULL)
    g_string_append_printf ((*current)->text, "\n%s", line);
  else
    *current = block_new (blocks, BLOCK_PARAGRAPH, NULL, line);
}

static GPtrArray *
parse_blocks (const char *text)
{
  GPtrArray *blocks = g_ptr_array_new_with_free_func (block_free);
  g_auto (GStrv) lines = g_strsplit (text, "\n", -1);
  Block *current = NULL;

  for (guint i = 0; lines[i] != NULL; i++)
    parse_line (blocks, &current, lines[i]);
  return blocks;
}

char *
ts_chat_message_inline_markup (const char *text)
{
  GString *out = g_string_new (NULL);
  gboolean code = FALSE, bold = FALSE;

  for (const char *p = text; *p != '\0'; p++)
    {
      if (*p == '`')
        {
          g_string_append (out, code ? "</tt>" : "<tt>");
          code = !code;
        }
      else if (!code && p[0] == '*' && p[1] == '*')
        {
          g_string_append (out, bold ? "</b>" : "<b>");
          bold = !bold;
          p++;
        }
      else if (*p == '<')
        g_string_append (out, "&lt;");
      else if (*p == '>')
        g_string_append (out, "&gt;");
      else if (*p == '&')
        g_string_append (out, "&amp;");
      else if ((guchar) *p < 0x20 && *p != '\t' && *p != '\n')
        g_string_append (out, "\357\277\275");  /* U+FFFD: markup has no control characters */
      else
        g_string_append_c (out, *p);
    }
  /* A reply still streaming may have opened a span it has not closed yet. */
  if (code)
    g_string_append (out, "</tt>");
  if (bold)
    g_string_append (out, "</b>");
  return g_string_free (out, FALSE);
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

static void
copy_code_cb (GtkButton *button, GtkLabel *label)
{
  gdk_clipboard_set_text (gtk_widget_get_clipboard (GTK_WIDGET (button)),
                          gtk_label_get_text (label));
}

static GtkWidget *
code_block_new (GtkWidget **label_out)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  GtkWidget *label = text_label_new ();
  GtkWidget *copy = gtk_button_new_from_icon_name ("edit-copy-symbolic");

  gtk_widget_add_css_class (box, "ts-code-block");
  gtk_widget_add_css_class (box, "card");
  gtk_widget_add_css_class (label, "monospace");
  gtk_label_set_wrap_mode (GTK_LABEL (label), PANGO_WRAP_CHAR);
  gtk_widget_add_css_class (copy, "flat");
  gtk_widget_set_valign (copy, GTK_ALIGN_START);
  gtk_widget_set_tooltip_text (copy, _("Copy Code"));
  g_signal_connect (copy, "clicked", G_CALLBACK (copy_code_cb), label);
  gtk_box_append (GTK_BOX (box), label);
  gtk_box_append (GTK_BOX (box), copy);
  *label_out = label;
  return box;
}

static GtkWidget *
list_item_new (GtkWidget **label_out, GtkWidget **marker_out)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);

  *marker_out = gtk_label_new (NULL);
  gtk_widget_set_valign (*marker_out, GTK_ALIGN_START);
  gtk_widget_set_margin_start (*marker_out, 8);
  *label_out = text_label_new ();
  gtk_box_append (GTK_BOX (box), *marker_out);
  gtk_box_append (GTK_BOX (box), *label_out);
  return box;
}

/* Makes a widget for @kind; remembers its kind and text label on it. */
static GtkWidget *
block_widget_new (BlockKind kind)
{
  GtkWidget *widget, *label = NULL, *marker = NULL;

  if (kind == BLOCK_CODE)
    widget = code_block_new (&label);
  else if (kind == BLOCK_LIST_ITEM)
    widget = list_item_new (&label, &marker);
  else
    widget = label = text_label_new ();
  g_object_set_data (G_OBJECT (widget), "ts-block-kind", GINT_TO_POINTER (kind + 1));
  g_object_set_data (G_OBJECT (widget), "ts-block-label", label);
  g_object_set_data (G_OBJECT (widget), "ts-block-marker", marker);
  return widget;
}

static void
block_widget_update (GtkWidget *widget, const Block *block)
{
  GtkLabel *label = g_object_get_data (G_OBJECT (widget), "ts-block-label");
  GtkLabel *marker = g_object_get_data (G_OBJECT (widget), "ts-block-marker");

  if (block->kind == BLOCK_CODE)
    {
      if (g_strcmp0 (gtk_label_get_text (label), block->text->str) != 0)
        gtk_label_set_text (label, block->text->str);
      return;
    }
  if (marker != NULL)
    gtk_label_set_text (marker, block->marker);
  {
    g_autofree char *markup = ts_chat_message_inline_markup (block->text->str);

    if (g_strcmp0 (gtk_label_get_label (label), markup) != 0)
      gtk_label_set_markup (label, markup);
  }
}

static BlockKind
widget_kind (GtkWidget *widget)
{
  return (BlockKind) (GPOINTER_TO_INT (g_object_get_data (G_OBJECT (widget), "ts-block-kind")) - 1);
}

/* Brings the block widgets in line with the text, reusing those that still
 * show a block of the same kind. */
static void
render (TsChatMessage *self)
{
  g_autoptr (GPtrArray) blocks = parse_blocks (self->text->str);
  GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (self->blocks));

  for (guint i = 0; i < blocks->len; i++)
    {
      Block *block = g_ptr_array_index (blocks, i);

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
count_kind (TsChatMessage *self, BlockKind kind)
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
  return count_kind (self, BLOCK_CODE);
}

guint
ts_chat_message_count_list_items (TsChatMessage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_MESSAGE (self), 0);
  return count_kind (self, BLOCK_LIST_ITEM);
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
  render (self);
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

  g_string_free (self->text, TRUE);
  G_OBJECT_CLASS (ts_chat_message_parent_class)->finalize (object);
}

static void
ts_chat_message_class_init (TsChatMessageClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = ts_chat_message_finalize;
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-chat-message.ui");
  gtk_widget_class_bind_template_child (widget_class, TsChatMessage, note_label);
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

GtkWidget *
ts_chat_message_new (gboolean is_user, const char *text)
{
  TsChatMessage *self = g_object_new (TS_TYPE_CHAT_MESSAGE, NULL);

  self->is_user = is_user;
  gtk_widget_add_css_class (GTK_WIDGET (self), is_user ? "ts-user-message" : "ts-reply-message");
  ts_chat_message_set_text (self, text);
  return GTK_WIDGET (self);
}
