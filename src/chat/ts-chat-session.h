/* ts-chat-session.h: the chat without its widgets: the loaded model and its adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsChatSession owns the model the chat answers with (a
 * TsGenerationModel) and the adapter each reply asks for: the model's own
 * (one adapter or a stack, loaded with it) or another one switched to on
 * the loaded model, read once into the model's adapter cache. It decides
 * which of the two a load is: the same model file with one adapter at
 * weight 1 is a switch, anything else a new model.
 *
 * What a view shows is a read-only property, notified when it changes:
 * "model-path" (notified on each model load, even of the same file: a new
 * model), "model-name", "model-is-demo", "adapter-path", "adapter-name" and
 * "loading". The chat page, its panes and the Stack dialog read them.
 *
 * It also holds the conversation each side of the chat shows (plaintext
 * LoRA, HE-LoRA) as a list of turns; each pane is a view of its own.
 *
 * Main-thread only (the thread whose main context the loads report to);
 * loads run on GLib's task workers (ts-generation-load.c).
 */
#pragma once

#include <gio/gio.h>

#include "ts-chat-conversation.h"
#include "ts-generation.h"

G_BEGIN_DECLS

#define TS_TYPE_CHAT_SESSION (ts_chat_session_get_type ())
G_DECLARE_FINAL_TYPE (TsChatSession, ts_chat_session, TS, CHAT_SESSION, GObject)

/* @demo_model and @demo_adapter (either may be NULL) are the bundled demo
 * files: the names say "Demo Model" and "Demo Adapter" for them. */
TsChatSession *ts_chat_session_new (const char *demo_model, const char *demo_adapter);

/* Loads @model_path with the @n @adapter_paths stacked at @weights (NULL:
 * all 1; @n 0: no adapter), or, when @model_path is the loaded model's file
 * and one adapter at weight 1 is asked for, switches the loaded model to
 * that adapter. A newer load cancels this one (it then finishes with
 * G_IO_ERROR_CANCELLED and changes nothing), as does @cancellable. The
 * properties change when the load is done, before @callback runs. */
void ts_chat_session_load_async (TsChatSession *self, const char *model_path,
                                 const char *const *adapter_paths, const float *weights, guint n,
                                 GCancellable *cancellable, GAsyncReadyCallback callback,
                                 gpointer user_data);
gboolean ts_chat_session_load_finish (TsChatSession *self, GAsyncResult *result, GError **error);

/* The loaded model (borrowed), or NULL before the first load. */
TsGenerationModel *ts_chat_session_get_model (TsChatSession *self);
const char *ts_chat_session_get_model_path (TsChatSession *self);
/* The model file's name without ".gguf"; NULL without a model. */
const char *ts_chat_session_get_model_name (TsChatSession *self);
gboolean ts_chat_session_get_model_is_demo (TsChatSession *self);
/* The current adapter (the first of a stack), NULL when none. */
const char *ts_chat_session_get_adapter_path (TsChatSession *self);
/* "name", "a ×0.70 + b ×0.30" for a stack, or "no adapter". */
const char *ts_chat_session_get_adapter_name (TsChatSession *self);
/* The current adapter as a reply asks for it (TsGenerationRequest.adapter_path):
 * NULL for the model's own (one adapter or a stack). */
const char *ts_chat_session_get_request_adapter (TsChatSession *self);
/* The adapters that answer now, each with its weight: the model's own
 * stack, or the one adapter switched to on it (weight 1). */
guint ts_chat_session_get_n_adapters (TsChatSession *self);
const char *ts_chat_session_get_nth_adapter (TsChatSession *self, guint i, float *weight);
/* TRUE while a load is under way. */
gboolean ts_chat_session_get_loading (TsChatSession *self);

/* The conversation of the HE-LoRA side (@he) or of the plaintext one
 * (borrowed; the same object for the session's life). */
TsChatConversation *ts_chat_session_get_conversation (TsChatSession *self, gboolean he);

/* An adapter's name as the pickers show it: "Demo Adapter" for the demo
 * adapter, else its file's name without ".gguf" (newly allocated). */
char *ts_chat_session_name_adapter (TsChatSession *self, const char *path);

G_END_DECLS
