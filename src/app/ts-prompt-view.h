/* ts-prompt-view.h: the chat's prompt: several lines, Enter sends.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A GtkTextView in a GtkScrolledWindow with a placeholder over it while it
 * is empty. It grows with its text from one line up to six, then scrolls.
 * Enter, keypad Enter and Ctrl+Enter emit "activate"; Shift+Enter inserts
 * a newline; while an input method is composing (a preedit), Enter goes to
 * the input method. Tab moves the focus on instead of inserting a tab.
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define TS_TYPE_PROMPT_VIEW (ts_prompt_view_get_type ())
G_DECLARE_FINAL_TYPE (TsPromptView, ts_prompt_view, TS, PROMPT_VIEW, AdwBin)

GtkWidget *ts_prompt_view_new (void);
/* The text as typed (owned by the view; valid until the text changes). */
const char *ts_prompt_view_get_text (TsPromptView *self);
/* Replaces the text and puts the cursor at its end. */
void ts_prompt_view_set_text (TsPromptView *self, const char *text);
const char *ts_prompt_view_get_placeholder_text (TsPromptView *self);
void ts_prompt_view_set_placeholder_text (TsPromptView *self, const char *text);
GtkTextView *ts_prompt_view_get_text_view (TsPromptView *self);
/* The controller that reads Enter before the text view does. GTK 4.8 has
 * no way to make a key event in the process, so tests emit its
 * "key-pressed" signal: the very handler a key press runs. */
GtkEventController *ts_prompt_view_get_key_controller (TsPromptView *self);

G_END_DECLS
