/* marketd-search.c: GET /v1/adapters — full-text search, filters, sort and keyset pagination.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"

#include "ts-market-json.h"

#include <stdlib.h>
#include <string.h>

#define MAX_TERMS 16
#define MAX_TERM_CHARS 64
#define DEFAULT_LIMIT 20
#define MAX_LIMIT 100

typedef struct
{
  const char *name;
  const char *key_sql;     /* sort_key expression; NULL: the dialect's relevance */
  gboolean    descending;
  gboolean    needs_query; /* only meaningful with full-text search */
  GType       key_type;    /* a cursor's key: G_TYPE_STRING, or a number */
} SortOrder;

static const SortOrder sort_orders[] = {
  { "relevance", NULL, FALSE, TRUE, G_TYPE_DOUBLE },
  { "name", "lower(a.name)", FALSE, FALSE, G_TYPE_STRING },
  { "price", "a.price_per_1k_tokens", FALSE, FALSE, G_TYPE_DOUBLE },
  { "-price", "a.price_per_1k_tokens", TRUE, FALSE, G_TYPE_DOUBLE },
  { "newest", "a.updated_at", TRUE, FALSE, G_TYPE_INT64 },
};

/* Search parameters after validation; strings borrowed from the query table. */
typedef struct
{
  char            *fts;
  const char      *base_model;
  gint64           rank;
  const char      *target_module;
  const char      *license;
  double           max_price;
  gboolean         has_rank, has_max_price;
  const SortOrder *sort;
  int              limit;
  JsonNode        *cursor_key;  /* owned */
  char            *cursor_id;
} SearchParams;

static void
search_params_clear (SearchParams *p)
{
  g_free (p->fts);
  g_clear_pointer (&p->cursor_key, json_node_unref);
  g_free (p->cursor_id);
}

/* Letters, digits and marks make terms; everything else (quotes, operators,
 * parentheses, '*', ':', '&', '!') only separates them.  Each term is then
 * quoted, so the database reads the user's words as words and never as query
 * syntax: "a" "b"* for FTS5, 'a' & 'b':* for PostgreSQL's to_tsquery. */
char *
marketd_fts_query_from_user_text (const char *text, MarketdDialect dialect)
{
  gboolean pg = dialect == MARKETD_DIALECT_POSTGRESQL;
  g_autoptr(GString) out = g_string_new (NULL);
  g_autoptr(GString) term = g_string_new (NULL);
  guint n_terms = 0;
  gboolean ends_in_term = FALSE;

  if (text == NULL || !g_utf8_validate (text, -1, NULL))
    return NULL;
  for (const char *p = text;; p = g_utf8_next_char (p))
    {
      gunichar c = g_utf8_get_char (p);
      gboolean word = c != 0 && (g_unichar_isalnum (c) || g_unichar_ismark (c));

      if (word && g_utf8_strlen (term->str, -1) < MAX_TERM_CHARS)
        g_string_append_unichar (term, c);
      if (c != 0)
        ends_in_term = word;
      if ((!word || c == 0) && term->len > 0 && n_terms < MAX_TERMS)
        {
          g_string_append_printf (out, pg ? "%s'%s'" : "%s\"%s\"",
                                  n_terms ? (pg ? " & " : " ") : "", term->str);
          n_terms++;
          g_string_truncate (term, 0);
        }
      if (c == 0)
        break;
      if (!word)
        g_string_truncate (term, 0);
    }
  if (n_terms == 0)
    return NULL;
  /* Search as you type: the word being typed matches as a prefix. */
  if (ends_in_term)
    g_string_append (out, pg ? ":*" : "*");
  return g_string_free (g_steal_pointer (&out), FALSE);
}

static gboolean
parse_int (const char *s, gint64 lo, gint64 hi, gint64 *out)
{
  char *end = NULL;
  gint64 v;

  if (s == NULL || *s == '\0')
    return FALSE;
  v = g_ascii_strtoll (s, &end, 10);
  if (*end != '\0' || v < lo || v > hi)
    return FALSE;
  *out = v;
  return TRUE;
}

static gboolean
parse_price (const char *s, double *out)
{
  char *end = NULL;
  double v;

  /* decimal notation only: strtod would also read "0x10" as 16, "inf", "nan" */
  if (s == NULL || *s == '\0' || s[strspn (s, "0123456789.eE+-")] != '\0')
    return FALSE;
  v = g_ascii_strtod (s, &end);
  if (*end != '\0' || !(v >= 0) || v > 1e12)
    return FALSE;
  *out = v;
  return TRUE;
}

/* A cursor is base64url(JSON [sort, key, id]) of the last row returned; the
 * key is written as its sort's type. */
static char *
encode_cursor (const SortOrder *sort, MarketdRows *rows, guint row, guint key_col)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *json = NULL, *b64 = NULL;

  json_builder_begin_array (b);
  json_builder_add_string_value (b, sort->name);
  if (sort->key_type == G_TYPE_STRING)
    json_builder_add_string_value (b, marketd_rows_text (rows, row, key_col));
  else if (sort->key_type == G_TYPE_INT64)
    json_builder_add_int_value (b, marketd_rows_int64 (rows, row, key_col));
  else
    json_builder_add_double_value (b, marketd_rows_double (rows, row, key_col));
  json_builder_add_string_value (b, marketd_rows_text (rows, row, 0));
  json_builder_end_array (b);
  root = json_builder_get_root (b);
  json = json_to_string (root, FALSE);
  b64 = g_base64_encode ((const guchar *) json, strlen (json));
  g_strdelimit (b64, "+", '-');
  g_strdelimit (b64, "/", '_');
  g_strdelimit (b64, "=", '\0');
  return g_steal_pointer (&b64);
}

/* The key a cursor holds must be of its sort's type: a text key under a
 * numeric sort would compare as text in SQL and give an empty page instead
 * of an error. Integers pass for doubles (a price of 0 is written as 0). */
static gboolean
cursor_key_fits (JsonNode *key, const SortOrder *sort)
{
  GType type;

  if (!JSON_NODE_HOLDS_VALUE (key))
    return FALSE;
  type = json_node_get_value_type (key);
  if (sort->key_type == G_TYPE_STRING)
    return type == G_TYPE_STRING;
  if (sort->key_type == G_TYPE_INT64)
    return type == G_TYPE_INT64;
  return type == G_TYPE_INT64 || type == G_TYPE_DOUBLE;
}

static gboolean
decode_cursor (const char *text, SearchParams *p)
{
  g_autofree char *b64 = NULL;
  g_autofree guchar *json = NULL;
  g_autoptr(JsonNode) root = NULL;
  gsize len = 0, n = strlen (text);
  JsonArray *arr;
  JsonNode *key;

  if (n == 0 || n > 1024)
    return FALSE;
  b64 = g_malloc0 (n + 4);
  memcpy (b64, text, n);
  g_strdelimit (b64, "-", '+');
  g_strdelimit (b64, "_", '/');
  while (n % 4)
    b64[n++] = '=';
  json = g_base64_decode (b64, &len);
  if (len == 0 || (root = ts_json_parse_bounded ((const char *) json, len, 2, NULL)) == NULL
      || !JSON_NODE_HOLDS_ARRAY (root)
      || json_array_get_length (arr = json_node_get_array (root)) != 3)
    return FALSE;
  key = json_array_get_element (arr, 1);
  if (g_strcmp0 (ts_json_array_get_string (arr, 0), p->sort->name) != 0
      || !cursor_key_fits (key, p->sort)
      || ts_json_array_get_string (arr, 2) == NULL)
    return FALSE;
  p->cursor_key = json_node_copy (key);
  p->cursor_id = g_strdup (ts_json_array_get_string (arr, 2));
  return TRUE;
}

static const SortOrder *
find_sort (const char *name, gboolean have_query)
{
  if (name == NULL)
    name = have_query ? "relevance" : "name";
  for (guint i = 0; i < G_N_ELEMENTS (sort_orders); i++)
    if (strcmp (sort_orders[i].name, name) == 0)
      return sort_orders[i].needs_query && !have_query ? &sort_orders[1] : &sort_orders[i];
  return NULL;
}

/* Fills @p from the query string; on a bad value answers 400 and returns FALSE. */
static gboolean
parse_params (SoupServerMessage *msg, GHashTable *q, MarketdDialect dialect, SearchParams *p)
{
  const char *v;
  gint64 limit = DEFAULT_LIMIT;

#define LOOKUP(k) (q ? (const char *) g_hash_table_lookup (q, k) : NULL)
  p->fts = marketd_fts_query_from_user_text (LOOKUP ("q"), dialect);
  p->base_model = LOOKUP ("base_model");
  p->target_module = LOOKUP ("target_module");
  p->license = LOOKUP ("license");
  if ((v = LOOKUP ("rank")) && !(p->has_rank = parse_int (v, 1, 65536, &p->rank)))
    return marketd_reply_error (msg, 400, "invalid_parameter", "rank must be an integer"), FALSE;
  if ((v = LOOKUP ("max_price")) && !(p->has_max_price = parse_price (v, &p->max_price)))
    return marketd_reply_error (msg, 400, "invalid_parameter", "max_price must be a number ≥ 0"),
           FALSE;
  if ((v = LOOKUP ("limit")) && !parse_int (v, 1, MAX_LIMIT, &limit))
    return marketd_reply_error (msg, 400, "invalid_parameter", "limit must be 1 to %d", MAX_LIMIT),
           FALSE;
  p->limit = (int) limit;
  if (!(p->sort = find_sort (LOOKUP ("sort"), p->fts != NULL)))
    return marketd_reply_error (msg, 400, "invalid_parameter",
                                "sort must be relevance, name, price, -price or newest"), FALSE;
  if ((v = LOOKUP ("cursor")) && !decode_cursor (v, p))
    return marketd_reply_error (msg, 400, "invalid_cursor",
                                "The cursor is malformed or belongs to another sort order"), FALSE;
#undef LOOKUP
  return TRUE;
}

/* What differs between the dialects: how relevance is scored (BM25 over
 * FTS5 columns; ts_rank over weighted lexemes, negated so that both sort
 * ascending), how the text query joins, and case-blind license matching. */
typedef struct
{
  const char *relevance;
  const char *fts_join;
  const char *license_match;
} SearchDialect;

static const SearchDialect search_sqlite = {
  "bm25(adapters_fts, 10.0, 4.0, 3.0, 2.0, 1.0)",
  "JOIN adapters_fts ON adapters_fts.rowid = a.rowid AND adapters_fts MATCH ?6",
  "a.license = ?4 COLLATE NOCASE",
};

static const SearchDialect search_postgresql = {
  "(-ts_rank('{0.1, 0.2, 0.4, 1.0}', a.search_vector, fts_query))::float8",
  "JOIN to_tsquery('simple', unaccent(?6)) AS fts_query ON a.search_vector @@ fts_query",
  "lower(a.license) = lower(?4)",
};

static char *
build_sql (const SearchParams *p, MarketdDialect dialect)
{
  const SearchDialect *d = dialect == MARKETD_DIALECT_POSTGRESQL ? &search_postgresql
                                                                 : &search_sqlite;

  return g_strdup_printf (
      "SELECT * FROM (SELECT " MARKETD_SUMMARY_COLUMNS ", %s AS sort_key FROM "
      MARKETD_SUMMARY_FROM " %s WHERE (?1 IS NULL OR a.base_model = ?1) "
      "AND (?2 IS NULL OR a.rank = ?2) "
      "AND (?3 IS NULL OR EXISTS (SELECT 1 FROM adapter_target_modules t "
      "WHERE t.adapter_id = a.id AND t.module = ?3)) "
      "AND (?4 IS NULL OR %s) "
      "AND (?5 IS NULL OR a.price_per_1k_tokens <= ?5)) AS page "
      "WHERE (?7 IS NULL OR sort_key %s ?7 OR (sort_key = ?7 AND id > ?8)) "
      "ORDER BY sort_key %s, id LIMIT ?9",
      p->sort->key_sql ? p->sort->key_sql : d->relevance,
      p->fts ? d->fts_join : "", d->license_match,
      p->sort->descending ? "<" : ">", p->sort->descending ? "DESC" : "ASC");
}

static MarketdType
key_type (const SortOrder *sort)
{
  return sort->key_type == G_TYPE_STRING ? MARKETD_TYPE_TEXT
         : sort->key_type == G_TYPE_INT64 ? MARKETD_TYPE_INT64 : MARKETD_TYPE_DOUBLE;
}

/* Parameters ?1 … ?9 of build_sql, each typed even when NULL. */
static void
fill_params (const SearchParams *p, MarketdValue v[9])
{
  v[0] = marketd_text (p->base_model);
  v[1] = p->has_rank ? marketd_int (p->rank) : marketd_null (MARKETD_TYPE_INT64);
  v[2] = marketd_text (p->target_module);
  v[3] = marketd_text (p->license);
  v[4] = p->has_max_price ? marketd_double (p->max_price) : marketd_null (MARKETD_TYPE_DOUBLE);
  v[5] = marketd_text (p->fts);
  v[6] = marketd_null (key_type (p->sort));
  v[7] = marketd_text (p->cursor_id);
  if (p->cursor_key != NULL)
    {
      GType t = json_node_get_value_type (p->cursor_key);
      if (t == G_TYPE_STRING)
        v[6] = marketd_text (json_node_get_string (p->cursor_key));
      else if (key_type (p->sort) == MARKETD_TYPE_INT64)
        v[6] = marketd_int (json_node_get_int (p->cursor_key));
      else
        v[6] = marketd_double (json_node_get_double (p->cursor_key));
    }
  v[8] = marketd_int (p->limit + 1);
}

void
marketd_handle_search (Marketd *self, SoupServerMessage *msg, GHashTable *query)
{
  SearchParams p = { 0 };
  MarketdValue params[9];
  g_autofree char *sql = NULL, *next = NULL;
  g_autoptr(MarketdRows) rows = NULL;
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(GError) error = NULL;
  guint n;

  if (!parse_params (msg, query, self->store->dialect, &p))
    goto out;
  sql = build_sql (&p, self->store->dialect);
  fill_params (&p, params);
  rows = marketd_store_query (self->store, sql, params, G_N_ELEMENTS (params), &error);
  if (rows == NULL)
    {
      g_message ("search: %s", error->message);
      marketd_reply_error (msg, 500, "internal", "The search failed");
      goto out;
    }
  n = marketd_rows_count (rows);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "adapters");
  json_builder_begin_array (b);
  for (guint r = 0; r < n && r < (guint) p.limit; r++)
    {
      json_builder_begin_object (b);
      marketd_builder_add_summary (b, rows, r);
      json_builder_end_object (b);
    }
  json_builder_end_array (b);
  json_builder_set_member_name (b, "next_cursor");
  if (n > (guint) p.limit)
    {
      next = encode_cursor (p.sort, rows, p.limit - 1, MARKETD_SUMMARY_N_COLUMNS);
      json_builder_add_string_value (b, next);
    }
  else
    json_builder_add_null_value (b);
  json_builder_end_object (b);
  marketd_reply_json (msg, 200, b);
out:
  search_params_clear (&p);
}
