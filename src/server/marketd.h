/* marketd.h: state shared by the parts of tensafe-marketd (database, import, routes).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <libsoup/soup.h>

#include "marketd-store.h"

G_BEGIN_DECLS

/* Largest request body accepted (bytes); usage batches are far smaller. */
#define MARKETD_MAX_REQUEST_BODY (64 * 1024)
/* Default seconds a connection may stay idle (reading or writing) before it is closed. */
#define MARKETD_IO_TIMEOUT_S 30

/* One server.  Every field is touched only from the main thread: libsoup
 * dispatches handlers there, and the store runs on that one connection. */
typedef struct
{
  MarketdStore *store;
  char       *blobs_dir;
  char       *keys_dir;
  GHashTable *tokens;     /* SHA-256 hex of a bearer token → account name */
  SoupServer *server;
  guint       io_timeout_s;
} Marketd;

/* marketd-blobs.c */
char *marketd_blob_path (Marketd *self, const char *sha256);
gboolean marketd_blob_store (Marketd *self, const char *src_path, char **sha256_out,
                             gint64 *size_out, GError **error);

/* marketd-import.c */
gboolean marketd_import_dir (Marketd *self, const char *dir, guint *n_imported,
                             GError **error);

/* marketd-tokens.c */
gboolean marketd_tokens_load (Marketd *self, const char *path, GError **error);
const char *marketd_tokens_lookup (Marketd *self, const char *token);

/* marketd-reply.c: JSON answers, errors as {"error": {"code", "message"}}. */
#include <json-glib/json-glib.h>
void marketd_reply_json (SoupServerMessage *msg, guint status, JsonBuilder *builder);
void marketd_reply_error (SoupServerMessage *msg, guint status, const char *code,
                          const char *format, ...) G_GNUC_PRINTF (4, 5);
void marketd_builder_add_string_array_json (JsonBuilder *b, const char *member,
                                            const char *json_array_text);

/* marketd-search.c: GET /v1/adapters */
void marketd_handle_search (Marketd *self, SoupServerMessage *msg, GHashTable *query);
/* Turns user text into a safe full-text query for @dialect: every term
 * quoted, the last one a prefix (FTS5 for SQLite, to_tsquery text for
 * PostgreSQL); NULL when the text holds no searchable term. */
char *marketd_fts_query_from_user_text (const char *text, MarketdDialect dialect);
/* The columns an adapter summary is built from, in this order, from
 * "adapters a JOIN publishers p JOIN versions v" (v = the latest version). */
#define MARKETD_SUMMARY_COLUMNS \
  "a.id, a.name, a.description, a.publisher_id, p.name, a.base_model, " \
  "a.base_model_sha256, a.license, a.price_per_1k_tokens, a.format, a.rank, a.alpha, " \
  "a.tags, a.latest_version, v.target_modules, a.created_at, a.updated_at, a.keywords, " \
  "a.examples"
#define MARKETD_SUMMARY_N_COLUMNS 19
#define MARKETD_SUMMARY_FROM \
  "adapters a JOIN publishers p ON p.id = a.publisher_id " \
  "JOIN versions v ON v.adapter_id = a.id AND v.version = a.latest_version"
/* Adds the summary members (inside an open object) from @row of @rows, whose
 * first columns are MARKETD_SUMMARY_COLUMNS. */
void marketd_builder_add_summary (JsonBuilder *b, MarketdRows *rows, guint row);

/* marketd-files.c: GET /v1/adapters/{id}/versions/{v}/files/{name} */
void marketd_handle_file (Marketd *self, SoupServerMessage *msg, const char *id,
                          const char *version, const char *name);

/* marketd-usage.c: POST /v1/usage */
void marketd_handle_usage (Marketd *self, SoupServerMessage *msg);

/* marketd-migrate.c: tensafe-marketd migrate --from FILE --to URL */
int marketd_migrate_main (int argc, char **argv);

/* marketd-routes.c */
void marketd_routes_install (Marketd *self);

G_END_DECLS
