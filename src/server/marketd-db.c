/* marketd-db.c: the SQLite connection of tensafe-marketd and its numbered migrations.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"

#include <stdlib.h>
#include <string.h>

#include "ts-market-error.h"

#define MIGRATIONS_PATH "/org/tensafe/marketd/migrations/"

void
marketd_db_set_error (sqlite3 *db, GError **error, const char *what)
{
  g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO, "%s: %s", what,
               db ? sqlite3_errmsg (db) : "out of memory");
}

gboolean
marketd_db_exec (sqlite3 *db, const char *sql, GError **error)
{
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

sqlite3_stmt *
marketd_db_prepare (sqlite3 *db, const char *sql, GError **error)
{
  sqlite3_stmt *stmt = NULL;

  if (sqlite3_prepare_v2 (db, sql, -1, &stmt, NULL) != SQLITE_OK)
    {
      marketd_db_set_error (db, error, "Cannot prepare a statement");
      return NULL;
    }
  return stmt;
}

gboolean
marketd_db_step_done (sqlite3 *db, sqlite3_stmt *stmt, GError **error)
{
  if (sqlite3_step (stmt) != SQLITE_DONE)
    {
      marketd_db_set_error (db, error, "Cannot write to the database");
      return FALSE;
    }
  return TRUE;
}

sqlite3 *
marketd_db_open (const char *path, GError **error)
{
  sqlite3 *db = NULL;

  if (sqlite3_open_v2 (path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
                       | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
    {
      marketd_db_set_error (db, error, "Cannot open the database");
      g_prefix_error (error, "%s: ", path);
      sqlite3_close (db);
      return NULL;
    }
  sqlite3_busy_timeout (db, 5000);
  if (!marketd_db_exec (db, "PRAGMA journal_mode = WAL; PRAGMA foreign_keys = ON;"
                        "PRAGMA synchronous = NORMAL;", error))
    {
      sqlite3_close (db);
      return NULL;
    }
  return db;
}

int
marketd_db_schema_version (sqlite3 *db)
{
  g_autoptr(sqlite3_stmt) stmt = NULL;

  if (sqlite3_prepare_v2 (db, "PRAGMA user_version", -1, &stmt, NULL) != SQLITE_OK
      || sqlite3_step (stmt) != SQLITE_ROW)
    return -1;
  return sqlite3_column_int (stmt, 0);
}

/* A migration's number is the decimal prefix of its file name ("0002-usage.sql"). */
static int
migration_number (const char *name)
{
  char *end = NULL;
  long n = strtol (name, &end, 10);

  return end != name && *end == '-' && n > 0 && n < G_MAXINT ? (int) n : -1;
}

static int
compare_names (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char * const *) a, *(char * const *) b);
}

static gboolean
apply_migration (sqlite3 *db, const char *name, int number, GError **error)
{
  g_autofree char *path = g_strconcat (MIGRATIONS_PATH, name, NULL);
  g_autoptr(GBytes) sql = g_resources_lookup_data (path, 0, error);
  g_autofree char *text = NULL;
  g_autofree char *set_version = NULL;

  if (sql == NULL)
    return FALSE;
  text = g_strndup (g_bytes_get_data (sql, NULL), g_bytes_get_size (sql));
  set_version = g_strdup_printf ("PRAGMA user_version = %d;", number);
  /* The schema change and its version number land in one transaction. */
  if (!marketd_db_exec (db, "BEGIN IMMEDIATE;", error))
    return FALSE;
  if (!marketd_db_exec (db, text, error) || !marketd_db_exec (db, set_version, error))
    {
      sqlite3_exec (db, "ROLLBACK;", NULL, NULL, NULL);
      g_prefix_error (error, "Migration %s failed: ", name);
      return FALSE;
    }
  return marketd_db_exec (db, "COMMIT;", error);
}

gboolean
marketd_db_migrate (sqlite3 *db, GError **error)
{
  g_auto(GStrv) names = g_resources_enumerate_children (MIGRATIONS_PATH, 0, error);
  int current = marketd_db_schema_version (db);

  if (names == NULL)
    return FALSE;
  qsort (names, g_strv_length (names), sizeof (char *), compare_names);
  for (char **n = names; *n; n++)
    {
      int number = migration_number (*n);
      if (number < 0 || !g_str_has_suffix (*n, ".sql"))
        continue;
      if (number <= current)
        continue;
      if (number != current + 1)
        {
          g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                       "Migration %s skips a number (schema is at %d)", *n, current);
          return FALSE;
        }
      if (!apply_migration (db, *n, number, error))
        return FALSE;
      current = number;
    }
  if (current > (int) g_strv_length (names))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                   "The database schema (%d) is newer than this server knows", current);
      return FALSE;
    }
  return TRUE;
}
