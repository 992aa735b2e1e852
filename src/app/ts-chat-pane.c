/* ts-chat-pane.c: one side of the chat: the widget, its messages a view of its
 * conversation, and generating its replies (their numbers, footer and chart:
 * ts-chat-pane-footer.c).
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

static void
scroll_to_end (TsChatPane *self)
{
  GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment (self->scroller);

  gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj));
}

static void
flush_pending (TsChatPane *self)
{
  /* Take the text out first: whatever runs while it is shown sees an empty
   * queue, so no piece can be appended twice. */
  g_autofree char *text = g_strndup (self->pending->str, self->pending->len);
  g_autofree char *thinking = g_strndup (self->pending_thinking->str, self->pending_thinking->len);

  g_string_truncate (self->pending, 0);
  g_string_truncate (self->pending_thinking, 0);
  /* Also without new thinking text: the count includes the tokens that
   * gave none (the closing tag) before the answer ends the thinking. */
  if (_ts_chat_pane_reply_turn (self) != NULL && (*thinking != '\0' || *text != '\0'))
    ts_chat_turn_append_thinking (_ts_chat_pane_reply_turn (self), thinking, self->n_thinking_tokens);
  if (_ts_chat_pane_reply_turn (self) != NULL && *text != '\0')
    ts_chat_turn_append_text (_ts_chat_pane_reply_turn (self), text);
  _ts_chat_pane_update_footer (self);
  scroll_to_end (self);
}

static gboolean
flush_tick_cb (GtkWidget *widget, GdkFrameClock *clock, gpointer data)
{
  TsChatPane *self = TS_CHAT_PANE (widget);

  self->flush_tick = 0;
  flush_pending (self);
  return G_SOURCE_REMOVE;
}

static void
on_token (TsChatPane *self, const TsGenerationEvent *event)
{
  g_string_append (event->is_thinking ? self->pending_thinking : self->pending,
                   event->is_thinking ? event->thinking : event->text);
  self->n_thinking_tokens += event->is_thinking;
  self->saw_end = event->is_end;
  _ts_chat_pane_count_token (self, event);
  if (self->flush_tick == 0)
    self->flush_tick = gtk_widget_add_tick_callback (GTK_WIDGET (self), flush_tick_cb, NULL, NULL);
  g_signal_emit (self, signals[SIGNAL_TOKEN], 0, event->index, event->token_id);
}

static void
set_busy (TsChatPane *self, gboolean busy)
{
  if (!busy)
    g_clear_pointer (&self->job, ts_generation_job_unref);
  gtk_widget_remove_css_class (GTK_WIDGET (self), "ts-busy");
  if (busy)
    gtk_widget_add_css_class (GTK_WIDGET (self), "ts-busy");
  _ts_chat_pane_notify (self, PROP_BUSY);
}

/* An answer that did not end on its own says so: stopped by the user, or
 * cut at the length limit (it would look complete otherwise). */
static void
show_ending (TsChatPane *self, TsGenerationEventKind kind)
{
  g_autofree char *text = NULL;

  if (_ts_chat_pane_reply_turn (self) == NULL)
    return;
  if (kind == TS_GENERATION_EVENT_CANCELLED)
    text = g_strdup (_("Stopped"));
  else if (kind == TS_GENERATION_EVENT_DONE && !self->saw_end && self->n_tokens > 0)
    text = g_strdup_printf (g_dngettext (NULL, "Cut at the limit of %u token",
                                         "Cut at the limit of %u tokens", self->n_tokens),
                            self->n_tokens);
  ts_chat_turn_set_ending (_ts_chat_pane_reply_turn (self), text);
}

/* A refusal by the evaluator's privacy budget. When little of it is spent,
 * the cost asked per answer is what does not fit ("spent: ε 0 of 5" would
 * contradict itself): say so and where to lower it. */
static char *
privacy_refusal (const TsGenerationEvent *event)
{
  double spent = event->privacy.epsilon_spent, budget = event->privacy.epsilon_budget;

  if (!event->has_privacy || !(event->privacy.flags & TS_HELORA_PRIVACY_BUDGET))
    return g_strdup (_("The evaluator refused this answer: the privacy budget of this key is "
                       "spent. The plaintext answer is not affected."));
  if (spent < 0.5 * budget)
    return g_strdup_printf (_("The evaluator refused this answer: at the differential-privacy "
                              "cost set in Preferences, one answer would spend more than the "
                              "%.3g of this key's budget (ε %.3g) that is left. Lower the cost "
                              "per answer (more noise) or set it to 0 (no noise). The plaintext "
                              "answer is not affected."), budget - spent, budget);
  return g_strdup_printf (_("The evaluator refused this answer: the privacy budget of this key "
                            "is spent (ε %.3g of %.3g). The plaintext answer is not affected."),
                          spent, budget);
}

/* Why the reply stopped, in the reply itself: the other pane's answer and
 * the user's message stay as they are. */
static void
show_error (TsChatPane *self, const TsGenerationEvent *event)
{
  g_autofree char *text = NULL;

  if (_ts_chat_pane_reply_turn (self) == NULL || event->error == NULL)
    return;
  if (g_error_matches (event->error, TS_GENERATION_ERROR, TS_GENERATION_ERROR_PRIVACY_BUDGET))
    text = privacy_refusal (event);
  else if (g_error_matches (event->error, TS_GENERATION_ERROR, TS_GENERATION_ERROR_GPU))
    text = g_strdup_printf (_("The GPU failed during this answer; the next answer is computed "
                              "on the CPU (%s)"), event->error->message);
  else
    text = g_strdup_printf (_("No answer: %s"), event->error->message);
  ts_chat_turn_set_error (_ts_chat_pane_reply_turn (self), text);
}

/* What the context could not hold, added to the reply's note: the oldest
 * turns left out, the answer shortened. */
static void
show_context (TsChatPane *self, const TsGenerationEvent *event)
{
  g_autoptr (GString) note = g_string_new (NULL);

  g_clear_pointer (&self->context_note, g_free);
  guint exchanges = event->turns_left_out / 2;   /* a question and its answer each */

  if (exchanges > 0)
    g_string_append_printf (note, g_dngettext (NULL,
                              "The oldest exchange was left out to fit the model's context.",
                              "The oldest %u exchanges were left out to fit the model's context.",
                              exchanges), exchanges);
  if (event->max_tokens < self->requested_max_tokens)
    {
      if (note->len > 0)
        g_string_append_c (note, ' ');
      g_string_append_printf (note, _("The context has room for %u more tokens: the answer "
                                      "stops there."), event->max_tokens);
    }
  if (note->len == 0 || _ts_chat_pane_reply_turn (self) == NULL)
    return;
  self->context_note = g_strdup (note->str);
  ts_chat_turn_add_note (_ts_chat_pane_reply_turn (self), note->str);
}

static void
generation_cb (TsGenerationJob *job, const TsGenerationEvent *event, gpointer user_data)
{
  TsChatPane *self = TS_CHAT_PANE (user_data);

  switch (event->kind)
    {
    case TS_GENERATION_EVENT_STARTED:
      self->he_modules = event->he_modules;
      self->he_inputs = event->he_inputs;
      _ts_chat_pane_update_footer (self);
      if (self->reply_encrypted && event->key_fingerprint != NULL
          && *event->key_fingerprint != '\0')
        ts_chat_pane_show_key (self, event->key_fingerprint, self->key_from_vault);
      _ts_chat_pane_show_backend (self, event);
      show_context (self, event);
      break;
    case TS_GENERATION_EVENT_TOKEN:
      on_token (self, event);
      break;
    default:
      flush_pending (self);
      if (_ts_chat_pane_reply_turn (self) != NULL)
        ts_chat_turn_end_thinking (_ts_chat_pane_reply_turn (self));
      _ts_chat_pane_show_privacy (self, event);
      if (event->kind == TS_GENERATION_EVENT_ERROR)
        show_error (self, event);
      show_ending (self, event->kind);
      set_busy (self, FALSE);
      _ts_chat_pane_publish_stats (self);
      g_signal_emit (self, signals[SIGNAL_FINISHED], 0, event->kind,
                     event->error != NULL ? event->error->message : NULL);
      break;
    }
}

void
ts_chat_pane_stop (TsChatPane *self)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  if (self->job == NULL)
    return;
  /* The job still reports CANCELLED, which ends the pane's busy state. */
  ts_generation_job_cancel (self->job);
}

void
ts_chat_pane_clear (TsChatPane *self)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  if (self->job != NULL)
    {
      ts_generation_job_detach (self->job);
      set_busy (self, FALSE);
    }
  ts_chat_conversation_clear (self->conversation);
  g_string_truncate (self->pending, 0);
  g_string_truncate (self->pending_thinking, 0);
  _ts_chat_pane_reset_numbers (self);
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
ts_chat_pane_flush (TsChatPane *self)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  if (self->pending->len > 0 || self->pending_thinking->len > 0)
    flush_pending (self);
}

const char *
ts_chat_pane_get_reply (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  /* Text waiting for the next frame belongs to the answer already: callers
   * (history saves) must not depend on the frame clock. */
  if (self->pending->len > 0)
    flush_pending (self);
  return _ts_chat_pane_reply_turn (self) != NULL
         ? ts_chat_turn_get_text (_ts_chat_pane_reply_turn (self)) : NULL;
}

const char *
ts_chat_pane_get_reply_thinking (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  if (self->pending_thinking->len > 0)
    flush_pending (self);
  return _ts_chat_pane_reply_turn (self) != NULL
         ? ts_chat_turn_get_thinking (_ts_chat_pane_reply_turn (self)) : NULL;
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
ts_chat_pane_generate (TsChatPane *self, TsGenerationModel *model,
                       const TsGenerationRequest *request, const char *prompt)
{
  g_autoptr (TsGenerationRequest) r = NULL;
  g_autoptr (GPtrArray) turns = NULL;

  g_return_if_fail (TS_IS_CHAT_PANE (self));
  g_return_if_fail (self->job == NULL);
  ts_chat_pane_add_message (self, TRUE, prompt);
  turns = ts_chat_pane_get_turns (self);
  ts_chat_pane_add_message (self, FALSE, "");
  r = ts_generation_request_copy (request);
  g_ptr_array_set_size (r->turns, 0);
  for (guint i = 0; i < turns->len; i++)
    g_ptr_array_add (r->turns, g_strdup (g_ptr_array_index (turns, i)));
  if (!self->he)
    g_clear_pointer (&r->he_mode, g_free);
  self->reply_has_adapter = ts_generation_model_get_adapter_path (model) != NULL;
  self->reply_encrypted = self->he && self->reply_has_adapter && r->he_mode != NULL
                          && !g_str_equal (r->he_mode, "plain");
  _ts_chat_pane_show_computed (self);
  self->key_from_vault = r->he_key_fingerprint != NULL;
  self->requested_max_tokens = r->max_tokens;
  self->saw_end = FALSE;
  self->n_thinking_tokens = 0;
  g_clear_pointer (&self->context_note, g_free);
  self->private_reply = self->he && r->he_private;
  self->he_remote = r->he_mode != NULL && g_str_has_prefix (r->he_mode, "ws");
  gtk_widget_set_visible (GTK_WIDGET (self->backend_label), FALSE);
  if (!self->private_reply)
    gtk_widget_set_visible (GTK_WIDGET (self->privacy_label), FALSE);
  _ts_chat_pane_reset_numbers (self);
  self->job = ts_generation_job_start_cached (model, r, self->cache, NULL, generation_cb, self);
  set_busy (self, TRUE);
}

void
ts_chat_pane_forget_session (TsChatPane *self)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  ts_generation_cache_clear (self->cache);
}

TsGenerationCache *
ts_chat_pane_get_cache (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return self->cache;
}

gboolean
ts_chat_pane_get_busy (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), FALSE);
  return self->job != NULL;
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
