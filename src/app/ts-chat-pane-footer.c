/* ts-chat-pane-footer.c: a chat pane's reply numbers: the footer's lines, the
 * latency chart's bars, and the stats that go with the reply into its turn.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-chat-pane-private.h"

/* The last reply's numbers and bars go with it into the conversation
 * (history keeps them from there). */
void
_ts_chat_pane_publish_stats (TsChatPane *self)
{
  g_autoptr (TsHistoryReplyStats) stats = NULL;

  if (_ts_chat_pane_reply_turn (self) == NULL)
    return;
  stats = ts_chat_pane_get_reply_stats (self);
  ts_chat_turn_set_stats (_ts_chat_pane_reply_turn (self), stats);
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
void
_ts_chat_pane_show_computed (TsChatPane *self)
{
  const char *title = self->reply_encrypted ? self->title
                      : !self->reply_has_adapter ? _("Base model (no adapter, not encrypted)")
                      : self->he ? _("Plaintext LoRA (not encrypted)") : self->title;

  gtk_label_set_text (self->title_label, title != NULL ? title : "");
  gtk_widget_set_visible (GTK_WIDGET (self->delta_label), self->reply_encrypted);
  if (!self->reply_encrypted)
    ts_chat_pane_show_key (self, NULL, FALSE);
}

void
_ts_chat_pane_update_footer (TsChatPane *self)
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

/* The token's stage timings go to the chart, and the footer's numbers count it. */
void
_ts_chat_pane_count_token (TsChatPane *self, const TsGenerationEvent *event)
{
  double decode_ms = event->elapsed_ms - event->first_token_ms;

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
      _ts_chat_pane_notify (self, PROP_MAX_DELTA_ERROR);
    }
  _ts_chat_pane_notify (self, PROP_N_TOKENS);
  _ts_chat_pane_notify (self, PROP_TOKENS_PER_SECOND);
  _ts_chat_pane_notify (self, PROP_FIRST_TOKEN_MS);
}

/* The privacy budget line of an adapter-private reply, after its last answer. */
void
_ts_chat_pane_show_privacy (TsChatPane *self, const TsGenerationEvent *event)
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
  _ts_chat_pane_notify (self, PROP_PRIVACY_EPSILON);
}

/* Where the reply's HE-LoRA computes, when it is the GPU or when the GPU
 * the settings allow is not used (the library's reason, in English). */
void
_ts_chat_pane_show_backend (TsChatPane *self, const TsGenerationEvent *event)
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

void
_ts_chat_pane_reset_numbers (TsChatPane *self)
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
  _ts_chat_pane_notify (self, PROP_N_TOKENS);
  _ts_chat_pane_update_footer (self);
}

gboolean
ts_chat_pane_get_encrypted (TsChatPane *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PANE (self), FALSE);
  return self->reply_encrypted;
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
    _ts_chat_pane_publish_stats (self);
  _ts_chat_pane_notify (self, PROP_DIVERGED_AT);
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
  _ts_chat_pane_reset_numbers (self);
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
  _ts_chat_pane_show_computed (self);
  _ts_chat_pane_update_footer (self);
  _ts_chat_pane_publish_stats (self);
  _ts_chat_pane_notify (self, PROP_N_TOKENS);
  _ts_chat_pane_notify (self, PROP_TOKENS_PER_SECOND);
  _ts_chat_pane_notify (self, PROP_FIRST_TOKEN_MS);
  _ts_chat_pane_notify (self, PROP_MAX_DELTA_ERROR);
}
