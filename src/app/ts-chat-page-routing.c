/* ts-chat-page-routing.c: the chat page's adapter routing: one adapter per turn.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * With two or more adapters installed, each turn is routed before it is
 * generated (ts-chat-router.h, on a worker thread) and both panes
 * answer with the routed adapter; the reply says which and why. The
 * adapter picker's "Automatic" entry routes; picking an adapter fixes it
 * (the router's override), remembered in the chat-adapter-override setting.
 * With fewer adapters, or none routed, the current adapter answers.
 */
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <string.h>

#include "ts-adapter-stack.h"
#include "ts-chat-page-private.h"
#include "ts-helora-evaluator.h"

char *
_ts_chat_page_adapters_dir (void)
{
  return g_build_filename (g_get_user_data_dir (), "tensafe", "adapters", NULL);
}

gboolean
ts_chat_page_get_routing (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), FALSE);
  return self->routing != NULL;
}

const char *
ts_chat_page_get_adapter_override (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return self->adapter_override;
}

/* ---- the router over the installed adapters ------------------------------ */

/* What the router was built from: the model and each adapter's metadata
 * file with its modification time. */
static char *
routing_signature (TsChatPage *self)
{
  g_autofree char *dir = _ts_chat_page_adapters_dir ();
  g_autoptr (GPtrArray) found = ts_chat_router_find (dir);
  GString *sig = g_string_new (NULL);

  /* The model object, not its path: a reload of the same file is a new one. */
  g_string_append_printf (sig, "%p", (void *) ts_chat_session_get_model (self->session));

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

/* A remembered choice of a routed adapter becomes the current adapter once
 * the router knows it (the same cheap switch as picking it). */
static void
apply_remembered_override (TsChatPage *self)
{
  const TsRoutableAdapter *a = ts_chat_router_lookup (self->routing, self->adapter_override);

  if (a != NULL && g_strcmp0 (a->path, ts_chat_session_get_adapter_path (self->session)) != 0)
    _ts_chat_page_load_model (self, ts_chat_session_get_model_path (self->session), a->path);
}

static void
routing_built_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GError) error = NULL;
  TsChatRouter *routing = ts_chat_router_new_finish (result, &error);
  TsChatPage *self = data;

  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;
  g_clear_pointer (&self->routing, ts_chat_router_unref);
  if (routing == NULL)
    _ts_chat_page_error (self, error->message);
  else if (ts_chat_router_get_adapters (routing)->len >= 2)
    self->routing = routing;
  else
    ts_chat_router_unref (routing);
  if (self->routing != NULL)
    apply_remembered_override (self);
  _ts_chat_page_rebuild_adapter_menu (self);
  _ts_chat_page_update_subtitles (self);
  _ts_chat_page_notify_routing (self, FALSE);
}

void
_ts_chat_page_routing_refresh (TsChatPage *self)
{
  g_autofree char *signature = NULL;
  g_autofree char *dir = NULL;

  if (ts_chat_session_get_model (self->session) == NULL)
    return;
  signature = routing_signature (self);
  if (g_strcmp0 (signature, self->routing_signature) == 0)
    return;
  g_free (self->routing_signature);
  self->routing_signature = g_steal_pointer (&signature);
  g_cancellable_cancel (self->routing_cancellable);
  g_clear_object (&self->routing_cancellable);
  self->routing_cancellable = g_cancellable_new ();
  dir = _ts_chat_page_adapters_dir ();
  /* The task holds no reference on the page: a page dropped meanwhile
   * cancels it, and the callback then returns before touching it. */
  ts_chat_router_new_async (ts_chat_session_get_model (self->session), dir, self->routing_cancellable, routing_built_cb,
                            self);
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

/* The turn's adapter (@path_out, borrowed) and the note that says so. */
static char *
describe_route (TsChatPage *self, const TsChatRoute *route, const char **path_out)
{
  g_autofree char *current = g_strdup (ts_chat_session_get_adapter_name (self->session));

  *path_out = ts_chat_session_get_request_adapter (self->session);
  if (route->unusable != NULL)
    return g_strdup_printf (_("routed to %s, which cannot be used (%s): kept %s"),
                            route->route.adapter_id, route->unusable, current);
  if (route->route.rule == TS_ROUTE_NONE)
    return g_strdup_printf (_("not routed: no adapter fits, kept %s"), current);
  /* An override outside the routed set is the current adapter, picked from
   * the menu or a file. */
  if (route->adapter_path != NULL)
    {
      *path_out = route->adapter_path;
      g_free (current);
      current = g_strdup (route->route.adapter_id);
    }
  return g_strdup_printf (_("routed to: %s, %.2f (%s)"), current, route->route.score,
                          rule_label (route->route.rule));
}

/* The page is held weakly: one closed while its turn is routed is gone
 * when the route arrives, and the route is dropped. */
typedef struct {
  GWeakRef page;
  char *prompt;
} TurnData;

static void
turn_data_free (TurnData *t)
{
  g_weak_ref_clear (&t->page);
  g_free (t->prompt);
  g_free (t);
}

static void
routed_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  TurnData *t = data;
  g_autoptr (TsChatPage) self = g_weak_ref_get (&t->page);
  g_autoptr (GError) error = NULL;
  g_autofree char *note = NULL;
  TsChatRoute route = { { NULL, 0, TS_ROUTE_NONE }, NULL, NULL };
  const char *path;

  if (self == NULL)
    {
      if (ts_chat_router_route_finish (result, &route, NULL))
        ts_chat_route_clear (&route);
      turn_data_free (t);
      return;
    }
  g_clear_object (&self->route_cancellable);
  path = ts_chat_session_get_request_adapter (self->session);
  if (!ts_chat_router_route_finish (result, &route, &error))
    {
      if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          /* Stopped before anything was generated: the prompt goes back. */
          _ts_chat_page_turn_cancelled (self, t->prompt);
          turn_data_free (t);
          return;
        }
      note = g_strdup_printf (_("not routed (%s): kept %s"), error->message,
                              ts_chat_session_get_adapter_name (self->session));
    }
  else
    note = describe_route (self, &route, &path);
  _ts_chat_page_start_exchange (self, t->prompt, path, note);
  ts_chat_route_clear (&route);
  turn_data_free (t);
}

void
_ts_chat_page_route_turn (TsChatPage *self, const char *prompt)
{
  TurnData *t;

  if (self->routing == NULL)
    {
      _ts_chat_page_start_exchange (self, prompt,
                                    ts_chat_session_get_request_adapter (self->session), NULL);
      return;
    }
  t = g_new0 (TurnData, 1);
  g_weak_ref_init (&t->page, self);
  t->prompt = g_strdup (prompt);
  self->route_cancellable = g_cancellable_new ();
  ts_chat_router_route_async (self->routing, prompt, self->adapter_override,
                              self->route_cancellable, routed_cb, t);
}

void
_ts_chat_page_cancel_route (TsChatPage *self)
{
  g_cancellable_cancel (self->route_cancellable);
}

/* ---- the user's choice --------------------------------------------------- */

void
_ts_chat_page_set_adapter_override (TsChatPage *self, const char *id)
{
  if (g_strcmp0 (self->adapter_override, id) == 0)
    return;
  g_free (self->adapter_override);
  self->adapter_override = g_strdup (id != NULL ? id : "");
  _ts_chat_page_update_subtitles (self);
  _ts_chat_page_notify_routing (self, TRUE);
}

void
_ts_chat_page_adapter_picked (TsChatPage *self, const char *path)
{
  GPtrArray *routed = self->routing != NULL ? ts_chat_router_get_adapters (self->routing)
                                             : NULL;
  g_autofree char *id = NULL;

  /* A routed adapter by its router id; any other by the evaluator's id of
   * its file or folder (then it is the current adapter). */
  for (guint i = 0; routed != NULL && i < routed->len && id == NULL; i++)
    {
      const TsRoutableAdapter *a = g_ptr_array_index (routed, i);
      if (g_strcmp0 (a->path, path) == 0)
        id = g_strdup (a->id);
    }
  if (id == NULL)
    id = ts_helora_adapter_id (path);
  _ts_chat_page_set_adapter_override (self, id);
}

void
_ts_chat_page_stack_picked (TsChatPage *self, const char *const *paths, const float *weights,
                            guint n)
{
  g_autoptr (GPtrArray) ids = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *choice = NULL;

  if (n == 1 && weights[0] == 1.0f)
    {
      _ts_chat_page_adapter_picked (self, paths[0]);
      return;
    }
  /* "a ×0.70 + b ×0.30": never an adapter id (ids have no spaces), so the
   * router leaves every turn to the stack. */
  for (guint i = 0; i < n; i++)
    g_ptr_array_add (ids, ts_helora_adapter_id (paths[i]));
  choice = ts_adapter_stack_describe ((const char *const *) ids->pdata, weights, n);
  _ts_chat_page_set_adapter_override (self, choice);
}

static void
route_adapter_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  const char *id = g_variant_get_string (param, NULL);
  const TsRoutableAdapter *a = self->routing != NULL
                               ? ts_chat_router_lookup (self->routing, id) : NULL;

  _ts_chat_page_set_adapter_override (self, id);
  if (a != NULL && g_strcmp0 (a->path, ts_chat_session_get_adapter_path (self->session)) != 0)
    _ts_chat_page_load_model (self, ts_chat_session_get_model_path (self->session), a->path);
}

void
_ts_chat_page_routing_init (TsChatPage *self)
{
  self->adapter_override = g_strdup ("");
  g_signal_connect (self, "map", G_CALLBACK (_ts_chat_page_routing_refresh), NULL);
}

void
_ts_chat_page_routing_dispose (TsChatPage *self)
{
  g_cancellable_cancel (self->routing_cancellable);
  g_clear_object (&self->routing_cancellable);
  g_cancellable_cancel (self->route_cancellable);
  g_clear_object (&self->route_cancellable);
  g_clear_pointer (&self->routing, ts_chat_router_unref);
  g_clear_pointer (&self->routing_signature, g_free);
  g_clear_pointer (&self->adapter_override, g_free);
}

void
_ts_chat_page_routing_class_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "chat.route-adapter", "s", route_adapter_action);
}
