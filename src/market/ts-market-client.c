/* ts-market-client.c: the marketplace client: session, bounded JSON requests, catalogue calls.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include "ts-config.h"
#include "ts-market-client-private.h"

#include <string.h>

#include "ts-market-json.h"

#define READ_CHUNK (64 * 1024)

void
_ts_market_read_next (GInputStream *in, GAsyncReadyCallback callback, GTask *task)
{
  /* Fetched before the reference moves into the call. */
  GCancellable *cancellable = g_task_get_cancellable (task);

  g_input_stream_read_bytes_async (in, READ_CHUNK, G_PRIORITY_DEFAULT, cancellable,
                                   callback, task);
}

struct _TsMarketClient
{
  GObject      parent_instance;
  GUri        *base_uri;
  char        *base_url;
  SoupSession *session;
  char        *cache_dir;
  gboolean     offline;
};

enum { PROP_0, PROP_OFFLINE, N_PROPS };
static GParamSpec *properties[N_PROPS];

G_DEFINE_FINAL_TYPE (TsMarketClient, ts_market_client, G_TYPE_OBJECT)

static void
ts_market_client_finalize (GObject *object)
{
  TsMarketClient *self = TS_MARKET_CLIENT (object);

  g_clear_pointer (&self->base_uri, g_uri_unref);
  g_free (self->base_url);
  g_clear_object (&self->session);
  g_free (self->cache_dir);
  G_OBJECT_CLASS (ts_market_client_parent_class)->finalize (object);
}

static void
ts_market_client_get_property (GObject *object, guint prop_id, GValue *value,
                               GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_OFFLINE:
      g_value_set_boolean (value, TS_MARKET_CLIENT (object)->offline);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_market_client_class_init (TsMarketClientClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = ts_market_client_finalize;
  object_class->get_property = ts_market_client_get_property;
  properties[PROP_OFFLINE] =
      g_param_spec_boolean ("offline", NULL, NULL, FALSE,
                            G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
ts_market_client_init (TsMarketClient *self)
{
  /* Idle connections close after a minute; a stalled read fails after 30 s. */
  self->session = soup_session_new_with_options ("user-agent", "tensafe/" TS_VERSION,
                                                 "timeout", 30, "idle-timeout", 60,
                                                 "max-conns-per-host", 8, NULL);
}

TsMarketClient *
ts_market_client_new (const char *base_url, GError **error)
{
  g_return_val_if_fail (base_url != NULL, NULL);

  g_autoptr(TsMarketClient) self = g_object_new (TS_TYPE_MARKET_CLIENT, NULL);
  g_autoptr(GUri) uri = g_uri_parse (base_url, SOUP_HTTP_URI_FLAGS, NULL);

  if (uri == NULL || (g_strcmp0 (g_uri_get_scheme (uri), "http") != 0
                      && g_strcmp0 (g_uri_get_scheme (uri), "https") != 0))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   _("Not an http(s) URL: %s"), base_url);
      return NULL;
    }
  self->base_uri = g_steal_pointer (&uri);
  self->base_url = g_uri_to_string (self->base_uri);
  return g_steal_pointer (&self);
}

const char *
ts_market_client_get_base_url (TsMarketClient *self)
{
  g_return_val_if_fail (TS_IS_MARKET_CLIENT (self), NULL);

  return self->base_url;
}

SoupSession *
ts_market_client_get_session (TsMarketClient *self)
{
  g_return_val_if_fail (TS_IS_MARKET_CLIENT (self), NULL);

  return self->session;
}

void
ts_market_client_set_cache_dir (TsMarketClient *self, const char *dir)
{
  g_return_if_fail (TS_IS_MARKET_CLIENT (self));

  g_free (self->cache_dir);
  self->cache_dir = g_strdup (dir);
}

gboolean
ts_market_client_get_offline (TsMarketClient *self)
{
  g_return_val_if_fail (TS_IS_MARKET_CLIENT (self), FALSE);

  return self->offline;
}

char *
ts_market_client_build_url (TsMarketClient *self, const char *path)
{
  g_return_val_if_fail (TS_IS_MARKET_CLIENT (self), NULL);

  g_autoptr(GUri) uri = g_uri_parse_relative (self->base_uri, path, SOUP_HTTP_URI_FLAGS, NULL);

  return uri ? g_uri_to_string (uri) : NULL;
}

goffset
_ts_market_content_length (SoupMessage *msg)
{
  SoupMessageHeaders *h = soup_message_get_response_headers (msg);

  if (soup_message_headers_get_encoding (h) != SOUP_ENCODING_CONTENT_LENGTH
      || g_strcmp0 (soup_message_get_method (msg), "HEAD") == 0)
    return -1;
  return soup_message_headers_get_content_length (h);
}

void
_ts_market_error_from_transport (GError **error, const GError *transport, gboolean in_body)
{
  if (g_error_matches (transport, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    g_propagate_error (error, g_error_copy (transport));
  else if (in_body && g_error_matches (transport, G_IO_ERROR, G_IO_ERROR_PARTIAL_INPUT))
    g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_TRUNCATED,
                 _("The answer was cut short: %s"), transport->message);
  else
    g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK,
                 _("Cannot reach the marketplace: %s"), transport->message);
}

void
_ts_market_error_from_status (GError **error, guint status, const char *body, gsize len)
{
  g_autoptr(JsonNode) root = body ? ts_json_parse_bounded (body, len, 8, NULL) : NULL;
  JsonObject *err = root && JSON_NODE_HOLDS_OBJECT (root)
                    ? ts_json_get_object (json_node_get_object (root), "error") : NULL;
  const char *code = ts_json_get_string (err, "code");
  const char *message = ts_json_get_string (err, "message");
  int domain_code = TS_MARKET_ERROR_SERVER;

  if (status == 404)
    domain_code = TS_MARKET_ERROR_NOT_FOUND;
  else if (status == 401 || status == 403)
    domain_code = TS_MARKET_ERROR_UNAUTHORIZED;
  else if (status == 413)
    domain_code = TS_MARKET_ERROR_TOO_LARGE;
  g_set_error (error, TS_MARKET_ERROR, domain_code, "%s (HTTP %u%s%s)",
               message ? message : soup_status_get_phrase (status), status,
               code ? ", " : "", code ? code : "");
}

/* State of one JSON request while its body is read. */
typedef struct
{
  SoupMessage  *msg;
  GInputStream *in;
  GByteArray   *body;
  goffset       announced;  /* Content-Length, or -1 */
} JsonRequest;

static void
json_request_free (JsonRequest *r)
{
  g_clear_object (&r->msg);
  g_clear_object (&r->in);
  g_byte_array_unref (r->body);
  g_free (r);
}

static void
json_request_complete (GTask *task)
{
  JsonRequest *r = g_task_get_task_data (task);
  guint status = soup_message_get_status (r->msg);
  GError *error = NULL;
  JsonNode *node;

  if (status >= 400 || status < 200 || status == 204)
    {
      if (status < 400)
        g_set_error (&error, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL,
                     _("Unexpected HTTP status %u"), status);
      else
        _ts_market_error_from_status (&error, status, (const char *) r->body->data,
                                      r->body->len);
      g_task_return_error (task, error);
      return;
    }
  node = ts_json_parse_bounded ((const char *) r->body->data, r->body->len,
                                TS_MARKET_MAX_JSON_DEPTH, &error);
  if (node == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, node, (GDestroyNotify) json_node_unref);
}

static void
json_read_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  JsonRequest *r = g_task_get_task_data (task);
  g_autoptr(GError) local = NULL;
  GError *error = NULL;
  g_autoptr(GBytes) chunk = g_input_stream_read_bytes_finish (r->in, result, &local);

  if (chunk == NULL)
    {
      _ts_market_error_from_transport (&error, local, TRUE);
      g_task_return_error (task, error);
      return;
    }
  if (g_bytes_get_size (chunk) == 0)
    {
      if (r->announced >= 0 && r->body->len < (guint64) r->announced)
        g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_TRUNCATED,
                                 "The answer was cut short after %u of %" G_GOFFSET_FORMAT
                                 " bytes", r->body->len, r->announced);
      else
        json_request_complete (task);
      return;
    }
  if (r->body->len + g_bytes_get_size (chunk) > TS_MARKET_MAX_JSON_BYTES)
    {
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_TOO_LARGE,
                               "The marketplace answer exceeds %d bytes",
                               TS_MARKET_MAX_JSON_BYTES);
      return;
    }
  g_byte_array_append (r->body, g_bytes_get_data (chunk, NULL), g_bytes_get_size (chunk));
  _ts_market_read_next (r->in, json_read_cb, g_steal_pointer (&task));
}

static void
json_sent_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  JsonRequest *r = g_task_get_task_data (task);
  g_autoptr(GError) local = NULL;
  GError *error = NULL;

  r->in = soup_session_send_finish (SOUP_SESSION (source), result, &local);
  if (r->in == NULL)
    {
      _ts_market_error_from_transport (&error, local, FALSE);
      g_task_return_error (task, error);
      return;
    }
  r->announced = _ts_market_content_length (r->msg);
  if (r->announced > TS_MARKET_MAX_JSON_BYTES)
    {
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_TOO_LARGE,
                               "The marketplace answer exceeds %d bytes",
                               TS_MARKET_MAX_JSON_BYTES);
      return;
    }
  _ts_market_read_next (r->in, json_read_cb, g_steal_pointer (&task));
}

void
_ts_market_client_send_json_async (TsMarketClient *self, SoupMessage *msg,
                                   GCancellable *cancellable, GAsyncReadyCallback callback,
                                   gpointer user_data)
{
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  JsonRequest *r = g_new0 (JsonRequest, 1);

  g_task_set_source_tag (task, _ts_market_client_send_json_async);
  r->msg = g_object_ref (msg);
  r->body = g_byte_array_new ();
  g_task_set_task_data (task, r, (GDestroyNotify) json_request_free);
  soup_message_headers_replace (soup_message_get_request_headers (msg), "Accept",
                                "application/json");
  soup_session_send_async (self->session, msg, G_PRIORITY_DEFAULT, cancellable,
                           json_sent_cb, task);
}

JsonNode *
_ts_market_client_send_json_finish (TsMarketClient *self, GAsyncResult *result,
                                    GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

/* GET @path and parse the JSON answer with @parse into the task's result. */
typedef gpointer (*ParseFunc) (JsonNode *node, GError **error);

typedef struct
{
  ParseFunc      parse;
  GDestroyNotify free_result;  /* for a result nobody finishes */
  char          *path;
} GetParsed;

static void
get_parsed_free (GetParsed *g)
{
  g_free (g->path);
  g_free (g);
}

static void
set_offline (TsMarketClient *self, gboolean offline)
{
  if (self->offline == offline)
    return;
  self->offline = offline;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_OFFLINE]);
}

static void
get_parsed_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TsMarketClient *self = TS_MARKET_CLIENT (source);
  g_autoptr(GTask) task = user_data;
  GetParsed *g = g_task_get_task_data (task);
  GError *error = NULL;
  g_autoptr(JsonNode) node = _ts_market_client_send_json_finish (self, result, &error);
  gpointer parsed;

  if (node != NULL)
    {
      set_offline (self, FALSE);
      _ts_market_cache_store (self->cache_dir, g->path, node);
    }
  else if (g_error_matches (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK)
           && (node = _ts_market_cache_load (self->cache_dir, g->path)) != NULL)
    {
      /* Unreachable: answer from the last good copy, and say so. */
      g_clear_error (&error);
      set_offline (self, TRUE);
    }
  else if (g_error_matches (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NETWORK))
    set_offline (self, TRUE);
  parsed = node ? g->parse (node, &error) : NULL;
  if (parsed == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, parsed, g->free_result);
}

static void
get_parsed_async (TsMarketClient *self, const char *path, ParseFunc parse,
                  GDestroyNotify free_result, gpointer tag, GCancellable *cancellable,
                  GAsyncReadyCallback callback, gpointer user_data)
{
  GTask *task = g_task_new (self, cancellable, callback, user_data);
  g_autofree char *url = ts_market_client_build_url (self, path);
  g_autoptr(SoupMessage) msg = url ? soup_message_new ("GET", url) : NULL;
  GetParsed *g = g_new0 (GetParsed, 1);

  g->parse = parse;
  g->free_result = free_result;
  g->path = g_strdup (path);
  g_task_set_source_tag (task, tag);
  g_task_set_task_data (task, g, (GDestroyNotify) get_parsed_free);
  if (msg == NULL)
    {
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                               "Cannot build a URL for %s", path);
      g_object_unref (task);
      return;
    }
  _ts_market_client_send_json_async (self, msg, cancellable, get_parsed_cb, task);
}

static void
append_param (GString *url, const char *key, const char *value)
{
  g_autofree char *escaped = NULL;

  if (value == NULL || *value == '\0')
    return;
  escaped = g_uri_escape_string (value, NULL, FALSE);
  g_string_append_printf (url, "%c%s=%s", strchr (url->str, '?') ? '&' : '?', key, escaped);
}

static char *
search_path (const TsMarketSearch *s)
{
  GString *url = g_string_new ("/v1/adapters");
  char num[G_ASCII_DTOSTR_BUF_SIZE];

  append_param (url, "q", s->query);
  append_param (url, "base_model", s->base_model);
  if (s->rank > 0)
    g_string_append_printf (url, "%crank=%" G_GINT64_FORMAT, strchr (url->str, '?') ? '&' : '?',
                            s->rank);
  append_param (url, "target_module", s->target_module);
  append_param (url, "license", s->license);
  if (s->max_price >= 0)
    append_param (url, "max_price", g_ascii_dtostr (num, sizeof num, s->max_price));
  append_param (url, "sort", s->sort);
  if (s->limit > 0)
    g_string_append_printf (url, "%climit=%u", strchr (url->str, '?') ? '&' : '?', s->limit);
  append_param (url, "cursor", s->cursor);
  return g_string_free (url, FALSE);
}

void
ts_market_client_search_async (TsMarketClient *self, const TsMarketSearch *search,
                               GCancellable *cancellable, GAsyncReadyCallback callback,
                               gpointer user_data)
{
  g_return_if_fail (TS_IS_MARKET_CLIENT (self));

  TsMarketSearch any = TS_MARKET_SEARCH_INIT;
  g_autofree char *path = search_path (search ? search : &any);

  get_parsed_async (self, path, (ParseFunc) ts_market_page_from_json,
                    (GDestroyNotify) ts_market_page_free,
                    ts_market_client_search_async, cancellable, callback, user_data);
}

TsMarketPage *
ts_market_client_search_finish (TsMarketClient *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

static gboolean
check_name (TsMarketClient *self, const char *name, gpointer tag,
            GAsyncReadyCallback callback, gpointer user_data)
{
  if (ts_market_name_is_safe (name))
    return TRUE;
  g_task_report_new_error (self, callback, user_data, tag, TS_MARKET_ERROR,
                           TS_MARKET_ERROR_INVALID, "Invalid name “%s”", name ? name : "");
  return FALSE;
}

void
ts_market_client_get_adapter_async (TsMarketClient *self, const char *id,
                                    GCancellable *cancellable, GAsyncReadyCallback callback,
                                    gpointer user_data)
{
  g_autofree char *path = NULL;

  g_return_if_fail (self != NULL);

  if (!check_name (self, id, ts_market_client_get_adapter_async, callback, user_data))
    return;
  path = g_strconcat ("/v1/adapters/", id, NULL);
  get_parsed_async (self, path, (ParseFunc) ts_market_adapter_from_json,
                    (GDestroyNotify) ts_market_adapter_unref,
                    ts_market_client_get_adapter_async, cancellable, callback, user_data);
}

TsMarketAdapter *
ts_market_client_get_adapter_finish (TsMarketClient *self, GAsyncResult *result,
                                     GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

void
ts_market_client_get_publisher_keys_async (TsMarketClient *self, const char *publisher,
                                           GCancellable *cancellable,
                                           GAsyncReadyCallback callback, gpointer user_data)
{
  g_autofree char *path = NULL;

  g_return_if_fail (self != NULL);

  if (!check_name (self, publisher, ts_market_client_get_publisher_keys_async, callback,
                   user_data))
    return;
  path = g_strdup_printf ("/v1/publishers/%s/keys", publisher);
  get_parsed_async (self, path, (ParseFunc) ts_market_publisher_keys_from_json,
                    (GDestroyNotify) g_ptr_array_unref,
                    ts_market_client_get_publisher_keys_async, cancellable, callback,
                    user_data);
}

GPtrArray *
ts_market_client_get_publisher_keys_finish (TsMarketClient *self, GAsyncResult *result,
                                            GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}
