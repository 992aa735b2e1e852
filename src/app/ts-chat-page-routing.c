/* ts-chat-page-routing.c: the chat page's adapter routing: one adapter per turn.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * With two or more adapters installed, the session routes each turn
 * before it is generated (ts-chat-session.h, on a worker thread) and both
 * panes answer with the routed adapter; the reply's note, the session's,
 * says which and why. The adapter picker's "Automatic" entry routes;
 * picking an adapter fixes it (the router's override), remembered in the
 * chat-adapter-override setting. With fewer adapters, or none routed, the
 * current adapter answers.
 */
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
  return ts_chat_session_get_routing (self->session);
}

const char *
ts_chat_page_get_adapter_override (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return self->adapter_override;
}

/* ---- the router over the installed adapters ------------------------------ */

/* A remembered choice of a routed adapter becomes the current adapter once
 * the router knows it (the same cheap switch as picking it). */
static void
apply_remembered_override (TsChatPage *self)
{
  TsChatRouter *router = ts_chat_session_get_router (self->session);
  const TsRoutableAdapter *a = ts_chat_router_lookup (router, self->adapter_override);

  if (a != NULL && g_strcmp0 (a->path, ts_chat_session_get_adapter_path (self->session)) != 0)
    _ts_chat_page_load_model (self, ts_chat_session_get_model_path (self->session), a->path);
}

static void
router_updated_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GError) error = NULL;
  gboolean rebuilt = ts_chat_session_update_router_finish (TS_CHAT_SESSION (source), result,
                                                           &error);
  TsChatPage *self = data;

  /* Cancelled (also by a page that is gone): the page is not touched. */
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) || (!rebuilt && error == NULL))
    return;
  if (error != NULL)
    _ts_chat_page_error (self, error->message);
  if (ts_chat_page_get_routing (self))
    apply_remembered_override (self);
  _ts_chat_page_rebuild_adapter_menu (self);
  _ts_chat_page_update_subtitles (self);
  _ts_chat_page_notify_routing (self, FALSE);
}

void
_ts_chat_page_routing_refresh (TsChatPage *self)
{
  g_autofree char *dir = _ts_chat_page_adapters_dir ();

  /* The task holds no reference on the page: a page dropped meanwhile
   * cancels it, and the callback then returns before touching it. */
  ts_chat_session_update_router_async (self->session, dir, self->routing_cancellable,
                                       router_updated_cb, self);
}

/* ---- one turn ------------------------------------------------------------ */

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
  g_autofree char *path = NULL;
  g_autofree char *note = NULL;
  gboolean routed = ts_chat_session_route_finish (TS_CHAT_SESSION (source), result, &path, &note,
                                                  &error);

  if (self != NULL)
    {
      g_clear_object (&self->route_cancellable);
      if (routed)
        _ts_chat_page_start_exchange (self, t->prompt, path, note);
      else
        /* Stopped before anything was generated: the prompt goes back. */
        _ts_chat_page_turn_cancelled (self, t->prompt);
    }
  turn_data_free (t);
}

void
_ts_chat_page_route_turn (TsChatPage *self, const char *prompt)
{
  TurnData *t;

  if (!ts_chat_page_get_routing (self))
    {
      _ts_chat_page_start_exchange (self, prompt,
                                    ts_chat_session_get_request_adapter (self->session), NULL);
      return;
    }
  t = g_new0 (TurnData, 1);
  g_weak_ref_init (&t->page, self);
  t->prompt = g_strdup (prompt);
  self->route_cancellable = g_cancellable_new ();
  ts_chat_session_route_async (self->session, prompt, self->adapter_override,
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
  TsChatRouter *router = ts_chat_session_get_router (self->session);
  GPtrArray *routed = router != NULL ? ts_chat_router_get_adapters (router) : NULL;
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
  TsChatRouter *router = ts_chat_session_get_router (self->session);
  const TsRoutableAdapter *a = router != NULL ? ts_chat_router_lookup (router, id) : NULL;

  _ts_chat_page_set_adapter_override (self, id);
  if (a != NULL && g_strcmp0 (a->path, ts_chat_session_get_adapter_path (self->session)) != 0)
    _ts_chat_page_load_model (self, ts_chat_session_get_model_path (self->session), a->path);
}

void
_ts_chat_page_routing_init (TsChatPage *self)
{
  self->adapter_override = g_strdup ("");
  self->routing_cancellable = g_cancellable_new ();
  g_signal_connect (self, "map", G_CALLBACK (_ts_chat_page_routing_refresh), NULL);
}

void
_ts_chat_page_routing_dispose (TsChatPage *self)
{
  g_cancellable_cancel (self->routing_cancellable);
  g_clear_object (&self->routing_cancellable);
  g_cancellable_cancel (self->route_cancellable);
  g_clear_object (&self->route_cancellable);
  g_clear_pointer (&self->adapter_override, g_free);
}

void
_ts_chat_page_routing_class_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "chat.route-adapter", "s", route_adapter_action);
}
