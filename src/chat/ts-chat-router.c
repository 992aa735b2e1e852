/* ts-chat-router.c: the chat's router: the installed adapters, and one route per turn.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-chat-router.h"

#include "ts-market-install.h"
#include "ts-market-json.h"

struct _TsAdapterRouting {
  gatomicrefcount ref_count;
  TsGenerationModel *model;
  GPtrArray *adapters;         /* of TsRoutableAdapter * */
  GMutex lock;                 /* serialises the router (one engine session) */
  TsRouter *router;
};

void
ts_routable_adapter_free (TsRoutableAdapter *adapter)
{
  if (adapter == NULL)
    return;
  g_free (adapter->id);
  g_free (adapter->version);
  g_free (adapter->path);
  g_free (adapter->metadata_path);
  g_free (adapter);
}

static TsRoutableAdapter *
routable_copy (const TsRoutableAdapter *a)
{
  TsRoutableAdapter *copy = g_new0 (TsRoutableAdapter, 1);

  copy->id = g_strdup (a->id);
  copy->version = g_strdup (a->version);
  copy->path = g_strdup (a->path);
  copy->metadata_path = g_strdup (a->metadata_path);
  return copy;
}

/* The "version" member of the JSON object in @path, or NULL. */
static char *
read_version (const char *path)
{
  g_autofree char *text = NULL;
  g_autoptr (JsonNode) root = NULL;
  gsize len = 0;

  if (!g_file_get_contents (path, &text, &len, NULL)
      || (root = ts_json_parse_bounded (text, len, 8, NULL)) == NULL
      || !JSON_NODE_HOLDS_OBJECT (root))
    return NULL;
  return g_strdup (ts_json_get_string (json_node_get_object (root), "version"));
}

/* The folder @name of @dir as a routable adapter, or NULL when it holds
 * neither metadata.json nor a release file. */
static TsRoutableAdapter *
routable_from_folder (const char *dir, const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *metadata = g_build_filename (path, "metadata.json", NULL);
  g_autofree char *release = g_build_filename (path, TS_MARKET_RELEASE_FILE, NULL);
  TsRoutableAdapter *a;

  if (!ts_market_name_is_safe (name) || !g_file_test (path, G_FILE_TEST_IS_DIR))
    return NULL;
  if (!g_file_test (metadata, G_FILE_TEST_IS_REGULAR))
    g_clear_pointer (&metadata, g_free);
  if (metadata == NULL && !g_file_test (release, G_FILE_TEST_IS_REGULAR))
    return NULL;
  a = g_new0 (TsRoutableAdapter, 1);
  a->id = g_strdup (name);
  a->path = g_steal_pointer (&path);
  a->metadata_path = metadata != NULL ? g_steal_pointer (&metadata) : g_steal_pointer (&release);
  a->version = read_version (a->metadata_path);
  return a;
}

static int
compare_ids (gconstpointer a, gconstpointer b)
{
  return g_strcmp0 ((*(TsRoutableAdapter *const *) a)->id, (*(TsRoutableAdapter *const *) b)->id);
}

GPtrArray *
ts_chat_router_find (const char *adapters_dir)
{
  g_return_val_if_fail (adapters_dir != NULL, NULL);

  GPtrArray *found = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_routable_adapter_free);
  g_autoptr (GDir) dir = g_dir_open (adapters_dir, 0, NULL);
  const char *name;

  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      TsRoutableAdapter *a = routable_from_folder (adapters_dir, name);
      if (a != NULL)
        g_ptr_array_add (found, a);
    }
  g_ptr_array_sort (found, compare_ids);
  return found;
}

void
ts_chat_route_clear (TsChatRoute *route)
{
  g_return_if_fail (route != NULL);

  ts_route_clear (&route->route);
  g_clear_pointer (&route->adapter_path, g_free);
  g_clear_pointer (&route->unusable, g_free);
}

TsChatRouter *
ts_chat_router_new (TsGenerationModel *model, GPtrArray *adapters, GError **error)
{
  g_autoptr (TsRouter) router = NULL;
  TsChatRouter *self;

  g_return_val_if_fail (adapters != NULL, NULL);

  router = ts_router_new (ts_generation_model_get_lm (model), error);
  if (router == NULL)
    return NULL;
  self = g_new0 (TsChatRouter, 1);
  g_atomic_ref_count_init (&self->ref_count);
  g_mutex_init (&self->lock);
  self->model = ts_generation_model_ref (model);
  self->adapters = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_routable_adapter_free);
  for (guint i = 0; i < adapters->len; i++)
    {
      const TsRoutableAdapter *a = g_ptr_array_index (adapters, i);
      g_autoptr (GError) local = NULL;

      /* One unreadable metadata file must not take routing away from the others. */
      if (!ts_router_add_metadata (router, a->id, a->metadata_path, &local))
        {
          g_message ("Adapter %s is not routed: %s", a->id, local->message);
          continue;
        }
      g_ptr_array_add (self->adapters, routable_copy (a));
    }
  self->router = g_steal_pointer (&router);
  return self;
}

TsChatRouter *
ts_chat_router_ref (TsChatRouter *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  g_atomic_ref_count_inc (&self->ref_count);
  return self;
}

void
ts_chat_router_unref (TsChatRouter *self)
{
  if (self == NULL || !g_atomic_ref_count_dec (&self->ref_count))
    return;
  ts_router_free (self->router);
  g_ptr_array_unref (self->adapters);
  ts_generation_model_unref (self->model);
  g_mutex_clear (&self->lock);
  g_free (self);
}

TsGenerationModel *
ts_chat_router_get_model (TsChatRouter *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->model;
}

GPtrArray *
ts_chat_router_get_adapters (TsChatRouter *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return self->adapters;
}

const TsRoutableAdapter *
ts_chat_router_lookup (TsChatRouter *self, const char *id)
{
  g_return_val_if_fail (self != NULL, NULL);

  for (guint i = 0; id != NULL && i < self->adapters->len; i++)
    {
      const TsRoutableAdapter *a = g_ptr_array_index (self->adapters, i);
      if (g_str_equal (a->id, id))
        return a;
    }
  return NULL;
}

gboolean
ts_chat_router_route (TsChatRouter *self, const char *text, const char *override_id,
                      TsChatRoute *out, GError **error)
{
  const TsRoutableAdapter *a;
  g_autoptr (GError) load_error = NULL;
  gboolean ok;

  g_return_val_if_fail (self != NULL && out != NULL, FALSE);

  *out = (TsChatRoute) { { NULL, 0, TS_ROUTE_NONE }, NULL, NULL };
  g_mutex_lock (&self->lock);
  ts_router_set_override (self->router, override_id != NULL && *override_id != '\0'
                                        ? override_id : NULL);
  ok = ts_router_route (self->router, text, &out->route, error);
  g_mutex_unlock (&self->lock);
  if (!ok || (a = ts_chat_router_lookup (self, out->route.adapter_id)) == NULL)
    return ok;
  /* Loaded now, on this worker: the turn then switches without waiting. */
  if (ts_generation_model_get_lora (self->model, a->path, &load_error) != NULL)
    out->adapter_path = g_strdup (a->path);
  else
    out->unusable = g_strdup (load_error->message);
  return TRUE;
}

/* ---- on a worker ---- */

static void
build_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  TsGenerationModel *model = g_object_get_data (G_OBJECT (task), "ts-model");
  g_autoptr (GPtrArray) adapters = ts_chat_router_find (data);
  GError *error = NULL;
  TsChatRouter *routing = ts_chat_router_new (model, adapters, &error);

  if (routing == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, routing, (GDestroyNotify) ts_chat_router_unref);
}

void
ts_chat_router_new_async (TsGenerationModel *model, const char *adapters_dir,
                          GCancellable *cancellable, GAsyncReadyCallback callback,
                          gpointer user_data)
{
  g_return_if_fail (model != NULL);
  g_return_if_fail (adapters_dir != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);

  g_task_set_source_tag (task, ts_chat_router_new_async);
  g_task_set_task_data (task, g_strdup (adapters_dir), g_free);
  g_object_set_data_full (G_OBJECT (task), "ts-model", ts_generation_model_ref (model),
                          (GDestroyNotify) ts_generation_model_unref);
  g_task_set_return_on_cancel (task, TRUE);
  g_task_run_in_thread (task, build_thread);
}

TsChatRouter *
ts_chat_router_new_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

typedef struct {
  TsChatRouter *routing;
  char *text;
  char *override_id;
} RouteRequest;

static void
route_request_free (gpointer data)
{
  RouteRequest *r = data;

  ts_chat_router_unref (r->routing);
  g_free (r->text);
  g_free (r->override_id);
  g_free (r);
}

static void
route_result_free (gpointer data)
{
  ts_chat_route_clear (data);
  g_free (data);
}

static void
route_thread (GTask *task, gpointer source, gpointer data, GCancellable *cancellable)
{
  RouteRequest *r = data;
  TsChatRoute *out = g_new0 (TsChatRoute, 1);
  GError *error = NULL;

  if (ts_chat_router_route (r->routing, r->text, r->override_id, out, &error))
    g_task_return_pointer (task, out, route_result_free);
  else
    {
      route_result_free (out);
      g_task_return_error (task, error);
    }
}

void
ts_chat_router_route_async (TsChatRouter *self, const char *text,
                            const char *override_id, GCancellable *cancellable,
                            GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (self != NULL);
  g_return_if_fail (text != NULL);
  g_return_if_fail (cancellable == NULL || G_IS_CANCELLABLE (cancellable));

  g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);
  RouteRequest *r = g_new0 (RouteRequest, 1);

  r->routing = ts_chat_router_ref (self);
  r->text = g_strdup (text);
  r->override_id = g_strdup (override_id);
  g_task_set_source_tag (task, ts_chat_router_route_async);
  g_task_set_task_data (task, r, route_request_free);
  g_task_run_in_thread (task, route_thread);
}

gboolean
ts_chat_router_route_finish (GAsyncResult *result, TsChatRoute *out, GError **error)
{
  TsChatRoute *route;

  g_return_val_if_fail (g_task_is_valid (result, NULL), FALSE);
  route = g_task_propagate_pointer (G_TASK (result), error);
  if (route == NULL)
    return FALSE;
  *out = *route;
  g_free (route);
  return TRUE;
}
