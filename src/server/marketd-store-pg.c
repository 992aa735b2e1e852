/* marketd-store-pg.c: the PostgreSQL back end of the marketd store (libpq, prepared statements).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd-store.h"

#include <libpq-fe.h>
#include <stdlib.h>
#include <string.h>

#include "ts-market-error.h"

/* Advisory lock keys: one for schema migrations, one for catalogue writes.
 * Every tensafe-marketd on the database uses the same numbers. */
#define LOCK_MIGRATIONS G_GINT64_CONSTANT (0x74536d6b01)
#define LOCK_CATALOGUE  G_GINT64_CONSTANT (0x74536d6b02)

/* Type OIDs of the parameters (pg_type.h). */
#define OID_INT8   20
#define OID_TEXT   25
#define OID_FLOAT8 701

typedef struct
{
  MarketdStore parent;
  PGconn      *conn;
  GHashTable  *prepared;   /* SQL and parameter types → statement name */
  guint        n_prepared;
} PgStore;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (PGresult, PQclear)

static void
set_error (GError **error, const char *what, const char *detail)
{
  g_autofree char *text = g_strdup (detail ? detail : "unknown error");

  g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO, "%s: %s", what, g_strchomp (text));
}

/* Notices (such as "the query holds only stop words") are not for stderr. */
static void
ignore_notice (void *arg, const char *message)
{
}

/* A server restart or a dropped connection is repaired before the next
 * statement; the statements prepared on the old one are gone with it. */
static gboolean
ensure_connected (PgStore *self, GError **error)
{
  if (PQstatus (self->conn) == CONNECTION_OK)
    return TRUE;
  PQreset (self->conn);
  g_hash_table_remove_all (self->prepared);
  if (PQstatus (self->conn) != CONNECTION_OK)
    {
      set_error (error, "Cannot reach the database", PQerrorMessage (self->conn));
      return FALSE;
    }
  return TRUE;
}

/* ?N placeholders become $N; quoted strings and identifiers are copied as they are. */
static char *
dollar_placeholders (const char *sql)
{
  GString *out = g_string_sized_new (strlen (sql));
  char quote = 0;

  for (const char *p = sql; *p; p++)
    {
      if (quote != 0 && *p == quote)
        quote = 0;
      else if (quote == 0 && (*p == '\'' || *p == '"'))
        quote = *p;
      if (quote == 0 && *p == '?' && g_ascii_isdigit (p[1]))
        g_string_append_c (out, '$');
      else
        g_string_append_c (out, *p);
    }
  return g_string_free (out, FALSE);
}

static Oid
type_oid (MarketdType type)
{
  return type == MARKETD_TYPE_TEXT ? OID_TEXT : type == MARKETD_TYPE_INT64 ? OID_INT8 : OID_FLOAT8;
}

/* The name of the statement prepared for @sql with these parameter types. */
static const char *
prepare (PgStore *self, const char *sql, const MarketdValue *params, guint n, GError **error)
{
  g_autoptr(GString) key = g_string_new (sql);
  g_autofree Oid *types = g_new0 (Oid, n + 1);
  g_autofree char *pg_sql = NULL;
  g_autoptr(PGresult) res = NULL;
  const char *name;
  char *new_name;

  g_string_append_c (key, '\x1f');
  for (guint i = 0; i < n; i++)
    {
      types[i] = type_oid (params[i].type);
      g_string_append_c (key, "tid"[params[i].type]);
    }
  name = g_hash_table_lookup (self->prepared, key->str);
  if (name != NULL)
    return name;
  new_name = g_strdup_printf ("marketd_%u", ++self->n_prepared);
  pg_sql = dollar_placeholders (sql);
  res = PQprepare (self->conn, new_name, pg_sql, (int) n, types);
  if (PQresultStatus (res) != PGRES_COMMAND_OK)
    {
      set_error (error, "Cannot prepare a statement", PQresultErrorMessage (res));
      g_free (new_name);
      return NULL;
    }
  g_hash_table_insert (self->prepared, g_string_free (g_steal_pointer (&key), FALSE), new_name);
  return new_name;
}

/* Parameters travel as text; each one's type was fixed when it was prepared. */
static char *
value_text (const MarketdValue *v)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  if (v->is_null)
    return NULL;
  if (v->type == MARKETD_TYPE_TEXT)
    return g_strdup (v->text);
  if (v->type == MARKETD_TYPE_INT64)
    return g_strdup_printf ("%" G_GINT64_FORMAT, v->i);
  return g_strdup (g_ascii_dtostr (buf, sizeof buf, v->d));
}

static MarketdRows *
rows_from_result (PGresult *res)
{
  MarketdRows *rows = marketd_rows_new (PQnfields (res));
  const char *tuples = PQcmdTuples (res);

  for (int r = 0; r < PQntuples (res); r++)
    for (int c = 0; c < PQnfields (res); c++)
      marketd_rows_append_text (rows, PQgetisnull (res, r, c) ? NULL
                                                               : g_strdup (PQgetvalue (res, r, c)));
  if (tuples != NULL && *tuples != '\0')
    marketd_rows_set_changes (rows, g_ascii_strtoll (tuples, NULL, 10));
  return rows;
}

static MarketdRows *
pg_query (MarketdStore *store, const char *sql, const MarketdValue *params, guint n_params,
          GError **error)
{
  PgStore *self = (PgStore *) store;
  g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(PGresult) res = NULL;
  const char *name;

  if (!ensure_connected (self, error) || !(name = prepare (self, sql, params, n_params, error)))
    return NULL;
  for (guint i = 0; i < n_params; i++)
    g_ptr_array_add (texts, value_text (&params[i]));
  res = PQexecPrepared (self->conn, name, (int) n_params, (const char * const *) texts->pdata,
                        NULL, NULL, 0);
  if (PQresultStatus (res) != PGRES_TUPLES_OK && PQresultStatus (res) != PGRES_COMMAND_OK)
    {
      set_error (error, "Database error", PQresultErrorMessage (res));
      return NULL;
    }
  return rows_from_result (res);
}

static gboolean
pg_exec (MarketdStore *store, const char *sql, GError **error)
{
  PgStore *self = (PgStore *) store;
  g_autoptr(PGresult) res = NULL;

  if (!ensure_connected (self, error))
    return FALSE;
  res = PQexec (self->conn, sql);
  if (PQresultStatus (res) != PGRES_COMMAND_OK && PQresultStatus (res) != PGRES_TUPLES_OK)
    {
      set_error (error, "SQL error", PQresultErrorMessage (res));
      return FALSE;
    }
  return TRUE;
}

static gboolean
advisory_lock (MarketdStore *store, const char *function, gint64 key, GError **error)
{
  g_autofree char *sql = g_strdup_printf ("SELECT %s(%" G_GINT64_FORMAT ")", function, key);

  return pg_exec (store, sql, error);
}

/* Usage rows need no lock: a unique key and ON CONFLICT keep them exactly
 * once.  Catalogue writes read before they write (is this version new?), so
 * they take turns across every process on the database. */
static gboolean
pg_begin (MarketdStore *store, gboolean catalogue, GError **error)
{
  if (!pg_exec (store, "BEGIN", error))
    return FALSE;
  if (catalogue && !advisory_lock (store, "pg_advisory_xact_lock", LOCK_CATALOGUE, error))
    {
      pg_exec (store, "ROLLBACK", NULL);
      return FALSE;
    }
  return TRUE;
}

static int
pg_schema_version (MarketdStore *store)
{
  g_autoptr(MarketdRows) exists = NULL, version = NULL;

  exists = pg_query (store, "SELECT to_regclass('schema_version') IS NOT NULL", NULL, 0, NULL);
  if (exists == NULL || marketd_rows_count (exists) != 1)
    return -1;
  if (g_strcmp0 (marketd_rows_text (exists, 0, 0), "t") != 0)
    return 0;
  version = pg_query (store, "SELECT coalesce(max(version), 0) FROM schema_version", NULL, 0,
                      NULL);
  if (version == NULL || marketd_rows_count (version) != 1)
    return -1;
  return (int) marketd_rows_int64 (version, 0, 0);
}

static gboolean
pg_apply_migration (MarketdStore *store, int number, const char *sql, GError **error)
{
  g_autofree char *record = g_strdup_printf (
      "INSERT INTO schema_version (version, applied_at) VALUES (%d, "
      "extract(epoch FROM now())::bigint)", number);

  /* The schema change and its version number land in one transaction. */
  if (!pg_exec (store, "BEGIN", error))
    return FALSE;
  if (!pg_exec (store, "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY "
                "KEY, applied_at BIGINT NOT NULL)", error)
      || !pg_exec (store, sql, error) || !pg_exec (store, record, error))
    {
      pg_exec (store, "ROLLBACK", NULL);
      return FALSE;
    }
  return pg_exec (store, "COMMIT", error);
}

/* Two servers started together on a new database: one migrates, the other
 * waits, then finds the schema current. */
static gboolean
pg_lock_migrations (MarketdStore *store, gboolean lock, GError **error)
{
  return advisory_lock (store, lock ? "pg_advisory_lock" : "pg_advisory_unlock",
                        LOCK_MIGRATIONS, error);
}

static void
pg_close (MarketdStore *store)
{
  PgStore *self = (PgStore *) store;

  PQfinish (self->conn);
  g_hash_table_unref (self->prepared);
  g_free (self);
}

static const MarketdStoreOps pg_ops = {
  .query = pg_query,
  .exec = pg_exec,
  .begin = pg_begin,
  .schema_version = pg_schema_version,
  .apply_migration = pg_apply_migration,
  .lock_migrations = pg_lock_migrations,
  .close = pg_close,
};

/* The URL without its password, for messages. */
static char *
url_for_messages (const char *url)
{
  g_autoptr(GUri) uri = g_uri_parse (url, G_URI_FLAGS_HAS_PASSWORD | G_URI_FLAGS_ENCODED, NULL);

  if (uri == NULL)
    return g_strdup ("the PostgreSQL URL");
  return g_uri_to_string_partial (uri, G_URI_HIDE_PASSWORD);
}

MarketdStore *
marketd_store_pg_open (const char *url, GError **error)
{
  g_autoptr(MarketdStore) store = NULL;
  PgStore *self;

  store = (MarketdStore *) g_new0 (PgStore, 1);
  store->ops = &pg_ops;
  store->dialect = MARKETD_DIALECT_POSTGRESQL;
  self = (PgStore *) store;
  self->prepared = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->conn = PQconnectdb (url);
  if (PQstatus (self->conn) != CONNECTION_OK)
    {
      g_autofree char *shown = url_for_messages (url);
      set_error (error, "Cannot connect to the database", PQerrorMessage (self->conn));
      g_prefix_error (error, "%s: ", shown);
      return NULL;
    }
  PQsetNoticeProcessor (self->conn, ignore_notice, NULL);
  if (!pg_exec (store, "SET client_min_messages = warning", error))
    return NULL;
  return g_steal_pointer (&store);
}
