/* marketd-store.h: the catalogue database of tensafe-marketd behind one interface
 * (SQLite in a file, or PostgreSQL at a postgresql:// URL).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  MARKETD_DIALECT_SQLITE,
  MARKETD_DIALECT_POSTGRESQL,
} MarketdDialect;

/* A statement parameter.  Its type holds even for NULL, so PostgreSQL can
 * prepare the statement with every parameter typed. */
typedef enum
{
  MARKETD_TYPE_TEXT,
  MARKETD_TYPE_INT64,
  MARKETD_TYPE_DOUBLE,
} MarketdType;

typedef struct
{
  MarketdType type;
  gboolean    is_null;
  const char *text;
  gint64      i;
  double      d;
} MarketdValue;

static inline MarketdValue
marketd_text (const char *s)
{
  return (MarketdValue) { .type = MARKETD_TYPE_TEXT, .is_null = s == NULL, .text = s };
}

static inline MarketdValue
marketd_int (gint64 i)
{
  return (MarketdValue) { .type = MARKETD_TYPE_INT64, .i = i };
}

static inline MarketdValue
marketd_double (double d)
{
  return (MarketdValue) { .type = MARKETD_TYPE_DOUBLE, .d = d };
}

static inline MarketdValue
marketd_null (MarketdType type)
{
  return (MarketdValue) { .type = type, .is_null = TRUE };
}

/* The whole answer of one statement, read into memory (pages are small). */
typedef struct _MarketdRows MarketdRows;
typedef struct _MarketdStore MarketdStore;

typedef struct
{
  /* One statement with parameters written ?1, ?2, … in either dialect. */
  MarketdRows *(*query) (MarketdStore *store, const char *sql, const MarketdValue *params,
                         guint n_params, GError **error);
  /* A script of statements without parameters (migrations, BEGIN, COMMIT). */
  gboolean (*exec) (MarketdStore *store, const char *sql, GError **error);
  /* Opens a transaction that writes; catalogue transactions also exclude
   * every other catalogue writer, in this process or another one. */
  gboolean (*begin) (MarketdStore *store, gboolean catalogue, GError **error);
  /* The applied schema number; -1 when it cannot be read. */
  int (*schema_version) (MarketdStore *store);
  /* Applies one migration and records its number, in one transaction. */
  gboolean (*apply_migration) (MarketdStore *store, int number, const char *sql,
                               GError **error);
  /* Keeps other processes from migrating the same database meanwhile. */
  gboolean (*lock_migrations) (MarketdStore *store, gboolean lock, GError **error);
  void (*close) (MarketdStore *store);
} MarketdStoreOps;

struct _MarketdStore
{
  const MarketdStoreOps *ops;
  MarketdDialect         dialect;
};

/* A location starting "postgresql://" or "postgres://" is a PostgreSQL
 * connection URL; anything else is the path of an SQLite file. */
gboolean marketd_store_location_is_postgresql (const char *location);
MarketdStore *marketd_store_open (const char *location, GError **error);
void marketd_store_close (MarketdStore *store);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (MarketdStore, marketd_store_close)

/* Brings the schema to the newest numbered migration of the store's dialect. */
gboolean marketd_store_migrate (MarketdStore *store, GError **error);
int marketd_store_schema_version (MarketdStore *store);
/* The number of the newest migration this server knows. */
int marketd_store_latest_migration (MarketdStore *store);

MarketdRows *marketd_store_query (MarketdStore *store, const char *sql,
                                  const MarketdValue *params, guint n_params, GError **error);
gboolean marketd_store_exec (MarketdStore *store, const char *sql, GError **error);
gboolean marketd_store_begin (MarketdStore *store, gboolean catalogue, GError **error);
gboolean marketd_store_commit (MarketdStore *store, GError **error);
void marketd_store_rollback (MarketdStore *store);
/* Picks the statement written for the store's dialect. */
const char *marketd_store_sql (MarketdStore *store, const char *sqlite_sql,
                               const char *postgresql_sql);

guint marketd_rows_count (MarketdRows *rows);
/* Rows a write statement inserted, updated or deleted. */
gint64 marketd_rows_changes (MarketdRows *rows);
gboolean marketd_rows_is_null (MarketdRows *rows, guint row, guint col);
/* NULL for SQL NULL; numbers as their text. */
const char *marketd_rows_text (MarketdRows *rows, guint row, guint col);
gint64 marketd_rows_int64 (MarketdRows *rows, guint row, guint col);
double marketd_rows_double (MarketdRows *rows, guint row, guint col);
void marketd_rows_free (MarketdRows *rows);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (MarketdRows, marketd_rows_free)

/* For back ends: building an answer. */
MarketdRows *marketd_rows_new (guint n_cols);
/* Appends a cell (a new row starts every n_cols cells); @text is taken. */
void marketd_rows_append_text (MarketdRows *rows, char *text);
void marketd_rows_append_int64 (MarketdRows *rows, gint64 value);
void marketd_rows_append_double (MarketdRows *rows, double value);
void marketd_rows_set_changes (MarketdRows *rows, gint64 changes);

/* Back ends (marketd-store-sqlite.c, marketd-store-pg.c). */
MarketdStore *marketd_store_sqlite_open (const char *path, GError **error);
MarketdStore *marketd_store_pg_open (const char *url, GError **error);

G_END_DECLS
