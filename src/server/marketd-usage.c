/* marketd-usage.c: POST /v1/usage — metered tokens, recorded exactly once per idempotency key.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"

#include <string.h>

#include "ts-market-json.h"
#include "ts-market-manifest.h"

#define MAX_RECORDS_PER_POST 100
#define MAX_TOKENS_PER_RECORD G_GINT64_CONSTANT (1000000000)

typedef struct
{
  const char *adapter;
  const char *version;
  gint64      tokens;
  const char *key;
} UsageRecord;

static gboolean
key_is_valid (const char *key)
{
  gsize len = key ? strlen (key) : 0;

  if (len < 8 || len > 128)
    return FALSE;
  for (const char *p = key; *p; p++)
    if (!g_ascii_isalnum (*p) && strchr ("-_.:", *p) == NULL)
      return FALSE;
  return TRUE;
}

static gboolean
read_record (JsonNode *node, UsageRecord *r)
{
  JsonObject *o;

  if (!JSON_NODE_HOLDS_OBJECT (node))
    return FALSE;
  o = json_node_get_object (node);
  r->adapter = ts_json_get_string (o, "adapter");
  r->version = ts_json_get_string (o, "version");
  r->key = ts_json_get_string (o, "idempotency_key");
  if (!ts_json_get_int (o, "tokens", &r->tokens))
    return FALSE;
  return ts_market_name_is_safe (r->adapter) && ts_market_name_is_safe (r->version)
         && key_is_valid (r->key) && r->tokens >= 0 && r->tokens <= MAX_TOKENS_PER_RECORD;
}

/* Accepts one record object or {"records": [...]}; FALSE with a reply sent. */
static gboolean
read_records (SoupServerMessage *msg, JsonNode **root_out, GArray *records)
{
  SoupMessageBody *body = soup_server_message_get_request_body (msg);
  g_autoptr(GBytes) bytes = soup_message_body_flatten (body);
  g_autoptr(GError) error = NULL;
  JsonNode *root = NULL, *list = NULL;

  /* Records borrow their strings from the tree, which the caller keeps. */
  if (g_bytes_get_size (bytes) <= MARKETD_MAX_REQUEST_BODY)
    root = *root_out = ts_json_parse_bounded (g_bytes_get_data (bytes, NULL),
                                              g_bytes_get_size (bytes), 4, &error);
  if (error != NULL)   /* say why: too deep, malformed, a NUL in a string */
    return marketd_reply_error (msg, 400, "invalid_json", "%s", error->message), FALSE;
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return marketd_reply_error (msg, 400, "invalid_json", "Expected a JSON object"), FALSE;
  list = json_object_get_member (json_node_get_object (root), "records");
  if (list != NULL && !JSON_NODE_HOLDS_ARRAY (list))
    return marketd_reply_error (msg, 400, "invalid_usage", "“records” must be a list"), FALSE;
  if (list == NULL)
    {
      UsageRecord r;
      if (!read_record (root, &r))
        return marketd_reply_error (msg, 400, "invalid_usage", "Bad usage record"), FALSE;
      g_array_append_val (records, r);
      return TRUE;
    }
  for (guint i = 0; i < json_array_get_length (json_node_get_array (list)); i++)
    {
      UsageRecord r;
      if (records->len >= MAX_RECORDS_PER_POST)
        return marketd_reply_error (msg, 413, "too_large", "At most %d records per request",
                                    MAX_RECORDS_PER_POST), FALSE;
      if (!read_record (json_array_get_element (json_node_get_array (list), i), &r))
        return marketd_reply_error (msg, 400, "invalid_usage", "Bad usage record %u", i), FALSE;
      g_array_append_val (records, r);
    }
  if (records->len == 0)
    return marketd_reply_error (msg, 400, "invalid_usage", "No records"), FALSE;
  return TRUE;
}

static gboolean
versions_exist (Marketd *self, GArray *records, const char **missing)
{
  for (guint i = 0; i < records->len; i++)
    {
      UsageRecord *r = &g_array_index (records, UsageRecord, i);
      MarketdValue params[] = { marketd_text (r->adapter), marketd_text (r->version) };
      g_autoptr(MarketdRows) s = marketd_store_query (
          self->store, "SELECT 1 FROM versions WHERE adapter_id = ?1 AND version = ?2",
          params, G_N_ELEMENTS (params), NULL);

      if (s == NULL)
        return FALSE;
      if (marketd_rows_count (s) == 0)
        {
          *missing = r->adapter;
          return FALSE;
        }
    }
  return TRUE;
}

/* Inserts every record in one transaction; a key seen before for this
 * account is a duplicate and changes nothing.  The primary key decides, so
 * this holds across every server on one database, retries racing included. */
static gboolean
insert_records (Marketd *self, const char *account, GArray *records, JsonBuilder *b,
                guint *n_new)
{
  gint64 now = g_get_real_time () / G_USEC_PER_SEC;
  g_autoptr(GError) error = NULL;

  if (!marketd_store_begin (self->store, FALSE, &error))
    goto fail;
  json_builder_set_member_name (b, "results");
  json_builder_begin_array (b);
  for (guint i = 0; i < records->len; i++)
    {
      UsageRecord *r = &g_array_index (records, UsageRecord, i);
      MarketdValue params[] = {
        marketd_text (account), marketd_text (r->key), marketd_text (r->adapter),
        marketd_text (r->version), marketd_int (r->tokens), marketd_int (now),
      };
      g_autoptr(MarketdRows) s = marketd_store_query (
          self->store, "INSERT INTO usage (account, idempotency_key, adapter_id, version, "
          "tokens, received_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT DO NOTHING",
          params, G_N_ELEMENTS (params), &error);
      gint64 changes;

      if (s == NULL)
        goto fail;
      changes = marketd_rows_changes (s);
      *n_new += changes;
      json_builder_begin_object (b);
      ts_json_add_string (b, "idempotency_key", r->key);
      ts_json_add_string (b, "status", changes ? "recorded" : "duplicate");
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  if (marketd_store_commit (self->store, &error))
    return TRUE;
fail:
  g_message ("usage: %s", error ? error->message : "unknown error");
  marketd_store_rollback (self->store);
  return FALSE;
}

void
marketd_handle_usage (Marketd *self, SoupServerMessage *msg)
{
  const char *auth = soup_message_headers_get_one (
      soup_server_message_get_request_headers (msg), "Authorization");
  const char *account = NULL, *missing = NULL;
  g_autoptr(JsonNode) root = NULL;
  g_autoptr(GArray) records = g_array_new (FALSE, FALSE, sizeof (UsageRecord));
  g_autoptr(JsonBuilder) b = json_builder_new ();
  guint n_new = 0;

  if (auth != NULL && g_ascii_strncasecmp (auth, "Bearer ", 7) == 0)
    account = marketd_tokens_lookup (self, auth + 7);
  if (account == NULL)
    {
      soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                    "WWW-Authenticate", "Bearer realm=\"tensafe-marketd\"");
      marketd_reply_error (msg, 401, "unauthorized", "A valid bearer token is required");
      return;
    }
  if (!read_records (msg, &root, records))
    return;
  if (!versions_exist (self, records, &missing))
    {
      marketd_reply_error (msg, 422, "unknown_adapter", "Unknown adapter or version: %s",
                           missing ? missing : "?");
      return;
    }
  json_builder_begin_object (b);
  if (!insert_records (self, account, records, b, &n_new))
    {
      marketd_reply_error (msg, 503, "unavailable", "Usage could not be stored; retry");
      return;
    }
  ts_json_add_int (b, "accepted", n_new);
  ts_json_add_int (b, "duplicates", records->len - n_new);
  json_builder_end_object (b);
  marketd_reply_json (msg, 200, b);
}
