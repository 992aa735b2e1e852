/* ts-market-manifest.c: release manifests and their canonical JSON.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-manifest.h"

#include <string.h>

#include "ts-market-json.h"
#include "ts-signing.h"

static void
file_free (gpointer data)
{
  TsMarketFile *f = data;

  g_free (f->name);
  g_free (f->sha256);
  g_free (f);
}

TsMarketManifest *
ts_market_manifest_new (const char *id, const char *version, const char *publisher,
                        const char *base_model_sha256)
{
  g_return_val_if_fail (id != NULL, NULL);
  g_return_val_if_fail (version != NULL, NULL);

  TsMarketManifest *self = g_new0 (TsMarketManifest, 1);

  self->id = g_strdup (id);
  self->version = g_strdup (version);
  self->publisher = g_strdup (publisher);
  self->base_model_sha256 = g_strdup (base_model_sha256 ? base_model_sha256 : "");
  self->files = g_ptr_array_new_with_free_func (file_free);
  return self;
}

void
ts_market_manifest_add_file (TsMarketManifest *self, const char *name,
                             const char *sha256, gint64 size)
{
  g_return_if_fail (self != NULL);

  TsMarketFile *f = g_new0 (TsMarketFile, 1);

  f->name = g_strdup (name);
  f->sha256 = g_strdup (sha256);
  f->size = size;
  g_ptr_array_add (self->files, f);
}

const TsMarketFile *
ts_market_manifest_find_file (TsMarketManifest *self, const char *name)
{
  g_return_val_if_fail (self != NULL, NULL);

  for (guint i = 0; i < self->files->len; i++)
    {
      const TsMarketFile *f = g_ptr_array_index (self->files, i);
      if (g_strcmp0 (f->name, name) == 0)
        return f;
    }
  return NULL;
}

void
ts_market_manifest_free (TsMarketManifest *self)
{
  if (self == NULL)
    return;
  g_free (self->id);
  g_free (self->version);
  g_free (self->publisher);
  g_free (self->base_model_sha256);
  g_ptr_array_unref (self->files);
  g_free (self);
}

gboolean
ts_market_name_is_safe (const char *name)
{
  gsize len;

  if (name == NULL)
    return FALSE;
  len = strlen (name);
  if (len == 0 || len > 128 || name[0] == '.' || name[0] == '-')
    return FALSE;
  for (const char *p = name; *p; p++)
    if (!g_ascii_isalnum (*p) && strchr ("._+-", *p) == NULL)
      return FALSE;
  return TRUE;
}

static gboolean
invalid (GError **error, const char *what, const char *value)
{
  g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
               "Invalid %s in release manifest: “%s”", what, value ? value : "(none)");
  return FALSE;
}

gboolean
ts_market_manifest_validate (TsMarketManifest *self, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  if (!ts_market_name_is_safe (self->id))
    return invalid (error, "adapter id", self->id);
  if (!ts_market_name_is_safe (self->version))
    return invalid (error, "version", self->version);
  if (!ts_market_name_is_safe (self->publisher))
    return invalid (error, "publisher", self->publisher);
  if (*self->base_model_sha256 != '\0' && !ts_sha256_hex_is_valid (self->base_model_sha256))
    return invalid (error, "base model SHA-256", self->base_model_sha256);
  if (self->files->len == 0)
    return invalid (error, "file list", "empty");
  for (guint i = 0; i < self->files->len; i++)
    {
      const TsMarketFile *f = g_ptr_array_index (self->files, i);
      if (!ts_market_name_is_safe (f->name))
        return invalid (error, "file name", f->name);
      if (!ts_sha256_hex_is_valid (f->sha256))
        return invalid (error, "file SHA-256", f->sha256);
      if (f->size < 0)
        return invalid (error, "file size", f->name);
      for (guint j = 0; j < i; j++)
        if (strcmp (((TsMarketFile *) g_ptr_array_index (self->files, j))->name, f->name) == 0)
          return invalid (error, "duplicate file", f->name);
    }
  return TRUE;
}

/* JSON string with the minimal escapes: quote, backslash and control characters. */
static void
append_json_string (GString *out, const char *s)
{
  g_string_append_c (out, '"');
  for (const guchar *p = (const guchar *) s; *p; p++)
    {
      if (*p == '"' || *p == '\\')
        g_string_append_printf (out, "\\%c", *p);
      else if (*p < 0x20)
        g_string_append_printf (out, "\\u%04x", *p);
      else
        g_string_append_c (out, *p);
    }
  g_string_append_c (out, '"');
}

static int
compare_files (gconstpointer a, gconstpointer b)
{
  const TsMarketFile *fa = *(TsMarketFile * const *) a;
  const TsMarketFile *fb = *(TsMarketFile * const *) b;

  return strcmp (fa->name, fb->name);
}

char *
ts_market_manifest_to_canonical (TsMarketManifest *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  GString *out = g_string_new ("{\"base_model_sha256\":");

  g_ptr_array_sort (self->files, compare_files);
  append_json_string (out, self->base_model_sha256);
  g_string_append (out, ",\"files\":[");
  for (guint i = 0; i < self->files->len; i++)
    {
      const TsMarketFile *f = g_ptr_array_index (self->files, i);
      g_string_append (out, i ? ",{\"name\":" : "{\"name\":");
      append_json_string (out, f->name);
      g_string_append (out, ",\"sha256\":");
      append_json_string (out, f->sha256);
      g_string_append_printf (out, ",\"size\":%" G_GINT64_FORMAT "}", f->size);
    }
  g_string_append (out, "],\"id\":");
  append_json_string (out, self->id);
  g_string_append (out, ",\"publisher\":");
  append_json_string (out, self->publisher);
  g_string_append (out, ",\"version\":");
  append_json_string (out, self->version);
  g_string_append_c (out, '}');
  return g_string_free (out, FALSE);
}

TsMarketManifest *
ts_market_manifest_from_json (const char *text, GError **error)
{
  g_return_val_if_fail (text != NULL, NULL);

  g_autoptr(JsonNode) root = ts_json_parse_bounded (text, strlen (text), 4, error);
  g_autoptr(TsMarketManifest) m = NULL;
  JsonObject *o = root && JSON_NODE_HOLDS_OBJECT (root) ? json_node_get_object (root) : NULL;
  JsonArray *files = ts_json_get_array (o, "files");

  if (root == NULL)
    return NULL;
  if (files == NULL || ts_json_get_string (o, "id") == NULL
      || ts_json_get_string (o, "version") == NULL
      || ts_json_get_string (o, "publisher") == NULL)
    return invalid (error, "manifest", "missing id, version, publisher or files"), NULL;
  m = ts_market_manifest_new (ts_json_get_string (o, "id"), ts_json_get_string (o, "version"),
                              ts_json_get_string (o, "publisher"),
                              ts_json_get_string (o, "base_model_sha256"));
  for (guint i = 0; i < json_array_get_length (files); i++)
    {
      JsonNode *n = json_array_get_element (files, i);
      JsonObject *f = JSON_NODE_HOLDS_OBJECT (n) ? json_node_get_object (n) : NULL;
      gint64 size = -1;

      if (ts_json_get_string (f, "name") == NULL || ts_json_get_string (f, "sha256") == NULL
          || !ts_json_get_int (f, "size", &size))
        return invalid (error, "manifest file entry", NULL), NULL;
      ts_market_manifest_add_file (m, ts_json_get_string (f, "name"),
                                   ts_json_get_string (f, "sha256"), size);
    }
  return g_steal_pointer (&m);
}
