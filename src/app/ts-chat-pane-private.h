/* ts-chat-pane-private.h: internals of a chat pane shared by its files:
 * ts-chat-pane.c, the widget and its conversation view;
 * ts-chat-pane-generate.c, a reply's generation; ts-chat-pane-footer.c, the
 * reply's numbers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-chat-conversation.h"
#include "ts-chat-pane.h"
#include "ts-generation-cache.h"

G_BEGIN_DECLS

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

/* ts-chat-pane.c: the widget. */
void _ts_chat_pane_notify (TsChatPane *self, guint prop);
/* The last reply: the one streaming while a reply is generated. */
TsChatTurn *_ts_chat_pane_reply_turn (TsChatPane *self);
/* The pane's "token" and "finished" signals, for the reply's generation. */
void _ts_chat_pane_emit_token (TsChatPane *self, guint index, int token_id);
void _ts_chat_pane_emit_finished (TsChatPane *self, TsGenerationEventKind kind, const char *error);

/* ts-chat-pane-footer.c: the reply's numbers. */
/* The last reply's numbers and bars go with it into the conversation. */
void _ts_chat_pane_publish_stats (TsChatPane *self);
/* Title, lock and error line as the reply computed (encrypted or not). */
void _ts_chat_pane_show_computed (TsChatPane *self);
void _ts_chat_pane_update_footer (TsChatPane *self);
/* A token of the reply: its stage timings to the chart, its numbers counted. */
void _ts_chat_pane_count_token (TsChatPane *self, const TsGenerationEvent *event);
/* The privacy budget line of an adapter-private reply, after its last answer. */
void _ts_chat_pane_show_privacy (TsChatPane *self, const TsGenerationEvent *event);
/* Where the reply's HE-LoRA computes, when that is worth saying. */
void _ts_chat_pane_show_backend (TsChatPane *self, const TsGenerationEvent *event);
/* No numbers and no bars: before a reply, or when the pane is cleared. */
void _ts_chat_pane_reset_numbers (TsChatPane *self);

G_END_DECLS
