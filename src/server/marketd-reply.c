/* marketd-reply.c: JSON answers and JSON errors for tensafe-marketd.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"
#include "ts-market-json.h"

#include <stdarg.h>
#include <string.h>

#include "ts-market-json.h"

void
marketd_reply_json (SoupServerMessage *msg, guint status, JsonBuilder *builder)
{
  g_autoptr(JsonNode) root = json_builder_get_root (builder);
  g_autoptr(JsonGenerator) gen = json_generator_new ();
  gsize len = 0;
  char *text;

  json_generator_set_root (gen, root);
  text = json_generator_to_data (gen, &len);
  soup_server_message_set_status (msg, status, NULL);
  soup_message_headers_replace (soup_server_message_get_response_headers (msg),
                                "Cache-Control", "no-cache");
  soup_server_message_set_response (msg, "application/json", SOUP_MEMORY_TAKE, text, len);
}

void
marketd_reply_error (SoupServerMessage *msg, guint status, const char *code,
                     const char *format, ...)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autofree char *message = NULL;
  va_list args;

  va_start (args, format);
  message = g_strdup_vprintf (format, args);
  va_end (args);
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "error");
  json_builder_begin_object (b);
  ts_json_add_string (b, "code", code);
  ts_json_add_string (b, "message", message);
  json_builder_end_object (b);
  json_builder_end_object (b);
  marketd_reply_json (msg, status, b);
}

/* Adds @member holding the strings of a JSON array stored as text in the
 * database; anything unreadable becomes an empty list. */
void
marketd_builder_add_string_array_json (JsonBuilder *b, const char *member,
                                       const char *json_array_text)
{
  g_autoptr(JsonNode) root = NULL;

  json_builder_set_member_name (b, member);
  json_builder_begin_array (b);
  if (json_array_text != NULL)
    root = ts_json_parse_bounded (json_array_text, strlen (json_array_text), 4, NULL);
  if (root != NULL && JSON_NODE_HOLDS_ARRAY (root))
    {
      JsonArray *arr = json_node_get_array (root);
      for (guint i = 0; i < json_array_get_length (arr); i++)
        {
          const char *s = ts_json_array_get_string (arr, i);
          if (s != NULL)
            json_builder_add_string_value (b, s);
        }
    }
  json_builder_end_array (b);
}
