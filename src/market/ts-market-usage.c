/* ts-market-usage.c: the usage queue, its batches, retries with backoff, and persistence.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-usage.h"

#include <string.h>

#include "ts-market-client-private.h"
#include "ts-market-json.h"

#define MAX_BATCH 100

typedef struct
{
  char   *key;
  char   *adapter;
  char   *version;
  gint64  tokens;
} UsageRecord;

struct _TsMarketUsage
{
  GObject         parent_instance;
  TsMarketClient *client;
  char           *token;
  char           *queue_path;
  GPtrArray      *queue;    /* of UsageRecord*, oldest first */
  GPtrArray      *waiters;  /* of GTask* from flush_async */
  GCancellable   *cancellable;
  guint           timer_id;
  guint           attempt;
  gboolean        in_flight;
  guint           batch_delay_ms;
  guint           retry_base_ms;
  guint           retry_max_ms;
};

enum { PROP_0, PROP_PENDING, N_PROPS };
static GParamSpec *properties[N_PROPS];

G_DEFINE_FINAL_TYPE (TsMarketUsage, ts_market_usage, G_TYPE_OBJECT)

static void
record_free (gpointer data)
{
  UsageRecord *r = data;

  g_free (r->key);
  g_free (r->adapter);
  g_free (r->version);
  g_free (r);
}

static void
complete_waiters (TsMarketUsage *self, const GError *error)
{
  g_autoptr(GPtrArray) waiters = g_steal_pointer (&self->waiters);

  self->waiters = g_ptr_array_new_with_free_func (g_object_unref);
  for (guint i = 0; i < waiters->len; i++)
    {
      GTask *t = g_ptr_array_index (waiters, i);
      if (error != NULL)
        g_task_return_error (t, g_error_copy (error));
      else
        g_task_return_boolean (t, TRUE);
    }
}

static void
ts_market_usage_dispose (GObject *object)
{
  TsMarketUsage *self = TS_MARKET_USAGE (object);
  g_autoptr(GError) error = g_error_new (G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                         "The usage reporter was closed");

  g_cancellable_cancel (self->cancellable);
  g_clear_handle_id (&self->timer_id, g_source_remove);
  if (self->waiters != NULL)
    complete_waiters (self, error);
  G_OBJECT_CLASS (ts_market_usage_parent_class)->dispose (object);
}

static void
ts_market_usage_finalize (GObject *object)
{
  TsMarketUsage *self = TS_MARKET_USAGE (object);

  g_clear_object (&self->client);
  if (self->token != NULL)
    memset (self->token, 0, strlen (self->token));
  g_free (self->token);
  g_free (self->queue_path);
  g_ptr_array_unref (self->queue);
  g_ptr_array_unref (self->waiters);
  g_clear_object (&self->cancellable);
  G_OBJECT_CLASS (ts_market_usage_parent_class)->finalize (object);
}

static void
ts_market_usage_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_PENDING:
      g_value_set_uint (value, TS_MARKET_USAGE (object)->queue->len);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_market_usage_class_init (TsMarketUsageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = ts_market_usage_dispose;
  object_class->finalize = ts_market_usage_finalize;
  object_class->get_property = ts_market_usage_get_property;
  properties[PROP_PENDING] =
      g_param_spec_uint ("pending", NULL, NULL, 0, G_MAXUINT, 0,
                         G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
ts_market_usage_init (TsMarketUsage *self)
{
  self->queue = g_ptr_array_new_with_free_func (record_free);
  self->waiters = g_ptr_array_new_with_free_func (g_object_unref);
  self->cancellable = g_cancellable_new ();
  self->batch_delay_ms = 2000;
  self->retry_base_ms = 1000;
  self->retry_max_ms = 5 * 60 * 1000;
}

TsMarketUsage *
ts_market_usage_new (TsMarketClient *client, const char *token, const char *queue_path)
{
  g_return_val_if_fail (TS_IS_MARKET_CLIENT (client), NULL);

  TsMarketUsage *self = g_object_new (TS_TYPE_MARKET_USAGE, NULL);

  self->client = g_object_ref (client);
  self->token = g_strdup (token);
  self->queue_path = g_strdup (queue_path);
  return self;
}

void
ts_market_usage_set_timing (TsMarketUsage *self, guint batch_delay_ms, guint retry_base_ms,
                            guint retry_max_ms)
{
  g_return_if_fail (TS_IS_MARKET_USAGE (self));

  self->batch_delay_ms = batch_delay_ms;
  self->retry_base_ms = MAX (retry_base_ms, 1);
  self->retry_max_ms = MAX (retry_max_ms, self->retry_base_ms);
}

guint
ts_market_usage_get_pending (TsMarketUsage *self)
{
  g_return_val_if_fail (TS_IS_MARKET_USAGE (self), 0);

  return self->queue->len;
}

/* Records as the JSON the server takes; @n = how many from the front. */
static char *
records_to_json (GPtrArray *queue, guint n, gboolean pretty)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "records");
  json_builder_begin_array (b);
  for (guint i = 0; i < n; i++)
    {
      UsageRecord *r = g_ptr_array_index (queue, i);
      json_builder_begin_object (b);
      ts_json_add_string (b, "adapter", r->adapter);
      ts_json_add_string (b, "version", r->version);
      ts_json_add_int (b, "tokens", r->tokens);
      ts_json_add_string (b, "idempotency_key", r->key);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  return json_to_string (root, pretty);
}

static void
queue_changed (TsMarketUsage *self)
{
  g_autoptr(GError) error = NULL;

  if (self->queue_path != NULL)
    {
      g_autofree char *text = records_to_json (self->queue, self->queue->len, TRUE);
      if (!g_file_set_contents_full (self->queue_path, text, -1,
                                     G_FILE_SET_CONTENTS_CONSISTENT, 0600, &error))
        g_message ("Cannot save the usage queue: %s", error->message);
    }
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PENDING]);
}

gboolean
ts_market_usage_load (TsMarketUsage *self, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr(JsonNode) root = NULL;
  gsize len = 0;
  JsonArray *list;

  g_return_val_if_fail (TS_IS_MARKET_USAGE (self), FALSE);

  if (self->queue_path == NULL || !g_file_test (self->queue_path, G_FILE_TEST_EXISTS))
    return TRUE;
  if (!g_file_get_contents (self->queue_path, &text, &len, error)
      || (root = ts_json_parse_bounded (text, len, 8, error)) == NULL)
    return FALSE;
  list = JSON_NODE_HOLDS_OBJECT (root)
         ? ts_json_get_array (json_node_get_object (root), "records") : NULL;
  for (guint i = 0; list && i < json_array_get_length (list); i++)
    {
      JsonNode *n = json_array_get_element (list, i);
      JsonObject *o = JSON_NODE_HOLDS_OBJECT (n) ? json_node_get_object (n) : NULL;
      UsageRecord *r = g_new0 (UsageRecord, 1);
      r->key = g_strdup (ts_json_get_string (o, "idempotency_key"));
      r->adapter = g_strdup (ts_json_get_string (o, "adapter"));
      r->version = g_strdup (ts_json_get_string (o, "version"));
      if (r->key == NULL || r->adapter == NULL || r->version == NULL
          || !ts_json_get_int (o, "tokens", &r->tokens))
        {
          record_free (r);
          continue;
        }
      g_ptr_array_add (self->queue, r);
    }
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PENDING]);
  return TRUE;
}

static void send_batch (TsMarketUsage *self);

static gboolean
timer_cb (gpointer user_data)
{
  TsMarketUsage *self = user_data;

  self->timer_id = 0;
  send_batch (self);
  return G_SOURCE_REMOVE;
}

static void
schedule_send (TsMarketUsage *self, guint delay_ms)
{
  if (self->timer_id == 0 && !self->in_flight && self->queue->len > 0)
    self->timer_id = g_timeout_add (delay_ms, timer_cb, self);
}

char *
ts_market_usage_record (TsMarketUsage *self, const char *adapter, const char *version,
                        gint64 tokens)
{
  g_return_val_if_fail (TS_IS_MARKET_USAGE (self), NULL);
  g_return_val_if_fail (adapter != NULL, NULL);

  UsageRecord *r = g_new0 (UsageRecord, 1);

  r->key = g_uuid_string_random ();
  r->adapter = g_strdup (adapter);
  r->version = g_strdup (version);
  r->tokens = tokens;
  g_ptr_array_add (self->queue, r);
  queue_changed (self);
  if (self->queue->len >= MAX_BATCH && !self->in_flight)
    {
      g_clear_handle_id (&self->timer_id, g_source_remove);
      send_batch (self);
    }
  else
    schedule_send (self, self->batch_delay_ms);
  return g_strdup (r->key);
}

/* Drops the first @n records once the server has them. */
static void
acknowledge (TsMarketUsage *self, guint n)
{
  g_ptr_array_remove_range (self->queue, 0, MIN (n, self->queue->len));
  queue_changed (self);
}

typedef struct
{
  TsMarketUsage *self;
  SoupMessage   *msg;
  guint          n;
} Batch;

static void
batch_sent_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  Batch *batch = user_data;
  g_autoptr(TsMarketUsage) self = batch->self;
  g_autoptr(SoupMessage) msg = batch->msg;
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = _ts_market_client_send_json_finish (TS_MARKET_CLIENT (source),
                                                                  result, &error);
  guint status = soup_message_get_status (msg), n = batch->n;

  g_free (batch);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;
  self->in_flight = FALSE;
  if (node == NULL && (status == 400 || status == 422))
    {
      /* The server will never take these; resending would loop forever. */
      g_message ("Usage records refused by the marketplace: %s", error->message);
      g_clear_error (&error);
    }
  if (error != NULL)
    {
      guint delay = self->retry_base_ms << MIN (self->attempt, 16u);
      self->attempt++;
      schedule_send (self, MIN (delay, self->retry_max_ms));
      complete_waiters (self, error);
      return;
    }
  self->attempt = 0;
  acknowledge (self, n);
  send_batch (self);
}

static void
send_batch (TsMarketUsage *self)
{
  g_autofree char *url = ts_market_client_build_url (self->client, "/v1/usage");
  g_autofree char *auth = g_strconcat ("Bearer ", self->token ? self->token : "", NULL);
  g_autofree char *body = NULL;
  g_autoptr(GBytes) bytes = NULL;
  Batch *batch;
  gsize len;

  if (self->in_flight)
    return;
  if (self->queue->len == 0)
    {
      complete_waiters (self, NULL);
      return;
    }
  batch = g_new0 (Batch, 1);
  batch->self = g_object_ref (self);
  batch->n = MIN (self->queue->len, MAX_BATCH);
  body = records_to_json (self->queue, batch->n, FALSE);
  len = strlen (body);
  bytes = g_bytes_new_take (g_steal_pointer (&body), len);
  batch->msg = soup_message_new ("POST", url);
  soup_message_headers_replace (soup_message_get_request_headers (batch->msg),
                                "Authorization", auth);
  soup_message_set_request_body_from_bytes (batch->msg, "application/json", bytes);
  self->in_flight = TRUE;
  _ts_market_client_send_json_async (self->client, batch->msg, self->cancellable,
                                     batch_sent_cb, batch);
}

void
ts_market_usage_flush_async (TsMarketUsage *self, GCancellable *cancellable,
                             GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (TS_IS_MARKET_USAGE (self));

  GTask *task = g_task_new (self, cancellable, callback, user_data);

  g_task_set_source_tag (task, ts_market_usage_flush_async);
  g_ptr_array_add (self->waiters, task);
  g_clear_handle_id (&self->timer_id, g_source_remove);
  send_batch (self);
}

gboolean
ts_market_usage_flush_finish (TsMarketUsage *self, GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);
  return g_task_propagate_boolean (G_TASK (result), error);
}
