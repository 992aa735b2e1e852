/* ts-chat-session-routing.c: the session's routing of each turn to an
 * installed adapter, and the metering of marketplace adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <string.h>

#include "ts-chat-session-private.h"
#include "ts-market-install.h"

void
_ts_chat_session_routing_cancel (TsChatSessionRouting *routing)
{
  g_cancellable_cancel (routing->building);
  g_clear_object (&routing->building);
}

void
_ts_chat_session_routing_clear (TsChatSessionRouting *routing)
{
  _ts_chat_session_routing_cancel (routing);
  g_clear_pointer (&routing->router, ts_chat_router_unref);
  g_clear_pointer (&routing->signature, g_free);
  g_clear_pointer (&routing->metered_id, g_free);
  g_clear_pointer (&routing->metered_version, g_free);
}

TsChatRouter *
ts_chat_session_get_router (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return _ts_chat_session_get_routing_state (self)->router;
}

gboolean
ts_chat_session_get_routing (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), FALSE);
  return _ts_chat_session_get_routing_state (self)->router != NULL;
}

/* ---- the router over the installed adapters ------------------------------ */

/* What the router is built from: the model and each adapter's metadata
 * file with its modification time. */
static char *
routing_signature (TsChatSession *self, const char *adapters_dir)
{
  g_autoptr (GPtrArray) found = ts_chat_router_find (adapters_dir);
  GString *sig = g_string_new (NULL);

  /* The model object, not its path: a reload of the same file is a new one. */
  g_string_append_printf (sig, "%p", (void *) ts_chat_session_get_model (self));
  for (guint i = 0; i < found->len; i++)
    {
      TsRoutableAdapter *a = g_ptr_array_index (found, i);
      GStatBuf st;

      memset (&st, 0, sizeof st);
      g_stat (a->metadata_path, &st);
      g_string_append_printf (sig, "\n%s %" G_GINT64_FORMAT, a->metadata_path,
                              (gint64) st.st_mtime);
    }
  return g_string_free (sig, FALSE);
}

static void
set_router (TsChatSession *self, TsChatRouter *router)
{
  TsChatSessionRouting *routing = _ts_chat_session_get_routing_state (self);
  gboolean was_routing = routing->router != NULL;

  g_clear_pointer (&routing->router, ts_chat_router_unref);
  routing->router = router;
  if (was_routing || router != NULL)
    g_object_notify (G_OBJECT (self), "routing");
}

/* One build: its own cancellable, which a newer build or the caller's
 * cancels. */
typedef struct {
  GCancellable *building;
  GCancellable *caller;
  gulong cancelled_id;
} Build;

static void
build_free (gpointer data)
{
  Build *build = data;

  if (build->caller != NULL)
    g_cancellable_disconnect (build->caller, build->cancelled_id);
  g_clear_object (&build->caller);
  g_object_unref (build->building);
  g_free (build);
}

static void
cancel_build_cb (GCancellable *caller, GCancellable *building)
{
  g_cancellable_cancel (building);
}

static void
router_built_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GTask) task = data;
  TsChatSession *self = g_task_get_source_object (task);
  Build *build = g_task_get_task_data (task);
  GError *error = NULL;
  TsChatRouter *router = ts_chat_router_new_finish (result, &error);

  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_task_return_error (task, error);
      return;
    }
  if (_ts_chat_session_get_routing_state (self)->building == build->building)
    g_clear_object (&_ts_chat_session_get_routing_state (self)->building);
  /* Fewer than two adapters leave nothing to route between. */
  if (router != NULL && ts_chat_router_get_adapters (router)->len < 2)
    g_clear_pointer (&router, ts_chat_router_unref);
  set_router (self, router);
  if (error != NULL)
    g_task_return_error (task, error);
  else
    g_task_return_boolean (task, TRUE);
}

void
ts_chat_session_update_router_async (TsChatSession *self, const char *adapters_dir,
                                     GCancellable *cancellable, GAsyncReadyCallback callback,
                                     gpointer user_data)
{
  TsChatSessionRouting *routing;
  g_autofree char *signature = NULL;
  Build *build;
  GTask *task;

  g_return_if_fail (TS_IS_CHAT_SESSION (self));
  g_return_if_fail (adapters_dir != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  routing = _ts_chat_session_get_routing_state (self);
  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, ts_chat_session_update_router_async);
  if (ts_chat_session_get_model (self) == NULL
      || g_strcmp0 (signature = routing_signature (self, adapters_dir), routing->signature) == 0)
    {
      g_task_return_boolean (task, FALSE);
      g_object_unref (task);
      return;
    }
  g_free (routing->signature);
  routing->signature = g_steal_pointer (&signature);
  _ts_chat_session_routing_cancel (routing);
  routing->building = g_cancellable_new ();
  build = g_new0 (Build, 1);
  build->building = g_object_ref (routing->building);
  if (cancellable != NULL)
    {
      build->caller = g_object_ref (cancellable);
      build->cancelled_id = g_cancellable_connect (cancellable, G_CALLBACK (cancel_build_cb),
                                                   build->building, NULL);
    }
  g_task_set_task_data (task, build, build_free);
  ts_chat_router_new_async (ts_chat_session_get_model (self), adapters_dir, build->building,
                            router_built_cb, task);
}

gboolean
ts_chat_session_update_router_finish (TsChatSession *self, GAsyncResult *result,
                                      GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result))
                        == ts_chat_session_update_router_async, FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}

/* ---- one turn ------------------------------------------------------------ */

static const char *
rule_label (TsRouteRule rule)
{
  switch (rule)
    {
    case TS_ROUTE_KEYWORD:
      return C_("routing rule", "keyword");
    case TS_ROUTE_EMBEDDING:
      return C_("routing rule", "embedding");
    case TS_ROUTE_OVERRIDE:
    default:
      return C_("routing rule", "your choice");
    }
}

/* The turn's adapter as a request asks for it (@path_out, newly
 * allocated) and the note that says which answers and why. */
static char *
describe_route (TsChatSession *self, const TsChatRoute *route, char **path_out)
{
  g_autofree char *current = g_strdup (ts_chat_session_get_adapter_name (self));

  *path_out = g_strdup (ts_chat_session_get_request_adapter (self));
  if (route->unusable != NULL)
    return g_strdup_printf (_("routed to %s, which cannot be used (%s): kept %s"),
                            route->route.adapter_id, route->unusable, current);
  if (route->route.rule == TS_ROUTE_NONE)
    return g_strdup_printf (_("not routed: no adapter fits, kept %s"), current);
  /* An override outside the routed set is the current adapter, picked from
   * the menu or a file. */
  if (route->adapter_path != NULL)
    {
      g_free (*path_out);
      *path_out = g_strdup (route->adapter_path);
      g_free (current);
      current = g_strdup (route->route.adapter_id);
    }
  return g_strdup_printf (_("routed to: %s, %.2f (%s)"), current, route->route.score,
                          rule_label (route->route.rule));
}

/* What a turn is answered with: the adapter and the note above the reply. */
typedef struct {
  char *adapter_path;
  char *note;
} TurnRoute;

static void
turn_route_free (TurnRoute *r)
{
  g_free (r->adapter_path);
  g_free (r->note);
  g_free (r);
}

static void
routed_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GTask) task = data;
  TsChatSession *self = g_task_get_source_object (task);
  TsChatRoute route = { { NULL, 0, TS_ROUTE_NONE }, NULL, NULL };
  GError *error = NULL;
  TurnRoute *r = g_new0 (TurnRoute, 1);

  if (ts_chat_router_route_finish (result, &route, &error))
    r->note = describe_route (self, &route, &r->adapter_path);
  else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      turn_route_free (r);
      g_task_return_error (task, error);
      return;
    }
  else
    {
      /* The engine failed: the turn is still answered, by the current adapter. */
      r->adapter_path = g_strdup (ts_chat_session_get_request_adapter (self));
      r->note = g_strdup_printf (_("not routed (%s): kept %s"), error->message,
                                 ts_chat_session_get_adapter_name (self));
      g_error_free (error);
    }
  ts_chat_route_clear (&route);
  g_task_return_pointer (task, r, (GDestroyNotify) turn_route_free);
}

void
ts_chat_session_route_async (TsChatSession *self, const char *prompt, const char *override_id,
                             GCancellable *cancellable, GAsyncReadyCallback callback,
                             gpointer user_data)
{
  TsChatRouter *router;
  GTask *task;

  g_return_if_fail (TS_IS_CHAT_SESSION (self));
  g_return_if_fail (prompt != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, ts_chat_session_route_async);
  if ((router = ts_chat_session_get_router (self)) == NULL)
    {
      TurnRoute *r = g_new0 (TurnRoute, 1);

      r->adapter_path = g_strdup (ts_chat_session_get_request_adapter (self));
      g_task_return_pointer (task, r, (GDestroyNotify) turn_route_free);
      g_object_unref (task);
      return;
    }
  ts_chat_router_route_async (router, prompt, override_id, cancellable, routed_cb, task);
}

gboolean
ts_chat_session_route_finish (TsChatSession *self, GAsyncResult *result, char **adapter_path,
                              char **note, GError **error)
{
  TurnRoute *r;

  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  g_return_val_if_fail (g_task_get_source_tag (G_TASK (result)) == ts_chat_session_route_async,
                        FALSE);
  if ((r = g_task_propagate_pointer (G_TASK (result), error)) == NULL)
    return FALSE;
  if (adapter_path != NULL)
    *adapter_path = g_steal_pointer (&r->adapter_path);
  if (note != NULL)
    *note = g_steal_pointer (&r->note);
  turn_route_free (r);
  return TRUE;
}

/* ---- metering ------------------------------------------------------------ */

static gboolean
same_file (const char *a, const char *b)
{
  g_autofree char *ca = g_canonicalize_filename (a, NULL);
  g_autofree char *cb = g_canonicalize_filename (b, NULL);

  return g_str_equal (ca, cb);
}

void
ts_chat_session_meter_adapter (TsChatSession *self, const char *adapters_dir,
                               const char *adapter_path)
{
  TsChatSessionRouting *routing;
  g_autoptr (GPtrArray) list = NULL;

  g_return_if_fail (TS_IS_CHAT_SESSION (self));
  g_return_if_fail (adapters_dir != NULL);

  routing = _ts_chat_session_get_routing_state (self);
  g_clear_pointer (&routing->metered_id, g_free);
  g_clear_pointer (&routing->metered_version, g_free);
  if (adapter_path == NULL || (list = ts_market_list_installed (adapters_dir, NULL)) == NULL)
    return;
  for (guint i = 0; i < list->len; i++)
    {
      TsMarketInstalled *a = g_ptr_array_index (list, i);

      if (same_file (a->path, adapter_path))
        {
          /* Made here from nothing on the marketplace: not metered. */
          if (a->local && a->derived_from == NULL)
            return;
          routing->metered_id = g_strdup (a->local ? a->derived_from : a->id);
          routing->metered_version = g_strdup (a->version);
          return;
        }
    }
}

const char *
ts_chat_session_get_metered_id (TsChatSession *self)
{
  g_return_val_if_fail (TS_IS_CHAT_SESSION (self), NULL);
  return _ts_chat_session_get_routing_state (self)->metered_id;
}

void
ts_chat_session_report_turn (TsChatSession *self, gint64 n_tokens)
{
  TsChatSessionRouting *routing;

  g_return_if_fail (TS_IS_CHAT_SESSION (self));
  g_return_if_fail (n_tokens >= 0);

  routing = _ts_chat_session_get_routing_state (self);
  if (routing->metered_id != NULL && n_tokens > 0)
    g_signal_emit_by_name (self, "adapter-used", routing->metered_id, routing->metered_version,
                           n_tokens);
}
