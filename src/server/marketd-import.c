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

static void
bind_text (sqlite3_stmt *stmt, int i, const char *value)
{
  sqlite3_bind_text (stmt, i, value ? value : "", -1, SQLITE_TRANSIENT);
}

static gboolean
write_publisher (Marketd *self, Release *r, TsSigningKey *key, gint64 now, GError **error)
{
  g_autoptr(sqlite3_stmt) pub = NULL, k = NULL;
  g_autofree char *key_id = ts_signing_key_get_id (key);
  g_autofree char *public_b64 = ts_signing_key_get_public_base64 (key);

  pub = marketd_db_prepare (self->db,
      "INSERT INTO publishers (id, name, created_at) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (id) DO UPDATE SET name = excluded.name", error);
  if (pub == NULL)
    return FALSE;
  bind_text (pub, 1, r->manifest->publisher);
  bind_text (pub, 2, r->publisher_name);
  sqlite3_bind_int64 (pub, 3, now);
  if (!marketd_db_step_done (self->db, pub, error))
    return FALSE;
  k = marketd_db_prepare (self->db,
      "INSERT OR IGNORE INTO publisher_keys (key_id, publisher_id, public_key, created_at) "
      "VALUES (?1, ?2, ?3, ?4)", error);
  if (k == NULL)
    return FALSE;
  bind_text (k, 1, key_id);
  bind_text (k, 2, r->manifest->publisher);
  bind_text (k, 3, public_b64);
  sqlite3_bind_int64 (k, 4, now);
  return marketd_db_step_done (self->db, k, error);
}

/* 1: already published with the same manifest, 0: new, -1: error or conflict. */
static int
check_existing (Marketd *self, Release *r, const char *canonical, GError **error)
{
  g_autoptr(sqlite3_stmt) s = NULL;
  const char *owner;
  int rc;

  s = marketd_db_prepare (self->db,
      "SELECT a.publisher_id, v.manifest FROM adapters a LEFT JOIN versions v "
      "ON v.adapter_id = a.id AND v.version = ?2 WHERE a.id = ?1", error);
  if (s == NULL)
    return -1;
  bind_text (s, 1, r->manifest->id);
  bind_text (s, 2, r->manifest->version);
  rc = sqlite3_step (s);
  if (rc == SQLITE_DONE)
    return 0;
  if (rc != SQLITE_ROW)
    return marketd_db_set_error (self->db, error, "Cannot read adapters"), -1;
  owner = (const char *) sqlite3_column_text (s, 0);
  if (g_strcmp0 (owner, r->manifest->publisher) != 0)
    return fail (error, r->manifest->id, "the adapter id belongs to another publisher"), -1;
  if (sqlite3_column_type (s, 1) == SQLITE_NULL)
    return 0;
  if (g_strcmp0 ((const char *) sqlite3_column_text (s, 1), canonical) == 0)
    return 1;
  return fail (error, r->manifest->id, "this version was already published with other files"), -1;
}

static gboolean
write_adapter_row (Marketd *self, Release *r, gint64 now, gint64 *rowid, GError **error)
{
  g_autoptr(sqlite3_stmt) s = marketd_db_prepare (self->db,
      "INSERT INTO adapters (id, name, description, publisher_id, base_model, "
      "base_model_sha256, license, price_per_1k_tokens, format, rank, alpha, tags, "
      "latest_version, created_at, updated_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?14) "
      "ON CONFLICT (id) DO UPDATE SET name = excluded.name, "
      "description = excluded.description, base_model = excluded.base_model, "
      "base_model_sha256 = excluded.base_model_sha256, license = excluded.license, "
      "price_per_1k_tokens = excluded.price_per_1k_tokens, format = excluded.format, "
      "rank = excluded.rank, alpha = excluded.alpha, tags = excluded.tags, "
      "latest_version = excluded.latest_version, updated_at = excluded.updated_at "
      "RETURNING rowid", error);

  if (s == NULL)
    return FALSE;
  bind_text (s, 1, r->manifest->id);
  bind_text (s, 2, r->name);
  bind_text (s, 3, r->description);
  bind_text (s, 4, r->manifest->publisher);
  bind_text (s, 5, r->base_model);
  bind_text (s, 6, r->manifest->base_model_sha256);
  bind_text (s, 7, r->license);
  sqlite3_bind_double (s, 8, r->price);
  bind_text (s, 9, r->format);
  sqlite3_bind_int64 (s, 10, r->rank);
  sqlite3_bind_double (s, 11, r->alpha);
  bind_text (s, 12, r->tags_json);
  bind_text (s, 13, r->manifest->version);
  sqlite3_bind_int64 (s, 14, now);
  if (sqlite3_step (s) != SQLITE_ROW)
    return marketd_db_set_error (self->db, error, "Cannot write the adapter"), FALSE;
  *rowid = sqlite3_column_int64 (s, 0);
  return TRUE;
}

static gboolean
write_version (Marketd *self, Release *r, const char *canonical, const char *signature,
               const char *key_id, gint64 now, GError **error)
{
  g_autofree char *modules = string_list_to_json (r->target_modules);
  g_autoptr(sqlite3_stmt) v = marketd_db_prepare (self->db,
      "INSERT INTO versions (adapter_id, version, rank, alpha, target_modules, manifest, "
      "signature, key_id, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)", error);
  g_autoptr(sqlite3_stmt) f = NULL;

  if (v == NULL)
    return FALSE;
  bind_text (v, 1, r->manifest->id);
  bind_text (v, 2, r->manifest->version);
  sqlite3_bind_int64 (v, 3, r->rank);
  sqlite3_bind_double (v, 4, r->alpha);
  bind_text (v, 5, modules);
  bind_text (v, 6, canonical);
  bind_text (v, 7, signature);
  bind_text (v, 8, key_id);
  sqlite3_bind_int64 (v, 9, now);
  if (!marketd_db_step_done (self->db, v, error))
    return FALSE;
  f = marketd_db_prepare (self->db, "INSERT INTO files (adapter_id, version, name, sha256, "
                          "size) VALUES (?1, ?2, ?3, ?4, ?5)", error);
  for (guint i = 0; f != NULL && i < r->manifest->files->len; i++)
    {
      TsMarketFile *file = g_ptr_array_index (r->manifest->files, i);
      sqlite3_reset (f);
      bind_text (f, 1, r->manifest->id);
      bind_text (f, 2, r->manifest->version);
      bind_text (f, 3, file->name);
      bind_text (f, 4, file->sha256);
      sqlite3_bind_int64 (f, 5, file->size);
      if (!marketd_db_step_done (self->db, f, error))
        return FALSE;
    }
  return f != NULL;
}

/* The module list and the search row follow the latest version. */
static gboolean
write_search_rows (Marketd *self, Release *r, gint64 rowid, GError **error)
{
  g_autoptr(sqlite3_stmt) del = NULL, mod = NULL, fdel = NULL, fts = NULL;

  del = marketd_db_prepare (self->db,
      "DELETE FROM adapter_target_modules WHERE adapter_id = ?1", error);
  if (del == NULL)
    return FALSE;
  bind_text (del, 1, r->manifest->id);
  if (!marketd_db_step_done (self->db, del, error))
    return FALSE;
  mod = marketd_db_prepare (self->db, "INSERT OR IGNORE INTO adapter_target_modules "
                            "(adapter_id, module) VALUES (?1, ?2)", error);
  for (guint i = 0; mod != NULL && i < r->target_modules->len; i++)
    {
      sqlite3_reset (mod);
      bind_text (mod, 1, r->manifest->id);
      bind_text (mod, 2, g_ptr_array_index (r->target_modules, i));
      if (!marketd_db_step_done (self->db, mod, error))
        return FALSE;
    }
  fdel = marketd_db_prepare (self->db, "DELETE FROM adapters_fts WHERE rowid = ?1", error);
  fts = marketd_db_prepare (self->db, "INSERT INTO adapters_fts (rowid, name, description, "
                            "tags, publisher, base_model) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                            error);
  if (mod == NULL || fdel == NULL || fts == NULL)
    return FALSE;
  sqlite3_bind_int64 (fdel, 1, rowid);
  sqlite3_bind_int64 (fts, 1, rowid);
  bind_text (fts, 2, r->name);
  bind_text (fts, 3, r->description);
  bind_text (fts, 4, r->tags_json);
  bind_text (fts, 5, r->publisher_name);
  bind_text (fts, 6, r->base_model);
  return marketd_db_step_done (self->db, fdel, error)
         && marketd_db_step_done (self->db, fts, error);
}

static gboolean
write_release (Marketd *self, Release *r, TsSigningKey *key, GError **error)
{
  g_autofree char *canonical = ts_market_manifest_to_canonical (r->manifest);
  g_autofree char *signature = NULL, *key_id = ts_signing_key_get_id (key);
  gint64 now = g_get_real_time () / G_USEC_PER_SEC, rowid = 0;
  int existing;

  existing = check_existing (self, r, canonical, error);
  if (existing != 0)
    return existing == 1;
  signature = ts_signing_key_sign (key, canonical, strlen (canonical), error);
  if (signature == NULL)
    return FALSE;
  return write_publisher (self, r, key, now, error)
         && write_adapter_row (self, r, now, &rowid, error)
         && write_version (self, r, canonical, signature, key_id, now, error)
         && write_search_rows (self, r, rowid, error);
}

static gboolean
import_one (Marketd *self, const char *dir, GError **error)
{
  g_autoptr(Release) r = read_release (self, dir, error);
  g_autoptr(TsSigningKey) key = NULL;

  if (r == NULL)
    return FALSE;
  key = publisher_key (self, r->manifest->publisher, error);
  if (key == NULL)
    return FALSE;
  if (!marketd_db_exec (self->db, "BEGIN IMMEDIATE;", error))
    return FALSE;
  if (!write_release (self, r, key, error))
    {
      sqlite3_exec (self->db, "ROLLBACK;", NULL, NULL, NULL);
      return FALSE;
    }
  return marketd_db_exec (self->db, "COMMIT;", error);
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
