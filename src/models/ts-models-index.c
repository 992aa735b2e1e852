/* ts-models-index.c: models-index.json, read strictly and written atomically.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-index.h"

#include <json-glib/json-glib.h>

#include "ts-models-error.h"

static void
record_free (TsModelRecord *r)
{
  g_free (r->name);
  g_free (r->file);
  g_free (r->architecture);
  g_free (r->sha256);
  g_free (r);
}

void
ts_model_index_free (TsModelIndex *index)
{
  if (index == NULL)
    return;
  g_free (index->path);
  g_clear_pointer (&index->records, g_ptr_array_unref);
  g_free (index);
}

static char *
dup_member (JsonObject *o, const char *key)
{
  JsonNode *n = json_object_get_member (o, key);

  if (n == NULL || !JSON_NODE_HOLDS_VALUE (n) || json_node_get_value_type (n) != G_TYPE_STRING)
    return NULL;
  return g_strdup (json_node_get_string (n));
}

static TsModelRecord *
parse_record (JsonNode *node)
{
  TsModelRecord *r;
  JsonObject *o;

  if (!JSON_NODE_HOLDS_OBJECT (node))
    return NULL;
  o = json_node_get_object (node);
  r = g_new0 (TsModelRecord, 1);
  r->name = dup_member (o, "name");
  r->file = dup_member (o, "file");
  r->architecture = dup_member (o, "architecture");
  r->sha256 = dup_member (o, "sha256");
  r->bytes = json_object_get_int_member_with_default (o, "bytes", -1);
  r->imported = json_object_get_boolean_member_with_default (o, "imported", FALSE);
  if (r->name == NULL || r->file == NULL || r->sha256 == NULL)
    {
      record_free (r);
      return NULL;
    }
  return r;
}

static gboolean
parse_index (TsModelIndex *index, const char *text, gsize length, GError **error)
{
  g_autoptr(JsonParser) parser = json_parser_new ();
  JsonNode *root, *models;
  JsonArray *a;

  if (!json_parser_load_from_data (parser, text, (gssize) length, error))
    return FALSE;
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root)
      || (models = json_object_get_member (json_node_get_object (root), "models")) == NULL
      || !JSON_NODE_HOLDS_ARRAY (models))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                   "not a model index (an object with a \"models\" array)");
      return FALSE;
    }
  a = json_node_get_array (models);
  for (guint i = 0; i < json_array_get_length (a); i++)
    {
      TsModelRecord *r = parse_record (json_array_get_element (a, i));
      if (r == NULL)
        {
          g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID,
                       "record %u lacks a name, file or sha256", i + 1);
          return FALSE;
        }
      g_ptr_array_add (index->records, r);
    }
  return TRUE;
}

TsModelIndex *
ts_model_index_load (const char *dir, GError **error)
{
  g_return_val_if_fail (dir != NULL, NULL);

  g_autoptr(TsModelIndex) index = g_new0 (TsModelIndex, 1);
  g_autofree char *text = NULL;
  g_autoptr(GError) local = NULL;
  gsize length = 0;

  index->path = g_build_filename (dir, TS_MODEL_INDEX_FILE, NULL);
  index->records = g_ptr_array_new_with_free_func ((GDestroyNotify) record_free);
  if (!g_file_get_contents (index->path, &text, &length, &local))
    {
      if (g_error_matches (local, G_FILE_ERROR, G_FILE_ERROR_NOENT))
        return g_steal_pointer (&index);
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot read %s: %s",
                   index->path, local->message);
      return NULL;
    }
  if (!parse_index (index, text, length, error))
    {
      g_prefix_error (error, "%s: ", index->path);
      return NULL;
    }
  return g_steal_pointer (&index);
}

static void
add_record (JsonBuilder *b, const TsModelRecord *r)
{
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "name");
  json_builder_add_string_value (b, r->name);
  json_builder_set_member_name (b, "file");
  json_builder_add_string_value (b, r->file);
  if (r->architecture != NULL)
    {
      json_builder_set_member_name (b, "architecture");
      json_builder_add_string_value (b, r->architecture);
    }
  json_builder_set_member_name (b, "bytes");
  json_builder_add_int_value (b, r->bytes);
  json_builder_set_member_name (b, "sha256");
  json_builder_add_string_value (b, r->sha256);
  json_builder_set_member_name (b, "imported");
  json_builder_add_boolean_value (b, r->imported);
  json_builder_end_object (b);
}

gboolean
ts_model_index_save (const TsModelIndex *index, GError **error)
{
  g_return_val_if_fail (index != NULL, FALSE);

  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonGenerator) gen = json_generator_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *text = NULL;
  GError *local = NULL;

  json_builder_begin_object (b);
  json_builder_set_member_name (b, "format");
  json_builder_add_int_value (b, 1);
  json_builder_set_member_name (b, "models");
  json_builder_begin_array (b);
  for (guint i = 0; i < index->records->len; i++)
    add_record (b, g_ptr_array_index (index->records, i));
  json_builder_end_array (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  json_generator_set_root (gen, root);
  json_generator_set_pretty (gen, TRUE);
  text = json_generator_to_data (gen, NULL);
  /* g_file_set_contents writes a temporary file, syncs it and renames it. */
  if (!g_file_set_contents (index->path, text, -1, &local))
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write %s: %s",
                   index->path, local->message);
      g_error_free (local);
      return FALSE;
    }
  return TRUE;
}

static gint
find_position (const TsModelIndex *index, const char *name)
{
  for (guint i = 0; i < index->records->len; i++)
    {
      const TsModelRecord *r = g_ptr_array_index (index->records, i);
      if (g_ascii_strcasecmp (r->name, name) == 0)
        return (gint) i;
    }
  return -1;
}

const TsModelRecord *
ts_model_index_find (const TsModelIndex *index, const char *name)
{
  g_return_val_if_fail (index != NULL, NULL);
  g_return_val_if_fail (name != NULL, NULL);

  gint i = find_position (index, name);

  return i < 0 ? NULL : g_ptr_array_index (index->records, i);
}

void
ts_model_index_put (TsModelIndex *index, const char *name, const char *file,
                    const char *architecture, gint64 bytes, const char *sha256,
                    gboolean imported)
{
  g_return_if_fail (index != NULL);
  g_return_if_fail (name != NULL);

  TsModelRecord *r = g_new0 (TsModelRecord, 1);

  ts_model_index_remove (index, name);
  r->name = g_strdup (name);
  r->file = g_strdup (file);
  r->architecture = g_strdup (architecture);
  r->bytes = bytes;
  r->sha256 = g_strdup (sha256);
  r->imported = imported;
  g_ptr_array_add (index->records, r);
}

gboolean
ts_model_index_remove (TsModelIndex *index, const char *name)
{
  g_return_val_if_fail (index != NULL, FALSE);
  g_return_val_if_fail (name != NULL, FALSE);

  gint i = find_position (index, name);

  if (i < 0)
    return FALSE;
  g_ptr_array_remove_index (index->records, (guint) i);
  return TRUE;
}
