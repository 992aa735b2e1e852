/* ts-history-export.h: a stored conversation as a Markdown document or a JSON file.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Both hold each exchange's prompt and the two panes' replies (plaintext
 * LoRA and HE-LoRA) with what history.sqlite keeps of them: the note above
 * a reply, whether it was stopped or left out of the conversation, and a
 * finished reply's footer numbers, and the conversation's system prompt and
 * sampling settings ("settings": null, and a line saying so, when it
 * follows the preferences' defaults). The JSON file also holds every token's
 * per-stage milliseconds, as the latency charts showed them. Nothing is
 * computed here that the history did not store.
 */
#pragma once

#include "ts-history.h"

G_BEGIN_DECLS

/* The "format" and "version" members of the JSON file. */
#define TS_HISTORY_EXPORT_FORMAT "tensafe-conversation"
#define TS_HISTORY_EXPORT_VERSION 1

/* Newly allocated; NULL with @error (TS_HISTORY_ERROR_NOT_FOUND when there
 * is no conversation @conversation). */
char *ts_history_export_markdown (TsHistory *history, gint64 conversation, GError **error);
char *ts_history_export_json (TsHistory *history, gint64 conversation, GError **error);

/* A file name for @title with @extension ("md"): characters no file system
 * takes, and control characters, become "_"; "conversation" when nothing is
 * left. Newly allocated. */
char *ts_history_export_file_name (const char *title, const char *extension);

G_END_DECLS
