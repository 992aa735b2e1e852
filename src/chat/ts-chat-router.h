/* ts-chat-router.h: the chat's router: the installed adapters, and one route per turn.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The chat routes each turn between the adapters installed for it: every
 * folder of the adapters directory that holds a metadata.json ("keywords",
 * "tags", "examples": ts-router.h) or a marketplace release file (whose
 * catalogue "tags" serve as keywords). A folder's name is the adapter's id,
 * as for the evaluator server. A TsChatRouter is a TsRouter (the rules,
 * ts-router.h) over them on the chat's model (examples embedded by its own
 * base model), with the paths behind the ids.
 *
 * Ownership: reference counted; holds a reference on the model.
 * Thread-safety: building and routing run forward passes of the base
 * model: from the GTK main thread use the _async functions (a worker
 * thread). Routes are serialised (one engine session); everything else may
 * be called from any thread.
 */
#pragma once

#include <gio/gio.h>

#include "ts-generation.h"
#include "ts-router.h"

G_BEGIN_DECLS

typedef struct {
  char *id;                    /* the folder's name */
  char *version;               /* from the release file or metadata.json; may be NULL */
  char *path;                  /* the adapter folder */
  char *metadata_path;         /* metadata.json, else the release file */
} TsRoutableAdapter;

void ts_routable_adapter_free (TsRoutableAdapter *adapter);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsRoutableAdapter, ts_routable_adapter_free)

/* The adapters of @adapters_dir (a GPtrArray of TsRoutableAdapter *, sorted
 * by id; empty when the folder is missing). Reads the folder only. */
GPtrArray *ts_chat_router_find (const char *adapters_dir);

/* One turn's route. */
typedef struct {
  TsRoute route;               /* what the router chose (the rule, the score) */
  char *adapter_path;          /* the routed adapter's folder; NULL when nothing was
                                * routed or it cannot be used */
  char *unusable;              /* why the routed adapter cannot be used on this model */
} TsChatRoute;

void ts_chat_route_clear (TsChatRoute *route);

typedef struct _TsAdapterRouting TsChatRouter;

/* A router over @adapters (of TsRoutableAdapter *, copied) on @model.
 * An adapter whose metadata cannot be read is left out with a warning. */
TsChatRouter *ts_chat_router_new (TsGenerationModel *model, GPtrArray *adapters,
                                  GError **error);
/* Finds the adapters of @adapters_dir and builds the router, on a worker. */
void ts_chat_router_new_async (TsGenerationModel *model, const char *adapters_dir,
                               GCancellable *cancellable, GAsyncReadyCallback callback,
                               gpointer user_data);
TsChatRouter *ts_chat_router_new_finish (GAsyncResult *result, GError **error);

TsChatRouter *ts_chat_router_ref (TsChatRouter *self);
void ts_chat_router_unref (TsChatRouter *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsChatRouter, ts_chat_router_unref)

TsGenerationModel *ts_chat_router_get_model (TsChatRouter *self);
/* The adapters routed between (of TsRoutableAdapter *, borrowed). */
GPtrArray *ts_chat_router_get_adapters (TsChatRouter *self);
/* The adapter with @id, or NULL. */
const TsRoutableAdapter *ts_chat_router_lookup (TsChatRouter *self, const char *id);

/* Routes @text; @override_id (NULL or "": automatic) is the user's choice
 * (ts_router_set_override()). The routed adapter is loaded into the
 * model's cache (ts_generation_model_get_lora()), so the turn that uses it
 * starts at once; one that does not fit the model comes back with
 * @out->unusable set. FALSE only on an engine failure. Blocks. */
gboolean ts_chat_router_route (TsChatRouter *self, const char *text,
                               const char *override_id, TsChatRoute *out,
                               GError **error);
void ts_chat_router_route_async (TsChatRouter *self, const char *text,
                                 const char *override_id, GCancellable *cancellable,
                                 GAsyncReadyCallback callback, gpointer user_data);
gboolean ts_chat_router_route_finish (GAsyncResult *result, TsChatRoute *out,
                                      GError **error);

G_END_DECLS
