/* marketd-import.c: publishes adapters from folders (PEFT or GGUF LoRA + metadata.json), signed.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "ts-market-error.h"
#include "ts-market-json.h"
#include "ts-market-manifest.h"
#include "ts-signing.h"

#define MAX_FILES_PER_RELEASE 64
#define MAX_METADATA_BYTES (256 * 1024)
/* The chat's router compares every prompt with each adapter's keywords and
 * embeds each example once: a few dozen of each, sentence-sized, are plenty. */
#define MAX_KEYWORDS 64
#define MAX_EXAMPLES 32
#define MAX_HINT_CHARS 500

/* Everything one folder says about one release. */
typedef struct
{
  char             *name;
  char             *description;
  char             *publisher_name;
  char             *base_model;
  char             *license;
  double            price;
  char             *tags_json;
  char             *keywords_json;   /* routing hints, JSON lists of strings */
  char             *examples_json;
  char             *format;
  gint64            rank;
  double            alpha;
  GPtrArray        *target_modules;  /* of char* */
  TsMarketManifest *manifest;
} Release;

static void
release_free (Release *r)
{
  g_free (r->name);
  g_free (r->description);
  g_free (r->publisher_name);
  g_free (r->base_model);
  g_free (r->license);
  g_free (r->tags_json);
  g_free (r->keywords_json);
  g_free (r->examples_json);
  g_free (r->format);
  g_clear_pointer (&r->target_modules, g_ptr_array_unref);
  g_clear_pointer (&r->manifest, ts_market_manifest_free);
  g_free (r);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC (Release, release_free)

static gboolean
fail (GError **error, const char *dir, const char *message)
{
  g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID, "%s: %s", dir, message);
  return FALSE;
}

/* Reads a JSON object from @path; the node (returned in @root, owned) keeps it alive. */
static JsonObject *
load_json_object (const char *path, JsonNode **root, GError **error)
{
  g_autofree char *text = NULL;
  gsize len = 0;

  if (!g_file_get_contents (path, &text, &len, error))
    return NULL;
  if (len > MAX_METADATA_BYTES)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_TOO_LARGE, "%s is too large", path);
      return NULL;
    }
  *root = ts_json_parse_bounded (text, len, 16, error);
  if (*root == NULL)
    {
      g_prefix_error (error, "%s: ", path);
      return NULL;
    }
  if (!JSON_NODE_HOLDS_OBJECT (*root))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   "%s: expected a JSON object", path);
      return NULL;
    }
  return json_node_get_object (*root);
}

static char *
string_list_to_json (GPtrArray *list)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;

  json_builder_begin_array (b);
  for (guint i = 0; list && i < list->len; i++)
    json_builder_add_string_value (b, g_ptr_array_index (list, i));
  json_builder_end_array (b);
  root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}

static gboolean
read_lora_shape_peft (const char *dir, Release *r, GError **error)
{
  g_autofree char *path = g_build_filename (dir, "adapter_config.json", NULL);
  g_autoptr(JsonNode) root = NULL;
  JsonObject *cfg = load_json_object (path, &root, error);
  double rank = 0;

  if (cfg == NULL)
    return FALSE;
  if (!ts_json_get_number (cfg, "r", &rank) || rank < 1 || rank > 65536 || rank != (gint64) rank)
    return fail (error, path, "“r” must be a positive integer");
  if (!ts_json_get_number (cfg, "lora_alpha", &r->alpha))
    return fail (error, path, "“lora_alpha” must be a number");
  r->rank = (gint64) rank;
  r->target_modules = ts_json_get_string_list (cfg, "target_modules");
  if (r->target_modules == NULL || r->target_modules->len == 0)
    return fail (error, path, "“target_modules” must list module names");
  r->format = g_strdup ("peft");
  return TRUE;
}

/* A safetensors file starts with a little-endian u64 header length, then JSON. */
static gboolean
check_safetensors (const char *path, GError **error)
{
  g_autoptr(GMappedFile) map = g_mapped_file_new (path, FALSE, error);
  const guchar *p;
  gsize len;
  guint64 hlen = 0;

  if (map == NULL)
    return FALSE;
  p = (const guchar *) g_mapped_file_get_contents (map);
  len = g_mapped_file_get_length (map);
  for (int i = 7; len >= 8 && i >= 0; i--)
    hlen = (hlen << 8) | p[i];
  if (len < 10 || hlen < 2 || hlen > len - 8 || p[8] != '{')
    return fail (error, path, "not a safetensors file");
  return TRUE;
}

static gboolean
check_gguf (const char *path, GError **error)
{
  g_autoptr(GFile) f = g_file_new_for_path (path);
  g_autoptr(GFileInputStream) in = g_file_read (f, NULL, error);
  char magic[4] = { 0 };
  gsize got = 0;

  if (in == NULL
      || !g_input_stream_read_all (G_INPUT_STREAM (in), magic, 4, &got, NULL, error))
    return FALSE;
  if (got != 4 || memcmp (magic, "GGUF", 4) != 0)
    return fail (error, path, "not a GGUF file");
  return TRUE;
}

/* GGUF LoRA files carry their shape in metadata.json (rank, alpha, target_modules). */
static gboolean
read_lora_shape_gguf (const char *dir, JsonObject *meta, Release *r, GError **error)
{
  double rank = 0;

  if (!ts_json_get_number (meta, "rank", &rank) || rank < 1 || rank > 65536 || rank != (gint64) rank
      || !ts_json_get_number (meta, "alpha", &r->alpha))
    return fail (error, dir, "a GGUF adapter needs “rank” and “alpha” in metadata.json");
  r->rank = (gint64) rank;
  r->target_modules = ts_json_get_string_list (meta, "target_modules");
  if (r->target_modules == NULL || r->target_modules->len == 0)
    return fail (error, dir, "a GGUF adapter needs “target_modules” in metadata.json");
  r->format = g_strdup ("gguf");
  return TRUE;
}

/* The optional list @member of @meta (at most @max_items strings of 1 to
 * MAX_HINT_CHARS characters) as JSON text in @json_out; "[]" when absent. */
static gboolean
read_hint_list (const char *dir, JsonObject *meta, const char *member, guint max_items,
                char **json_out, GError **error)
{
  g_autoptr(GPtrArray) list = json_object_has_member (meta, member)
                              ? ts_json_get_string_list (meta, member)
                              : g_ptr_array_new_with_free_func (g_free);
  g_autofree char *message = NULL;

  if (list == NULL)
    message = g_strdup_printf ("“%s” must be a list of strings", member);
  else if (list->len > max_items)
    message = g_strdup_printf ("“%s” lists %u entries; at most %u are allowed", member,
                               list->len, max_items);
  for (guint i = 0; message == NULL && i < list->len; i++)
    {
      glong chars = g_utf8_strlen (g_ptr_array_index (list, i), -1);
      if (chars < 1 || chars > MAX_HINT_CHARS)
        message = g_strdup_printf ("“%s” entry %u has %ld characters; each needs 1 to %d",
                                   member, i + 1, chars, MAX_HINT_CHARS);
    }
  if (message != NULL)
    return fail (error, dir, message);
  *json_out = string_list_to_json (list);
  return TRUE;
}

static gboolean
read_metadata (const char *dir, JsonObject *meta, Release *r, GError **error)
{
  JsonNode *pub = json_object_get_member (meta, "publisher");
  const char *id = ts_json_get_string (meta, "id"), *version = ts_json_get_string (meta, "version");
  const char *publisher = NULL;
  g_autoptr(GPtrArray) tags = NULL;

  if (pub != NULL && JSON_NODE_HOLDS_OBJECT (pub))
    {
      publisher = ts_json_get_string (json_node_get_object (pub), "id");
      r->publisher_name = g_strdup (ts_json_get_string (json_node_get_object (pub), "name"));
    }
  else
    publisher = ts_json_get_string (meta, "publisher");
  if (id == NULL || version == NULL || publisher == NULL
      || ts_json_get_string (meta, "name") == NULL || ts_json_get_string (meta, "base_model") == NULL)
    return fail (error, dir, "metadata.json needs id, name, version, publisher and base_model");
  if (r->publisher_name == NULL)
    r->publisher_name = g_strdup (publisher);
  r->name = g_strdup (ts_json_get_string (meta, "name"));
  r->description = g_strdup (ts_json_get_string (meta, "description"));
  r->base_model = g_strdup (ts_json_get_string (meta, "base_model"));
  r->license = g_strdup (ts_json_get_string (meta, "license"));
  if (json_object_has_member (meta, "price_per_1k_tokens")
      && (!ts_json_get_number (meta, "price_per_1k_tokens", &r->price) || r->price < 0))
    return fail (error, dir, "“price_per_1k_tokens” must be a number ≥ 0");
  tags = json_object_has_member (meta, "tags") ? ts_json_get_string_list (meta, "tags")
                                               : g_ptr_array_new_with_free_func (g_free);
  if (tags == NULL)
    return fail (error, dir, "“tags” must be a list of strings");
  r->tags_json = string_list_to_json (tags);
  if (!read_hint_list (dir, meta, "keywords", MAX_KEYWORDS, &r->keywords_json, error)
      || !read_hint_list (dir, meta, "examples", MAX_EXAMPLES, &r->examples_json, error))
    return FALSE;
  r->manifest = ts_market_manifest_new (id, version, publisher,
                                        ts_json_get_string (meta, "base_model_sha256"));
  return TRUE;
}

/* Publishes every regular file of the folder but metadata.json. */
static gboolean
collect_files (Marketd *self, const char *dir, Release *r, GError **error)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, error);
  const char *name;

  if (d == NULL)
    return FALSE;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_autofree char *sha = NULL;
      gint64 size = 0;

      if (strcmp (name, "metadata.json") == 0 || !g_file_test (path, G_FILE_TEST_IS_REGULAR))
        continue;
      if (!ts_market_name_is_safe (name))
        return fail (error, path, "unsafe file name");
      if (r->manifest->files->len >= MAX_FILES_PER_RELEASE)
        return fail (error, dir, "too many files");
      if (g_str_has_suffix (name, ".safetensors") && !check_safetensors (path, error))
        return FALSE;
      if (g_str_has_suffix (name, ".gguf") && !check_gguf (path, error))
        return FALSE;
      if (!marketd_blob_store (self, path, &sha, &size, error))
        return FALSE;
      ts_market_manifest_add_file (r->manifest, name, sha, size);
    }
  return TRUE;
}

static Release *
read_release (Marketd *self, const char *dir, GError **error)
{
  g_autoptr(Release) r = g_new0 (Release, 1);
  g_autofree char *meta_path = g_build_filename (dir, "metadata.json", NULL);
  g_autofree char *cfg = g_build_filename (dir, "adapter_config.json", NULL);
  g_autofree char *st = g_build_filename (dir, "adapter_model.safetensors", NULL);
  g_autoptr(JsonNode) root = NULL;
  JsonObject *meta = load_json_object (meta_path, &root, error);

  if (meta == NULL || !read_metadata (dir, meta, r, error))
    return NULL;
  if (!collect_files (self, dir, r, error))
    return NULL;
  if (g_file_test (cfg, G_FILE_TEST_IS_REGULAR) && g_file_test (st, G_FILE_TEST_IS_REGULAR))
    {
      if (!read_lora_shape_peft (dir, r, error))
        return NULL;
    }
  else
    {
      gboolean has_gguf = FALSE;
      for (guint i = 0; i < r->manifest->files->len; i++)
        has_gguf |= g_str_has_suffix (((TsMarketFile *) r->manifest->files->pdata[i])->name,
                                      ".gguf");
      if (!has_gguf)
        return fail (error, dir, "neither a PEFT folder nor a GGUF LoRA file"), NULL;
      if (!read_lora_shape_gguf (dir, meta, r, error))
        return NULL;
    }
  if (!ts_market_manifest_validate (r->manifest, error))
    {
      g_prefix_error (error, "%s: ", dir);
      return NULL;
    }
  return g_steal_pointer (&r);
}

/* The publisher's signing key, made on first use and kept (0600) in the keys dir. */
static TsSigningKey *
publisher_key (Marketd *self, const char *publisher, GError **error)
{
  g_autofree char *file = g_strconcat (publisher, ".pem", NULL);
  g_autofree char *path = g_build_filename (self->keys_dir, file, NULL);
  g_autoptr(TsSigningKey) key = NULL;

  if (g_file_test (path, G_FILE_TEST_EXISTS))
    return ts_signing_key_load_private (path, error);
  if (g_mkdir_with_parents (self->keys_dir, 0700) != 0)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_IO, "Cannot create %s",
                   self->keys_dir);
      return NULL;
    }
  key = ts_signing_key_generate (error);
  if (key == NULL || !ts_signing_key_save_private (key, path, error))
    return NULL;
  return g_steal_pointer (&key);
}

/* Texts the metadata may leave out are stored as "". */
static MarketdValue
text_or_empty (const char *value)
{
  return marketd_text (value ? value : "");
}

/* Runs one write statement; FALSE with @error set when it fails. */
static gboolean
write_row (Marketd *self, const char *sql, const MarketdValue *params, guint n,
           GError **error)
{
  g_autoptr(MarketdRows) rows = marketd_store_query (self->store, sql, params, n, error);

  return rows != NULL;
}

static gboolean
write_publisher (Marketd *self, Release *r, TsSigningKey *key, gint64 now, GError **error)
{
  g_autofree char *key_id = ts_signing_key_get_id (key);
  g_autofree char *public_b64 = ts_signing_key_get_public_base64 (key);
  MarketdValue pub[] = {
    text_or_empty (r->manifest->publisher), text_or_empty (r->publisher_name), marketd_int (now),
  };
  MarketdValue k[] = {
    text_or_empty (key_id), text_or_empty (r->manifest->publisher), text_or_empty (public_b64),
    marketd_int (now),
  };

  return write_row (self, "INSERT INTO publishers (id, name, created_at) VALUES (?1, ?2, ?3) "
                    "ON CONFLICT (id) DO UPDATE SET name = excluded.name", pub,
                    G_N_ELEMENTS (pub), error)
         && write_row (self, "INSERT INTO publisher_keys (key_id, publisher_id, public_key, "
                       "created_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING", k,
                       G_N_ELEMENTS (k), error);
}

/* 1: already published with the same manifest, 0: new, -1: error or conflict. */
static int
check_existing (Marketd *self, Release *r, const char *canonical, GError **error)
{
  MarketdValue params[] = { text_or_empty (r->manifest->id), text_or_empty (r->manifest->version) };
  g_autoptr(MarketdRows) s = marketd_store_query (
      self->store, "SELECT a.publisher_id, v.manifest FROM adapters a LEFT JOIN versions v "
      "ON v.adapter_id = a.id AND v.version = ?2 WHERE a.id = ?1", params,
      G_N_ELEMENTS (params), error);

  if (s == NULL)
    return g_prefix_error (error, "Cannot read adapters: "), -1;
  if (marketd_rows_count (s) == 0)
    return 0;
  if (g_strcmp0 (marketd_rows_text (s, 0, 0), r->manifest->publisher) != 0)
    return fail (error, r->manifest->id, "the adapter id belongs to another publisher"), -1;
  if (marketd_rows_is_null (s, 0, 1))
    return 0;
  if (g_strcmp0 (marketd_rows_text (s, 0, 1), canonical) == 0)
    return 1;
  return fail (error, r->manifest->id, "this version was already published with other files"), -1;
}

static gboolean
write_adapter_row (Marketd *self, Release *r, gint64 now, gint64 *rowid, GError **error)
{
  MarketdValue params[] = {
    text_or_empty (r->manifest->id), text_or_empty (r->name), text_or_empty (r->description),
    text_or_empty (r->manifest->publisher), text_or_empty (r->base_model),
    text_or_empty (r->manifest->base_model_sha256), text_or_empty (r->license),
    marketd_double (r->price), text_or_empty (r->format), marketd_int (r->rank),
    marketd_double (r->alpha), text_or_empty (r->tags_json), text_or_empty (r->manifest->version),
    marketd_int (now), text_or_empty (r->keywords_json), text_or_empty (r->examples_json),
  };
  g_autoptr(MarketdRows) s = marketd_store_query (self->store,
      "INSERT INTO adapters (id, name, description, publisher_id, base_model, "
      "base_model_sha256, license, price_per_1k_tokens, format, rank, alpha, tags, "
      "latest_version, created_at, updated_at, keywords, examples) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14, ?15, ?16) "
      "ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
      "description = excluded.description, base_model = excluded.base_model, "
      "base_model_sha256 = excluded.base_model_sha256, license = excluded.license, "
      "price_per_1k_tokens = excluded.price_per_1k_tokens, format = excluded.format, "
      "rank = excluded.rank, alpha = excluded.alpha, tags = excluded.tags, "
      "keywords = excluded.keywords, examples = excluded.examples, "
      "latest_version = excluded.latest_version, updated_at = excluded.updated_at "
      "RETURNING rowid", params, G_N_ELEMENTS (params), error);

  if (s == NULL || marketd_rows_count (s) != 1)
    return g_prefix_error (error, "Cannot write the adapter: "), FALSE;
  *rowid = marketd_rows_int64 (s, 0, 0);
  return TRUE;
}

static gboolean
write_version (Marketd *self, Release *r, const char *canonical, const char *signature,
               const char *key_id, gint64 now, GError **error)
{
  g_autofree char *modules = string_list_to_json (r->target_modules);
  MarketdValue v[] = {
    text_or_empty (r->manifest->id), text_or_empty (r->manifest->version), marketd_int (r->rank),
    marketd_double (r->alpha), text_or_empty (modules), text_or_empty (canonical),
    text_or_empty (signature), text_or_empty (key_id), marketd_int (now),
  };

  if (!write_row (self, "INSERT INTO versions (adapter_id, version, rank, alpha, "
                  "target_modules, manifest, signature, key_id, created_at) "
                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", v, G_N_ELEMENTS (v), error))
    return FALSE;
  for (guint i = 0; i < r->manifest->files->len; i++)
    {
      TsMarketFile *file = g_ptr_array_index (r->manifest->files, i);
      MarketdValue f[] = {
        text_or_empty (r->manifest->id), text_or_empty (r->manifest->version),
        text_or_empty (file->name), text_or_empty (file->sha256), marketd_int (file->size),
      };
      if (!write_row (self, "INSERT INTO files (adapter_id, version, name, sha256, size) "
                      "VALUES (?1, ?2, ?3, ?4, ?5)", f, G_N_ELEMENTS (f), error))
        return FALSE;
    }
  return TRUE;
}

/* The search document: an FTS5 row keyed by the adapter's rowid in SQLite,
 * the adapter's weighted tsvector in PostgreSQL (see the migrations). */
static gboolean
write_search_document (Marketd *self, Release *r, gint64 rowid, GError **error)
{
  MarketdValue id[] = { marketd_int (rowid) };
  MarketdValue doc[] = {
    marketd_int (rowid), text_or_empty (r->name), text_or_empty (r->description),
    text_or_empty (r->tags_json), text_or_empty (r->publisher_name),
    text_or_empty (r->base_model),
  };

  if (self->store->dialect == MARKETD_DIALECT_POSTGRESQL)
    return write_row (self, "UPDATE adapters SET search_vector = "
                      "setweight(to_tsvector('simple', unaccent(?2)), 'A') || "
                      "setweight(to_tsvector('simple', unaccent(?3)), 'B') || "
                      "setweight(to_tsvector('simple', unaccent(?4)), 'C') || "
                      "setweight(to_tsvector('simple', unaccent(?5 || ' ' || ?6)), 'D') "
                      "WHERE rowid = ?1", doc, G_N_ELEMENTS (doc), error);
  return write_row (self, "DELETE FROM adapters_fts WHERE rowid = ?1", id, 1, error)
         && write_row (self, "INSERT INTO adapters_fts (rowid, name, description, tags, "
                       "publisher, base_model) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", doc,
                       G_N_ELEMENTS (doc), error);
}

/* The module list and the search document follow the latest version. */
static gboolean
write_search_rows (Marketd *self, Release *r, gint64 rowid, GError **error)
{
  MarketdValue del[] = { text_or_empty (r->manifest->id) };

  if (!write_row (self, "DELETE FROM adapter_target_modules WHERE adapter_id = ?1", del, 1,
                  error))
    return FALSE;
  for (guint i = 0; i < r->target_modules->len; i++)
    {
      MarketdValue mod[] = {
        text_or_empty (r->manifest->id), text_or_empty (g_ptr_array_index (r->target_modules, i)),
      };
      if (!write_row (self, "INSERT INTO adapter_target_modules (adapter_id, module) "
                      "VALUES (?1, ?2) ON CONFLICT DO NOTHING", mod, G_N_ELEMENTS (mod), error))
        return FALSE;
    }
  return write_search_document (self, r, rowid, error);
}

/* An unchanged release imported again still brings its routing hints up to
 * date (they are not signed), so a catalogue published before they were kept
 * gets them; only the latest version speaks for the adapter. */
static gboolean
refresh_routing_hints (Marketd *self, Release *r, GError **error)
{
  MarketdValue params[] = {
    text_or_empty (r->manifest->id), text_or_empty (r->manifest->version),
    text_or_empty (r->keywords_json), text_or_empty (r->examples_json),
  };

  return write_row (self, "UPDATE adapters SET keywords = ?3, examples = ?4 "
                    "WHERE id = ?1 AND latest_version = ?2", params, G_N_ELEMENTS (params),
                    error);
}

static gboolean
write_release (Marketd *self, Release *r, TsSigningKey *key, GError **error)
{
  g_autofree char *canonical = ts_market_manifest_to_canonical (r->manifest);
  g_autofree char *signature = NULL, *key_id = ts_signing_key_get_id (key);
  gint64 now = g_get_real_time () / G_USEC_PER_SEC, rowid = 0;
  int existing;

  existing = check_existing (self, r, canonical, error);
  if (existing == 1)
    return refresh_routing_hints (self, r, error);
  if (existing != 0)
    return FALSE;
  signature = ts_signing_key_sign (key, canonical, strlen (canonical), error);
  if (signature == NULL)
    return FALSE;
  return write_publisher (self, r, key, now, error)
         && write_adapter_row (self, r, now, &rowid, error)
         && write_version (self, r, canonical, signature, key_id, now, error)
         && write_search_rows (self, r, rowid, error);
}

/* The release is written in a catalogue transaction: servers importing the
 * same folder at once take turns, and the later ones find it published.
 * The key is chosen inside it, so two of them sharing a keys folder do not
 * both make a first key. */
static gboolean
import_one (Marketd *self, const char *dir, GError **error)
{
  g_autoptr(Release) r = read_release (self, dir, error);
  g_autoptr(TsSigningKey) key = NULL;

  if (r == NULL)
    return FALSE;
  if (!marketd_store_begin (self->store, TRUE, error))
    return FALSE;
  key = publisher_key (self, r->manifest->publisher, error);
  if (key == NULL || !write_release (self, r, key, error))
    {
      marketd_store_rollback (self->store);
      return FALSE;
    }
  return marketd_store_commit (self->store, error);
}

static int
compare_strings (gconstpointer a, gconstpointer b)
{
  return strcmp (*(char * const *) a, *(char * const *) b);
}

gboolean
marketd_import_dir (Marketd *self, const char *dir, guint *n_imported, GError **error)
{
  g_autofree char *meta = g_build_filename (dir, "metadata.json", NULL);
  g_autoptr(GDir) d = NULL;
  g_autoptr(GPtrArray) subdirs = g_ptr_array_new_with_free_func (g_free);
  const char *name;

  *n_imported = 0;
  if (g_file_test (meta, G_FILE_TEST_IS_REGULAR))
    {
      if (!import_one (self, dir, error))
        return FALSE;
      *n_imported = 1;
      return TRUE;
    }
  d = g_dir_open (dir, 0, error);
  if (d == NULL)
    return FALSE;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *sub = g_build_filename (dir, name, "metadata.json", NULL);
      if (g_file_test (sub, G_FILE_TEST_IS_REGULAR))
        g_ptr_array_add (subdirs, g_build_filename (dir, name, NULL));
    }
  /* Name order makes a folder of several versions import oldest first. */
  g_ptr_array_sort (subdirs, compare_strings);
  for (guint i = 0; i < subdirs->len; i++)
    {
      if (!import_one (self, g_ptr_array_index (subdirs, i), error))
        return FALSE;
      (*n_imported)++;
    }
  return TRUE;
}
