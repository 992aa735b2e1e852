/* ts-chat-page-history.c: the chat page's conversation sidebar, kept in history.sqlite.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-chat-page-private.h"
#include "ts-file-chooser.h"
#include "ts-history-export.h"

#define TITLE_CHARS 48

static void
history_failed (TsChatPage *self, const GError *error)
{
  g_debug ("history: %s", error->message);
  _ts_chat_page_error (self, error->message);
}

static GtkWidget *
conversation_row_new (const TsHistoryConversation *c)
{
  GtkWidget *row = adw_action_row_new ();
  GtkWidget *menu_button = gtk_menu_button_new ();
  g_autoptr (GMenu) menu = g_menu_new ();
  g_autoptr (GMenuItem) rename = g_menu_item_new (_("_Rename…"), NULL);
  g_autoptr (GMenuItem) export = g_menu_item_new (_("_Export…"), NULL);
  g_autoptr (GMenuItem) settings = g_menu_item_new (_("_Settings…"), NULL);
  g_autoptr (GMenuItem) delete = g_menu_item_new (_("_Delete"), NULL);
  g_autoptr (GDateTime) when = g_date_time_new_from_unix_local (c->updated);
  g_autofree char *subtitle = when != NULL ? g_date_time_format (when, "%x %H:%M") : NULL;

  adw_preferences_row_set_use_markup (ADW_PREFERENCES_ROW (row), FALSE);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), c->title);
  adw_action_row_set_title_lines (ADW_ACTION_ROW (row), 1);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle != NULL ? subtitle : "");
  g_menu_item_set_action_and_target (rename, "chat.rename-conversation", "x", c->id);
  g_menu_item_set_action_and_target (export, "chat.export-conversation", "x", c->id);
  g_menu_item_set_action_and_target (settings, "chat.conversation-settings-of", "x", c->id);
  g_menu_item_set_action_and_target (delete, "chat.delete-conversation", "x", c->id);
  g_menu_append_item (menu, rename);
  g_menu_append_item (menu, export);
  g_menu_append_item (menu, settings);
  g_menu_append_item (menu, delete);
  gtk_menu_button_set_menu_model (GTK_MENU_BUTTON (menu_button), G_MENU_MODEL (menu));
  gtk_menu_button_set_icon_name (GTK_MENU_BUTTON (menu_button), "view-more-symbolic");
  gtk_widget_set_valign (menu_button, GTK_ALIGN_CENTER);
  gtk_widget_add_css_class (menu_button, "flat");
  gtk_widget_set_tooltip_text (menu_button, _("Conversation Menu"));
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), menu_button);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);
  g_object_set_data_full (G_OBJECT (row), "ts-conversation",
                          g_memdup2 (&c->id, sizeof c->id), g_free);
  return row;
}

static gint64
row_conversation (GtkListBoxRow *row)
{
  gint64 *id = g_object_get_data (G_OBJECT (row), "ts-conversation");

  return id != NULL ? *id : 0;
}

/* The sidebar lists the conversations its search entry matches (all when
 * it is empty); the placeholder speaks only for a search that found none. */
void
_ts_chat_page_history_refresh (TsChatPage *self)
{
  const char *query = gtk_editable_get_text (GTK_EDITABLE (self->history_search));
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) list = NULL;
  GtkListBoxRow *old;

  /* Rows only: the placeholder is a child of the list too. */
  while ((old = gtk_list_box_get_row_at_index (self->history_list, 0)) != NULL)
    gtk_list_box_remove (self->history_list, GTK_WIDGET (old));
  gtk_widget_set_visible (self->history_placeholder, *query != '\0');
  if (self->history == NULL)
    return;
  if ((list = ts_history_search (self->history, query, &error)) == NULL)
    {
      history_failed (self, error);
      return;
    }
  for (guint i = 0; i < list->len; i++)
    {
      TsHistoryConversation *c = g_ptr_array_index (list, i);
      GtkWidget *row = conversation_row_new (c);

      gtk_list_box_append (self->history_list, row);
      if (c->id == self->conversation)
        gtk_list_box_select_row (self->history_list, GTK_LIST_BOX_ROW (row));
    }
}

static void
search_changed_cb (GtkSearchEntry *entry, TsChatPage *self)
{
  _ts_chat_page_history_refresh (self);
}

static void
find_conversation_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  gtk_widget_grab_focus (GTK_WIDGET (TS_CHAT_PAGE (widget)->history_search));
}

guint
ts_chat_page_get_n_conversations (TsChatPage *self)
{
  guint n = 0;

  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), 0);
  for (GtkWidget *c = gtk_widget_get_first_child (GTK_WIDGET (self->history_list)); c != NULL;
       c = gtk_widget_get_next_sibling (c))
    n += GTK_IS_LIST_BOX_ROW (c);
  return n;
}

/* Remembers the ids the next save, regenerate or edit works on. */
static void
note_last_ids (TsChatPage *self, GPtrArray *messages)
{
  self->last_user_message = self->plain_reply_message = self->he_reply_message = 0;
  for (guint i = 0; i < messages->len; i++)
    {
      TsHistoryMessage *m = g_ptr_array_index (messages, i);

      if (m->is_user)
        self->last_user_message = m->id, self->plain_reply_message = self->he_reply_message = 0;
      else if (m->pane == TS_HISTORY_PANE_HE)
        self->he_reply_message = m->id;
      else
        self->plain_reply_message = m->id;
    }
}

static const char *
left_out_note (void)
{
  return _("Left out of the conversation: a side failed to answer this turn");
}

/* A stored message back in @conversation, with the note and thinking its
 * reply had; a reply left out takes its exchange out again. */
static void
restore_message (TsChatConversation *conversation, const TsHistoryMessage *m)
{
  TsChatTurn *turn = ts_chat_conversation_append (conversation, m->is_user, m->content);

  if (!m->is_user && m->note != NULL)
    ts_chat_turn_set_note (turn, m->note);
  if (!m->is_user && m->thinking != NULL)
    ts_chat_turn_set_thinking (turn, m->thinking);
  if (!m->is_user && m->left_out)
    ts_chat_conversation_exclude_last_exchange (conversation, left_out_note ());
}

/* The footers and charts show each pane's last reply, as they did when it
 * finished (a reply kept before they were stored shows zeros). */
static void
restore_stats (TsChatPage *self, GPtrArray *messages)
{
  const TsHistoryMessage *last[2] = { NULL, NULL };

  for (guint i = 0; i < messages->len; i++)
    {
      const TsHistoryMessage *m = g_ptr_array_index (messages, i);

      if (!m->is_user)
        last[m->pane == TS_HISTORY_PANE_HE] = m;
    }
  for (int he = 0; he <= 1; he++)
    if (last[he] != NULL && last[he]->stats != NULL)
      ts_chat_pane_show_reply_stats (ts_chat_page_get_pane (self, he), last[he]->stats);
}

gboolean
ts_chat_page_load_conversation (TsChatPage *self, gint64 id, GError **error)
{
  g_autoptr (GPtrArray) messages = NULL;

  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), FALSE);
  if (self->history == NULL || (messages = ts_history_messages (self->history, id, error)) == NULL)
    return FALSE;
  gtk_widget_activate_action (GTK_WIDGET (self), "chat.clear", NULL);
  if (!_ts_chat_page_settings_load (self, id, error))
    return FALSE;
  self->conversation = id;
  for (guint i = 0; i < messages->len; i++)
    {
      TsHistoryMessage *m = g_ptr_array_index (messages, i);

      if (m->pane != TS_HISTORY_PANE_HE)
        restore_message (ts_chat_session_get_conversation (self->session, FALSE), m);
      if (m->pane != TS_HISTORY_PANE_PLAIN)
        restore_message (ts_chat_session_get_conversation (self->session, TRUE), m);
    }
  restore_stats (self, messages);
  note_last_ids (self, messages);
  _ts_chat_page_update_actions (self);
  _ts_chat_page_update_empty_state (self);
  return TRUE;
}

static void
row_activated_cb (GtkListBox *list, GtkListBoxRow *row, TsChatPage *self)
{
  g_autoptr (GError) error = NULL;

  if (self->busy)
    {
      _ts_chat_page_toast (self, _("Stop the answer in progress first"));
      return;
    }
  if (!ts_chat_page_load_conversation (self, row_conversation (row), &error))
    history_failed (self, error);
}

static char *
title_from_prompt (const char *prompt)
{
  g_autofree char *line = g_strndup (prompt, strcspn (prompt, "\n"));
  glong n = g_utf8_strlen (line, -1);

  if (n <= TITLE_CHARS)
    return g_steal_pointer (&line);
  *g_utf8_offset_to_pointer (line, TITLE_CHARS - 1) = '\0';
  return g_strconcat (line, "…", NULL);
}

/* Opens history.sqlite; @create: also when it does not exist yet (the file
 * appears with the first conversation, not when the app merely starts). */
static void
open_history (TsChatPage *self, gboolean create)
{
  g_autofree char *path = ts_history_default_path ();
  g_autoptr (GError) error = NULL;

  if (self->history != NULL || (!create && !g_file_test (path, G_FILE_TEST_EXISTS)))
    return;
  self->history = ts_history_open (path, &error);
  if (self->history == NULL)
    history_failed (self, error);
}

void
_ts_chat_page_history_begin_exchange (TsChatPage *self, const char *prompt)
{
  g_autoptr (GError) error = NULL;
  gboolean created = FALSE;

  open_history (self, TRUE);
  if (self->history == NULL)
    return;
  if (self->conversation == 0)
    {
      g_autofree char *title = title_from_prompt (prompt);

      if ((self->conversation = ts_history_create (self->history, title, &error)) == 0)
        return history_failed (self, error);
      created = TRUE;
      /* A snapshot: a later change of the defaults leaves it as it was. */
      _ts_chat_page_settings_store (self);
    }
  self->last_user_message = ts_history_add_message (self->history, self->conversation, TRUE,
                                                    TS_HISTORY_PANE_BOTH, prompt, TRUE, &error);
  if (self->last_user_message != 0)
    self->plain_reply_message = ts_history_add_message (self->history, self->conversation, FALSE,
                                                        TS_HISTORY_PANE_PLAIN, "", FALSE, &error);
  if (self->plain_reply_message != 0)
    self->he_reply_message = ts_history_add_message (self->history, self->conversation, FALSE,
                                                     TS_HISTORY_PANE_HE, "", FALSE, &error);
  if (error != NULL)
    history_failed (self, error);
  if (created)
    _ts_chat_page_history_refresh (self);
}

void
_ts_chat_page_history_save_reply (TsChatPage *self, gboolean he, gboolean complete)
{
  gint64 id = he ? self->he_reply_message : self->plain_reply_message;
  TsChatPane *pane = ts_chat_page_get_pane (self, he);
  TsChatTurn *reply;
  const char *text, *note, *thinking;
  g_autoptr (GError) error = NULL;

  /* What streamed so far, also the text the pane shows at the next frame. */
  ts_chat_pane_flush (pane);
  reply = ts_chat_conversation_get_last_reply (ts_chat_session_get_conversation (self->session,
                                                                                 he));
  if (self->history == NULL || id == 0 || reply == NULL)
    return;
  text = ts_chat_turn_get_text (reply);
  note = ts_chat_turn_get_note (reply);
  thinking = ts_chat_turn_get_thinking (reply);
  /* The routing note goes in once, when the reply has finished. */
  if (!ts_history_update_message (self->history, id, text, complete, &error)
      || (thinking != NULL && *thinking != '\0'
          && !ts_history_set_thinking (self->history, id, thinking, &error))
      || (note != NULL && !ts_chat_pane_get_busy (pane)
          && !ts_history_set_note (self->history, id, note, &error)))
    history_failed (self, error);
}

void
_ts_chat_page_history_save_stats (TsChatPage *self)
{
  for (int he = 0; he <= 1; he++)
    {
      gint64 id = he ? self->he_reply_message : self->plain_reply_message;
      TsChatTurn *reply = ts_chat_conversation_get_last_reply
                            (ts_chat_session_get_conversation (self->session, he));
      g_autoptr (GError) error = NULL;

      if (self->history == NULL || id == 0)
        return;
      if (reply != NULL && ts_chat_turn_get_stats (reply) != NULL
          && !ts_history_set_stats (self->history, id, ts_chat_turn_get_stats (reply), &error))
        return history_failed (self, error);
    }
}

void
_ts_chat_page_history_leave_out_exchange (TsChatPage *self)
{
  g_autoptr (GError) error = NULL;

  for (int he = 0; he <= 1; he++)
    ts_chat_conversation_exclude_last_exchange (ts_chat_session_get_conversation (self->session,
                                                                                  he),
                                                left_out_note ());
  if (self->history == NULL || self->conversation == 0 || self->last_user_message == 0)
    return;
  if (!ts_history_leave_out (self->history, self->conversation, self->last_user_message, &error))
    history_failed (self, error);
}

void
_ts_chat_page_history_drop_exchange (TsChatPage *self)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) messages = NULL;

  if (self->history == NULL || self->conversation == 0 || self->last_user_message == 0)
    return;
  if (!ts_history_truncate (self->history, self->conversation, self->last_user_message, &error) ||
      (messages = ts_history_messages (self->history, self->conversation, &error)) == NULL)
    return history_failed (self, error);
  note_last_ids (self, messages);
}

void
_ts_chat_page_history_truncate (TsChatPage *self, guint index)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GPtrArray) messages = NULL;
  gint64 prompt = 0;
  guint n = 0;

  if (self->history == NULL || self->conversation == 0)
    return;
  if ((messages = ts_history_messages (self->history, self->conversation, &error)) == NULL)
    return history_failed (self, error);
  for (guint i = 0; i < messages->len && prompt == 0; i++)
    {
      TsHistoryMessage *m = g_ptr_array_index (messages, i);

      if (m->is_user && n++ == index)
        prompt = m->id;
    }
  if (prompt == 0)
    return;
  g_ptr_array_unref (g_steal_pointer (&messages));
  if (!ts_history_truncate (self->history, self->conversation, prompt, &error) ||
      (messages = ts_history_messages (self->history, self->conversation, &error)) == NULL)
    return history_failed (self, error);
  note_last_ids (self, messages);
}

/* ------------------------------------------------------------------------ */
/* Rename and delete                                                          */

static void
rename_response_cb (AdwMessageDialog *dialog, const char *response, TsChatPage *self)
{
  GtkEditable *entry = GTK_EDITABLE (adw_message_dialog_get_extra_child (dialog));
  gint64 *id = g_object_get_data (G_OBJECT (dialog), "ts-conversation");
  g_autofree char *title = g_strstrip (g_strdup (gtk_editable_get_text (entry)));
  g_autoptr (GError) error = NULL;

  if (g_str_equal (response, "rename") && *title != '\0' && self->history != NULL)
    {
      if (!ts_history_rename (self->history, *id, title, &error))
        history_failed (self, error);
      _ts_chat_page_history_refresh (self);
    }
}

static void
rename_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  GtkRoot *root = gtk_widget_get_root (widget);
  GtkWidget *dialog = adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                              _("Rename Conversation"), NULL);
  GtkWidget *entry = gtk_entry_new ();
  gint64 id = g_variant_get_int64 (param);

  gtk_entry_set_activates_default (GTK_ENTRY (entry), TRUE);
  adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), entry);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _("_Cancel"),
                                    "rename", _("_Rename"), NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "rename",
                                              ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "rename");
  g_object_set_data_full (G_OBJECT (dialog), "ts-conversation", g_memdup2 (&id, sizeof id), g_free);
  g_signal_connect_object (dialog, "response", G_CALLBACK (rename_response_cb), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
delete_now (TsChatPage *self, gint64 id)
{
  g_autoptr (GError) error = NULL;

  if (id == self->conversation)
    {
      if (self->busy)
        return _ts_chat_page_toast (self, _("Stop the answer in progress first"));
      gtk_widget_activate_action (GTK_WIDGET (self), "chat.clear", NULL);
    }
  if (!ts_history_delete (self->history, id, &error))
    history_failed (self, error);
  else
    _ts_chat_page_toast (self, _("Conversation deleted"));
  _ts_chat_page_history_refresh (self);
}

static void
delete_response_cb (AdwMessageDialog *dialog, const char *response, TsChatPage *self)
{
  if (g_strcmp0 (response, "delete") == 0 && self->history != NULL)
    delete_now (self, *(gint64 *) g_object_get_data (G_OBJECT (dialog), "ts-conversation"));
}

/* Deleting cannot be undone: it asks first. */
static void
delete_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  gint64 id = g_variant_get_int64 (param);
  GtkWidget *dialog;

  if (self->history == NULL)
    return;
  dialog = adw_message_dialog_new (GTK_WINDOW (gtk_widget_get_root (widget)),
                                   _("Delete the Conversation?"),
                                   _("Its messages and timings are deleted from this computer. "
                                     "This cannot be undone."));
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _("_Cancel"),
                                    "delete", _("_Delete"), NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "delete",
                                              ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_object_set_data_full (G_OBJECT (dialog), "ts-conversation", g_memdup2 (&id, sizeof id), g_free);
  g_signal_connect_object (dialog, "response", G_CALLBACK (delete_response_cb), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

/* ------------------------------------------------------------------------ */
/* Export                                                                     */

gboolean
ts_chat_page_export_conversation (TsChatPage *self, gint64 id, const char *path, GError **error)
{
  g_autofree char *lower = NULL;
  g_autofree char *text = NULL;

  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);
  if (self->history == NULL)
    {
      g_set_error (error, TS_HISTORY_ERROR, TS_HISTORY_ERROR_NOT_FOUND,
                   _("No conversation is kept yet"));
      return FALSE;
    }
  lower = g_ascii_strdown (path, -1);
  text = g_str_has_suffix (lower, ".json") ? ts_history_export_json (self->history, id, error)
                                           : ts_history_export_markdown (self->history, id, error);
  /* Written whole or not at all: a file half-written is worse than none. */
  return text != NULL && g_file_set_contents (path, text, -1, error);
}

static void
export_chosen (GtkWidget *owner, const char *path, gpointer user_data)
{
  TsChatPage *self = TS_CHAT_PAGE (owner);
  g_autoptr (GError) error = NULL;
  g_autofree char *name = NULL;
  g_autofree char *message = NULL;

  if (path == NULL)
    return _ts_chat_page_error (self, _("Export failed: choose a folder on this computer"));
  if (!ts_chat_page_export_conversation (self, self->export_conversation, path, &error))
    {
      message = g_strdup_printf (_("Export failed: %s"), error->message);
      return _ts_chat_page_error (self, message);
    }
  name = g_filename_display_basename (path);
  message = g_strdup_printf (_("Exported to %s"), name);
  _ts_chat_page_toast (self, message);
}

/* @id's title, or NULL when it is not stored. */
static char *
conversation_title (TsChatPage *self, gint64 id)
{
  g_autoptr (GPtrArray) list = ts_history_list (self->history, NULL);

  for (guint i = 0; list != NULL && i < list->len; i++)
    {
      TsHistoryConversation *c = g_ptr_array_index (list, i);

      if (c->id == id)
        return g_strdup (c->title);
    }
  return NULL;
}

/* The file's extension picks the format: .md (proposed) or .json. */
static void
export_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  g_autoptr (GtkFileFilter) filter = gtk_file_filter_new ();
  g_autofree char *title = NULL;
  g_autofree char *name = NULL;

  if (self->history == NULL)
    return;
  self->export_conversation = g_variant_get_int64 (param);
  title = conversation_title (self, self->export_conversation);
  name = ts_history_export_file_name (title, "md");
  gtk_file_filter_set_name (filter, _("Markdown (.md) or JSON (.json)"));
  gtk_file_filter_add_pattern (filter, "*.md");
  gtk_file_filter_add_pattern (filter, "*.json");
  ts_file_chooser_run (widget, GTK_FILE_CHOOSER_ACTION_SAVE, _("Export Conversation"),
                       _("_Export"), name, filter, export_chosen, NULL);
}

void
_ts_chat_page_history_class_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_bind_template_child_full (widget_class, "history_search", FALSE,
                                             G_STRUCT_OFFSET (TsChatPage, history_search));
  gtk_widget_class_bind_template_child_full (widget_class, "history_placeholder", FALSE,
                                             G_STRUCT_OFFSET (TsChatPage, history_placeholder));
  gtk_widget_class_install_action (widget_class, "chat.rename-conversation", "x", rename_action);
  gtk_widget_class_install_action (widget_class, "chat.export-conversation", "x", export_action);
  gtk_widget_class_install_action (widget_class, "chat.delete-conversation", "x", delete_action);
  gtk_widget_class_install_action (widget_class, "chat.find-conversation", NULL,
                                   find_conversation_action);
}

void
_ts_chat_page_history_init (TsChatPage *self)
{
  g_signal_connect (self->history_list, "row-activated", G_CALLBACK (row_activated_cb), self);
  g_signal_connect (self->history_search, "search-changed", G_CALLBACK (search_changed_cb), self);
  open_history (self, FALSE);
  _ts_chat_page_history_refresh (self);
}
