/* ts-chat-message.h: one chat message, its Markdown rendered as widgets.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The Markdown of ts-markdown.h: headings (title-1..4 labels), paragraphs,
 * nested list items, block quotes (dimmed, a line on the left), tables (a
 * grid in a frame), rules (a separator) and fenced code (a read-only
 * GtkSourceView coloured for its language, light or dark with the style,
 * and a copy button); inline spans and http/https/mailto links in the
 * labels. The text may grow while a reply streams in: blocks already shown
 * are reused and only what changed is set again, so appending is cheap.
 * A note above the text and an error below it are plain text, not part of
 * the message's text. A reply's thinking (ts-thinking-block.h) comes
 * between the note and the text, apart from the text too.
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

#include "ts-chat-turn.h"
#include "ts-thinking-block.h"

G_BEGIN_DECLS

#define TS_TYPE_CHAT_MESSAGE (ts_chat_message_get_type ())
G_DECLARE_FINAL_TYPE (TsChatMessage, ts_chat_message, TS, CHAT_MESSAGE, AdwBin)

GtkWidget *ts_chat_message_new (gboolean is_user, const char *text);
/* A view of @turn: it shows the turn's text, thinking, note, error, ending
 * and whether it is left out, and follows them as they change. */
GtkWidget *ts_chat_message_new_for_turn (TsChatTurn *turn);
/* The turn it shows (borrowed), or NULL for a message made from text. */
TsChatTurn *ts_chat_message_get_turn (TsChatMessage *self);
const char *ts_chat_message_get_text (TsChatMessage *self);
void ts_chat_message_set_text (TsChatMessage *self, const char *text);
void ts_chat_message_append (TsChatMessage *self, const char *text);
gboolean ts_chat_message_get_is_user (TsChatMessage *self);
/* How an answer ended when it did not end on its own (stopped, cut at the
 * length limit), below the text; NULL hides it. */
void ts_chat_message_set_ending (TsChatMessage *self, const char *ending);
const char *ts_chat_message_get_ending (TsChatMessage *self);
/* Shown dimmed and left out of the conversation the model sees (an
 * exchange one side of the chat failed to answer). */
void ts_chat_message_set_excluded (TsChatMessage *self, gboolean excluded);
gboolean ts_chat_message_get_excluded (TsChatMessage *self);
/* A caption above the text (which adapter answered; NULL hides it). */
void ts_chat_message_set_note (TsChatMessage *self, const char *note);
const char *ts_chat_message_get_note (TsChatMessage *self);
/* Why there is no (complete) answer, below the text (NULL hides it). */
void ts_chat_message_set_error (TsChatMessage *self, const char *error);
const char *ts_chat_message_get_error (TsChatMessage *self);
/* The reply's thinking, streamed: @n_tokens is its length so far. The
 * thinking ends when answer text is appended, or with end_thinking (the
 * reply stopped); it stays open when no answer follows. */
void ts_chat_message_append_thinking (TsChatMessage *self, const char *text, guint n_tokens);
void ts_chat_message_end_thinking (TsChatMessage *self);
/* A finished reply's thinking (history): NULL or "" shows none. */
void ts_chat_message_set_thinking (TsChatMessage *self, const char *thinking);
const char *ts_chat_message_get_thinking (TsChatMessage *self);
/* The block that shows it, or NULL when the reply has no thinking. */
TsThinkingBlock *ts_chat_message_get_thinking_block (TsChatMessage *self);
/* @button (floating, taken) below the text, at its end: an action on the
 * message (Edit on a prompt). */
void ts_chat_message_add_button (TsChatMessage *self, GtkWidget *button);
/* Number of rendered blocks of each kind (for tests and accessibility). */
guint ts_chat_message_count_code_blocks (TsChatMessage *self);
guint ts_chat_message_count_list_items (TsChatMessage *self);

/* GtkLabel markup for inline Markdown (ts_markdown_inline()). Newly allocated. */
char *ts_chat_message_inline_markup (const char *text);

G_END_DECLS
