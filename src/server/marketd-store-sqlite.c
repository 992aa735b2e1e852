/* marketd-store-sqlite.c: the SQLite back end of the marketd store (one file, one connection).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd-store.h"

#include <sqlite3.h>

#include "ts-market-error.h"

typedef struct
{
  MarketdStore parent;
  sqlite3     *db;
} SqliteStore;

G_DEFINE_AUTOPTR_CLEANUP_FUNC (sqlite3_stmt, sqlite3_finalize)

static void
set_error (sqlite3 *db, GError **error, const char *what)
{
  g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO, "%s: %s", what,
               db ? sqlite3_errmsg (db) : "out of memory");
}

static gboolean
sqlite_exec (MarketdStore *store, const char *sql, GError **error)
{
  sqlite3 *db = ((SqliteStore *) store)->db;
  char *msg = NULL;

  if (sqlite3_exec (db, sql, NULL, NULL, &msg) != SQLITE_OK)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO, "SQL error: %s",
                   msg ? msg : "unknown");
      sqlite3_free (msg);
      return FALSE;
    }
  return TRUE;
}

static void
bind_value (sqlite3_stmt *s, int i, const MarketdValue *v)
{
  if (v->is_null)
    sqlite3_bind_null (s, i);
  else if (v->type == MARKETD_TYPE_TEXT)
    sqlite3_bind_text (s, i, v->text, -1, SQLITE_TRANSIENT);
  else if (v->type == MARKETD_TYPE_INT64)
    sqlite3_bind_int64 (s, i, v->i);
  else
    sqlite3_bind_double (s, i, v->d);
}

static void
append_column (MarketdRows *rows, sqlite3_stmt *s, int col)
{
  switch (sqlite3_column_type (s, col))
    {
    case SQLITE_NULL:
      marketd_rows_append_text (rows, NULL);
      break;
    case SQLITE_INTEGER:
      marketd_rows_append_int64 (rows, sqlite3_column_int64 (s, col));
      break;
    case SQLITE_FLOAT:
      marketd_rows_append_double (rows, sqlite3_column_double (s, col));
      break;
    default:
      marketd_rows_append_text (rows, g_strdup ((const char *) sqlite3_column_text (s, col)));
    }
}

static MarketdRows *
sqlite_query (MarketdStore *store, const char *sql, const MarketdValue *params,
              guint n_params, GError **error)
{
  sqlite3 *db = ((SqliteStore *) store)->db;
  g_autoptr(sqlite3_stmt) s = NULL;
  g_autoptr(MarketdRows) rows = NULL;
  int rc, n_cols;

  if (sqlite3_prepare_v2 (db, sql, -1, &s, NULL) != SQLITE_OK)
    {
      set_error (db, error, "Cannot prepare a statement");
      return NULL;
    }
  for (guint i = 0; i < n_params; i++)
    bind_value (s, (int) i + 1, &params[i]);
  n_cols = sqlite3_column_count (s);
  rows = marketd_rows_new (n_cols);
  while ((rc = sqlite3_step (s)) == SQLITE_ROW)
    for (int c = 0; c < n_cols; c++)
      append_column (rows, s, c);
  if (rc != SQLITE_DONE)
    {
      set_error (db, error, sqlite3_stmt_readonly (s) ? "Cannot read the database"
                                                      : "Cannot write to the database");
      return NULL;
    }
  marketd_rows_set_changes (rows, sqlite3_stmt_readonly (s) ? 0 : sqlite3_changes (db));
  return g_steal_pointer (&rows);
}

/* IMMEDIATE takes the write lock at once: a file has one writer at a time. */
static gboolean
sqlite_begin (MarketdStore *store, gboolean catalogue, GError **error)
{
  return sqlite_exec (store, "BEGIN IMMEDIATE;", error);
}

static int
sqlite_schema_version (MarketdStore *store)
{
  sqlite3 *db = ((SqliteStore *) store)->db;
  g_autoptr(sqlite3_stmt) stmt = NULL;

  if (sqlite3_prepare_v2 (db, "PRAGMA user_version", -1, &stmt, NULL) != SQLITE_OK
      || sqlite3_step (stmt) != SQLITE_ROW)
    return -1;
  return sqlite3_column_int (stmt, 0);
}

static gboolean
sqlite_apply_migration (MarketdStore *store, int number, const char *sql, GError **error)
{
  g_autofree char *set_version = g_strdup_printf ("PRAGMA user_version = %d;", number);

  /* The schema change and its version number land in one transaction. */
  if (!sqlite_exec (store, "BEGIN IMMEDIATE;", error))
    return FALSE;
  if (!sqlite_exec (store, sql, error) || !sqlite_exec (store, set_version, error))
    {
      sqlite_exec (store, "ROLLBACK;", NULL);
      return FALSE;
    }
  return sqlite_exec (store, "COMMIT;", error);
}

static gboolean
sqlite_lock_migrations (MarketdStore *store, gboolean lock, GError **error)
{
  return TRUE;
}

static void
sqlite_close (MarketdStore *store)
{
  sqlite3_close (((SqliteStore *) store)->db);
  g_free (store);
}

static const MarketdStoreOps sqlite_ops = {
  .query = sqlite_query,
  .exec = sqlite_exec,
  .begin = sqlite_begin,
  .schema_version = sqlite_schema_version,
  .apply_migration = sqlite_apply_migration,
  .lock_migrations = sqlite_lock_migrations,
  .close = sqlite_close,
};

MarketdStore *
marketd_store_sqlite_open (const char *path, GError **error)
{
  g_autoptr(MarketdStore) store = NULL;
  sqlite3 *db = NULL;

  if (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                       | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
    {
      set_error (db, error, "Cannot open the database");
      g_prefix_error (error, "%s: ", path);
      sqlite3_close (db);
      return NULL;
    }
  store = (MarketdStore *) g_new0 (SqliteStore, 1);
  store->ops = &sqlite_ops;
  store->dialect = MARKETD_DIALECT_SQLITE;
  ((SqliteStore *) store)->db = db;
  sqlite3_busy_timeout (db, 5000);
  if (!sqlite_exec (store, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;"
                    "PRAGMA synchronous = NORMAL;", error))
    return NULL;
  return g_steal_pointer (&store);
}
