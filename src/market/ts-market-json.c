/* ts-market-json.c: strict JSON member readers and a depth-bounded parser.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-json.h"

#include <string.h>

#include "ts-market-error.h"

static JsonNode *
value_member (JsonObject *obj, const char *member, GType type)
{
  JsonNode *node = obj ? json_object_get_member (obj, member) : NULL;

  if (node == NULL || !JSON_NODE_HOLDS_VALUE (node)
      || (type != G_TYPE_INVALID && json_node_get_value_type (node) != type))
    return NULL;
  return node;
}

const char *
ts_json_get_string (JsonObject *obj, const char *member)
{
  g_return_val_if_fail (member != NULL, NULL);

  JsonNode *node = value_member (obj, member, G_TYPE_STRING);

  return node ? json_node_get_string (node) : NULL;
}

gboolean
ts_json_get_int (JsonObject *obj, const char *member, gint64 *out)
{
  JsonNode *node = value_member (obj, member, G_TYPE_INT64);

  g_return_val_if_fail (out != NULL, FALSE);

  if (node == NULL)
    return FALSE;
  *out = json_node_get_int (node);
  return TRUE;
}

gboolean
ts_json_get_number (JsonObject *obj, const char *member, double *out)
{
  JsonNode *node = value_member (obj, member, G_TYPE_INVALID);
  GType t = node ? json_node_get_value_type (node) : G_TYPE_INVALID;

  g_return_val_if_fail (out != NULL, FALSE);

  if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE)
    return FALSE;
  *out = json_node_get_double (node);
  return TRUE;
}

JsonObject *
ts_json_get_object (JsonObject *obj, const char *member)
{
  g_return_val_if_fail (member != NULL, NULL);

  JsonNode *node = obj ? json_object_get_member (obj, member) : NULL;

  return node && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
}

JsonArray *
ts_json_get_array (JsonObject *obj, const char *member)
{
  g_return_val_if_fail (member != NULL, NULL);

  JsonNode *node = obj ? json_object_get_member (obj, member) : NULL;

  return node && JSON_NODE_HOLDS_ARRAY (node) ? json_node_get_array (node) : NULL;
}

const char *
ts_json_array_get_string (JsonArray *arr, guint index)
{
  JsonNode *e = arr && index < json_array_get_length (arr)
                ? json_array_get_element (arr, index) : NULL;

  if (e == NULL || !JSON_NODE_HOLDS_VALUE (e) || json_node_get_value_type (e) != G_TYPE_STRING)
    return NULL;
  return json_node_get_string (e);
}

GPtrArray *
ts_json_get_string_list (JsonObject *obj, const char *member)
{
  g_return_val_if_fail (member != NULL, NULL);

  g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func (g_free);
  const char *lone = ts_json_get_string (obj, member);
  JsonArray *arr = ts_json_get_array (obj, member);

  if (lone != NULL)
    {
      g_ptr_array_add (out, g_strdup (lone));
      return g_steal_pointer (&out);
    }
  if (arr == NULL)
    return NULL;
  for (guint i = 0; i < json_array_get_length (arr); i++)
    {
      const char *e = ts_json_array_get_string (arr, i);
      if (e == NULL)
        return NULL;
      g_ptr_array_add (out, g_strdup (e));
    }
  return g_steal_pointer (&out);
}

void
ts_json_add_string (JsonBuilder *b, const char *member, const char *value)
{
  g_return_if_fail (JSON_IS_BUILDER (b));
  g_return_if_fail (member != NULL);

  json_builder_set_member_name (b, member);
  json_builder_add_string_value (b, value);
}

void
ts_json_add_int (JsonBuilder *b, const char *member, gint64 value)
{
  g_return_if_fail (JSON_IS_BUILDER (b));
  g_return_if_fail (member != NULL);

  json_builder_set_member_name (b, member);
  json_builder_add_int_value (b, value);
}

void
ts_json_add_double (JsonBuilder *b, const char *member, double value)
{
  g_return_if_fail (JSON_IS_BUILDER (b));
  g_return_if_fail (member != NULL);

  json_builder_set_member_name (b, member);
  json_builder_add_double_value (b, value);
}

void
ts_json_add_boolean (JsonBuilder *b, const char *member, gboolean value)
{
  g_return_if_fail (JSON_IS_BUILDER (b));
  g_return_if_fail (member != NULL);

  json_builder_set_member_name (b, member);
  json_builder_add_boolean_value (b, value);
}

/* Depth of [ and { outside strings; stops counting past @limit. */
static guint
max_nesting (const char *data, gsize len, guint limit)
{
  guint depth = 0, deepest = 0;
  gboolean in_string = FALSE;

  for (gsize i = 0; i < len && deepest <= limit; i++)
    {
      char c = data[i];
      if (in_string)
        {
          if (c == '\\')
            i++;
          else if (c == '"')
            in_string = FALSE;
        }
      else if (c == '"')
        in_string = TRUE;
      else if (c == '[' || c == '{')
        {
          depth++;
          deepest = MAX (deepest, depth);
        }
      else if ((c == ']' || c == '}') && depth > 0)
        depth--;
    }
  return deepest;
}

/* Whether a string holds the escape \u0000: C strings end there, so an id
 * "x\u0000y" would be stored and compared as "x". */
static gboolean
has_nul_escape (const char *data, gsize len)
{
  gboolean in_string = FALSE;

  for (gsize i = 0; i < len; i++)
    {
      if (!in_string)
        in_string = data[i] == '"';
      else if (data[i] == '"')
        in_string = FALSE;
      else if (data[i] == '\\')
        {
          if (i + 5 < len && memcmp (data + i + 1, "u0000", 5) == 0)
            return TRUE;
          i++;
        }
    }
  return FALSE;
}

JsonNode *
ts_json_parse_bounded (const char *data, gsize len, guint max_depth, GError **error)
{
  g_return_val_if_fail (data != NULL || len == 0, NULL);

  g_autoptr(JsonParser) parser = NULL;
  g_autoptr(GError) local = NULL;

  if (len > G_MAXSSIZE || max_nesting (data, len, max_depth) > max_depth)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL,
                   "JSON nested deeper than %u levels", max_depth);
      return NULL;
    }
  if (has_nul_escape (data, len))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL,
                   "A JSON string holds a NUL character (\\u0000)");
      return NULL;
    }
  parser = json_parser_new_immutable ();
  if (!json_parser_load_from_data (parser, data, (gssize) len, &local))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL, "Malformed JSON: %s",
                   local->message);
      return NULL;
    }
  if (json_parser_get_root (parser) == NULL)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL, "Empty JSON document");
      return NULL;
    }
  return json_node_ref (json_parser_get_root (parser));
}
