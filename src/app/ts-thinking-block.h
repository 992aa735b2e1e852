/* ts-thinking-block.h: a reply's thinking, in a block the reader can open and close.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What a model that thinks (Qwen3, 3.5) wrote between <think> and </think>
 * before its answer: plain text, dimmed and wrapped, under an expander.
 * While the thinking streams in, the block is open and its title says
 * "Thinking…"; once it ends (the answer starts, or the reply stops) the
 * title says how long it was and the block closes, unless there is no
 * answer to read instead. The reader may open or close it at any time.
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define TS_TYPE_THINKING_BLOCK (ts_thinking_block_get_type ())
G_DECLARE_FINAL_TYPE (TsThinkingBlock, ts_thinking_block, TS, THINKING_BLOCK, AdwBin)

GtkWidget *ts_thinking_block_new (void);
/* Adds streamed text; @n_tokens: the thinking's tokens so far. Empty
 * text only updates the count of a block still streaming. */
void ts_thinking_block_append (TsThinkingBlock *self, const char *text, guint n_tokens);
/* The thinking has ended (@collapse: close the block; an answer follows). */
void ts_thinking_block_finish (TsThinkingBlock *self, gboolean collapse);
/* The whole thinking of a finished reply (history), closed; NULL or ""
 * empties the block. */
void ts_thinking_block_set_text (TsThinkingBlock *self, const char *text);
const char *ts_thinking_block_get_text (TsThinkingBlock *self);
/* Still streaming: no finish yet. */
gboolean ts_thinking_block_get_active (TsThinkingBlock *self);
/* What the expander shows: whether it is open and its title. */
gboolean ts_thinking_block_get_expanded (TsThinkingBlock *self);
const char *ts_thinking_block_get_title (TsThinkingBlock *self);

G_END_DECLS
