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
 * With two or more adapters installed it routes each turn to one of them
 * (ts-chat-session-routing.c; "routing" says whether it does) and says
 * which answers, with a note for the reply. A turn with an installed
 * marketplace adapter is metered: when it is done the session emits
 * "adapter-used" (char *id, char *version, gint64 tokens).
 *
 * Main-thread only (the thread whose main context the loads report to);
 * loads run on GLib's task workers (ts-generation-load.c).
 */
#pragma once

#include <gio/gio.h>

#include "ts-chat-conversation.h"
#include "ts-chat-router.h"
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

/* ---- routing (ts-chat-session-routing.c) ---- */

/* Rebuilds the router over the adapters of @adapters_dir (on a worker)
 * when the model or those adapters changed since the last build; with
 * fewer than two adapters there is none. Finishes TRUE when it was rebuilt
 * ("routing" is then up to date; also after an error, which leaves none),
 * FALSE when nothing changed or there is no model. A newer build cancels
 * one still under way (it then finishes with G_IO_ERROR_CANCELLED). */
void ts_chat_session_update_router_async (TsChatSession *self, const char *adapters_dir,
                                          GCancellable *cancellable,
                                          GAsyncReadyCallback callback, gpointer user_data);
gboolean ts_chat_session_update_router_finish (TsChatSession *self, GAsyncResult *result,
                                               GError **error);
/* The router (borrowed), or NULL when turns are not routed. */
TsChatRouter *ts_chat_session_get_router (TsChatSession *self);
gboolean ts_chat_session_get_routing (TsChatSession *self);

/* Routes @prompt (on a worker; at once without a router): @override_id
 * (NULL or "": automatic) is the user's choice. Finishes with the adapter
 * the turn asks for (@adapter_path, as TsGenerationRequest.adapter_path:
 * NULL for the model's own) and @note, which says which adapter answers
 * and why (NULL without a router); both newly allocated. An engine failure
 * keeps the current adapter and says so in the note: FALSE only when
 * cancelled. */
void ts_chat_session_route_async (TsChatSession *self, const char *prompt,
                                  const char *override_id, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data);
gboolean ts_chat_session_route_finish (TsChatSession *self, GAsyncResult *result,
                                       char **adapter_path, char **note, GError **error);

/* The turn about to be generated uses @adapter_path (NULL: none): an
 * installed marketplace adapter of @adapters_dir, or one made from one (a
 * rank reduction, metered as the adapter it came from), is metered. */
void ts_chat_session_meter_adapter (TsChatSession *self, const char *adapters_dir,
                                    const char *adapter_path);
/* The marketplace id the next report meters, or NULL. */
const char *ts_chat_session_get_metered_id (TsChatSession *self);
/* The turn is done, with @n_tokens generated in all: emits "adapter-used"
 * for a metered adapter (nothing for a turn that generated none). */
void ts_chat_session_report_turn (TsChatSession *self, gint64 n_tokens);

/* An adapter's name as the pickers show it: "Demo Adapter" for the demo
 * adapter, else its file's name without ".gguf" (newly allocated). */
char *ts_chat_session_name_adapter (TsChatSession *self, const char *path);

G_END_DECLS
