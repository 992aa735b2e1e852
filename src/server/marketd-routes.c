/* marketd-routes.c: HTTP routes of tensafe-marketd (details, keys, health) and request limits.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"
#include "server-listen.h"
#include "ts-market-json.h"

#include <string.h>

#include "ts-core.h"
#include "ts-market-manifest.h"

void
marketd_builder_add_summary (JsonBuilder *b, sqlite3_stmt *row)
{
#define TEXT(i) ((const char *) sqlite3_column_text (row, i))
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
  ts_json_add_double (b, "price_per_1k_tokens", sqlite3_column_double (row, 8));
  ts_json_add_string (b, "format", TEXT (9));
  ts_json_add_int (b, "rank", sqlite3_column_int64 (row, 10));
  ts_json_add_double (b, "alpha", sqlite3_column_double (row, 11));
  marketd_builder_add_string_array_json (b, "tags", TEXT (12));
  ts_json_add_string (b, "latest_version", TEXT (13));
  marketd_builder_add_string_array_json (b, "target_modules", TEXT (14));
  ts_json_add_int (b, "created_at", sqlite3_column_int64 (row, 15));
  ts_json_add_int (b, "updated_at", sqlite3_column_int64 (row, 16));
#undef TEXT
}

static gboolean
add_files (Marketd *self, JsonBuilder *b, const char *id, const char *version)
{
  g_autoptr(sqlite3_stmt) s = NULL;

  if (sqlite3_prepare_v2 (self->db, "SELECT name, sha256, size FROM files WHERE "
                          "adapter_id = ?1 AND version = ?2 ORDER BY name", -1, &s,
                          NULL) != SQLITE_OK)
    return FALSE;
  sqlite3_bind_text (s, 1, id, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (s, 2, version, -1, SQLITE_TRANSIENT);
  json_builder_set_member_name (b, "files");
  json_builder_begin_array (b);
  while (sqlite3_step (s) == SQLITE_ROW)
    {
      const char *name = (const char *) sqlite3_column_text (s, 0);
      g_autofree char *url = g_strdup_printf ("/v1/adapters/%s/versions/%s/files/%s",
                                              id, version, name);
      json_builder_begin_object (b);
      ts_json_add_string (b, "name", name);
      ts_json_add_string (b, "sha256", (const char *) sqlite3_column_text (s, 1));
      ts_json_add_int (b, "size", sqlite3_column_int64 (s, 2));
      ts_json_add_string (b, "url", url);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  return TRUE;
}

/* One version: shape, files, canonical manifest and its signature. */
static void
add_version (Marketd *self, JsonBuilder *b, const char *id, sqlite3_stmt *v)
{
  const char *version = (const char *) sqlite3_column_text (v, 0);

  json_builder_begin_object (b);
  ts_json_add_string (b, "version", version);
  ts_json_add_int (b, "rank", sqlite3_column_int64 (v, 1));
  ts_json_add_double (b, "alpha", sqlite3_column_double (v, 2));
  marketd_builder_add_string_array_json (b, "target_modules",
                                         (const char *) sqlite3_column_text (v, 3));
  ts_json_add_int (b, "created_at", sqlite3_column_int64 (v, 7));
  add_files (self, b, id, version);
  ts_json_add_string (b, "manifest", (const char *) sqlite3_column_text (v, 4));
  json_builder_set_member_name (b, "signature");
  json_builder_begin_object (b);
  ts_json_add_string (b, "algorithm", "ed25519");
  ts_json_add_string (b, "key_id", (const char *) sqlite3_column_text (v, 6));
  ts_json_add_string (b, "value", (const char *) sqlite3_column_text (v, 5));
  json_builder_end_object (b);
  json_builder_end_object (b);
}

static void
handle_details (Marketd *self, SoupServerMessage *msg, const char *id)
{
  g_autoptr(sqlite3_stmt) a = NULL, v = NULL;
  g_autoptr(JsonBuilder) b = json_builder_new ();

  if (sqlite3_prepare_v2 (self->db, "SELECT " MARKETD_SUMMARY_COLUMNS " FROM "
                          MARKETD_SUMMARY_FROM " WHERE a.id = ?1", -1, &a, NULL) != SQLITE_OK
      || sqlite3_prepare_v2 (self->db, "SELECT version, rank, alpha, target_modules, "
                             "manifest, signature, key_id, created_at FROM versions "
                             "WHERE adapter_id = ?1 ORDER BY created_at DESC, version DESC",
                             -1, &v, NULL) != SQLITE_OK)
    {
      marketd_reply_error (msg, 500, "internal", "Cannot read the catalogue");
      return;
    }
  sqlite3_bind_text (a, 1, id, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (v, 1, id, -1, SQLITE_TRANSIENT);
  if (sqlite3_step (a) != SQLITE_ROW)
    {
      marketd_reply_error (msg, 404, "not_found", "No adapter “%s”", id);
      return;
    }
  json_builder_begin_object (b);
  marketd_builder_add_summary (b, a);
  json_builder_set_member_name (b, "versions");
  json_builder_begin_array (b);
  while (sqlite3_step (v) == SQLITE_ROW)
    add_version (self, b, id, v);
  json_builder_end_array (b);
  json_builder_end_object (b);
  marketd_reply_json (msg, 200, b);
}

static void
handle_keys (Marketd *self, SoupServerMessage *msg, const char *publisher)
{
  g_autoptr(sqlite3_stmt) p = NULL, k = NULL;
  g_autoptr(JsonBuilder) b = json_builder_new ();

  if (sqlite3_prepare_v2 (self->db, "SELECT id, name FROM publishers WHERE id = ?1", -1,
                          &p, NULL) != SQLITE_OK
      || sqlite3_prepare_v2 (self->db, "SELECT key_id, algorithm, public_key, created_at, "
                             "revoked FROM publisher_keys WHERE publisher_id = ?1 "
                             "ORDER BY created_at, key_id", -1, &k, NULL) != SQLITE_OK)
    {
      marketd_reply_error (msg, 500, "internal", "Cannot read the publishers");
      return;
    }
  sqlite3_bind_text (p, 1, publisher, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text (k, 1, publisher, -1, SQLITE_TRANSIENT);
  if (sqlite3_step (p) != SQLITE_ROW)
    {
      marketd_reply_error (msg, 404, "not_found", "No publisher “%s”", publisher);
      return;
    }
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "publisher");
  json_builder_begin_object (b);
  ts_json_add_string (b, "id", (const char *) sqlite3_column_text (p, 0));
  ts_json_add_string (b, "name", (const char *) sqlite3_column_text (p, 1));
  json_builder_end_object (b);
  json_builder_set_member_name (b, "keys");
  json_builder_begin_array (b);
  while (sqlite3_step (k) == SQLITE_ROW)
    {
      json_builder_begin_object (b);
      ts_json_add_string (b, "key_id", (const char *) sqlite3_column_text (k, 0));
      ts_json_add_string (b, "algorithm", (const char *) sqlite3_column_text (k, 1));
      ts_json_add_string (b, "public_key", (const char *) sqlite3_column_text (k, 2));
      ts_json_add_int (b, "created_at", sqlite3_column_int64 (k, 3));
      ts_json_add_boolean (b, "revoked", sqlite3_column_int (k, 4) != 0);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
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
  ts_json_add_int (b, "schema_version", marketd_db_schema_version (self->db));
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
