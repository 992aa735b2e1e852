/* ts-chat-page-edit.c: the chat page's editing of an earlier prompt.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Edit on a prompt puts its text in the prompt view and shows a bar that
 * says what Send will do; Send then removes that exchange and every later
 * one from both panes and from history (one statement) and sends the text
 * as a new exchange. Cancel puts back what the prompt view held. */
#include <glib/gi18n.h>

#include "ts-chat-page-private.h"

static void
set_editing (TsChatPage *self, int index)
{
  self->editing = index;
  gtk_widget_set_visible (self->edit_bar, index >= 0);
  if (index >= 0)
    {
      guint n = ts_chat_conversation_get_n_prompts (ts_chat_session_get_conversation
                                                      (self->session, FALSE));
      g_autofree char *text = NULL;

      if ((guint) index + 1 < n)
        text = g_strdup_printf (g_dngettext (NULL,
                                             "Editing prompt %u of %u: Send answers it again in both "
                                             "panes and removes the exchange after it",
                                             "Editing prompt %u of %u: Send answers it again in both "
                                             "panes and removes the %u exchanges after it",
                                             n - index - 1),
                                index + 1, n, n - index - 1);
      else
        text = g_strdup_printf (_("Editing prompt %u of %u: Send answers it again in both panes"),
                                index + 1, n);
      gtk_label_set_text (self->edit_label, text);
    }
  gtk_button_set_label (self->send_button, index >= 0 ? _("Send & _Regenerate") : _("_Send"));
  _ts_chat_page_update_actions (self);
}

int
ts_chat_page_get_editing (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), -1);
  return self->editing;
}

void
_ts_chat_page_edit_cancel (TsChatPage *self)
{
  if (self->editing < 0)
    return;
  ts_prompt_view_set_text (self->prompt_view, self->draft != NULL ? self->draft : "");
  g_clear_pointer (&self->draft, g_free);
  set_editing (self, -1);
}

void
_ts_chat_page_edit_commit (TsChatPage *self)
{
  guint index = (guint) self->editing;

  if (self->editing < 0)
    return;
  ts_chat_conversation_truncate (ts_chat_session_get_conversation (self->session, FALSE), index);
  ts_chat_conversation_truncate (ts_chat_session_get_conversation (self->session, TRUE), index);
  _ts_chat_page_history_truncate (self, index);
  g_clear_pointer (&self->draft, g_free);
  set_editing (self, -1);
}

static void
edit_prompt_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  guint index = g_variant_get_uint32 (param);
  TsChatTurn *prompt = ts_chat_conversation_get_prompt
                        (ts_chat_session_get_conversation (self->session, FALSE), index);
  const char *text = prompt != NULL ? ts_chat_turn_get_text (prompt) : NULL;

  if (self->busy || text == NULL)
    return;
  if (self->editing < 0)
    self->draft = g_strdup (ts_prompt_view_get_text (self->prompt_view));
  ts_prompt_view_set_text (self->prompt_view, text);
  set_editing (self, (int) index);
  gtk_widget_grab_focus (GTK_WIDGET (self->prompt_view));
}

static void
cancel_edit_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  _ts_chat_page_edit_cancel (TS_CHAT_PAGE (widget));
}

void
_ts_chat_page_edit_dispose (TsChatPage *self)
{
  g_clear_pointer (&self->draft, g_free);
}

void
_ts_chat_page_edit_class_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_bind_template_child_full (widget_class, "edit_bar", FALSE,
                                             G_STRUCT_OFFSET (TsChatPage, edit_bar));
  gtk_widget_class_bind_template_child_full (widget_class, "edit_label", FALSE,
                                             G_STRUCT_OFFSET (TsChatPage, edit_label));
  gtk_widget_class_bind_template_child_full (widget_class, "send_button", FALSE,
                                             G_STRUCT_OFFSET (TsChatPage, send_button));
  gtk_widget_class_install_action (widget_class, "chat.edit-prompt", "u", edit_prompt_action);
  gtk_widget_class_install_action (widget_class, "chat.cancel-edit", NULL, cancel_edit_action);
}
