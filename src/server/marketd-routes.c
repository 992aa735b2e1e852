/* marketd-routes.c: HTTP routes of tensafe-marketd (details, keys, health) and request limits.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"
#include "server-listen.h"
#include "ts-market-json.h"

#include <string.h>

#include "ts-core.h"
#include "ts-market-manifest.h"

void
marketd_builder_add_summary (JsonBuilder *b, MarketdRows *rows, guint row)
{
#define TEXT(i) marketd_rows_text (rows, row, i)
  ts_json_add_string (b, "id", TEXT (0));
  ts_json_add_string (b, "name", TEXT (1));
  ts_json_add_string (b, "description", TEXT (2));
  json_builder_set_member_name (b, "publisher");
  json_builder_begin_object (b);
  ts_json_add_string (b, "id", TEXT (3));
  ts_json_add_string (b, "name", TEXT (4));
  json_builder_end_object (b);
  ts_json_add_string (b, "base_model", TEXT (5));
  ts_json_add_string (b, "base_model_sha256", TEXT (6));
  ts_json_add_string (b, "license", TEXT (7));
  ts_json_add_double (b, "price_per_1k_tokens", marketd_rows_double (rows, row, 8));
  ts_json_add_string (b, "format", TEXT (9));
  ts_json_add_int (b, "rank", marketd_rows_int64 (rows, row, 10));
  ts_json_add_double (b, "alpha", marketd_rows_double (rows, row, 11));
  marketd_builder_add_string_array_json (b, "tags", TEXT (12));
  marketd_builder_add_string_array_json (b, "keywords", TEXT (17));
  marketd_builder_add_string_array_json (b, "examples", TEXT (18));
  ts_json_add_string (b, "latest_version", TEXT (13));
  marketd_builder_add_string_array_json (b, "target_modules", TEXT (14));
  ts_json_add_int (b, "created_at", marketd_rows_int64 (rows, row, 15));
  ts_json_add_int (b, "updated_at", marketd_rows_int64 (rows, row, 16));
#undef TEXT
}

static gboolean
add_files (Marketd *self, JsonBuilder *b, const char *id, const char *version)
{
  MarketdValue params[] = { marketd_text (id), marketd_text (version) };
  g_autoptr(MarketdRows) s = marketd_store_query (
      self->store, "SELECT name, sha256, size FROM files WHERE adapter_id = ?1 AND "
      "version = ?2 ORDER BY name", params, G_N_ELEMENTS (params), NULL);

  if (s == NULL)
    return FALSE;
  json_builder_set_member_name (b, "files");
  json_builder_begin_array (b);
  for (guint r = 0; r < marketd_rows_count (s); r++)
    {
      const char *name = marketd_rows_text (s, r, 0);
      g_autofree char *url = g_strdup_printf ("/v1/adapters/%s/versions/%s/files/%s",
                                              id, version, name);
      json_builder_begin_object (b);
      ts_json_add_string (b, "name", name);
      ts_json_add_string (b, "sha256", marketd_rows_text (s, r, 1));
      ts_json_add_int (b, "size", marketd_rows_int64 (s, r, 2));
      ts_json_add_string (b, "url", url);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  return TRUE;
}

/* One version: shape, files, canonical manifest and its signature. */
static void
add_version (Marketd *self, JsonBuilder *b, const char *id, MarketdRows *v, guint row)
{
  const char *version = marketd_rows_text (v, row, 0);

  json_builder_begin_object (b);
  ts_json_add_string (b, "version", version);
  ts_json_add_int (b, "rank", marketd_rows_int64 (v, row, 1));
  ts_json_add_double (b, "alpha", marketd_rows_double (v, row, 2));
  marketd_builder_add_string_array_json (b, "target_modules", marketd_rows_text (v, row, 3));
  ts_json_add_int (b, "created_at", marketd_rows_int64 (v, row, 7));
  add_files (self, b, id, version);
  ts_json_add_string (b, "manifest", marketd_rows_text (v, row, 4));
  json_builder_set_member_name (b, "signature");
  json_builder_begin_object (b);
  ts_json_add_string (b, "algorithm", "ed25519");
  ts_json_add_string (b, "key_id", marketd_rows_text (v, row, 6));
  ts_json_add_string (b, "value", marketd_rows_text (v, row, 5));
  json_builder_end_object (b);
  json_builder_end_object (b);
}

static void
handle_details (Marketd *self, SoupServerMessage *msg, const char *id)
{
  MarketdValue params[] = { marketd_text (id) };
  g_autoptr(MarketdRows) a = NULL, v = NULL;
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(GError) error = NULL;

  a = marketd_store_query (self->store, "SELECT " MARKETD_SUMMARY_COLUMNS " FROM "
                           MARKETD_SUMMARY_FROM " WHERE a.id = ?1", params, 1, &error);
  if (a != NULL)
    v = marketd_store_query (self->store, "SELECT version, rank, alpha, target_modules, "
                             "manifest, signature, key_id, created_at FROM versions "
                             "WHERE adapter_id = ?1 ORDER BY created_at DESC, version DESC",
                             params, 1, &error);
  if (v == NULL)
    {
      g_message ("details: %s", error->message);
      marketd_reply_error (msg, 500, "internal", "Cannot read the catalogue");
      return;
    }
  if (marketd_rows_count (a) == 0)
    {
      marketd_reply_error (msg, 404, "not_found", "No adapter “%s”", id);
      return;
    }
  json_builder_begin_object (b);
  marketd_builder_add_summary (b, a, 0);
  json_builder_set_member_name (b, "versions");
  json_builder_begin_array (b);
  for (guint r = 0; r < marketd_rows_count (v); r++)
    add_version (self, b, id, v, r);
  json_builder_end_array (b);
  json_builder_end_object (b);
  marketd_reply_json (msg, 200, b);
}

static void
add_keys (JsonBuilder *b, MarketdRows *k)
{
  json_builder_set_member_name (b, "keys");
  json_builder_begin_array (b);
  for (guint r = 0; r < marketd_rows_count (k); r++)
    {
      json_builder_begin_object (b);
      ts_json_add_string (b, "key_id", marketd_rows_text (k, r, 0));
      ts_json_add_string (b, "algorithm", marketd_rows_text (k, r, 1));
      ts_json_add_string (b, "public_key", marketd_rows_text (k, r, 2));
      ts_json_add_int (b, "created_at", marketd_rows_int64 (k, r, 3));
      ts_json_add_boolean (b, "revoked", marketd_rows_int64 (k, r, 4) != 0);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
}

static void
handle_keys (Marketd *self, SoupServerMessage *msg, const char *publisher)
{
  MarketdValue params[] = { marketd_text (publisher) };
  g_autoptr(MarketdRows) p = NULL, k = NULL;
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(GError) error = NULL;

  p = marketd_store_query (self->store, "SELECT id, name FROM publishers WHERE id = ?1",
                           params, 1, &error);
  if (p != NULL)
    k = marketd_store_query (self->store, "SELECT key_id, algorithm, public_key, created_at, "
                             "revoked FROM publisher_keys WHERE publisher_id = ?1 "
                             "ORDER BY created_at, key_id", params, 1, &error);
  if (k == NULL)
    {
      g_message ("keys: %s", error->message);
      marketd_reply_error (msg, 500, "internal", "Cannot read the publishers");
      return;
    }
  if (marketd_rows_count (p) == 0)
    {
      marketd_reply_error (msg, 404, "not_found", "No publisher “%s”", publisher);
      return;
    }
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "publisher");
  json_builder_begin_object (b);
  ts_json_add_string (b, "id", marketd_rows_text (p, 0, 0));
  ts_json_add_string (b, "name", marketd_rows_text (p, 0, 1));
  json_builder_end_object (b);
  add_keys (b, k);
  json_builder_end_object (b);
  marketd_reply_json (msg, 200, b);
}

static gboolean
method_is (SoupServerMessage *msg, const char *allowed)
{
  const char *m = soup_server_message_get_method (msg);

  if (strcmp (m, allowed) == 0 || (strcmp (allowed, "GET") == 0 && strcmp (m, "HEAD") == 0))
    return TRUE;
  soup_message_headers_replace (soup_server_message_get_response_headers (msg), "Allow",
                                strcmp (allowed, "GET") == 0 ? "GET, HEAD" : allowed);
  marketd_reply_error (msg, 405, "method_not_allowed", "Use %s here", allowed);
  return FALSE;
}

/* Splits the path under @prefix into percent-decoded segments, each of which
 * must be a safe name; NULL when any is not. */
static GStrv
path_segments (const char *path, const char *prefix)
{
  g_auto(GStrv) raw = g_strsplit (path + strlen (prefix), "/", 16);
  g_autoptr(GStrvBuilder) out = g_strv_builder_new ();

  for (char **s = raw; *s; s++)
    {
      g_autofree char *seg = g_uri_unescape_string (*s, "/");
      if (seg == NULL || !ts_market_name_is_safe (seg))
        return NULL;
      g_strv_builder_add (out, seg);
    }
  return g_strv_builder_end (out);
}

static void
adapters_cb (SoupServer *server, SoupServerMessage *msg, const char *path,
             GHashTable *query, gpointer user_data)
{
  Marketd *self = user_data;
  g_auto(GStrv) seg = NULL;
  guint n;

  if (!method_is (msg, "GET"))
    return;
  if (strcmp (path, "/v1/adapters") == 0 || strcmp (path, "/v1/adapters/") == 0)
    {
      marketd_handle_search (self, msg, query);
      return;
    }
  seg = path_segments (path, "/v1/adapters/");
  n = seg ? g_strv_length (seg) : 0;
  if (n == 1)
    {
      handle_details (self, msg, seg[0]);
      return;
    }
  if (n == 5 && strcmp (seg[1], "versions") == 0 && strcmp (seg[3], "files") == 0)
    {
      marketd_handle_file (self, msg, seg[0], seg[2], seg[4]);
      return;
    }
  marketd_reply_error (msg, 404, "not_found", "No such resource");
}

static void
publishers_cb (SoupServer *server, SoupServerMessage *msg, const char *path,
               GHashTable *query, gpointer user_data)
{
  g_auto(GStrv) seg = path_segments (path, "/v1/publishers/");

  if (!method_is (msg, "GET"))
    return;
  if (seg != NULL && g_strv_length (seg) == 2 && strcmp (seg[1], "keys") == 0)
    {
      handle_keys (user_data, msg, seg[0]);
      return;
    }
  marketd_reply_error (msg, 404, "not_found", "No such resource");
}

static void
usage_cb (SoupServer *server, SoupServerMessage *msg, const char *path,
          GHashTable *query, gpointer user_data)
{
  if (strcmp (path, "/v1/usage") != 0)
    {
      marketd_reply_error (msg, 404, "not_found", "No such resource");
      return;
    }
  if (method_is (msg, "POST"))
    marketd_handle_usage (user_data, msg);
}

static void
healthz_cb (SoupServer *server, SoupServerMessage *msg, const char *path,
            GHashTable *query, gpointer user_data)
{
  Marketd *self = user_data;
  g_autoptr(JsonBuilder) b = json_builder_new ();

  json_builder_begin_object (b);
  ts_json_add_string (b, "status", "ok");
  ts_json_add_string (b, "version", ts_version ());
  ts_json_add_int (b, "schema_version", marketd_store_schema_version (self->store));
  json_builder_end_object (b);
  marketd_reply_json (msg, 200, b);
}

static void
not_found_cb (SoupServer *server, SoupServerMessage *msg, const char *path,
              GHashTable *query, gpointer user_data)
{
  marketd_reply_error (msg, 404, "not_found", "No such resource");
}

/* Runs once the headers are in, before any body is read: bodies are refused
 * when too large or of unknown length, so no client can make us buffer more
 * than MARKETD_MAX_REQUEST_BODY. */
static void
limits_cb (SoupServer *server, SoupServerMessage *msg, const char *path,
           GHashTable *query, gpointer user_data)
{
  SoupMessageHeaders *h = soup_server_message_get_request_headers (msg);
  SoupEncoding enc = soup_message_headers_get_encoding (h);

  if (enc == SOUP_ENCODING_CHUNKED || enc == SOUP_ENCODING_EOF)
    marketd_reply_error (msg, 411, "length_required", "Send a Content-Length");
  else if (enc == SOUP_ENCODING_CONTENT_LENGTH
           && soup_message_headers_get_content_length (h) > MARKETD_MAX_REQUEST_BODY)
    marketd_reply_error (msg, 413, "too_large", "Request bodies are limited to %d bytes",
                         MARKETD_MAX_REQUEST_BODY);
}

/* A connection idle for io_timeout_s is dropped, so slow or stuck peers
 * cannot hold sockets forever. */
static void
request_started_cb (SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
  Marketd *self = user_data;
  GSocket *sock = server_message_socket (msg);

  if (sock != NULL)
    g_socket_set_timeout (sock, self->io_timeout_s);
}

void
marketd_routes_install (Marketd *self)
{
  static const struct
  {
    const char        *path;
    SoupServerCallback callback;
  } routes[] = {
    { NULL, not_found_cb },
    { "/healthz", healthz_cb },
    { "/v1/adapters", adapters_cb },
    { "/v1/publishers", publishers_cb },
    { "/v1/usage", usage_cb },
  };

  /* libsoup keeps one early handler per path, so each path gets the limits. */
  for (guint i = 0; i < G_N_ELEMENTS (routes); i++)
    {
      soup_server_add_early_handler (self->server, routes[i].path, limits_cb, self, NULL);
      soup_server_add_handler (self->server, routes[i].path, routes[i].callback, self, NULL);
    }
  g_signal_connect (self->server, "request-started", G_CALLBACK (request_started_cb), self);
}
