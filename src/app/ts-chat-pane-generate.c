/* ts-chat-pane-generate.c: a chat pane's reply: starting its TsGenerationJob
 * and following it, each token's text appended to the conversation's last turn
 * at the next frame, until the reply ends (done, stopped or failed).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-chat-pane-private.h"

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
  _ts_chat_pane_emit_token (self, event->index, event->token_id);
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
      _ts_chat_pane_emit_finished (self, event->kind,
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
