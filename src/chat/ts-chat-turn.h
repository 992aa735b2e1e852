/* ts-chat-turn.h: one turn of a conversation: a prompt or a reply.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsChatTurn is what a chat message shows, without the widget: the
 * prompt's or the reply's text, and for a reply its thinking, its note
 * above the text (which adapter answered, what was left out), its error
 * (why there is no complete answer), its ending (stopped, cut at the
 * length limit) and its footer numbers and chart bars (history keeps them
 * with it). A turn left out of the conversation the model sees is
 * "excluded". Every field is a property, notified when it changes, so a
 * view follows the turn as a reply streams in.
 *
 * The thinking streams in before the answer: while it does, the turn's
 * "thinking-active" is TRUE and "thinking-tokens" counts its tokens. It
 * ends when answer text is appended or ts_chat_turn_end_thinking() is
 * called; "text" is notified before "thinking-active" goes FALSE, so a
 * view that closes the thinking when an answer follows sees the answer
 * first.
 *
 * Main-thread only (the thread that changes it is the one notified).
 */
#pragma once

#include <glib-object.h>

#include "ts-history-stats.h"

G_BEGIN_DECLS

#define TS_TYPE_CHAT_TURN (ts_chat_turn_get_type ())
G_DECLARE_FINAL_TYPE (TsChatTurn, ts_chat_turn, TS, CHAT_TURN, GObject)

/* A prompt (@is_user) or a reply, with @text (NULL: ""). */
TsChatTurn *ts_chat_turn_new (gboolean is_user, const char *text);
gboolean ts_chat_turn_get_is_user (TsChatTurn *self);

/* Never NULL. */
const char *ts_chat_turn_get_text (TsChatTurn *self);
void ts_chat_turn_set_text (TsChatTurn *self, const char *text);
/* Adds streamed answer text; non-empty text ends the thinking. */
void ts_chat_turn_append_text (TsChatTurn *self, const char *text);

/* The reply's thinking ("" when it has none; never NULL). */
const char *ts_chat_turn_get_thinking (TsChatTurn *self);
/* Streamed thinking: @n_tokens is its length so far. Empty text only
 * updates the count of thinking still streaming (it starts none). */
void ts_chat_turn_append_thinking (TsChatTurn *self, const char *text, guint n_tokens);
/* The reply stopped: the thinking, if it was streaming, ends. */
void ts_chat_turn_end_thinking (TsChatTurn *self);
/* A finished reply's whole thinking (history): not streaming, no count. */
void ts_chat_turn_set_thinking (TsChatTurn *self, const char *thinking);
guint ts_chat_turn_get_thinking_tokens (TsChatTurn *self);
gboolean ts_chat_turn_get_thinking_active (TsChatTurn *self);

/* NULL when there is none. */
const char *ts_chat_turn_get_note (TsChatTurn *self);
void ts_chat_turn_set_note (TsChatTurn *self, const char *note);
/* Adds @line to the note, on a line of its own when there is one already. */
void ts_chat_turn_add_note (TsChatTurn *self, const char *line);
const char *ts_chat_turn_get_error (TsChatTurn *self);
void ts_chat_turn_set_error (TsChatTurn *self, const char *error);
const char *ts_chat_turn_get_ending (TsChatTurn *self);
void ts_chat_turn_set_ending (TsChatTurn *self, const char *ending);

/* A reply's footer numbers and chart bars (borrowed), NULL until it has
 * finished or was read back with them; set copies them ("stats" is
 * notified). */
const TsHistoryReplyStats *ts_chat_turn_get_stats (TsChatTurn *self);
void ts_chat_turn_set_stats (TsChatTurn *self, const TsHistoryReplyStats *stats);

gboolean ts_chat_turn_get_excluded (TsChatTurn *self);
void ts_chat_turn_set_excluded (TsChatTurn *self, gboolean excluded);

G_END_DECLS
