/* ts-json-builder.c: named members for a JsonBuilder (ts-json-builder.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-json-builder.h"

void
ts_json_builder_add_string (JsonBuilder *builder, const char *name, const char *value)
{
  g_return_if_fail (JSON_IS_BUILDER (builder));
  json_builder_set_member_name (builder, name);
  if (value != NULL)
    json_builder_add_string_value (builder, value);
  else
    json_builder_add_null_value (builder);
}

void
ts_json_builder_add_double (JsonBuilder *builder, const char *name, double value)
{
  g_return_if_fail (JSON_IS_BUILDER (builder));
  json_builder_set_member_name (builder, name);
  json_builder_add_double_value (builder, value);
}

void
ts_json_builder_add_int (JsonBuilder *builder, const char *name, gint64 value)
{
  g_return_if_fail (JSON_IS_BUILDER (builder));
  json_builder_set_member_name (builder, name);
  json_builder_add_int_value (builder, value);
}

void
ts_json_builder_add_boolean (JsonBuilder *builder, const char *name, gboolean value)
{
  g_return_if_fail (JSON_IS_BUILDER (builder));
  json_builder_set_member_name (builder, name);
  json_builder_add_boolean_value (builder, value);
}
