/* ts-market-types.c: catalogue records and their strict JSON parsers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-types.h"

#include "ts-market-json.h"
#include "ts-signing.h"

static void
version_free (gpointer data)
{
  TsMarketVersion *v = data;

  g_free (v->version);
  g_strfreev (v->target_modules);
  g_clear_pointer (&v->manifest, ts_market_manifest_free);
  g_clear_pointer (&v->file_urls, g_ptr_array_unref);
  g_free (v->signature);
  g_free (v->key_id);
  g_free (v);
}

static void
adapter_clear (TsMarketAdapter *a)
{
  g_free (a->id);
  g_free (a->name);
  g_free (a->description);
  g_free (a->publisher_id);
  g_free (a->publisher_name);
  g_free (a->base_model);
  g_free (a->base_model_sha256);
  g_free (a->license);
  g_free (a->format);
  g_strfreev (a->tags);
  g_strfreev (a->keywords);
  g_strfreev (a->examples);
  g_strfreev (a->target_modules);
  g_free (a->latest_version);
  g_clear_pointer (&a->versions, g_ptr_array_unref);
}

TsMarketAdapter *
ts_market_adapter_ref (TsMarketAdapter *self)
{
  g_return_val_if_fail (self != NULL, NULL);

  return g_atomic_rc_box_acquire (self);
}

void
ts_market_adapter_unref (TsMarketAdapter *self)
{
  g_atomic_rc_box_release_full (self, (GDestroyNotify) adapter_clear);
}

G_DEFINE_BOXED_TYPE (TsMarketAdapter, ts_market_adapter, ts_market_adapter_ref,
                     ts_market_adapter_unref)

TsMarketVersion *
ts_market_adapter_find_version (TsMarketAdapter *self, const char *version)
{
  g_return_val_if_fail (self != NULL, NULL);

  if (version == NULL)
    version = self->latest_version;
  for (guint i = 0; self->versions && i < self->versions->len; i++)
    {
      TsMarketVersion *v = g_ptr_array_index (self->versions, i);
      if (g_strcmp0 (v->version, version) == 0)
        return v;
    }
  return NULL;
}

void
ts_market_page_free (TsMarketPage *self)
{
  if (self == NULL)
    return;
  g_ptr_array_unref (self->adapters);
  g_free (self->next_cursor);
  g_free (self);
}

void
ts_market_publisher_key_free (TsMarketPublisherKey *self)
{
  if (self == NULL)
    return;
  g_free (self->key_id);
  g_free (self->algorithm);
  g_free (self->public_key);
  g_free (self);
}

static gpointer
bad_shape (GError **error, const char *what)
{
  g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL,
               "Unexpected answer from the marketplace: %s", what);
  return NULL;
}

static GStrv
strv_member (JsonObject *o, const char *member)
{
  g_autoptr(GPtrArray) list = ts_json_get_string_list (o, member);

  if (list == NULL)
    return g_new0 (char *, 1);
  g_ptr_array_add (list, NULL);
  return (GStrv) g_ptr_array_steal (list, NULL);
}

static gboolean
parse_files (JsonObject *vo, TsMarketVersion *v, GError **error)
{
  JsonArray *files = ts_json_get_array (vo, "files");

  if (files == NULL)
    return bad_shape (error, "a version without files"), FALSE;
  for (guint i = 0; i < json_array_get_length (files); i++)
    {
      JsonNode *n = json_array_get_element (files, i);
      JsonObject *f = JSON_NODE_HOLDS_OBJECT (n) ? json_node_get_object (n) : NULL;
      const char *name = ts_json_get_string (f, "name");
      const char *sha = ts_json_get_string (f, "sha256");
      const char *url = ts_json_get_string (f, "url");
      gint64 size = -1;

      if (name == NULL || sha == NULL || url == NULL || !ts_json_get_int (f, "size", &size))
        return bad_shape (error, "a file entry lacks name, sha256, size or url"), FALSE;
      ts_market_manifest_add_file (v->manifest, name, sha, size);
      g_ptr_array_add (v->file_urls, g_strdup (url));
    }
  return TRUE;
}

static TsMarketVersion *
parse_version (JsonNode *node, TsMarketAdapter *a, GError **error)
{
  JsonObject *vo = JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
  JsonObject *sig = ts_json_get_object (vo, "signature");
  g_autoptr(GPtrArray) keep = g_ptr_array_new_with_free_func (version_free);
  TsMarketVersion *v = g_new0 (TsMarketVersion, 1);

  g_ptr_array_add (keep, v);
  v->version = g_strdup (ts_json_get_string (vo, "version"));
  v->signature = g_strdup (ts_json_get_string (sig, "value"));
  v->key_id = g_strdup (ts_json_get_string (sig, "key_id"));
  if (v->version == NULL || v->signature == NULL || v->key_id == NULL
      || g_strcmp0 (ts_json_get_string (sig, "algorithm"), "ed25519") != 0)
    return bad_shape (error, "a version lacks its name or Ed25519 signature");
  ts_json_get_int (vo, "rank", &v->rank);
  ts_json_get_number (vo, "alpha", &v->alpha);
  ts_json_get_int (vo, "created_at", &v->created_at);
  v->target_modules = strv_member (vo, "target_modules");
  v->manifest = ts_market_manifest_new (a->id, v->version, a->publisher_id,
                                        a->base_model_sha256);
  v->file_urls = g_ptr_array_new_with_free_func (g_free);
  if (!parse_files (vo, v, error))
    return NULL;
  return g_ptr_array_steal_index (keep, 0);
}

static gboolean
parse_summary (JsonObject *o, TsMarketAdapter *a, GError **error)
{
  JsonObject *pub = ts_json_get_object (o, "publisher");

  a->id = g_strdup (ts_json_get_string (o, "id"));
  a->name = g_strdup (ts_json_get_string (o, "name"));
  a->publisher_id = g_strdup (ts_json_get_string (pub, "id"));
  a->latest_version = g_strdup (ts_json_get_string (o, "latest_version"));
  if (a->id == NULL || a->name == NULL || a->publisher_id == NULL || a->latest_version == NULL)
    return bad_shape (error, "an adapter lacks id, name, publisher or version"), FALSE;
  a->publisher_name = g_strdup (ts_json_get_string (pub, "name"));
  a->description = g_strdup (ts_json_get_string (o, "description"));
  a->base_model = g_strdup (ts_json_get_string (o, "base_model"));
  a->base_model_sha256 = g_strdup (ts_json_get_string (o, "base_model_sha256"));
  a->license = g_strdup (ts_json_get_string (o, "license"));
  a->format = g_strdup (ts_json_get_string (o, "format"));
  ts_json_get_number (o, "price_per_1k_tokens", &a->price_per_1k_tokens);
  ts_json_get_int (o, "rank", &a->rank);
  ts_json_get_number (o, "alpha", &a->alpha);
  ts_json_get_int (o, "updated_at", &a->updated_at);
  a->tags = strv_member (o, "tags");
  a->keywords = strv_member (o, "keywords");
  a->examples = strv_member (o, "examples");
  a->target_modules = strv_member (o, "target_modules");
  return TRUE;
}

TsMarketAdapter *
ts_market_adapter_from_json (JsonNode *node, GError **error)
{
  g_autoptr(TsMarketAdapter) a = g_atomic_rc_box_new0 (TsMarketAdapter);
  JsonObject *o = node && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
  JsonArray *versions;

  a->versions = g_ptr_array_new_with_free_func (version_free);
  if (o == NULL)
    return bad_shape (error, "an adapter is not an object");
  if (!parse_summary (o, a, error))
    return NULL;
  versions = ts_json_get_array (o, "versions");
  for (guint i = 0; versions && i < json_array_get_length (versions); i++)
    {
      TsMarketVersion *v = parse_version (json_array_get_element (versions, i), a, error);
      if (v == NULL)
        return NULL;
      g_ptr_array_add (a->versions, v);
    }
  return g_steal_pointer (&a);
}

TsMarketPage *
ts_market_page_from_json (JsonNode *node, GError **error)
{
  JsonObject *o = node && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
  JsonArray *list = ts_json_get_array (o, "adapters");
  g_autoptr(TsMarketPage) page = g_new0 (TsMarketPage, 1);

  page->adapters = g_ptr_array_new_with_free_func ((GDestroyNotify) ts_market_adapter_unref);
  if (list == NULL)
    return bad_shape (error, "a search result without “adapters”");
  for (guint i = 0; i < json_array_get_length (list); i++)
    {
      TsMarketAdapter *a = ts_market_adapter_from_json (json_array_get_element (list, i), error);
      if (a == NULL)
        return NULL;
      g_ptr_array_add (page->adapters, a);
    }
  page->next_cursor = g_strdup (ts_json_get_string (o, "next_cursor"));
  return g_steal_pointer (&page);
}

GPtrArray *
ts_market_publisher_keys_from_json (JsonNode *node, GError **error)
{
  JsonObject *o = node && JSON_NODE_HOLDS_OBJECT (node) ? json_node_get_object (node) : NULL;
  JsonArray *keys = ts_json_get_array (o, "keys");
  g_autoptr(GPtrArray) out =
      g_ptr_array_new_with_free_func ((GDestroyNotify) ts_market_publisher_key_free);

  if (keys == NULL)
    return bad_shape (error, "a key list without “keys”");
  for (guint i = 0; i < json_array_get_length (keys); i++)
    {
      JsonNode *n = json_array_get_element (keys, i);
      JsonObject *k = JSON_NODE_HOLDS_OBJECT (n) ? json_node_get_object (n) : NULL;
      TsMarketPublisherKey *key = g_new0 (TsMarketPublisherKey, 1);
      JsonNode *revoked = k ? json_object_get_member (k, "revoked") : NULL;

      key->key_id = g_strdup (ts_json_get_string (k, "key_id"));
      key->algorithm = g_strdup (ts_json_get_string (k, "algorithm"));
      key->public_key = g_strdup (ts_json_get_string (k, "public_key"));
      key->revoked = revoked && JSON_NODE_HOLDS_VALUE (revoked)
                     && json_node_get_value_type (revoked) == G_TYPE_BOOLEAN
                     && json_node_get_boolean (revoked);
      g_ptr_array_add (out, key);
      if (key->key_id == NULL || key->public_key == NULL)
        return bad_shape (error, "a key lacks key_id or public_key");
    }
  return g_steal_pointer (&out);
}
