/* ts-market-json.h: strict, warning-free readers for JSON from files and peers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* Each getter returns NULL / FALSE when @obj is NULL, the member is missing
 * or of another type; none of them warns, so hostile input is safe.
 * Strings are borrowed from @obj. */
const char *ts_json_get_string (JsonObject *obj, const char *member);
gboolean ts_json_get_int (JsonObject *obj, const char *member, gint64 *out);
/* Integers and reals alike. */
gboolean ts_json_get_number (JsonObject *obj, const char *member, double *out);
JsonObject *ts_json_get_object (JsonObject *obj, const char *member);
JsonArray *ts_json_get_array (JsonObject *obj, const char *member);
/* Element @index of @arr if it is a string, else NULL. */
const char *ts_json_array_get_string (JsonArray *arr, guint index);
/* A list of strings (or a lone string) as a new GPtrArray of char*; NULL if
 * anything in it is not a string. */
GPtrArray *ts_json_get_string_list (JsonObject *obj, const char *member);

/* Builder shorthands: set @member, then add the value (inside an open object). */
void ts_json_add_string (JsonBuilder *b, const char *member, const char *value);
void ts_json_add_int (JsonBuilder *b, const char *member, gint64 value);
void ts_json_add_double (JsonBuilder *b, const char *member, double value);
void ts_json_add_boolean (JsonBuilder *b, const char *member, gboolean value);

/* Parses @len bytes into a root node after checking that arrays and objects
 * nest at most @max_depth deep (json-glib recurses, so depth is bounded
 * before it runs).  Returns a new node or NULL with @error set. */
JsonNode *ts_json_parse_bounded (const char *data, gsize len, guint max_depth,
                                 GError **error);

G_END_DECLS
