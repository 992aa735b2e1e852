/* he-server-admin.c: the loopback-only admin routes of tensafe-he-server (hot-swap).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 *   POST   /admin/adapters/{id}/reload   load, replace or unload {id} from the directory
 *   DELETE /admin/adapters/{id}          stop offering {id} to new hellos
 *   POST   /admin/drain                  start draining (as SIGUSR1 does)
 *
 * Requests from any peer that is not a loopback address get 403, whatever
 * address the server listens on: the routes change what the server serves.
 */
#include <json-glib/json-glib.h>
#include <string.h>

#include "he-server-private.h"

#define ADMIN_PREFIX "/admin/adapters/"

static gboolean
peer_is_loopback (SoupServerMessage *msg)
{
  GSocketAddress *addr = soup_server_message_get_remote_address (msg);

  return addr != NULL && G_IS_INET_SOCKET_ADDRESS (addr)
         && g_inet_address_get_is_loopback (
              g_inet_socket_address_get_address (G_INET_SOCKET_ADDRESS (addr)));
}

static void
reply_json (SoupServerMessage *msg, guint status, JsonBuilder *builder)
{
  g_autoptr (JsonNode) root = json_builder_get_root (builder);
  char *text = json_to_string (root, FALSE);

  soup_server_message_set_status (msg, status, NULL);
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_TAKE, text,
                                    strlen (text));
}

static void
reply_error (SoupServerMessage *msg, guint status, const char *text)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "error");
  json_builder_add_string_value (b, text);
  json_builder_end_object (b);
  reply_json (msg, status, b);
}

static void
reply_change (SoupServerMessage *msg, const HeAdapterChange *change)
{
  g_autoptr (JsonBuilder) b = json_builder_new ();

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "id");
  json_builder_add_string_value (b, change->id);
  json_builder_set_member_name (b, "action");
  json_builder_add_string_value (b, change->action);
  json_builder_set_member_name (b, "sha256");
  if (change->sha256_hex != NULL)
    json_builder_add_string_value (b, change->sha256_hex);
  else
    json_builder_add_null_value (b);
  json_builder_end_object (b);
  reply_json (msg, SOUP_STATUS_OK, b);
}

/* Splits "/admin/adapters/{id}[/reload]"; returns the id or NULL. */
static char *
parse_path (const char *path, gboolean *reload)
{
  const char *rest = path + strlen (ADMIN_PREFIX);
  const char *slash = strchr (rest, '/');
  g_autofree char *id = slash ? g_strndup (rest, slash - rest) : g_strdup (rest);

  *reload = slash != NULL && strcmp (slash, "/reload") == 0;
  if (slash != NULL && !*reload)
    return NULL;
  if (id[0] == '\0' || id[0] == '.' || strlen (id) > TS_HELORA_MAX_NAME)
    return NULL;
  return g_steal_pointer (&id);
}

static void
admin_cb (SoupServer *soup, SoupServerMessage *msg, const char *path,
          GHashTable *query, gpointer data)
{
  HeServer *self = data;
  const char *method = soup_server_message_get_method (msg);
  g_autoptr (GError) error = NULL;
  HeAdapterChange change = { 0 };
  gboolean reload, ok;
  g_autofree char *id = NULL;

  if (!peer_is_loopback (msg))
    {
      reply_error (msg, SOUP_STATUS_FORBIDDEN, "Admin routes answer loopback peers only");
      return;
    }
  if (!g_str_has_prefix (path, ADMIN_PREFIX) || (id = parse_path (path, &reload)) == NULL)
    {
      reply_error (msg, SOUP_STATUS_NOT_FOUND, "No such admin route");
      return;
    }
  if (reload && strcmp (method, "POST") == 0)
    ok = he_adapters_reload (self->adapters, id, &change, &error);
  else if (!reload && strcmp (method, "DELETE") == 0)
    ok = he_adapters_unload (self->adapters, id, &change, &error);
  else
    {
      reply_error (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "Use POST …/reload or DELETE");
      return;
    }
  if (ok)
    {
      g_message ("adapter %s: %s", change.id, change.action);
      he_metrics_count_swap (self->metrics);
      reply_change (msg, &change);
    }
  else
    reply_error (msg, g_error_matches (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER)
                        ? SOUP_STATUS_NOT_FOUND : SOUP_STATUS_UNPROCESSABLE_ENTITY,
                 error->message);
  he_adapter_change_clear (&change);
}

static void
drain_cb (SoupServer *soup, SoupServerMessage *msg, const char *path,
          GHashTable *query, gpointer data)
{
  HeServer *self = data;
  g_autoptr (JsonBuilder) b = NULL;

  if (!peer_is_loopback (msg))
    {
      reply_error (msg, SOUP_STATUS_FORBIDDEN, "Admin routes answer loopback peers only");
      return;
    }
  if (strcmp (path, "/admin/drain") != 0)
    {
      reply_error (msg, SOUP_STATUS_NOT_FOUND, "No such admin route");
      return;
    }
  if (strcmp (soup_server_message_get_method (msg), "POST") != 0)
    {
      reply_error (msg, SOUP_STATUS_METHOD_NOT_ALLOWED, "Use POST /admin/drain");
      return;
    }
  he_server_drain (self);
  b = json_builder_new ();
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "draining");
  json_builder_add_boolean_value (b, TRUE);
  json_builder_set_member_name (b, "connections");
  json_builder_add_int_value (b, g_hash_table_size (self->conns));
  json_builder_end_object (b);
  reply_json (msg, SOUP_STATUS_OK, b);
}

void
he_admin_install (HeServer *self)
{
  soup_server_add_handler (self->soup, "/admin", admin_cb, self, NULL);
  soup_server_add_handler (self->soup, "/admin/drain", drain_cb, self, NULL);
}
