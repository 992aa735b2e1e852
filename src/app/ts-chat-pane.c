/* ts-chat-pane.c: one side of the chat: the widget, its messages a view of its
 * conversation (the reply's generation: ts-chat-pane-generate.c; its numbers,
 * footer and chart: ts-chat-pane-footer.c).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-chat-message.h"
#include "ts-chat-pane-private.h"
#include "ts-toast.h"

G_DEFINE_FINAL_TYPE (TsChatPane, ts_chat_pane, ADW_TYPE_BIN)

static GParamSpec *properties[N_PROPS];

enum {
  SIGNAL_TOKEN,
  SIGNAL_FINISHED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

void
_ts_chat_pane_notify (TsChatPane *self, guint prop)
{
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop]);
}

/* The last reply: the one streaming while a reply is generated. */
TsChatTurn *
_ts_chat_pane_reply_turn (TsChatPane *self)
{
  return ts_chat_conversation_get_last_reply (self->conversation);
}

void
_ts_chat_pane_emit_token (TsChatPane *self, guint index, int token_id)
{
  g_signal_emit (self, signals[SIGNAL_TOKEN], 0, index, token_id);
}

void
_ts_chat_pane_emit_finished (TsChatPane *self, TsGenerationEventKind kind, const char *error)
{
  g_signal_emit (self, signals[SIGNAL_FINISHED], 0, kind, error);
}

/* Edit on a prompt: chat.edit-prompt with its exchange's index, insensitive
 * while the page has the action off (a reply streaming). Turns go and come
 * only at the end, so the index holds for as long as the prompt is shown. */
static GtkWidget *
edit_button_new (guint index)
{
  GtkWidget *button = gtk_button_new_from_icon_name ("document-edit-symbolic");

  gtk_widget_add_css_class (button, "flat");
  gtk_widget_add_css_class (button, "ts-edit-prompt");
  gtk_widget_set_tooltip_text (button, _("Edit and Answer Again"));
  gtk_actionable_set_action_name (GTK_ACTIONABLE (button), "chat.edit-prompt");
  gtk_actionable_set_action_target_value (GTK_ACTIONABLE (button), g_variant_new_uint32 (index));
  return button;
}

static GtkWidget *
message_new (TsChatPane *self, guint position)
{
  TsChatTurn *turn = ts_chat_conversation_get_turn (self->conversation, position);
  GtkWidget *message = ts_chat_message_new_for_turn (turn);

  if (ts_chat_turn_get_is_user (turn))
    ts_chat_message_add_button (TS_CHAT_MESSAGE (message),
                                edit_button_new (ts_chat_conversation_count_prompts_before
                                                   (self->conversation, position)));
  return message;
}

static GtkWidget *
nth_message (TsChatPane *self, guint position)
{
  GtkWidget *c = gtk_widget_get_first_child (GTK_WIDGET (self->messages));

  for (guint i = 0; c != NULL && i < position; i++)
    c = gtk_widget_get_next_sibling (c);
  return c;
}

/* The messages are the conversation's turns, one widget each, in order. */
static void
turns_changed_cb (GListModel *model, guint position, guint removed, guint added,
                  TsChatPane *self)
{
  GtkWidget *before = position > 0 ? nth_message (self, position - 1) : NULL;

  for (guint i = 0; i < removed; i++)
    gtk_box_remove (self->messages, before != NULL ? gtk_widget_get_next_sibling (before)
                                    : gtk_widget_get_first_child (GTK_WIDGET (self->messages)));
  for (guint i = 0; i < added; i++)
    {
      GtkWidget *message = message_new (self, position + i);

      gtk_box_insert_child_after (self->messages, message, before);
      before = message;
    }
}

void
ts_chat_pane_set_conversation (TsChatPane *self, TsChatConversation *conversation)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  g_return_if_fail (TS_IS_CHAT_CONVERSATION (conversation));
  g_return_if_fail (self->job == NULL);
  if (self->conversation == conversation)
    return;
  if (self->conversation != NULL)
    {
      g_signal_handlers_disconnect_by_func (self->conversation, turns_changed_cb, self);
      turns_changed_cb (G_LIST_MODEL (self->conversation), 0,
                        g_list_model_get_n_items (G_LIST_MODEL (self->conversation)), 0, self);
    }
  g_set_object (&self->conversation, conversation);
  g_signal_connect (conversation, "items-changed", G_CALLBACK (turns_changed_cb), self);
  turns_changed_cb (G_LIST_MODEL (conversation), 0, 0,
                    g_list_model_get_n_items (G_LIST_MODEL (conversation)), self);
}

TsChatConversation *
ts_chat_pane_get_conversation (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return self->conversation;
}

void
ts_chat_pane_add_message (TsChatPane *self, gboolean is_user, const char *text)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  ts_chat_conversation_append (self->conversation, is_user, text);
}

GPtrArray *
ts_chat_pane_get_turns (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), g_ptr_array_new_with_free_func (g_free));
  return ts_chat_conversation_get_texts (self->conversation);
}

void
ts_chat_pane_set_reply_thinking (TsChatPane *self, const char *thinking)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  if (_ts_chat_pane_reply_turn (self) != NULL)
    ts_chat_turn_set_thinking (_ts_chat_pane_reply_turn (self), thinking);
}

void
ts_chat_pane_exclude_last_exchange (TsChatPane *self, const char *why)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  ts_chat_conversation_exclude_last_exchange (self->conversation, why);
}

const char *
ts_chat_pane_get_prompt (TsChatPane *self, guint index)
{
  TsChatTurn *prompt;

  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  prompt = ts_chat_conversation_get_prompt (self->conversation, index);
  return prompt != NULL ? ts_chat_turn_get_text (prompt) : NULL;
}

guint
ts_chat_pane_get_n_prompts (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), 0);
  return ts_chat_conversation_get_n_prompts (self->conversation);
}

gboolean
ts_chat_pane_truncate (TsChatPane *self, guint index)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), FALSE);
  g_return_val_if_fail (self->job == NULL, FALSE);
  return ts_chat_conversation_truncate (self->conversation, index);
}

char *
ts_chat_pane_pop_exchange (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return ts_chat_conversation_pop_exchange (self->conversation);
}

void
ts_chat_pane_show_key (TsChatPane *self, const char *fingerprint, gboolean from_vault)
{
  g_autofree char *shown = NULL;
  g_autofree char *tooltip = NULL;

  g_return_if_fail (TS_IS_CHAT_PANE (self));
  g_free (self->key_fingerprint);
  self->key_fingerprint = g_strdup (fingerprint);
  gtk_widget_set_visible (self->lock_badge, fingerprint != NULL);
  if (fingerprint == NULL)
    return;
  /* The vault's fingerprint is grouped ("1A2B 3C4D …"): four groups. */
  shown = g_strndup (fingerprint, strchr (fingerprint, ' ') != NULL ? 19 : 16);
  tooltip = from_vault
    ? g_strdup_printf (_("Encrypted under the key from the Keys page. Key fingerprint: %s"),
                       fingerprint)
    : g_strdup_printf (_("Ephemeral key: a fresh CKKS key held only in memory for this answer "
                         "(no key is unlocked on the Keys page). "
                         "Parameter fingerprint (SHA-256): %s"), fingerprint);
  gtk_label_set_text (self->fingerprint_label, shown);
  gtk_widget_set_tooltip_text (self->lock_badge, tooltip);
}

const char *
ts_chat_pane_get_key_fingerprint (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return self->key_fingerprint;
}

const char *
ts_chat_pane_get_key_tooltip (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return gtk_widget_get_tooltip_text (self->lock_badge);
}

gboolean
ts_chat_pane_get_he (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), FALSE);
  return self->he;
}

const char *
ts_chat_pane_get_reply_ending (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return _ts_chat_pane_reply_turn (self) != NULL
         ? ts_chat_turn_get_ending (_ts_chat_pane_reply_turn (self)) : NULL;
}

const char *
ts_chat_pane_get_context_note (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return self->context_note;
}

void
ts_chat_pane_set_subtitle (TsChatPane *self, const char *subtitle)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  gtk_label_set_text (self->subtitle_label, subtitle);
}

void
ts_chat_pane_set_reply_note (TsChatPane *self, const char *note)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  if (_ts_chat_pane_reply_turn (self) != NULL)
    ts_chat_turn_set_note (_ts_chat_pane_reply_turn (self), note);
}

const char *
ts_chat_pane_get_reply_note (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return _ts_chat_pane_reply_turn (self) != NULL
         ? ts_chat_turn_get_note (_ts_chat_pane_reply_turn (self)) : NULL;
}

const char *
ts_chat_pane_get_reply_error (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return _ts_chat_pane_reply_turn (self) != NULL
         ? ts_chat_turn_get_error (_ts_chat_pane_reply_turn (self)) : NULL;
}

static void
copy_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  const char *reply = ts_chat_pane_get_reply (TS_CHAT_PANE (widget));

  if (reply == NULL)
    return;
  gdk_clipboard_set_text (gtk_widget_get_clipboard (widget), reply);
  ts_toast_show (widget, _("Answer copied"));
}

static void
ts_chat_pane_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsChatPane *self = TS_CHAT_PANE (object);

  switch (prop_id)
    {
    case PROP_TITLE:
      g_value_set_string (value, gtk_label_get_text (self->title_label));
      break;
    case PROP_HE:
      g_value_set_boolean (value, self->he);
      break;
    case PROP_BUSY:
      g_value_set_boolean (value, self->job != NULL);
      break;
    case PROP_N_TOKENS:
      g_value_set_uint (value, self->n_tokens);
      break;
    case PROP_TOKENS_PER_SECOND:
      g_value_set_double (value, self->tokens_per_second);
      break;
    case PROP_FIRST_TOKEN_MS:
      g_value_set_double (value, self->first_token_ms);
      break;
    case PROP_MAX_DELTA_ERROR:
      g_value_set_double (value, self->max_delta_error);
      break;
    case PROP_DIVERGED_AT:
      g_value_set_int (value, self->diverged_at);
      break;
    case PROP_PRIVACY_EPSILON:
      g_value_set_double (value, self->privacy_epsilon);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_chat_pane_set_property (GObject *object, guint prop_id, const GValue *value,
                           GParamSpec *pspec)
{
  TsChatPane *self = TS_CHAT_PANE (object);

  switch (prop_id)
    {
    case PROP_TITLE:
      g_free (self->title);
      self->title = g_value_dup_string (value);
      gtk_label_set_text (self->title_label, g_value_get_string (value));
      gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                      g_value_get_string (value), -1);
      break;
    case PROP_HE:
      self->he = self->reply_encrypted = g_value_get_boolean (value);
      gtk_widget_set_visible (GTK_WIDGET (self->delta_label), self->he);
      _ts_chat_pane_update_footer (self);
      break;
    case PROP_DIVERGED_AT:
      ts_chat_pane_set_diverged_at (self, g_value_get_int (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_chat_pane_dispose (GObject *object)
{
  TsChatPane *self = TS_CHAT_PANE (object);

  if (self->job != NULL)
    ts_generation_job_detach (self->job);
  g_clear_pointer (&self->job, ts_generation_job_unref);
  if (self->conversation != NULL)
    g_signal_handlers_disconnect_by_func (self->conversation, turns_changed_cb, self);
  g_clear_object (&self->conversation);
  G_OBJECT_CLASS (ts_chat_pane_parent_class)->dispose (object);
}

static void
ts_chat_pane_finalize (GObject *object)
{
  TsChatPane *self = TS_CHAT_PANE (object);

  g_string_free (self->pending, TRUE);
  g_string_free (self->pending_thinking, TRUE);
  ts_generation_cache_unref (self->cache);
  g_free (self->key_fingerprint);
  g_free (self->title);
  g_free (self->context_note);
  G_OBJECT_CLASS (ts_chat_pane_parent_class)->finalize (object);
}

static void
install_properties (GObjectClass *object_class)
{
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  properties[PROP_TITLE] =
    g_param_spec_string ("title", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT | G_PARAM_STATIC_STRINGS);
  properties[PROP_HE] =
    g_param_spec_boolean ("he", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_BUSY] = g_param_spec_boolean ("busy", NULL, NULL, FALSE, ro);
  properties[PROP_N_TOKENS] = g_param_spec_uint ("n-tokens", NULL, NULL, 0, G_MAXUINT, 0, ro);
  properties[PROP_TOKENS_PER_SECOND] =
    g_param_spec_double ("tokens-per-second", NULL, NULL, 0, G_MAXDOUBLE, 0, ro);
  properties[PROP_FIRST_TOKEN_MS] =
    g_param_spec_double ("first-token-ms", NULL, NULL, 0, G_MAXDOUBLE, 0, ro);
  properties[PROP_MAX_DELTA_ERROR] =
    g_param_spec_double ("max-delta-error", NULL, NULL, 0, G_MAXDOUBLE, 0, ro);
  properties[PROP_DIVERGED_AT] =
    g_param_spec_int ("diverged-at", NULL, NULL, -1, G_MAXINT, -1,
                      G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_PRIVACY_EPSILON] =
    g_param_spec_double ("privacy-epsilon", NULL, NULL, -1, G_MAXDOUBLE, -1, ro);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
ts_chat_pane_class_init (TsChatPaneClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_chat_pane_get_property;
  object_class->set_property = ts_chat_pane_set_property;
  object_class->dispose = ts_chat_pane_dispose;
  object_class->finalize = ts_chat_pane_finalize;
  install_properties (object_class);

  signals[SIGNAL_TOKEN] = g_signal_new ("token", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                        0, NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_UINT,
                                        G_TYPE_INT);
  signals[SIGNAL_FINISHED] = g_signal_new ("finished", G_TYPE_FROM_CLASS (klass),
                                           G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                           G_TYPE_NONE, 2, G_TYPE_INT, G_TYPE_STRING);

  g_type_ensure (TS_TYPE_LATENCY_CHART);
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-chat-pane.ui");
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, title_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, subtitle_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, lock_badge);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, fingerprint_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, scroller);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, messages);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, tokens_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, rate_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, ttft_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, bytes_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, delta_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, diverged_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, privacy_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, backend_label);
  gtk_widget_class_bind_template_child (widget_class, TsChatPane, chart);
  gtk_widget_class_install_action (widget_class, "pane.copy", NULL, copy_action);
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_GROUP);
}

static void
ts_chat_pane_init (TsChatPane *self)
{
  self->pending = g_string_new (NULL);
  self->pending_thinking = g_string_new (NULL);
  self->cache = ts_generation_cache_new ();
  self->diverged_at = -1;
  self->privacy_epsilon = -1;
  self->reply_has_adapter = TRUE;
  gtk_widget_init_template (GTK_WIDGET (self));
  /* Its own until the page gives it the session's. */
  self->conversation = ts_chat_conversation_new ();
  g_signal_connect (self->conversation, "items-changed", G_CALLBACK (turns_changed_cb), self);
  _ts_chat_pane_update_footer (self);
}
