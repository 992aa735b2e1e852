/* ts-chat-pane.c: one side of the chat: messages, live footer and latency chart.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-chat-message.h"
#include "ts-chat-pane.h"
#include "ts-chat-conversation.h"
#include "ts-generation-cache.h"
#include "ts-toast.h"

struct _TsChatPane
{
  AdwBin parent_instance;

  GtkLabel *title_label;
  GtkLabel *subtitle_label;
  GtkWidget *lock_badge;
  GtkLabel *fingerprint_label;
  GtkScrolledWindow *scroller;
  GtkBox *messages;
  GtkLabel *tokens_label;
  GtkLabel *rate_label;
  GtkLabel *ttft_label;
  GtkLabel *bytes_label;
  GtkLabel *delta_label;
  GtkLabel *diverged_label;
  GtkLabel *privacy_label;
  GtkLabel *backend_label;
  TsLatencyChart *chart;

  gboolean he;
  /* What the last reply computed: the HE pane says "HE-LoRA" and shows the
   * lock only when the adapter really was evaluated encrypted. */
  gboolean reply_encrypted;
  gboolean reply_has_adapter;
  char *title;                   /* as configured: the encrypted reply's title */
  guint requested_max_tokens;    /* the reply's limit as asked */
  gboolean saw_end;              /* the last token ended the turn */
  char *context_note;            /* what the reply left out to fit the context */
  TsGenerationJob *job;
  TsGenerationCache *cache;       /* this pane's previous reply's session */
  TsChatConversation *conversation;  /* what the messages show */
  GString *pending;              /* text not shown yet */
  GString *pending_thinking;     /* … of the thinking */
  guint n_thinking_tokens;
  guint flush_tick;
  guint n_tokens;
  double tokens_per_second;
  double first_token_ms;
  double max_delta_error;
  double bytes_per_token;        /* ciphertext per decode step (the prompt's excluded) */
  guint64 ct_bytes_seen;         /* the session's ciphertext total at the last token */
  guint64 decode_ct_bytes;       /* ciphertext of the tokens after the first */
  guint he_modules;              /* adapted modules, and the encryptions of h per */
  guint he_inputs;               /* token they share (0: plaintext) */
  int diverged_at;
  char *key_fingerprint;         /* what the lock badge shows */
  gboolean key_from_vault;       /* the reply being generated uses the vault's key */
  gboolean private_reply;        /* the reply being generated asked for the private mode */
  gboolean he_remote;            /* … has a remote evaluator */
  double privacy_epsilon;        /* spent, as last reported; -1: unknown */
};

G_DEFINE_FINAL_TYPE (TsChatPane, ts_chat_pane, ADW_TYPE_BIN)

enum {
  PROP_0,
  PROP_TITLE,
  PROP_HE,
  PROP_BUSY,
  PROP_N_TOKENS,
  PROP_TOKENS_PER_SECOND,
  PROP_FIRST_TOKEN_MS,
  PROP_MAX_DELTA_ERROR,
  PROP_DIVERGED_AT,
  PROP_PRIVACY_EPSILON,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

enum {
  SIGNAL_TOKEN,
  SIGNAL_FINISHED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static void
notify (TsChatPane *self, guint prop)
{
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop]);
}

/* The last reply: the one streaming while a reply is generated. */
static TsChatTurn *
reply_turn (TsChatPane *self)
{
  return ts_chat_conversation_get_last_reply (self->conversation);
}

/* The last reply's numbers and bars go with it into the conversation
 * (history keeps them from there). */
static void
publish_stats (TsChatPane *self)
{
  g_autoptr (TsHistoryReplyStats) stats = NULL;

  if (reply_turn (self) == NULL)
    return;
  stats = ts_chat_pane_get_reply_stats (self);
  ts_chat_turn_set_stats (reply_turn (self), stats);
}

/* Modules reading the same h (one layer's q/k/v, stacked adapters) share
 * one encryption: "9 encryptions for 15 modules per token", or NULL. */
static char *
describe_sharing (TsChatPane *self)
{
  g_autofree char *enc = NULL;

  if (!self->he || self->he_inputs == 0)
    return NULL;
  enc = g_strdup_printf (g_dngettext (NULL, "%u encryption", "%u encryptions", self->he_inputs),
                         self->he_inputs);
  return g_strdup_printf (g_dngettext (NULL, "%s for %u module per token",
                                       "%s for %u modules per token", self->he_modules),
                          enc, self->he_modules);
}

/* Title, lock and error line as computed: a reply that encrypted nothing
 * (the evaluator set to plaintext, or no adapter) is not called HE-LoRA. */
static void
show_computed (TsChatPane *self)
{
  const char *title = self->reply_encrypted ? self->title
                      : !self->reply_has_adapter ? _("Base model (no adapter, not encrypted)")
                      : self->he ? _("Plaintext LoRA (not encrypted)") : self->title;

  gtk_label_set_text (self->title_label, title != NULL ? title : "");
  gtk_widget_set_visible (GTK_WIDGET (self->delta_label), self->reply_encrypted);
  if (!self->reply_encrypted)
    ts_chat_pane_show_key (self, NULL, FALSE);
}

static void
update_footer (TsChatPane *self)
{
  g_autofree char *tokens = g_strdup_printf (g_dngettext (NULL, "%u token", "%u tokens",
                                                          self->n_tokens), self->n_tokens);
  g_autofree char *rate = g_strdup_printf (_("%.1f tokens/s"), self->tokens_per_second);
  g_autofree char *ttft = g_strdup_printf (_("first token %.0f ms"), self->first_token_ms);
  g_autofree char *size = g_format_size ((guint64) self->bytes_per_token);
  g_autofree char *bytes = !self->reply_has_adapter ? g_strdup (_("no adapter: nothing encrypted"))
    : !self->reply_encrypted ? g_strdup (_("adapter applied in plaintext, nothing encrypted"))
    : self->bytes_per_token > 0 ? g_strdup_printf (_("%s of ciphertext per token"), size)
    : g_strdup (_("ciphertexts stay in-process"));
  g_autofree char *delta = g_strdup_printf (_("max |Δhe − Δplain| %.2e"), self->max_delta_error);
  g_autofree char *sharing = describe_sharing (self);

  gtk_label_set_text (self->tokens_label, tokens);
  gtk_label_set_text (self->rate_label, rate);
  gtk_label_set_text (self->ttft_label, ttft);
  if (sharing != NULL)
    {
      g_autofree char *both = g_strdup_printf ("%s · %s", bytes, sharing);

      gtk_label_set_text (self->bytes_label, both);
    }
  else
    gtk_label_set_text (self->bytes_label, bytes);
  gtk_label_set_text (self->delta_label, delta);
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
  if (reply_turn (self) != NULL && (*thinking != '\0' || *text != '\0'))
    ts_chat_turn_append_thinking (reply_turn (self), thinking, self->n_thinking_tokens);
  if (reply_turn (self) != NULL && *text != '\0')
    ts_chat_turn_append_text (reply_turn (self), text);
  update_footer (self);
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

/* The first token's ciphertext includes the whole prompt's: per token
 * means per decode step, so the first one counts only until others come. */
static double
decode_bytes_per_token (TsChatPane *self, const TsGenerationEvent *event)
{
  guint64 total = event->he_stats.ct_bytes_up + event->he_stats.ct_bytes_down;
  guint64 step = total - self->ct_bytes_seen;

  self->ct_bytes_seen = total;
  if (event->index == 0)
    return (double) step;
  self->decode_ct_bytes += step;
  return (double) self->decode_ct_bytes / event->index;
}

static void
on_token (TsChatPane *self, const TsGenerationEvent *event)
{
  double decode_ms = event->elapsed_ms - event->first_token_ms;

  g_string_append (event->is_thinking ? self->pending_thinking : self->pending,
                   event->is_thinking ? event->thinking : event->text);
  self->n_thinking_tokens += event->is_thinking;
  self->saw_end = event->is_end;
  ts_latency_chart_append (self->chart, &event->timings,
                           event->is_end ? "⏎" : event->is_thinking ? event->thinking : event->text);
  self->n_tokens = event->index + 1;
  self->first_token_ms = event->first_token_ms;
  self->tokens_per_second = self->n_tokens > 1 && decode_ms > 0
    ? 1000.0 * (self->n_tokens - 1) / decode_ms
    : 1000.0 / MAX (event->first_token_ms, 1e-3);
  if (event->has_he)
    {
      self->max_delta_error = event->he_stats.max_abs_delta_error;
      self->bytes_per_token = decode_bytes_per_token (self, event);
      notify (self, PROP_MAX_DELTA_ERROR);
    }
  notify (self, PROP_N_TOKENS);
  notify (self, PROP_TOKENS_PER_SECOND);
  notify (self, PROP_FIRST_TOKEN_MS);
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
  notify (self, PROP_BUSY);
}

/* The privacy budget line of an adapter-private reply, after its last answer. */
static void
show_privacy (TsChatPane *self, const TsGenerationEvent *event)
{
  const TsHeloraPrivacyStatus *p = &event->privacy;
  g_autofree char *text = NULL;

  if (!self->private_reply)
    return;
  if (!event->has_privacy)
    text = g_strdup (_("privacy spent: not reported by the evaluator"));
  else if (p->flags & TS_HELORA_PRIVACY_BUDGET)
    text = g_strdup_printf (_("privacy spent: ε %.3g of %.3g (δ %.0e)"), p->epsilon_spent,
                            p->epsilon_budget, p->delta);
  else
    text = g_strdup (_("privacy: masked and flooded; the evaluator keeps no DP budget"));
  self->privacy_epsilon = event->has_privacy ? p->epsilon_spent : -1;
  gtk_label_set_text (self->privacy_label, text);
  gtk_widget_set_visible (GTK_WIDGET (self->privacy_label), TRUE);
  notify (self, PROP_PRIVACY_EPSILON);
}

/* An answer that did not end on its own says so: stopped by the user, or
 * cut at the length limit (it would look complete otherwise). */
static void
show_ending (TsChatPane *self, TsGenerationEventKind kind)
{
  g_autofree char *text = NULL;

  if (reply_turn (self) == NULL)
    return;
  if (kind == TS_GENERATION_EVENT_CANCELLED)
    text = g_strdup (_("Stopped"));
  else if (kind == TS_GENERATION_EVENT_DONE && !self->saw_end && self->n_tokens > 0)
    text = g_strdup_printf (g_dngettext (NULL, "Cut at the limit of %u token",
                                         "Cut at the limit of %u tokens", self->n_tokens),
                            self->n_tokens);
  ts_chat_turn_set_ending (reply_turn (self), text);
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

  if (reply_turn (self) == NULL || event->error == NULL)
    return;
  if (g_error_matches (event->error, TS_GENERATION_ERROR, TS_GENERATION_ERROR_PRIVACY_BUDGET))
    text = privacy_refusal (event);
  else if (g_error_matches (event->error, TS_GENERATION_ERROR, TS_GENERATION_ERROR_GPU))
    text = g_strdup_printf (_("The GPU failed during this answer; the next answer is computed "
                              "on the CPU (%s)"), event->error->message);
  else
    text = g_strdup_printf (_("No answer: %s"), event->error->message);
  ts_chat_turn_set_error (reply_turn (self), text);
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
  if (note->len == 0 || reply_turn (self) == NULL)
    return;
  self->context_note = g_strdup (note->str);
  ts_chat_turn_add_note (reply_turn (self), note->str);
}

/* Where the reply's HE-LoRA computes, when it is the GPU or when the GPU
 * the settings allow is not used (the library's reason, in English). */
static void
show_backend (TsChatPane *self, const TsGenerationEvent *event)
{
  g_autofree char *text = NULL;

  if (event->he_backend == TS_HELORA_BACKEND_CUDA)
    text = g_strdup (_("Encrypted adapter computed on the GPU"));
  else if (event->he_backend_reason != NULL && self->he_remote)
    text = g_strdup (_("The GPU setting applies to local evaluation only: the remote "
                       "evaluator computes the encrypted adapter"));
  else if (event->he_backend_reason != NULL)
    text = g_strdup_printf (_("Encrypted adapter computed on the CPU, not the GPU: %s"),
                            event->he_backend_reason);
  if (text != NULL)
    gtk_label_set_text (self->backend_label, text);
  gtk_widget_set_visible (GTK_WIDGET (self->backend_label), text != NULL);
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
      update_footer (self);
      if (self->reply_encrypted && event->key_fingerprint != NULL
          && *event->key_fingerprint != '\0')
        ts_chat_pane_show_key (self, event->key_fingerprint, self->key_from_vault);
      show_backend (self, event);
      show_context (self, event);
      break;
    case TS_GENERATION_EVENT_TOKEN:
      on_token (self, event);
      break;
    default:
      flush_pending (self);
      if (reply_turn (self) != NULL)
        ts_chat_turn_end_thinking (reply_turn (self));
      show_privacy (self, event);
      if (event->kind == TS_GENERATION_EVENT_ERROR)
        show_error (self, event);
      show_ending (self, event->kind);
      set_busy (self, FALSE);
      publish_stats (self);
      g_signal_emit (self, signals[SIGNAL_FINISHED], 0, event->kind,
                     event->error != NULL ? event->error->message : NULL);
      break;
    }
}

static void
reset_numbers (TsChatPane *self)
{
  self->n_tokens = 0;
  self->tokens_per_second = 0;
  self->first_token_ms = 0;
  self->max_delta_error = 0;
  self->bytes_per_token = 0;
  self->ct_bytes_seen = self->decode_ct_bytes = 0;
  self->he_modules = self->he_inputs = 0;
  ts_chat_pane_set_diverged_at (self, -1);
  ts_latency_chart_clear (self->chart);
  notify (self, PROP_N_TOKENS);
  update_footer (self);
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
  reset_numbers (self);
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
  return reply_turn (self) != NULL ? ts_chat_turn_get_text (reply_turn (self)) : NULL;
}

const char *
ts_chat_pane_get_reply_thinking (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  if (self->pending_thinking->len > 0)
    flush_pending (self);
  return reply_turn (self) != NULL ? ts_chat_turn_get_thinking (reply_turn (self)) : NULL;
}

void
ts_chat_pane_set_reply_thinking (TsChatPane *self, const char *thinking)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  if (reply_turn (self) != NULL)
    ts_chat_turn_set_thinking (reply_turn (self), thinking);
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
  show_computed (self);
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
  reset_numbers (self);
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
  return reply_turn (self) != NULL ? ts_chat_turn_get_ending (reply_turn (self)) : NULL;
}

const char *
ts_chat_pane_get_context_note (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return self->context_note;
}

gboolean
ts_chat_pane_get_encrypted (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), FALSE);
  return self->reply_encrypted;
}

void
ts_chat_pane_set_subtitle (TsChatPane *self, const char *subtitle)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  gtk_label_set_text (self->subtitle_label, subtitle);
}

guint
ts_chat_pane_get_n_tokens (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), 0);
  return self->n_tokens;
}

double
ts_chat_pane_get_tokens_per_second (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), 0);
  return self->tokens_per_second;
}

double
ts_chat_pane_get_first_token_ms (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), 0);
  return self->first_token_ms;
}

double
ts_chat_pane_get_bytes_per_token (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), 0);
  return self->bytes_per_token;
}

double
ts_chat_pane_get_max_delta_error (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), 0);
  return self->max_delta_error;
}

int
ts_chat_pane_get_diverged_at (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), -1);
  return self->diverged_at;
}

void
ts_chat_pane_set_diverged_at (TsChatPane *self, int index)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  if (self->diverged_at == index)
    return;
  self->diverged_at = index;
  if (index >= 0)
    {
      g_autofree char *text = g_strdup_printf (_("Differs from plaintext at token %d"), index + 1);

      gtk_label_set_text (self->diverged_label, text);
    }
  gtk_widget_set_visible (GTK_WIDGET (self->diverged_label), index >= 0);
  /* The other pane may still be answering when this one has finished. */
  if (self->job == NULL && index >= 0)
    publish_stats (self);
  notify (self, PROP_DIVERGED_AT);
}

void
ts_chat_pane_set_reply_note (TsChatPane *self, const char *note)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  if (reply_turn (self) != NULL)
    ts_chat_turn_set_note (reply_turn (self), note);
}

const char *
ts_chat_pane_get_reply_note (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return reply_turn (self) != NULL ? ts_chat_turn_get_note (reply_turn (self)) : NULL;
}

const char *
ts_chat_pane_get_reply_error (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return reply_turn (self) != NULL ? ts_chat_turn_get_error (reply_turn (self)) : NULL;
}

double
ts_chat_pane_get_privacy_epsilon (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), -1);
  return self->privacy_epsilon;
}

const char *
ts_chat_pane_get_backend_text (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return gtk_widget_get_visible (GTK_WIDGET (self->backend_label))
         ? gtk_label_get_text (self->backend_label) : NULL;
}

const char *
ts_chat_pane_get_privacy_text (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return gtk_widget_get_visible (GTK_WIDGET (self->privacy_label))
         ? gtk_label_get_text (self->privacy_label) : NULL;
}

TsLatencyChart *
ts_chat_pane_get_chart (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  return self->chart;
}

TsHistoryReplyStats *
ts_chat_pane_get_reply_stats (TsChatPane *self)
{
  TsHistoryReplyStats *stats;

  g_return_val_if_fail (TS_IS_CHAT_PANE (self), NULL);
  stats = ts_history_reply_stats_new ();
  stats->n_tokens = self->n_tokens;
  stats->tokens_per_second = self->tokens_per_second;
  stats->first_token_ms = self->first_token_ms;
  stats->max_delta_error = self->max_delta_error;
  stats->bytes_per_token = self->bytes_per_token;
  stats->encrypted = self->reply_encrypted;
  stats->has_adapter = self->reply_has_adapter;
  stats->he_modules = self->he_modules;
  stats->he_inputs = self->he_inputs;
  stats->diverged_at = self->diverged_at;
  for (guint i = 0; i < ts_latency_chart_get_n_bars (self->chart); i++)
    ts_history_reply_stats_add_bar (stats, ts_latency_chart_get_bar (self->chart, i),
                                    ts_latency_chart_get_bar_text (self->chart, i));
  return stats;
}

void
ts_chat_pane_show_reply_stats (TsChatPane *self, const TsHistoryReplyStats *stats)
{
  g_return_if_fail (TS_IS_CHAT_PANE (self));
  g_return_if_fail (stats != NULL);
  reset_numbers (self);
  self->n_tokens = stats->n_tokens;
  self->tokens_per_second = stats->tokens_per_second;
  self->first_token_ms = stats->first_token_ms;
  self->max_delta_error = stats->max_delta_error;
  self->bytes_per_token = stats->bytes_per_token;
  /* Only the HE pane can have encrypted anything. */
  self->reply_encrypted = self->he && stats->encrypted;
  self->reply_has_adapter = stats->has_adapter;
  self->he_modules = stats->he_modules;
  self->he_inputs = stats->he_inputs;
  for (guint i = 0; i < stats->timings->len; i++)
    ts_latency_chart_append (self->chart, &g_array_index (stats->timings, TsTokenTimings, i),
                             g_ptr_array_index (stats->texts, i));
  ts_chat_pane_set_diverged_at (self, stats->diverged_at);
  show_computed (self);
  update_footer (self);
  publish_stats (self);
  notify (self, PROP_N_TOKENS);
  notify (self, PROP_TOKENS_PER_SECOND);
  notify (self, PROP_FIRST_TOKEN_MS);
  notify (self, PROP_MAX_DELTA_ERROR);
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
      update_footer (self);
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
  update_footer (self);
}
