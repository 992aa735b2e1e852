/* ts-chat-page.h: the chat page: the same conversation in plaintext and under HE-LoRA.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One prompt drives two TsChatPanes side by side: "Plaintext LoRA" and
 * "HE-LoRA" (local or remote evaluator, from the settings). A sidebar lists
 * the conversations kept in history.sqlite; the bar above the panes picks the
 * model and adapter (the bundled demo ones by default) and holds the
 * generation settings.
 *
 * Actions (on the page, so tests and shortcuts reach them): chat.send,
 * chat.stop (Esc), chat.regenerate, chat.edit-last, chat.clear,
 * chat.export-csv, chat.export-png (HE-LoRA chart), chat.export-plain-png,
 * chat.open-model, chat.use-demo,
 * chat.open-adapter, chat.use-adapter (s: path), chat.route-adapter (s: an
 * installed adapter's id, "" for automatic routing),
 * chat.rename-conversation (x), chat.export-conversation (x),
 * chat.delete-conversation (x), chat.find-conversation (Ctrl+F in the
 * sidebar: focuses its search entry), chat.conversation-settings (the
 * Conversation Settings dialog), chat.conversation-settings-of (x: the
 * same for a sidebar row's conversation, opened first), chat.edit-prompt (u: the index of the
 * exchange whose prompt is edited; each prompt's Edit button),
 * chat.cancel-edit.
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

#include "ts-chat-pane.h"
#include "ts-conversation-settings.h"
#include "ts-key-vault.h"
#include "ts-settings.h"

G_BEGIN_DECLS

#define TS_TYPE_CHAT_PAGE (ts_chat_page_get_type ())
G_DECLARE_FINAL_TYPE (TsChatPage, ts_chat_page, TS, CHAT_PAGE, AdwBin)

/* The plaintext pane (@he FALSE) or the HE-LoRA pane. */
TsChatPane *ts_chat_page_get_pane (TsChatPage *self, gboolean he);
void ts_chat_page_set_prompt (TsChatPage *self, const char *text);
const char *ts_chat_page_get_prompt (TsChatPage *self);
/* TRUE once a model is loaded and nothing is generating. */
gboolean ts_chat_page_get_ready (TsChatPage *self);
gboolean ts_chat_page_get_busy (TsChatPage *self);
/* The conversation shown (0: a new one, not stored yet). */
gint64 ts_chat_page_get_conversation (TsChatPage *self);
/* Shows stored conversation @id in both panes. */
gboolean ts_chat_page_load_conversation (TsChatPage *self, gint64 id, GError **error);
/* Conversations in the sidebar (those its search shows). */
guint ts_chat_page_get_n_conversations (TsChatPage *self);
/* Writes stored conversation @id to @path, as JSON when @path ends in
 * ".json" and as Markdown otherwise (ts-history-export.h); what the
 * sidebar's "Export…" does with the file chosen. */
gboolean ts_chat_page_export_conversation (TsChatPage *self, gint64 id, const char *path,
                                           GError **error);

/* The shown conversation's system prompt and sampling settings (both panes
 * answer with them): a stored conversation's own, else the preferences'
 * defaults. The "temperature", "top-p" and "seed" properties are the same
 * values. Setting them keeps them with the conversation (once stored; a new
 * one stores them with its first exchange). */
const TsConversationSettings *ts_chat_page_get_conversation_settings (TsChatPage *self);
void ts_chat_page_set_conversation_settings (TsChatPage *self,
                                             const TsConversationSettings *settings);
/* The exchange (from 0) whose prompt is being edited: Send removes it and
 * every later exchange, then sends the prompt again; -1 when none. */
int ts_chat_page_get_editing (TsChatPage *self);
/* The open Conversation Settings dialog (a TsConversationSettingsDialog), or NULL. */
GtkWidget *ts_chat_page_get_settings_dialog (TsChatPage *self);

/* A page over the application's @settings (referenced; the construct-only
 * property "settings", which the page requires): the evaluator, CKKS
 * preset, threads and GPU of each reply, the conversation defaults, the
 * remembered model and the adapter override. */
GtkWidget *ts_chat_page_new (TsSettings *settings);

/* The key vault (the application's): while it holds an unlocked key, the
 * HE pane encrypts under it and its lock badge shows the vault's
 * fingerprint; otherwise each answer uses an ephemeral key. */
void ts_chat_page_set_key_vault (TsChatPage *self, TsKeyVault *vault);
/* Loads @model_path (a GGUF file) with @adapter_path (NULL: none) in the
 * background, replacing the current model; progress and errors show on the
 * page as for a model picked by hand. */
void ts_chat_page_load_model (TsChatPage *self, const char *model_path, const char *adapter_path);

/* Selects the installed marketplace adapter @id (folder @path under
 * @adapters_dir) for the current model, after checking it with
 * ts_market_verify_installed() on a worker thread; a failure is a toast and
 * changes nothing. Each later turn with it emits "adapter-used" (char *id,
 * char *version, gint64 tokens: both panes' tokens). */
void ts_chat_page_use_market_adapter (TsChatPage *self, const char *adapters_dir,
                                      const char *id, const char *path);
/* The adapter in use (file or folder), NULL when none. */
const char *ts_chat_page_get_adapter_path (TsChatPage *self);

/* Adapter routing ("routing" property): TRUE once two or more adapters are
 * installed and routed between; each turn then goes to the adapter that
 * fits it (ts-chat-router.h) and both replies say which. The
 * "adapter-override" property (the chat-adapter-override setting) is the
 * adapter the user picked ("": route every turn). */
gboolean ts_chat_page_get_routing (TsChatPage *self);
const char *ts_chat_page_get_adapter_override (TsChatPage *self);

/* The model (@adapter FALSE) or adapter picker: a menu button whose menu
 * uses the chat.use-demo, chat.open-model, chat.use-adapter and
 * chat.open-adapter actions (the window mirrors it in its header). */
GtkMenuButton *ts_chat_page_get_picker (TsChatPage *self, gboolean adapter);

/* Both panes' latency bars as one CSV table (what chat.export-csv writes):
 * the chart's columns after a first column "pane" (plain or he). */
char *ts_chat_page_runs_csv (TsChatPage *self);

/* The demo model and adapter: installed under pkgdatadir/demo, or found in
 * the source tree when run uninstalled; $TENSAFE_DEMO_DIR overrides both.
 * Newly allocated; NULL when missing. */
char *ts_chat_page_find_demo_file (const char *name);

/* The last error the page showed (a model or adapter that failed to load,
 * a refused key), or NULL. Errors stay on screen until dismissed. */
const char *ts_chat_page_get_last_error (TsChatPage *self);

G_END_DECLS
