/* marketd-store.c: what both database back ends share: choosing one, answers in
 * memory, and the numbered migrations of each dialect.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd-store.h"

#include <gio/gio.h>
#include <stdlib.h>
#include <string.h>

#include "ts-market-error.h"

#define MIGRATIONS_SQLITE "/org/tensafe/marketd/migrations/sqlite/"
#define MIGRATIONS_POSTGRESQL "/org/tensafe/marketd/migrations/postgresql/"

/* SQLite gives typed cells; PostgreSQL gives text, read as a number on demand. */
typedef struct
{
  char    *text;
  gboolean has_number;
  gint64   i;
  double   d;
} Cell;

struct _MarketdRows
{
  guint   n_cols;
  gint64  changes;
  GArray *cells;
};

gboolean
marketd_store_location_is_postgresql (const char *location)
{
  return g_str_has_prefix (location, "postgresql://") || g_str_has_prefix (location, "postgres://");
}

MarketdStore *
marketd_store_open (const char *location, GError **error)
{
  if (marketd_store_location_is_postgresql (location))
    return marketd_store_pg_open (location, error);
  return marketd_store_sqlite_open (location, error);
}

void
marketd_store_close (MarketdStore *store)
{
  if (store != NULL)
    store->ops->close (store);
}

MarketdRows *
marketd_store_query (MarketdStore *store, const char *sql, const MarketdValue *params,
                     guint n_params, GError **error)
{
  return store->ops->query (store, sql, params, n_params, error);
}

gboolean
marketd_store_exec (MarketdStore *store, const char *sql, GError **error)
{
  return store->ops->exec (store, sql, error);
}

gboolean
marketd_store_begin (MarketdStore *store, gboolean catalogue, GError **error)
{
  return store->ops->begin (store, catalogue, error);
}

gboolean
marketd_store_commit (MarketdStore *store, GError **error)
{
  return store->ops->exec (store, "COMMIT", error);
}

void
marketd_store_rollback (MarketdStore *store)
{
  store->ops->exec (store, "ROLLBACK", NULL);
}

const char *
marketd_store_sql (MarketdStore *store, const char *sqlite_sql, const char *postgresql_sql)
{
  return store->dialect == MARKETD_DIALECT_POSTGRESQL ? postgresql_sql : sqlite_sql;
}

int
marketd_store_schema_version (MarketdStore *store)
{
  return store->ops->schema_version (store);
}

/* ---- answers ---- */

static void
cell_clear (gpointer p)
{
  g_free (((Cell *) p)->text);
}

MarketdRows *
marketd_rows_new (guint n_cols)
{
  MarketdRows *rows = g_new0 (MarketdRows, 1);

  rows->n_cols = MAX (n_cols, 1);
  rows->cells = g_array_new (FALSE, TRUE, sizeof (Cell));
  g_array_set_clear_func (rows->cells, cell_clear);
  return rows;
}

void
marketd_rows_free (MarketdRows *rows)
{
  if (rows == NULL)
    return;
  g_array_unref (rows->cells);
  g_free (rows);
}

void
marketd_rows_append_text (MarketdRows *rows, char *text)
{
  Cell c = { .text = text };

  g_array_append_val (rows->cells, c);
}

void
marketd_rows_append_int64 (MarketdRows *rows, gint64 value)
{
  Cell c = { g_strdup_printf ("%" G_GINT64_FORMAT, value), TRUE, value, (double) value };

  g_array_append_val (rows->cells, c);
}

void
marketd_rows_append_double (MarketdRows *rows, double value)
{
  char buf[G_ASCII_DTOSTR_BUF_SIZE];
  Cell c = { g_strdup (g_ascii_dtostr (buf, sizeof buf, value)), TRUE, (gint64) value, value };

  g_array_append_val (rows->cells, c);
}

void
marketd_rows_set_changes (MarketdRows *rows, gint64 changes)
{
  rows->changes = changes;
}

guint
marketd_rows_count (MarketdRows *rows)
{
  return rows->cells->len / rows->n_cols;
}

gint64
marketd_rows_changes (MarketdRows *rows)
{
  return rows->changes;
}

static const Cell *
cell_at (MarketdRows *rows, guint row, guint col)
{
  g_return_val_if_fail (col < rows->n_cols && row < marketd_rows_count (rows), NULL);
  return &g_array_index (rows->cells, Cell, row * rows->n_cols + col);
}

gboolean
marketd_rows_is_null (MarketdRows *rows, guint row, guint col)
{
  const Cell *c = cell_at (rows, row, col);

  return c == NULL || c->text == NULL;
}

const char *
marketd_rows_text (MarketdRows *rows, guint row, guint col)
{
  const Cell *c = cell_at (rows, row, col);

  return c ? c->text : NULL;
}

gint64
marketd_rows_int64 (MarketdRows *rows, guint row, guint col)
{
  const Cell *c = cell_at (rows, row, col);

  if (c == NULL || c->text == NULL)
    return 0;
  return c->has_number ? c->i : g_ascii_strtoll (c->text, NULL, 10);
}

double
marketd_rows_double (MarketdRows *rows, guint row, guint col)
{
  const Cell *c = cell_at (rows, row, col);

  if (c == NULL || c->text == NULL)
    return 0;
  return c->has_number ? c->d : g_ascii_strtod (c->text, NULL);
}

/* ---- migrations ---- */

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

static const char *
migrations_path (MarketdStore *store)
{
  return marketd_store_sql (store, MIGRATIONS_SQLITE, MIGRATIONS_POSTGRESQL);
}

/* The dialect's migration files, in name order. */
static GStrv
migration_names (MarketdStore *store, GError **error)
{
  GStrv names = g_resources_enumerate_children (migrations_path (store), 0, error);

  if (names != NULL)
    qsort (names, g_strv_length (names), sizeof (char *), compare_names);
  return names;
}

int
marketd_store_latest_migration (MarketdStore *store)
{
  g_auto(GStrv) names = migration_names (store, NULL);
  int latest = 0;

  for (char **n = names; n && *n; n++)
    latest = MAX (latest, migration_number (*n));
  return latest;
}

static gboolean
apply_migration (MarketdStore *store, const char *name, int number, GError **error)
{
  g_autofree char *path = g_strconcat (migrations_path (store), name, NULL);
  g_autoptr(GBytes) sql = g_resources_lookup_data (path, 0, error);
  g_autofree char *text = NULL;

  if (sql == NULL)
    return FALSE;
  text = g_strndup (g_bytes_get_data (sql, NULL), g_bytes_get_size (sql));
  if (!store->ops->apply_migration (store, number, text, error))
    {
      g_prefix_error (error, "Migration %s failed: ", name);
      return FALSE;
    }
  return TRUE;
}

static gboolean
migrate_locked (MarketdStore *store, GError **error)
{
  g_auto(GStrv) names = migration_names (store, error);
  int current = marketd_store_schema_version (store);

  if (names == NULL)
    return FALSE;
  if (current < 0)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                   "Cannot read the schema version of the database");
      return FALSE;
    }
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
      if (!apply_migration (store, *n, number, error))
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

gboolean
marketd_store_migrate (MarketdStore *store, GError **error)
{
  gboolean ok;

  if (!store->ops->lock_migrations (store, TRUE, error))
    return FALSE;
  ok = migrate_locked (store, error);
  store->ops->lock_migrations (store, FALSE, NULL);
  return ok;
}
