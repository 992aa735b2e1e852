/* marketd-migrate.c: tensafe-marketd migrate --from FILE --to URL — copies an SQLite
 * marketplace into an empty PostgreSQL one, then checks both hold the same rows.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"

#include <stdio.h>
#include <string.h>

#include "ts-market-error.h"
#include "ts-signing.h"

/* Column types of a copied table: t text, i integer, d double. */
typedef struct
{
  const char *name;
  const char *columns;
  const char *types;
} TableSpec;

/* In the order that satisfies the foreign keys.  The search document is
 * not copied: PostgreSQL builds its own from the copied rows. */
static const TableSpec tables[] = {
  { "publishers", "id, name, created_at", "tti" },
  { "publisher_keys", "key_id, publisher_id, algorithm, public_key, created_at, revoked",
    "ttttii" },
  { "adapters", "id, name, description, publisher_id, base_model, base_model_sha256, license, "
    "price_per_1k_tokens, format, rank, alpha, tags, latest_version, created_at, updated_at, "
    "keywords, examples", "tttttttdtidttiitt" },
  { "adapter_target_modules", "adapter_id, module", "tt" },
  { "versions", "adapter_id, version, rank, alpha, target_modules, manifest, signature, key_id, "
    "created_at", "ttidtttti" },
  { "files", "adapter_id, version, name, sha256, size", "tttti" },
  { "usage", "account, idempotency_key, adapter_id, version, tokens, received_at", "ttttii" },
};

typedef struct
{
  char    *from;
  char    *to;
  char    *blobs;
} MigrateOptions;

static void
migrate_options_clear (MigrateOptions *o)
{
  g_free (o->from);
  g_free (o->to);
  g_free (o->blobs);
}

static gboolean
parse_migrate_options (int *argc, char ***argv, MigrateOptions *o, GError **error)
{
  GOptionEntry entries[] = {
    { "from", 0, 0, G_OPTION_ARG_FILENAME, &o->from, "The SQLite marketplace to copy", "FILE" },
    { "to", 0, 0, G_OPTION_ARG_STRING, &o->to, "An empty PostgreSQL database", "URL" },
    { "blobs", 0, 0, G_OPTION_ARG_FILENAME, &o->blobs,
      "Also check that every file the catalogue names is in this blob store, whole", "DIR" },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr(GOptionContext) ctx = g_option_context_new (
      "— copy an SQLite marketplace into PostgreSQL");

  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!g_option_context_parse (ctx, argc, argv, error))
    return FALSE;
  if (o->from == NULL || o->to == NULL)
    return g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_FAILED,
                        "migrate needs --from FILE and --to URL"), FALSE;
  if (marketd_store_location_is_postgresql (o->from))
    return g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "--from must be an SQLite file, not a URL"), FALSE;
  if (!marketd_store_location_is_postgresql (o->to))
    return g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                        "--to must be a postgresql:// URL"), FALSE;
  if (!g_file_test (o->from, G_FILE_TEST_IS_REGULAR))
    return g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                        "%s: no such database file", o->from), FALSE;
  return TRUE;
}

static MarketdValue
cell_value (MarketdRows *rows, guint row, guint col, char type)
{
  MarketdType t = type == 't' ? MARKETD_TYPE_TEXT : type == 'i' ? MARKETD_TYPE_INT64
                                                                : MARKETD_TYPE_DOUBLE;

  if (marketd_rows_is_null (rows, row, col))
    return marketd_null (t);
  if (type == 't')
    return marketd_text (marketd_rows_text (rows, row, col));
  if (type == 'i')
    return marketd_int (marketd_rows_int64 (rows, row, col));
  return marketd_double (marketd_rows_double (rows, row, col));
}

static MarketdRows *
select_all (MarketdStore *store, const TableSpec *t, GError **error)
{
  g_autofree char *sql = g_strdup_printf ("SELECT %s FROM %s", t->columns, t->name);
  MarketdRows *rows = marketd_store_query (store, sql, NULL, 0, error);

  if (rows == NULL)
    g_prefix_error (error, "%s: ", t->name);
  return rows;
}

static char *
insert_sql (const TableSpec *t)
{
  g_autoptr(GString) sql = g_string_new (NULL);
  guint n = strlen (t->types);

  g_string_printf (sql, "INSERT INTO %s (%s) VALUES (", t->name, t->columns);
  for (guint i = 1; i <= n; i++)
    g_string_append_printf (sql, "%s?%u", i > 1 ? ", " : "", i);
  g_string_append_c (sql, ')');
  return g_string_free (g_steal_pointer (&sql), FALSE);
}

static gboolean
copy_table (MarketdStore *from, MarketdStore *to, const TableSpec *t, GError **error)
{
  g_autoptr(MarketdRows) rows = select_all (from, t, error);
  g_autofree char *sql = insert_sql (t);
  guint n_cols = strlen (t->types);
  g_autofree MarketdValue *values = g_new0 (MarketdValue, n_cols);

  if (rows == NULL)
    return FALSE;
  for (guint r = 0; r < marketd_rows_count (rows); r++)
    {
      g_autoptr(MarketdRows) done = NULL;
      for (guint c = 0; c < n_cols; c++)
        values[c] = cell_value (rows, r, c, t->types[c]);
      done = marketd_store_query (to, sql, values, n_cols, error);
      if (done == NULL)
        return g_prefix_error (error, "Copying %s: ", t->name), FALSE;
    }
  return TRUE;
}

/* One row as text that does not depend on the dialect: numbers read back as
 * numbers, texts with their length, so no two different rows look alike. */
static char *
row_text (MarketdRows *rows, guint row, const char *types)
{
  GString *out = g_string_new (NULL);
  char buf[G_ASCII_DTOSTR_BUF_SIZE];

  for (guint c = 0; types[c]; c++)
    {
      const char *text = marketd_rows_text (rows, row, c);
      if (text == NULL)
        g_string_append (out, "~");
      else if (types[c] == 't')
        g_string_append_printf (out, "%zu:%s", strlen (text), text);
      else if (types[c] == 'i')
        g_string_append_printf (out, "%" G_GINT64_FORMAT, marketd_rows_int64 (rows, row, c));
      else
        g_string_append (out, g_ascii_dtostr (buf, sizeof buf, marketd_rows_double (rows, row, c)));
      g_string_append_c (out, '\x1f');
    }
  return g_string_free (out, FALSE);
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char * const *) a, *(char * const *) b);
}

/* SHA-256 of the table's rows in byte order, whichever order the database
 * returns them in; the row count in @n_rows. */
static char *
table_digest (MarketdStore *store, const TableSpec *t, guint *n_rows, GError **error)
{
  g_autoptr(MarketdRows) rows = select_all (store, t, error);
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);

  if (rows == NULL)
    return NULL;
  for (guint r = 0; r < marketd_rows_count (rows); r++)
    g_ptr_array_add (lines, row_text (rows, r, t->types));
  g_ptr_array_sort (lines, compare_strings);
  for (guint i = 0; i < lines->len; i++)
    {
      g_checksum_update (sum, g_ptr_array_index (lines, i), -1);
      g_checksum_update (sum, (const guchar *) "\n", 1);
    }
  *n_rows = lines->len;
  return g_strdup (g_checksum_get_string (sum));
}

static gboolean
verify_table (MarketdStore *from, MarketdStore *to, const TableSpec *t, GError **error)
{
  guint n_from = 0, n_to = 0;
  g_autofree char *d_from = table_digest (from, t, &n_from, error);
  g_autofree char *d_to = d_from ? table_digest (to, t, &n_to, error) : NULL;

  if (d_to == NULL)
    return FALSE;
  if (n_from != n_to || strcmp (d_from, d_to) != 0)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                   "%s differs after the copy: %u rows (sha256 %s) in SQLite, %u rows "
                   "(sha256 %s) in PostgreSQL", t->name, n_from, d_from, n_to, d_to);
      return FALSE;
    }
  printf ("%-24s %8u rows  sha256 %s\n", t->name, n_to, d_to);
  return TRUE;
}

static gboolean
target_is_empty (MarketdStore *to, GError **error)
{
  g_autoptr(MarketdRows) rows = marketd_store_query (
      to, "SELECT (SELECT count(*) FROM publishers) + (SELECT count(*) FROM usage)", NULL, 0,
      error);

  if (rows == NULL)
    return FALSE;
  if (marketd_rows_int64 (rows, 0, 0) != 0)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   "The target database already holds a marketplace; migrate into an empty one");
      return FALSE;
    }
  return TRUE;
}

/* The same document the import writes (marketd-import.c), for every adapter. */
static gboolean
build_search_documents (MarketdStore *to, GError **error)
{
  g_autoptr(MarketdRows) done = marketd_store_query (
      to, "UPDATE adapters a SET search_vector = "
      "setweight(to_tsvector('simple', unaccent(a.name)), 'A') || "
      "setweight(to_tsvector('simple', unaccent(a.description)), 'B') || "
      "setweight(to_tsvector('simple', unaccent(a.tags)), 'C') || "
      "setweight(to_tsvector('simple', unaccent(p.name || ' ' || a.base_model)), 'D') "
      "FROM publishers p WHERE p.id = a.publisher_id", NULL, 0, error);

  return done != NULL;
}

static gboolean
copy_all (MarketdStore *from, MarketdStore *to, GError **error)
{
  if (!target_is_empty (to, error))
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (tables); i++)
    if (!copy_table (from, to, &tables[i], error))
      return FALSE;
  if (!build_search_documents (to, error))
    return FALSE;
  for (guint i = 0; i < G_N_ELEMENTS (tables); i++)
    if (!verify_table (from, to, &tables[i], error))
      return FALSE;
  return TRUE;
}

/* Every blob a file row names is present and hashes to its name. */
static gboolean
verify_blobs (MarketdStore *store, const char *blobs_dir, GError **error)
{
  g_autoptr(MarketdRows) rows = marketd_store_query (
      store, "SELECT DISTINCT sha256, size FROM files", NULL, 0, error);
  Marketd lookup = { .blobs_dir = (char *) blobs_dir };

  if (rows == NULL)
    return FALSE;
  for (guint r = 0; r < marketd_rows_count (rows); r++)
    {
      const char *sha = marketd_rows_text (rows, r, 0);
      g_autofree char *path = ts_sha256_hex_is_valid (sha) ? marketd_blob_path (&lookup, sha)
                                                           : NULL;
      g_autofree char *actual = NULL;
      goffset size = -1;

      if (path != NULL)
        actual = ts_sha256_file (path, &size, NULL, NULL);
      if (actual == NULL || strcmp (actual, sha) != 0
          || size != marketd_rows_int64 (rows, r, 1))
        {
          g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                       "Blob %s is missing or damaged in %s", sha, blobs_dir);
          return FALSE;
        }
    }
  printf ("%-24s %8u files whole\n", "blobs", marketd_rows_count (rows));
  return TRUE;
}

static gboolean
migrate (MigrateOptions *o, GError **error)
{
  g_autoptr(MarketdStore) from = marketd_store_open (o->from, error);
  g_autoptr(MarketdStore) to = NULL;

  if (from == NULL || !marketd_store_migrate (from, error))
    return FALSE;
  to = marketd_store_open (o->to, error);
  if (to == NULL || !marketd_store_migrate (to, error))
    return FALSE;
  /* One transaction: the copy lands whole and checked, or not at all. */
  if (!marketd_store_begin (to, TRUE, error))
    return FALSE;
  if (!copy_all (from, to, error))
    {
      marketd_store_rollback (to);
      return FALSE;
    }
  if (!marketd_store_commit (to, error))
    return FALSE;
  return o->blobs == NULL || verify_blobs (to, o->blobs, error);
}

int
marketd_migrate_main (int argc, char **argv)
{
  MigrateOptions o = { 0 };
  g_autoptr(GError) error = NULL;
  int status = 1;

  if (parse_migrate_options (&argc, &argv, &o, &error) && migrate (&o, &error))
    {
      printf ("migrated %s into PostgreSQL\n", o.from);
      status = 0;
    }
  if (error != NULL)
    g_printerr ("tensafe-marketd migrate: %s\n", error->message);
  migrate_options_clear (&o);
  return status;
}
