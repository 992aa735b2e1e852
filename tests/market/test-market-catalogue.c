/* test-market-catalogue.c: search, filters, pagination, details, keys and HTTP semantics of a real marketd.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "market-test-util.h"
#include "ts-market-install.h"
#include "ts-signing.h"

#define N_EXTRA 12
#define N_DEMO 6       /* the folders of data/market, all from the tensafe-demo publisher */
#define N_ALL (N_EXTRA + N_DEMO)

static MarketServer *server;
static TsMarketClient *client;
static char *extra_dir;

/* What the test itself published, as an independent reference. */
typedef struct
{
  char   *id;
  char   *name;
  double  price;
  gint64  rank;
  char   *license;
  char   *base_model;
  gboolean has_o_proj;
} Expected;

static GPtrArray *expected;

static void
expect (const char *id, const char *name, double price, gint64 rank, const char *license,
        const char *base, gboolean o_proj)
{
  Expected *e = g_new0 (Expected, 1);

  e->id = g_strdup (id);
  e->name = g_strdup (name);
  e->price = price;
  e->rank = rank;
  e->license = g_strdup (license);
  e->base_model = g_strdup (base);
  e->has_o_proj = o_proj;
  g_ptr_array_add (expected, e);
}

static void
write_extra_catalogue (void)
{
  extra_dir = market_tmpdir ();
  for (int i = 0; i < N_EXTRA; i++)
    {
      g_autofree char *id = g_strdup_printf ("pag-%02d", i);
      g_autofree char *dir = g_build_filename (extra_dir, id, NULL);
      g_autofree char *meta = NULL, *meta_path = g_build_filename (dir, "metadata.json", NULL);
      g_autofree char *name = g_strdup_printf ("%c paging adapter", 'A' + (i * 5) % N_EXTRA);
      double price = (i % 4) * 0.25;

      market_write_adapter (dir, id, "acme", "1.0.0", 0);
      /* Names out of id order and shared prices, so sorting and ties are exercised. */
      meta = g_strdup_printf ("{\"id\":\"%s\",\"name\":\"%s\",\"publisher\":\"acme\","
                              "\"version\":\"1.0.0\",\"base_model\":\"test-base\","
                              "\"license\":\"MIT\",\"price_per_1k_tokens\":%.2f%s}",
                              id, name, price,
                              /* one with diacritics, found without them too */
                              i == 0 ? ",\"description\":\"Menus de café et crème brûlée\"" : "");
      g_assert_true (g_file_set_contents (meta_path, meta, -1, NULL));
      expect (id, name, price, 4, "MIT", "test-base", TRUE);
    }
  expect ("tiny-golden", "Tiny reference LoRA", 0, 8, "Apache-2.0", "tiny-qwen35moe-f32", TRUE);
  expect ("tiny-pirate", "Pirate talk (tiny)", 0.02, 4, "CC-BY-4.0", "tiny-qwen35moe-f32", TRUE);
  expect ("tiny-formal", "Formal register (tiny)", 0.05, 16, "Apache-2.0",
          "tiny-qwen35moe-f32", TRUE);
  expect ("tiny-poet", "Verse and rhyme (tiny)", 0.01, 8, "MIT", "tiny-qwen35moe-f32", FALSE);
  expect ("qwen2.5-coder-0.5b-pirate", "Pirate talk", 0.02, 16, "CC-BY-4.0",
          "qwen2.5-coder-0.5b-instruct-q4_k_m", FALSE);
  expect ("qwen2.5-coder-0.5b-banking", "Banking advisor", 0.05, 16, "CC-BY-4.0",
          "qwen2.5-coder-0.5b-instruct-q4_k_m", FALSE);
}

/* All pages of a search, concatenated; checks no page exceeds @limit. */
static GPtrArray *
search_all_pages (TsMarketSearch search, guint limit)
{
  GPtrArray *all = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_market_adapter_unref);
  g_autofree char *cursor = NULL;
  guint pages = 0;

  search.limit = limit;
  do
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(TsMarketPage) page = NULL;

      search.cursor = cursor;
      page = market_search (client, &search, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (page->adapters->len, <=, limit);
      for (guint i = 0; i < page->adapters->len; i++)
        g_ptr_array_add (all, ts_market_adapter_ref (g_ptr_array_index (page->adapters, i)));
      g_free (cursor);
      cursor = g_strdup (page->next_cursor);
      g_assert_cmpuint (++pages, <, 100);
    }
  while (cursor != NULL);
  return all;
}

static gboolean
contains_id (GPtrArray *adapters, const char *id)
{
  for (guint i = 0; i < adapters->len; i++)
    if (g_strcmp0 (((TsMarketAdapter *) g_ptr_array_index (adapters, i))->id, id) == 0)
      return TRUE;
  return FALSE;
}

static void
assert_no_duplicates (GPtrArray *adapters)
{
  g_autoptr(GHashTable) seen = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < adapters->len; i++)
    g_assert_true (g_hash_table_add (seen, ((TsMarketAdapter *) adapters->pdata[i])->id));
}

static void
test_search_all (void)
{
  TsMarketSearch s = TS_MARKET_SEARCH_INIT;
  g_autoptr(GPtrArray) all = search_all_pages (s, 100);

  g_assert_cmpuint (all->len, ==, N_ALL);
  for (guint i = 0; i < expected->len; i++)
    g_assert_true (contains_id (all, ((Expected *) expected->pdata[i])->id));
}

static int
compare_name (gconstpointer a, gconstpointer b)
{
  const Expected *x = *(Expected * const *) a, *y = *(Expected * const *) b;
  g_autofree char *lx = g_utf8_strdown (x->name, -1), *ly = g_utf8_strdown (y->name, -1);
  int c = strcmp (lx, ly);

  return c ? c : strcmp (x->id, y->id);
}

static int
compare_price (gconstpointer a, gconstpointer b)
{
  const Expected *x = *(Expected * const *) a, *y = *(Expected * const *) b;

  return x->price < y->price ? -1 : x->price > y->price ? 1 : strcmp (x->id, y->id);
}

static int
compare_price_desc (gconstpointer a, gconstpointer b)
{
  const Expected *x = *(Expected * const *) a, *y = *(Expected * const *) b;

  return x->price > y->price ? -1 : x->price < y->price ? 1 : strcmp (x->id, y->id);
}

/* Paging with a small limit returns every adapter once, in the sort order
 * the test computes itself. */
static void
check_order (const char *sort, GCompareFunc compare)
{
  TsMarketSearch s = TS_MARKET_SEARCH_INIT;
  g_autoptr(GPtrArray) want = g_ptr_array_copy (expected, NULL, NULL);
  g_autoptr(GPtrArray) got = NULL;

  s.sort = sort;
  got = search_all_pages (s, 5);
  g_ptr_array_sort (want, compare);
  g_assert_cmpuint (got->len, ==, want->len);
  assert_no_duplicates (got);
  for (guint i = 0; i < got->len; i++)
    g_assert_cmpstr (((TsMarketAdapter *) got->pdata[i])->id, ==,
                     ((Expected *) want->pdata[i])->id);
}

static void
test_pagination (void)
{
  check_order ("name", compare_name);
  check_order ("price", compare_price);
  check_order ("-price", compare_price_desc);
}

/* Relevance pages (keyed by BM25 scores) cover the result set exactly once. */
static void
test_relevance_pagination (void)
{
  TsMarketSearch s = TS_MARKET_SEARCH_INIT;
  g_autoptr(GPtrArray) one_page = NULL, paged = NULL;

  s.query = "adapter";
  one_page = search_all_pages (s, 100);
  paged = search_all_pages (s, 2);
  g_assert_cmpuint (one_page->len, >, 10);
  g_assert_cmpuint (paged->len, ==, one_page->len);
  assert_no_duplicates (paged);
  for (guint i = 0; i < one_page->len; i++)
    g_assert_cmpstr (((TsMarketAdapter *) paged->pdata[i])->id, ==,
                     ((TsMarketAdapter *) one_page->pdata[i])->id);
}

static void
test_pagination_bad_cursor (void)
{
  TsMarketSearch s = TS_MARKET_SEARCH_INIT;
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketPage) page = NULL;

  s.cursor = "not-a-cursor!";
  page = market_search (client, &s, &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_SERVER);
  g_assert_nonnull (strstr (error->message, "invalid_cursor"));
}

static GPtrArray *
search_query (const char *q)
{
  TsMarketSearch s = TS_MARKET_SEARCH_INIT;

  s.query = q;
  return search_all_pages (s, 100);
}

static void
test_full_text (void)
{
  g_autoptr(GPtrArray) pirate = search_query ("pirate");
  g_autoptr(GPtrArray) prefix = search_query ("poe");       /* as typed: prefix of poetry */
  g_autoptr(GPtrArray) demo = search_query ("demo");
  g_autoptr(GPtrArray) two = search_query ("formal tone");  /* every word must match */
  g_autoptr(GPtrArray) none = search_query ("zzzunknownword");
  g_autoptr(GPtrArray) plain = search_query ("cafe creme");  /* the text says café, crème */
  g_autoptr(GPtrArray) accented = search_query ("BRÛLÉE");

  g_assert_cmpuint (pirate->len, ==, 2);
  g_assert_true (contains_id (pirate, "tiny-pirate"));
  g_assert_true (contains_id (pirate, "qwen2.5-coder-0.5b-pirate"));
  g_assert_cmpuint (prefix->len, ==, 1);
  g_assert_cmpstr (((TsMarketAdapter *) prefix->pdata[0])->id, ==, "tiny-poet");
  g_assert_cmpuint (demo->len, ==, N_DEMO);
  g_assert_cmpuint (two->len, ==, 1);
  g_assert_cmpstr (((TsMarketAdapter *) two->pdata[0])->id, ==, "tiny-formal");
  g_assert_cmpuint (none->len, ==, 0);
  g_assert_cmpuint (plain->len, ==, 1);
  g_assert_cmpstr (((TsMarketAdapter *) plain->pdata[0])->id, ==, "pag-00");
  g_assert_cmpuint (accented->len, ==, 1);
  g_assert_cmpstr (((TsMarketAdapter *) accented->pdata[0])->id, ==, "pag-00");
}

static gboolean
matches (const Expected *e, const TsMarketSearch *s)
{
  return (s->base_model == NULL || strcmp (e->base_model, s->base_model) == 0)
         && (s->rank == 0 || e->rank == s->rank)
         && (s->target_module == NULL
             || (strcmp (s->target_module, "o_proj") == 0 && e->has_o_proj))
         && (s->license == NULL || g_ascii_strcasecmp (e->license, s->license) == 0)
         && (s->max_price < 0 || e->price <= s->max_price);
}

static void
check_filter (TsMarketSearch s)
{
  g_autoptr(GPtrArray) got = search_all_pages (s, 7);
  guint n = 0;

  for (guint i = 0; i < expected->len; i++)
    {
      Expected *e = expected->pdata[i];
      gboolean want = matches (e, &s);
      n += want;
      g_assert_cmpint (contains_id (got, e->id), ==, want);
    }
  g_assert_cmpuint (got->len, ==, n);
}

static void
test_filters (void)
{
  TsMarketSearch s = TS_MARKET_SEARCH_INIT;

  s.base_model = "tiny-qwen35moe-f32";
  check_filter (s);
  s.rank = 16;
  check_filter (s);
  s = (TsMarketSearch) TS_MARKET_SEARCH_INIT;
  s.target_module = "o_proj";
  check_filter (s);
  s.license = "mit";
  check_filter (s);
  s = (TsMarketSearch) TS_MARKET_SEARCH_INIT;
  s.max_price = 0.015;
  check_filter (s);
  s.max_price = 0.25;
  s.base_model = "test-base";
  check_filter (s);
}

/* SQL and FTS5 syntax in user text is searched as plain words, never run. */
static void
test_hostile_queries (void)
{
  static const char *queries[] = {
    "'; DROP TABLE adapters; --", "\"unterminated", "NEAR(", "*", "OR AND", "NOT",
    "name:pirate", "pirate\" OR \"1\"=\"1", "^", "(((", "a\\", "%", "' OR 1=1 --",
    "pirate NEAR/2 talk", "\xe2\x80\x9cpirate\xe2\x80\x9d", "-", "+pirate",
  };
  TsMarketSearch s = TS_MARKET_SEARCH_INIT;
  g_autoptr(GPtrArray) all = NULL;

  for (guint i = 0; i < G_N_ELEMENTS (queries); i++)
    {
      g_autoptr(GPtrArray) got = search_query (queries[i]);
      g_test_message ("%s → %u results", queries[i], got->len);
      g_assert_cmpuint (got->len, <=, N_ALL);
    }
  /* Words inside the syntax still match as words. */
  {
    g_autoptr(GPtrArray) got = search_query ("pirate\" OR \"1\"=\"1");
    g_assert_cmpuint (got->len, ==, 0);   /* "pirate" AND "1" AND "1": no adapter has "1" */
  }
  {
    g_autoptr(GPtrArray) got = search_query ("+pirate");
    g_assert_cmpuint (got->len, ==, 2);
  }
  s.base_model = "' OR 1=1 --";
  {
    g_autoptr(GPtrArray) got = search_all_pages (s, 10);
    g_assert_cmpuint (got->len, ==, 0);
  }
  s = (TsMarketSearch) TS_MARKET_SEARCH_INIT;
  all = search_all_pages (s, 100);
  g_assert_cmpuint (all->len, ==, N_ALL);
}

static char *
sha256_of_demo_file (const char *folder, const char *name, goffset *size)
{
  g_autofree char *path = g_build_filename (market_demo_dir (), folder, name, NULL);
  g_autoptr(GError) error = NULL;
  char *sha = ts_sha256_file (path, size, NULL, &error);

  g_assert_no_error (error);
  return sha;
}

static void
test_details (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) a = market_get_adapter (client, "tiny-formal", &error);
  g_autoptr(TsMarketKeyring) keyring = ts_market_keyring_new (NULL);
  TsMarketVersion *v;

  g_assert_no_error (error);
  g_assert_cmpstr (a->publisher_id, ==, "tensafe-demo");
  g_assert_cmpstr (a->publisher_name, ==, "TenSafe Demo Publisher");
  g_assert_cmpint (a->rank, ==, 16);
  g_assert_cmpfloat (a->alpha, ==, 16.0);
  g_assert_cmpstr (a->base_model_sha256, ==,
                   "f9edf970d1e034d741f479b438e21b8fb1d0775cbfb0c4b6a7bf97c683e433ae");
  g_assert_cmpuint (g_strv_length (a->target_modules), ==, 1);
  g_assert_cmpstr (a->target_modules[0], ==, "o_proj");
  g_assert_cmpfloat_with_epsilon (a->price_per_1k_tokens, 0.05, 1e-12);
  v = ts_market_adapter_find_version (a, NULL);
  g_assert_nonnull (v);
  g_assert_cmpstr (v->version, ==, "1.0.0");
  g_assert_cmpuint (v->manifest->files->len, ==, 2);  /* metadata.json stays out */
  for (guint i = 0; i < v->manifest->files->len; i++)
    {
      TsMarketFile *f = g_ptr_array_index (v->manifest->files, i);
      goffset size = 0;
      g_autofree char *sha = sha256_of_demo_file ("tiny-formal", f->name, &size);
      g_assert_cmpstr (f->sha256, ==, sha);
      g_assert_cmpint (f->size, ==, size);
    }
  market_pin_publisher (client, keyring, "tensafe-demo");
  ts_market_keyring_verify (keyring, v->manifest, v->key_id, v->signature, &error);
  g_assert_no_error (error);
}

static void
test_keys_and_not_found (void)
{
  g_autoptr(GAsyncResult) res = NULL, res2 = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) keys = NULL;
  g_autoptr(TsMarketAdapter) missing = NULL, bad = NULL;

  ts_market_client_get_publisher_keys_async (client, "nobody", NULL, market_store_result, &res);
  market_wait (&res);
  keys = ts_market_client_get_publisher_keys_finish (client, res, &error);
  g_assert_null (keys);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NOT_FOUND);
  g_clear_error (&error);
  missing = market_get_adapter (client, "no-such-adapter", &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_NOT_FOUND);
  g_clear_error (&error);
  bad = market_get_adapter (client, "../etc", &error);
  g_assert_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID);
}

/* Raw HTTP through a plain session: status, headers and body bytes. */
static GBytes *
http (const char *method, const char *path, const char *header, const char *value,
      guint *status, SoupMessageHeaders **headers)
{
  g_autoptr(SoupSession) session = soup_session_new ();
  g_autofree char *url = ts_market_client_build_url (client, path);
  g_autoptr(SoupMessage) msg = soup_message_new (method, url);
  g_autoptr(GError) error = NULL;
  GBytes *body;

  if (header != NULL)
    soup_message_headers_replace (soup_message_get_request_headers (msg), header, value);
  body = soup_session_send_and_read (session, msg, NULL, &error);
  g_assert_no_error (error);
  *status = soup_message_get_status (msg);
  if (headers != NULL)
    *headers = soup_message_headers_ref (soup_message_get_response_headers (msg));
  return body;
}

/* The string list @member of @o; fails the test when it is not one. */
static GStrv
string_list (JsonObject *o, const char *member)
{
  JsonArray *a;
  GStrv out;

  g_test_message ("%s", member);
  g_assert_true (json_object_has_member (o, member));
  a = json_object_get_array_member (o, member);
  out = g_new0 (char *, json_array_get_length (a) + 1);

  for (guint i = 0; i < json_array_get_length (a); i++)
    out[i] = g_strdup (json_array_get_string_element (a, i));
  return out;
}

static void
assert_same_strv (GStrv got, GStrv want)
{
  g_assert_cmpuint (g_strv_length (got), ==, g_strv_length (want));
  for (guint i = 0; want[i] != NULL; i++)
    g_assert_cmpstr (got[i], ==, want[i]);
}

/* The routing hints of @id's folder in the demo catalogue, read from its
 * metadata.json, and of the details and search summaries the server gives. */
static void
assert_hints_served (const char *id, const char *member)
{
  g_autofree char *meta_path = g_build_filename (market_demo_dir (), id, "metadata.json", NULL);
  g_autofree char *details_path = g_strconcat ("/v1/adapters/", id, NULL);
  g_autoptr(JsonParser) meta = json_parser_new (), details = json_parser_new ();
  g_autoptr(JsonParser) found = json_parser_new ();
  g_autoptr(GBytes) d = NULL, f = NULL;
  g_auto(GStrv) want = NULL, got = NULL, listed = NULL;
  g_autoptr(GError) error = NULL;
  JsonArray *adapters;
  guint status = 0, n_listed = 0;

  g_assert_true (json_parser_load_from_file (meta, meta_path, &error));
  want = string_list (json_node_get_object (json_parser_get_root (meta)), member);
  g_assert_cmpuint (g_strv_length (want), >, 0);
  d = http ("GET", details_path, NULL, NULL, &status, NULL);
  g_assert_cmpuint (status, ==, 200);
  g_assert_true (json_parser_load_from_data (details, g_bytes_get_data (d, NULL),
                                             g_bytes_get_size (d), &error));
  got = string_list (json_node_get_object (json_parser_get_root (details)), member);
  assert_same_strv (got, want);
  f = http ("GET", "/v1/adapters?q=pirate&limit=50", NULL, NULL, &status, NULL);
  g_assert_cmpuint (status, ==, 200);
  g_assert_true (json_parser_load_from_data (found, g_bytes_get_data (f, NULL),
                                             g_bytes_get_size (f), &error));
  adapters = json_object_get_array_member (json_node_get_object (json_parser_get_root (found)),
                                           "adapters");
  for (guint i = 0; i < json_array_get_length (adapters); i++)
    {
      JsonObject *a = json_array_get_object_element (adapters, i);
      if (g_strcmp0 (json_object_get_string_member (a, "id"), id) != 0)
        continue;
      listed = string_list (a, member);
      assert_same_strv (listed, want);
      n_listed++;
    }
  g_assert_cmpuint (n_listed, ==, 1);
}

/* "keywords" and "examples" of metadata.json reach the catalogue's JSON and
 * the client's record; an adapter without them has empty lists. */
static void
test_routing_hints (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(TsMarketAdapter) pirate = NULL, plain = NULL;
  g_autoptr(GBytes) body = NULL;
  guint status = 0;

  assert_hints_served ("qwen2.5-coder-0.5b-pirate", "keywords");
  assert_hints_served ("qwen2.5-coder-0.5b-pirate", "examples");
  assert_hints_served ("tiny-pirate", "keywords");
  pirate = market_get_adapter (client, "qwen2.5-coder-0.5b-pirate", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_strv_length (pirate->keywords), ==, 6);
  g_assert_cmpstr (pirate->keywords[3], ==, "matey");
  g_assert_cmpuint (g_strv_length (pirate->examples), ==, 3);
  g_assert_cmpstr (pirate->examples[0], ==, "Ahoy! How do I keep my houseplants alive, matey?");
  plain = market_get_adapter (client, "pag-00", &error);
  g_assert_no_error (error);
  g_assert_cmpuint (g_strv_length (plain->keywords), ==, 0);
  g_assert_cmpuint (g_strv_length (plain->examples), ==, 0);
  body = http ("GET", "/v1/adapters/pag-00", NULL, NULL, &status, NULL);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                  "\"keywords\":[],\"examples\":[]"));
}

static void
assert_range (const char *range, const guint8 *file, gsize size, gsize start, gsize end)
{
  guint status = 0;
  g_autoptr(GBytes) body = http ("GET", "/v1/adapters/tiny-poet/versions/1.0.0/files/"
                                 "adapter_model.safetensors", "Range", range, &status, NULL);

  g_assert_cmpuint (status, ==, 206);
  g_assert_cmpmem (g_bytes_get_data (body, NULL), g_bytes_get_size (body), file + start,
                   end - start + 1);
  g_assert_cmpuint (end, <, size);
}

static void
test_http_ranges_and_etags (void)
{
  const char *path = "/v1/adapters/tiny-poet/versions/1.0.0/files/adapter_model.safetensors";
  g_autofree char *local = g_build_filename (market_demo_dir (), "tiny-poet",
                                             "adapter_model.safetensors", NULL);
  g_autofree char *file = NULL, *sha = NULL, *etag = NULL;
  g_autoptr(SoupMessageHeaders) h = NULL;
  gsize size = 0;
  guint status = 0;

  g_assert_true (g_file_get_contents (local, &file, &size, NULL));
  sha = g_compute_checksum_for_data (G_CHECKSUM_SHA256, (guint8 *) file, size);
  etag = g_strdup_printf ("\"%s\"", sha);
  {
    g_autoptr(GBytes) all = http ("GET", path, NULL, NULL, &status, &h);
    g_assert_cmpuint (status, ==, 200);
    g_assert_cmpmem (g_bytes_get_data (all, NULL), g_bytes_get_size (all), file, size);
    g_assert_cmpstr (soup_message_headers_get_one (h, "ETag"), ==, etag);
  }
  assert_range ("bytes=10-19", (guint8 *) file, size, 10, 19);
  assert_range ("bytes=-5", (guint8 *) file, size, size - 5, size - 1);
  assert_range ("bytes=100-", (guint8 *) file, size, 100, size - 1);
  assert_range ("bytes=0-99999999", (guint8 *) file, size, 0, size - 1);
  for (guint i = 0; i < 4; i++)
    {
      static const char *bad[] = { "bytes=999999-", "bytes=abc", "bytes=20-10", "bytes=-0" };
      g_autoptr(GBytes) b = http ("GET", path, "Range", bad[i], &status, NULL);
      g_assert_cmpuint (status, ==, 416);
    }
  {
    g_autoptr(GBytes) b = http ("GET", path, "If-None-Match", etag, &status, NULL);
    g_assert_cmpuint (status, ==, 304);
    g_assert_cmpuint (g_bytes_get_size (b), ==, 0);
  }
  {
    g_autoptr(GBytes) b = http ("GET", path, "If-None-Match", "\"other\"", &status, NULL);
    g_assert_cmpuint (status, ==, 200);
  }
}

static void
test_http_errors (void)
{
  guint status = 0;
  g_autoptr(GBytes) missing = http ("GET", "/v1/nothing", NULL, NULL, &status, NULL);
  g_autoptr(GBytes) method = NULL, health = NULL, nofile = NULL;

  g_assert_cmpuint (status, ==, 404);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (missing, NULL), g_bytes_get_size (missing),
                                  "{\"error\":{\"code\":\"not_found\""));
  method = http ("DELETE", "/v1/adapters/tiny-poet", NULL, NULL, &status, NULL);
  g_assert_cmpuint (status, ==, 405);
  nofile = http ("GET", "/v1/adapters/tiny-poet/versions/1.0.0/files/nope", NULL, NULL,
                 &status, NULL);
  g_assert_cmpuint (status, ==, 404);
  health = http ("GET", "/healthz", NULL, NULL, &status, NULL);
  g_assert_cmpuint (status, ==, 200);
  g_assert_nonnull (g_strstr_len (g_bytes_get_data (health, NULL), g_bytes_get_size (health),
                                  "\"schema_version\":4"));
}

static char *
base64url (const char *text)
{
  char *b64 = g_base64_encode ((const guchar *) text, strlen (text));

  g_strdelimit (b64, "+", '-');
  g_strdelimit (b64, "/", '_');
  g_strdelimit (b64, "=", '\0');
  return b64;
}

/* Forged cursors are refused with 400, and the server keeps answering. */
static void
test_hostile_cursors (void)
{
  g_autofree char *deep = g_strnfill (900, '[');
  const char *forged[] = { "[\"name\",[],[]]", "[\"name\",{},\"x\"]", "[1,2,3]", "{}",
                           "[\"price\",1,\"a\"]", deep, "[\"name\",\"a\"]" };
  guint status = 0;

  for (guint i = 0; i < G_N_ELEMENTS (forged); i++)
    {
      g_autofree char *cursor = base64url (forged[i]);
      g_autofree char *path = g_strdup_printf ("/v1/adapters?sort=name&cursor=%s", cursor);
      g_autoptr(GBytes) body = http ("GET", path, NULL, NULL, &status, NULL);
      g_assert_cmpuint (status, ==, 400);
      g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                      "invalid_cursor"));
    }
  {
    g_autoptr(GBytes) body = http ("GET", "/v1/adapters?rank=1e999&limit=5", NULL, NULL,
                                   &status, NULL);
    g_assert_cmpuint (status, ==, 400);
  }
  /* a key of the wrong type for its sort: an error, not an empty page */
  const char *mistyped[][2] = { { "price", "[\"price\",\"text\",\"a\"]" },
                                { "-price", "[\"-price\",true,\"a\"]" },
                                { "newest", "[\"newest\",1.5,\"a\"]" },
                                { "name", "[\"name\",3,\"a\"]" } };
  for (guint i = 0; i < G_N_ELEMENTS (mistyped); i++)
    {
      g_autofree char *cursor = base64url (mistyped[i][1]);
      g_autofree char *path = g_strdup_printf ("/v1/adapters?sort=%s&cursor=%s",
                                               mistyped[i][0], cursor);
      g_autoptr(GBytes) body = http ("GET", path, NULL, NULL, &status, NULL);
      g_assert_cmpuint (status, ==, 400);
      g_assert_nonnull (g_strstr_len (g_bytes_get_data (body, NULL), g_bytes_get_size (body),
                                      "invalid_cursor"));
    }
  /* prices in decimal notation only */
  const char *prices[] = { "0x10", "inf", "nan", "1,5", " 1" };
  for (guint i = 0; i < G_N_ELEMENTS (prices); i++)
    {
      g_autofree char *escaped = g_uri_escape_string (prices[i], NULL, FALSE);
      g_autofree char *path = g_strdup_printf ("/v1/adapters?max_price=%s", escaped);
      g_autoptr(GBytes) body = http ("GET", path, NULL, NULL, &status, NULL);
      g_assert_cmpuint (status, ==, 400);
    }
  {
    g_autoptr(GBytes) body = http ("GET", "/v1/adapters?max_price=1e-1", NULL, NULL, &status,
                                   NULL);
    g_assert_cmpuint (status, ==, 200);
  }
  {
    g_autoptr(GBytes) body = http ("GET", "/healthz", NULL, NULL, &status, NULL);
    g_assert_cmpuint (status, ==, 200);
  }
}

/* What a burst of requests got back. */
typedef struct
{
  guint  done;
  guint  ok;
} Tally;

static void
concurrent_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  Tally *t = user_data;
  g_autoptr(GBytes) body = soup_session_send_and_read_finish (SOUP_SESSION (source), result,
                                                              NULL);
  SoupMessage *msg = soup_session_get_async_result_message (SOUP_SESSION (source), result);

  t->done++;
  if (body != NULL && soup_message_get_status (msg) == 200 && g_bytes_get_size (body) > 0)
    t->ok++;
}

/* 200 requests at once from one session (up to 256 connections) to the
 * marketd at @url, every one answered; returns the tally. */
static Tally
burst_of_requests (const char *url)
{
  g_autoptr(SoupSession) session = soup_session_new_with_options ("max-conns", 256,
                                                                  "max-conns-per-host", 256,
                                                                  NULL);
  g_autoptr(TsMarketClient) burst_client = ts_market_client_new (url, NULL);
  static const char *paths[] = {
    "/v1/adapters?q=demo", "/v1/adapters/tiny-golden", "/v1/adapters?sort=price&limit=3",
    "/v1/adapters/tiny-poet/versions/1.0.0/files/adapter_model.safetensors",
  };
  Tally t = { 0 };
  gint64 start = g_get_monotonic_time (), deadline = start + 60 * G_USEC_PER_SEC;

  for (guint i = 0; i < 200; i++)
    {
      g_autofree char *path = ts_market_client_build_url (burst_client, paths[i % 4]);
      g_autoptr(SoupMessage) msg = soup_message_new ("GET", path);
      soup_session_send_and_read_async (session, msg, G_PRIORITY_DEFAULT, NULL,
                                        concurrent_cb, &t);
    }
  while (t.done < 200 && g_get_monotonic_time () < deadline)
    g_main_context_iteration (NULL, TRUE);
  g_test_message ("200 concurrent requests: %u answered OK in %.1f ms", t.ok,
                  (g_get_monotonic_time () - start) / 1000.0);
  g_assert_cmpuint (t.done, ==, 200);
  return t;
}

/* A marketd that lets one address hold many connections (as behind a
 * proxy) serves all 200. */
static void
test_concurrency (void)
{
  const char *imports[] = { market_demo_dir (), extra_dir, NULL };
  const char *args[] = { "--max-connections-per-address", "0", NULL };
  MarketServer *uncapped = market_server_start_with_args (imports, NULL, args);
  Tally t = burst_of_requests (uncapped->url);

  g_assert_cmpuint (t.ok, ==, 200);
  market_server_stop (uncapped);
}

/* A connection to @url's host and port that sends nothing. */
static GSocketConnection *
idle_connection (const char *url)
{
  g_autoptr(GUri) uri = g_uri_parse (url, G_URI_FLAGS_NONE, NULL);
  g_autoptr(GSocketClient) sc = g_socket_client_new ();
  g_autoptr(GError) error = NULL;
  GSocketConnection *conn = g_socket_client_connect_to_host (sc, g_uri_get_host (uri),
                                                             (guint16) g_uri_get_port (uri),
                                                             NULL, &error);

  g_assert_no_error (error);
  return conn;
}

static guint
get_status (void)
{
  g_autoptr(SoupSession) session = soup_session_new ();
  g_autofree char *full = ts_market_client_build_url (client, "/v1/adapters?q=demo");
  g_autoptr(SoupMessage) msg = soup_message_new ("GET", full);
  g_autoptr(GBytes) body = soup_session_send_and_read (session, msg, NULL, NULL);

  return soup_message_get_status (msg);
}

/* With the default cap, 64 idle connections from one address leave no
 * room for a 65th: it is answered 503 at once; once one of them closes,
 * requests are served again. */
static void
test_connections_capped (void)
{
  GSocketConnection *held[64];
  gint64 start;
  guint status = 0;

  for (guint i = 0; i < G_N_ELEMENTS (held); i++)
    held[i] = idle_connection (server->url);
  start = g_get_monotonic_time ();
  /* the server counts a connection once it accepted it: wait for all 64 */
  for (int tries = 0; tries < 100 && (status = get_status ()) != 503; tries++)
    g_usleep (20000);
  g_test_message ("65th connection: %u after %.1f ms", status,
                  (g_get_monotonic_time () - start) / 1000.0);
  g_assert_cmpuint (status, ==, 503);
  g_io_stream_close (G_IO_STREAM (held[0]), NULL, NULL);
  for (int tries = 0; tries < 100 && (status = get_status ()) != 200; tries++)
    g_usleep (20000);
  g_assert_cmpuint (status, ==, 200);
  for (guint i = 0; i < G_N_ELEMENTS (held); i++)
    g_object_unref (held[i]);
}

int
main (int argc, char **argv)
{
  g_autoptr(GError) error = NULL;
  int rc;

  g_test_init (&argc, &argv, NULL);
  expected = g_ptr_array_new ();
  write_extra_catalogue ();
  server = market_server_start_demo_plus (extra_dir);
  client = ts_market_client_new (server->url, &error);
  g_assert_no_error (error);
  g_test_add_func ("/market/catalogue/search-all", test_search_all);
  g_test_add_func ("/market/catalogue/pagination", test_pagination);
  g_test_add_func ("/market/catalogue/relevance-pagination", test_relevance_pagination);
  g_test_add_func ("/market/catalogue/bad-cursor", test_pagination_bad_cursor);
  g_test_add_func ("/market/catalogue/full-text", test_full_text);
  g_test_add_func ("/market/catalogue/filters", test_filters);
  g_test_add_func ("/market/catalogue/hostile-queries", test_hostile_queries);
  g_test_add_func ("/market/catalogue/details", test_details);
  g_test_add_func ("/market/catalogue/routing-hints", test_routing_hints);
  g_test_add_func ("/market/catalogue/keys-and-not-found", test_keys_and_not_found);
  g_test_add_func ("/market/catalogue/http-ranges-etags", test_http_ranges_and_etags);
  g_test_add_func ("/market/catalogue/http-errors", test_http_errors);
  g_test_add_func ("/market/catalogue/hostile-cursors", test_hostile_cursors);
  g_test_add_func ("/market/catalogue/concurrency", test_concurrency);
  g_test_add_func ("/market/catalogue/connections-capped", test_connections_capped);
  rc = g_test_run ();
  g_object_unref (client);
  market_server_stop (server);
  market_rm_rf (extra_dir);
  return rc;
}
