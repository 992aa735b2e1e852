/* ts-adapter-base.c: the base model an adapter names.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-adapter-base.h"

#include <json-glib/json-glib.h>

/* @member of the JSON object in @dir/@file, or NULL. */
static char *
json_string_member (const char *dir, const char *file, const char *member)
{
  g_autofree char *path = g_build_filename (dir, file, NULL);
  g_autoptr (JsonParser) parser = json_parser_new ();
  JsonNode *root;
  JsonObject *object;
  const char *value;

  if (!g_file_test (path, G_FILE_TEST_IS_REGULAR) || !json_parser_load_from_file (parser, path, NULL))
    return NULL;
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    return NULL;
  object = json_node_get_object (root);
  if (!json_object_has_member (object, member)
      || !JSON_NODE_HOLDS_VALUE (json_object_get_member (object, member))
      || json_node_get_value_type (json_object_get_member (object, member)) != G_TYPE_STRING)
    return NULL;
  value = json_object_get_string_member (object, member);
  return value != NULL && *value != '\0' ? g_strdup (value) : NULL;
}

char *
ts_adapter_base_model (const char *path)
{
  char *name;

  if (path == NULL || !g_file_test (path, G_FILE_TEST_IS_DIR))
    return NULL;
  name = json_string_member (path, "metadata.json", "base_model");
  return name != NULL ? name : json_string_member (path, "adapter_config.json",
                                                   "base_model_name_or_path");
}

void
ts_adapter_explain_mismatch (GError *error, const char *adapter_path, const char *model_path)
{
  g_autofree char *base = ts_adapter_base_model (adapter_path);
  g_autofree char *model = model_path != NULL ? g_path_get_basename (model_path) : NULL;
  char *message;

  if (error == NULL || base == NULL)
    return;
  message = g_strdup_printf ("%s. This adapter was made for the model %s, not for %s: load "
                             "that model to use it", error->message, base,
                             model != NULL ? model : "the loaded one");
  g_free (error->message);
  error->message = message;
}
