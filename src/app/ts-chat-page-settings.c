/* ts-chat-page-settings.c: the chat page's conversation settings and their dialog.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-chat-page-private.h"
#include "ts-conversation-settings-dialog.h"

/* The preferences' defaults. */
static TsConversationSettings *
defaults (TsChatPage *self)
{
  return ts_settings_get_conversation_defaults (self->settings);
}

const TsConversationSettings *
ts_chat_page_get_conversation_settings (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return self->conv_settings;
}

/* Shows @settings (taken) as the conversation's; the page's sampling
 * properties follow. */
static void
take_settings (TsChatPage *self, TsConversationSettings *settings)
{
  ts_conversation_settings_free (self->conv_settings);
  self->conv_settings = settings;
  _ts_chat_page_notify_sampling (self);
}

void
_ts_chat_page_settings_store (TsChatPage *self)
{
  g_autoptr (GError) error = NULL;

  if (self->history == NULL || self->conversation == 0)
    return;
  if (!ts_history_set_settings (self->history, self->conversation, self->conv_settings, &error))
    _ts_chat_page_error (self, error->message);
}

void
ts_chat_page_set_conversation_settings (TsChatPage *self, const TsConversationSettings *settings)
{
  g_return_if_fail (TS_IS_CHAT_PAGE (self));
  g_return_if_fail (settings != NULL);
  take_settings (self, ts_conversation_settings_copy (settings));
  _ts_chat_page_settings_store (self);
}

void
_ts_chat_page_settings_reset (TsChatPage *self)
{
  take_settings (self, defaults (self));
}

gboolean
_ts_chat_page_settings_load (TsChatPage *self, gint64 conversation, GError **error)
{
  TsConversationSettings *kept = NULL;

  if (!ts_history_get_settings (self->history, conversation, &kept, error))
    return FALSE;
  take_settings (self, kept != NULL ? kept : defaults (self));
  return TRUE;
}

/* The loaded model's context (0: none loaded or unknown). */
static guint
model_context (TsChatPage *self)
{
  TsGenerationModel *model = ts_chat_session_get_model (self->session);

  return model != NULL ? ts_generation_model_get_info (model)->n_ctx_train : 0;
}

static void
dialog_saved_cb (TsConversationSettingsDialog *dialog, TsChatPage *self)
{
  g_autoptr (TsConversationSettings) s = ts_conversation_settings_dialog_get_settings (dialog);

  ts_chat_page_set_conversation_settings (self, s);
}

static void
dialog_make_default_cb (TsConversationSettingsDialog *dialog, TsChatPage *self)
{
  g_autoptr (TsConversationSettings) s = ts_conversation_settings_dialog_get_settings (dialog);

  ts_settings_set_conversation_defaults (self->settings, s);
  _ts_chat_page_toast (self, _("New conversations start from these settings"));
}

static void
conversation_settings_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  GtkRoot *root = gtk_widget_get_root (widget);
  g_autoptr (TsConversationSettings) fallback = defaults (self);
  TsConversationSettingsDialog *dialog;

  dialog = ts_conversation_settings_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                                self->conv_settings, fallback,
                                                model_context (self));
  g_signal_connect_object (dialog, "saved", G_CALLBACK (dialog_saved_cb), self, 0);
  g_signal_connect_object (dialog, "make-default", G_CALLBACK (dialog_make_default_cb), self, 0);
  g_set_weak_pointer (&self->settings_dialog, GTK_WIDGET (dialog));
  gtk_window_present (GTK_WINDOW (dialog));
}

/* From a sidebar row's menu: that conversation is opened first. */
static void
conversation_settings_of_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  gint64 id = g_variant_get_int64 (param);
  g_autoptr (GError) error = NULL;

  if (id != self->conversation)
    {
      if (self->busy)
        return _ts_chat_page_toast (self, _("Stop the answer in progress first"));
      if (!ts_chat_page_load_conversation (self, id, &error))
        return _ts_chat_page_error (self, error->message);
      _ts_chat_page_history_refresh (self);
    }
  conversation_settings_action (widget, "chat.conversation-settings", NULL);
}

GtkWidget *
ts_chat_page_get_settings_dialog (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return self->settings_dialog;
}

void
_ts_chat_page_settings_dispose (TsChatPage *self)
{
  if (self->settings_dialog != NULL)
    gtk_window_destroy (GTK_WINDOW (self->settings_dialog));
  g_clear_weak_pointer (&self->settings_dialog);
}

void
_ts_chat_page_settings_class_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "chat.conversation-settings", NULL,
                                   conversation_settings_action);
  gtk_widget_class_install_action (widget_class, "chat.conversation-settings-of", "x",
                                   conversation_settings_of_action);
}
