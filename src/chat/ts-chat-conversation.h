/* ts-chat-conversation.h: a conversation as a list of turns.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsChatConversation is a GListModel of TsChatTurn: prompts and replies
 * in order, as one side of the chat holds them. Turns come only at the
 * end and go only from a prompt to the end, each change one
 * "items-changed" emission. What the model is asked to continue is read
 * from here (ts_chat_conversation_get_texts()), as are the prompts that
 * Edit and Regenerate work on and the last reply that history keeps.
 *
 * Main-thread only.
 */
#pragma once

#include <gio/gio.h>

#include "ts-chat-turn.h"

G_BEGIN_DECLS

#define TS_TYPE_CHAT_CONVERSATION (ts_chat_conversation_get_type ())
G_DECLARE_FINAL_TYPE (TsChatConversation, ts_chat_conversation, TS, CHAT_CONVERSATION, GObject)

TsChatConversation *ts_chat_conversation_new (void);

/* Appends a prompt (@is_user) or a reply with @text; returns it (borrowed). */
TsChatTurn *ts_chat_conversation_append (TsChatConversation *self, gboolean is_user,
                                         const char *text);
/* The @position-th turn (borrowed), or NULL past the end. */
TsChatTurn *ts_chat_conversation_get_turn (TsChatConversation *self, guint position);
/* The last reply (borrowed; the one streaming, if any), or NULL. */
TsChatTurn *ts_chat_conversation_get_last_reply (TsChatConversation *self);
/* Removes every turn. */
void ts_chat_conversation_clear (TsChatConversation *self);

/* How many prompts there are; the @index-th one (from 0) or NULL. */
guint ts_chat_conversation_get_n_prompts (TsChatConversation *self);
TsChatTurn *ts_chat_conversation_get_prompt (TsChatConversation *self, guint index);
/* How many prompts come before @position (the exchange a turn belongs to). */
guint ts_chat_conversation_count_prompts_before (TsChatConversation *self, guint position);
/* Removes the @index-th prompt and everything after it; FALSE when there
 * is no such prompt. */
gboolean ts_chat_conversation_truncate (TsChatConversation *self, guint index);
/* Removes the last prompt and everything after it; returns its text
 * (newly allocated), or NULL when there is no prompt. */
char *ts_chat_conversation_pop_exchange (TsChatConversation *self);
/* Leaves the last prompt and what follows it out of what the model sees,
 * adding @why (NULL: nothing) to the last reply's note. */
void ts_chat_conversation_exclude_last_exchange (TsChatConversation *self, const char *why);

/* The texts the model continues: user, reply, user, reply, … (a GPtrArray
 * of char*), turns left out skipped; an empty text keeps them alternating
 * where a reply (or a prompt) is missing. Replies' thinking is not in it. */
GPtrArray *ts_chat_conversation_get_texts (TsChatConversation *self);

G_END_DECLS
