/* ts-json-builder.h: one named member at a time, for the JSON the libraries write.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each adds "@name": @value to the object @builder is building.
 * Thread-safety: as the JsonBuilder. */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* NULL @value writes null. */
void ts_json_builder_add_string (JsonBuilder *builder, const char *name, const char *value);
void ts_json_builder_add_double (JsonBuilder *builder, const char *name, double value);
void ts_json_builder_add_int (JsonBuilder *builder, const char *name, gint64 value);
void ts_json_builder_add_boolean (JsonBuilder *builder, const char *name, gboolean value);

G_END_DECLS
