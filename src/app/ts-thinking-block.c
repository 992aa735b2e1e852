/* ts-thinking-block.c: a reply's thinking, in a block the reader can open and close.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-thinking-block.h"

struct _TsThinkingBlock
{
  AdwBin parent_instance;

  GtkExpander *expander;
  GtkLabel *title_label;
  GtkLabel *text_label;
  GString *text;
  guint n_tokens;                /* 0: not known (a reply read back from history) */
  gboolean active;
};

G_DEFINE_FINAL_TYPE (TsThinkingBlock, ts_thinking_block, ADW_TYPE_BIN)

static void
update_title (TsThinkingBlock *self)
{
  g_autofree char *title = NULL;

  if (self->active)
    title = g_strdup (_("Thinking…"));
  else if (self->n_tokens > 0)
    title = g_strdup_printf (g_dngettext (NULL, "Thought for %u token", "Thought for %u tokens",
                                          self->n_tokens), self->n_tokens);
  else
    title = g_strdup (_("Thinking"));
  gtk_label_set_text (self->title_label, title);
}

/* Plain text: what a model thinks is not rendered as Markdown, so half a
 * code fence in it cannot change how the block looks. */
static void
show_text (TsThinkingBlock *self)
{
  gtk_label_set_text (self->text_label, self->text->str);
  gtk_widget_set_visible (GTK_WIDGET (self), self->text->len > 0 || self->active);
}

void
ts_thinking_block_append (TsThinkingBlock *self, const char *text, guint n_tokens)
{
  g_return_if_fail (TS_IS_THINKING_BLOCK (self));

  /* No text opens no block (a reply that does not think). */
  if (!self->active && (text == NULL || *text == '\0'))
    return;
  if (!self->active)
    {
      self->active = TRUE;
      gtk_expander_set_expanded (self->expander, TRUE);
    }
  self->n_tokens = n_tokens;
  g_string_append (self->text, text != NULL ? text : "");
  update_title (self);
  show_text (self);
}

void
ts_thinking_block_finish (TsThinkingBlock *self, gboolean collapse)
{
  g_return_if_fail (TS_IS_THINKING_BLOCK (self));

  if (!self->active)
    return;
  self->active = FALSE;
  if (collapse)
    gtk_expander_set_expanded (self->expander, FALSE);
  update_title (self);
  show_text (self);
}

void
ts_thinking_block_set_text (TsThinkingBlock *self, const char *text)
{
  g_return_if_fail (TS_IS_THINKING_BLOCK (self));

  self->active = FALSE;
  self->n_tokens = 0;
  g_string_assign (self->text, text != NULL ? text : "");
  gtk_expander_set_expanded (self->expander, FALSE);
  update_title (self);
  show_text (self);
}

const char *
ts_thinking_block_get_text (TsThinkingBlock *self)
{
  g_return_val_if_fail (TS_IS_THINKING_BLOCK (self), NULL);
  return self->text->str;
}

gboolean
ts_thinking_block_get_active (TsThinkingBlock *self)
{
  g_return_val_if_fail (TS_IS_THINKING_BLOCK (self), FALSE);
  return self->active;
}

gboolean
ts_thinking_block_get_expanded (TsThinkingBlock *self)
{
  g_return_val_if_fail (TS_IS_THINKING_BLOCK (self), FALSE);
  return gtk_expander_get_expanded (self->expander);
}

const char *
ts_thinking_block_get_title (TsThinkingBlock *self)
{
  g_return_val_if_fail (TS_IS_THINKING_BLOCK (self), NULL);
  return gtk_label_get_text (self->title_label);
}

static void
ts_thinking_block_finalize (GObject *object)
{
  TsThinkingBlock *self = TS_THINKING_BLOCK (object);

  g_string_free (self->text, TRUE);
  G_OBJECT_CLASS (ts_thinking_block_parent_class)->finalize (object);
}

static void
ts_thinking_block_class_init (TsThinkingBlockClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = ts_thinking_block_finalize;
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-thinking-block.ui");
  gtk_widget_class_bind_template_child (widget_class, TsThinkingBlock, expander);
  gtk_widget_class_bind_template_child (widget_class, TsThinkingBlock, title_label);
  gtk_widget_class_bind_template_child (widget_class, TsThinkingBlock, text_label);
}

static void
ts_thinking_block_init (TsThinkingBlock *self)
{
  self->text = g_string_new (NULL);
  gtk_widget_init_template (GTK_WIDGET (self));
  show_text (self);
}

GtkWidget *
ts_thinking_block_new (void)
{
  return g_object_new (TS_TYPE_THINKING_BLOCK, NULL);
}
