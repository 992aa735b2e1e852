/* ts-chat-pane.h: one side of the chat: messages, live footer and latency chart.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A pane shows the conversation as one way of applying the adapter sees it
 * (plaintext LoRA, or HE-LoRA when "he" is set) and generates its replies on
 * its own worker thread (TsGenerationJob). Tokens reach the pane on the main
 * thread; their text is shown at most once per frame. Live numbers are
 * properties: n-tokens, tokens-per-second, first-token-ms and, for HE,
 * max-delta-error, bytes-per-token, diverged-at and, for adapter-private
 * replies, privacy-epsilon (what the evaluator reports as spent).
 *
 * The messages are a view of a TsChatConversation: one message per turn,
 * following the turns as they change. The functions below that speak of
 * messages, prompts and replies read and change that conversation.
 *
 * Signals: "token" (index, token id) for each token; "finished" (a
 * TsGenerationEventKind: DONE, CANCELLED or ERROR, and the error message).
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

#include "ts-chat-conversation.h"
#include "ts-generation.h"
#include "ts-history-stats.h"
#include "ts-latency-chart.h"

G_BEGIN_DECLS

#define TS_TYPE_CHAT_PANE (ts_chat_pane_get_type ())
G_DECLARE_FINAL_TYPE (TsChatPane, ts_chat_pane, TS, CHAT_PANE, AdwBin)

/* The conversation the pane shows (at first one of its own) and whose
 * replies it generates; not while a reply is generated. */
void ts_chat_pane_set_conversation (TsChatPane *self, TsChatConversation *conversation);
TsChatConversation *ts_chat_pane_get_conversation (TsChatPane *self);

/* Removes every message and chart bar and resets the numbers. */
void ts_chat_pane_clear (TsChatPane *self);
void ts_chat_pane_add_message (TsChatPane *self, gboolean is_user, const char *text);
/* The @index-th prompt's text (from 0), or NULL; how many prompts there are. */
const char *ts_chat_pane_get_prompt (TsChatPane *self, guint index);
guint ts_chat_pane_get_n_prompts (TsChatPane *self);
/* Removes the @index-th prompt (from 0) and everything after it; FALSE when
 * there is no such prompt. Not while a reply is generated. Each prompt has
 * an Edit button that activates chat.edit-prompt (u: its index). */
gboolean ts_chat_pane_truncate (TsChatPane *self, guint index);
/* Removes the last user message and everything after it; returns its text. */
char *ts_chat_pane_pop_exchange (TsChatPane *self);
/* Leaves the last exchange (prompt and reply) out of the conversation the
 * model sees from now on, dimmed, with @why as the reply's note. */
void ts_chat_pane_exclude_last_exchange (TsChatPane *self, const char *why);
/* user, reply, user, reply, … (a GPtrArray of char*). */
GPtrArray *ts_chat_pane_get_turns (TsChatPane *self);
/* Gives the last reply's turn the text that streamed in since the last
 * frame (the pane shows tokens at most once per frame): a reader of the
 * conversation (history saves) then sees all of it. */
void ts_chat_pane_flush (TsChatPane *self);
/* Text of the last reply, or NULL when the pane has none. */
const char *ts_chat_pane_get_reply (TsChatPane *self);
/* The last reply's thinking ("" when it has none; NULL: no reply). The
 * turns above never contain it: the model gets its answers back alone. */
const char *ts_chat_pane_get_reply_thinking (TsChatPane *self);
/* Shows @thinking (history) as the last reply's. */
void ts_chat_pane_set_reply_thinking (TsChatPane *self, const char *thinking);

/* Adds @prompt as a user message and generates the reply: @request's turns
 * are filled from the pane's own history. */
void ts_chat_pane_generate (TsChatPane *self, TsGenerationModel *model,
                            const TsGenerationRequest *request, const char *prompt);
void ts_chat_pane_stop (TsChatPane *self);
gboolean ts_chat_pane_get_busy (TsChatPane *self);
/* The pane keeps its last reply's engine session and continues it with the
 * next reply where the conversation agrees (ts-generation-cache.h); the
 * cache is borrowed. Forgetting it frees that session's memory at once. */
TsGenerationCache *ts_chat_pane_get_cache (TsChatPane *self);
void ts_chat_pane_forget_session (TsChatPane *self);

gboolean ts_chat_pane_get_he (TsChatPane *self);
/* Whether the last reply evaluated the adapter encrypted (FALSE on the
 * plaintext pane, and on the HE pane when the evaluator is set to
 * plaintext or no adapter is loaded: its title, lock and footer say so). */
gboolean ts_chat_pane_get_encrypted (TsChatPane *self);
/* What the last reply left out to fit the model's context (oldest turns,
 * a shorter answer), as shown in its note; NULL when it all fit. */
const char *ts_chat_pane_get_context_note (TsChatPane *self);
/* "Stopped" or "Cut at the limit of N tokens" under the last answer, or
 * NULL when it ended on its own. */
const char *ts_chat_pane_get_reply_ending (TsChatPane *self);
void ts_chat_pane_set_subtitle (TsChatPane *self, const char *subtitle);
guint ts_chat_pane_get_n_tokens (TsChatPane *self);
double ts_chat_pane_get_tokens_per_second (TsChatPane *self);
double ts_chat_pane_get_first_token_ms (TsChatPane *self);
double ts_chat_pane_get_max_delta_error (TsChatPane *self);
/* HE: ciphertext bytes per generated token, both ways; in local mode what
 * would cross the wire to a remote evaluator. */
double ts_chat_pane_get_bytes_per_token (TsChatPane *self);
/* First token index where the other pane chose another token; -1 if none. */
int ts_chat_pane_get_diverged_at (TsChatPane *self);
void ts_chat_pane_set_diverged_at (TsChatPane *self, int index);
TsLatencyChart *ts_chat_pane_get_chart (TsChatPane *self);
/* The last reply's footer numbers and chart bars (newly allocated), to keep
 * with it; ts_chat_pane_show_reply_stats() shows them again. The pane also
 * gives them to the reply's turn (ts_chat_turn_get_stats()) when the reply
 * finishes, when the other pane's tokens later mark where the two differ,
 * and when they are shown again. */
TsHistoryReplyStats *ts_chat_pane_get_reply_stats (TsChatPane *self);
void ts_chat_pane_show_reply_stats (TsChatPane *self, const TsHistoryReplyStats *stats);

/* The last reply's note (which adapter answered) and error (why it has no
 * complete answer); NULL when it has none. */
void ts_chat_pane_set_reply_note (TsChatPane *self, const char *note);
const char *ts_chat_pane_get_reply_note (TsChatPane *self);
const char *ts_chat_pane_get_reply_error (TsChatPane *self);
/* Adapter-private replies: the ε spent as the evaluator last reported it
 * (-1: not reported), and the footer line that shows it (NULL: hidden). */
double ts_chat_pane_get_privacy_epsilon (TsChatPane *self);
const char *ts_chat_pane_get_privacy_text (TsChatPane *self);
/* Where the last reply's HE-LoRA computed, when the pane says so (the GPU,
 * or why not the GPU); NULL when the line is hidden. */
const char *ts_chat_pane_get_backend_text (TsChatPane *self);

/* The HE pane's lock badge: @fingerprint of the key replies are encrypted
 * under (NULL hides the badge); @from_vault: the Keys page's key, else an
 * ephemeral one made for each answer (the tooltip says which). */
void ts_chat_pane_show_key (TsChatPane *self, const char *fingerprint, gboolean from_vault);
const char *ts_chat_pane_get_key_fingerprint (TsChatPane *self);
const char *ts_chat_pane_get_key_tooltip (TsChatPane *self);

G_END_DECLS
