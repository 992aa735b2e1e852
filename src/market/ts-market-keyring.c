/* ts-market-keyring.c: pinned publisher keys in a small JSON file.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-keyring.h"

#include <string.h>

#include "ts-market-error.h"
#include "ts-market-json.h"

struct _TsMarketKeyring
{
  GObject     parent_instance;
  char       *path;
  GHashTable *publishers;  /* publisher → (key id → public key base64) */
};

G_DEFINE_FINAL_TYPE (TsMarketKeyring, ts_market_keyring, G_TYPE_OBJECT)

static void
ts_market_keyring_finalize (GObject *object)
{
  TsMarketKeyring *self = TS_MARKET_KEYRING (object);

  g_free (self->path);
  g_hash_table_unref (self->publishers);
  G_OBJECT_CLASS (ts_market_keyring_parent_class)->finalize (object);
}

static void
ts_market_keyring_class_init (TsMarketKeyringClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = ts_market_keyring_finalize;
}

static void
ts_market_keyring_init (TsMarketKeyring *self)
{
  self->publishers = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                            (GDestroyNotify) g_hash_table_unref);
}

TsMarketKeyring *
ts_market_keyring_new (const char *path)
{
  TsMarketKeyring *self = g_object_new (TS_TYPE_MARKET_KEYRING, NULL);

  self->path = g_strdup (path);
  return self;
}

static GHashTable *
keys_of (TsMarketKeyring *self, const char *publisher, gboolean create)
{
  GHashTable *keys = g_hash_table_lookup (self->publishers, publisher);

  if (keys == NULL && create)
    {
      keys = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
      g_hash_table_insert (self->publishers, g_strdup (publisher), keys);
    }
  return keys;
}

/* Adds a key after checking that @key_id names exactly that key. */
static gboolean
add_key (TsMarketKeyring *self, const char *publisher, const char *key_id,
         const char *public_key_b64, GError **error)
{
  g_autoptr(TsSigningKey) key = NULL;
  g_autofree char *real_id = NULL;

  if (!ts_market_name_is_safe (publisher))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   "Invalid publisher name “%s”", publisher ? publisher : "");
      return FALSE;
    }
  key = ts_signing_key_new_public_base64 (public_key_b64, error);
  if (key == NULL)
    return FALSE;
  real_id = ts_signing_key_get_id (key);
  if (g_strcmp0 (real_id, key_id) != 0)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   "Key id %s does not match its public key (%s)", key_id ? key_id : "",
                   real_id);
      return FALSE;
    }
  g_hash_table_replace (keys_of (self, publisher, TRUE), g_strdup (key_id),
                        g_strdup (public_key_b64));
  return TRUE;
}

gboolean
ts_market_keyring_load (TsMarketKeyring *self, GError **error)
{
  g_autofree char *text = NULL;
  g_autoptr(JsonNode) root = NULL;
  g_autoptr(GList) names = NULL;
  gsize len = 0;
  JsonObject *pubs;

  g_return_val_if_fail (TS_IS_MARKET_KEYRING (self), FALSE);

  if (self->path == NULL || !g_file_test (self->path, G_FILE_TEST_EXISTS))
    return TRUE;
  if (!g_file_get_contents (self->path, &text, &len, error))
    return FALSE;
  root = ts_json_parse_bounded (text, len, 8, error);
  pubs = root && JSON_NODE_HOLDS_OBJECT (root)
         ? ts_json_get_object (json_node_get_object (root), "publishers") : NULL;
  if (pubs == NULL)
    {
      g_clear_error (error);
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                   "%s is not a keyring", self->path);
      return FALSE;
    }
  names = json_object_get_members (pubs);
  for (GList *p = names; p; p = p->next)
    {
      JsonObject *keys = ts_json_get_object (pubs, p->data);
      g_autoptr(GList) ids = keys ? json_object_get_members (keys) : NULL;
      for (GList *k = ids; k; k = k->next)
        if (!add_key (self, p->data, k->data, ts_json_get_string (keys, k->data), error))
          return FALSE;
    }
  return TRUE;
}

static gboolean
save (TsMarketKeyring *self, GError **error)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *text = NULL;
  GHashTableIter pi, ki;
  gpointer publisher, keys, id, value;

  if (self->path == NULL)
    return TRUE;
  json_builder_begin_object (b);
  json_builder_set_member_name (b, "publishers");
  json_builder_begin_object (b);
  g_hash_table_iter_init (&pi, self->publishers);
  while (g_hash_table_iter_next (&pi, &publisher, &keys))
    {
      json_builder_set_member_name (b, publisher);
      json_builder_begin_object (b);
      g_hash_table_iter_init (&ki, keys);
      while (g_hash_table_iter_next (&ki, &id, &value))
        {
          ts_json_add_string (b, id, value);
        }
      json_builder_end_object (b);
    }
  json_builder_end_object (b);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  text = json_to_string (root, TRUE);
  return g_file_set_contents_full (self->path, text, -1, G_FILE_SET_CONTENTS_CONSISTENT,
                                   0600, error);
}

gboolean
ts_market_keyring_pin (TsMarketKeyring *self, const char *publisher, const char *key_id,
                       const char *public_key_b64, GError **error)
{
  g_return_val_if_fail (self != NULL, FALSE);

  return add_key (self, publisher, key_id, public_key_b64, error) && save (self, error);
}

gboolean
ts_market_keyring_unpin (TsMarketKeyring *self, const char *publisher, const char *key_id,
                         GError **error)
{
  g_return_val_if_fail (TS_IS_MARKET_KEYRING (self), FALSE);
  g_return_val_if_fail (publisher != NULL, FALSE);
  g_return_val_if_fail (key_id != NULL, FALSE);

  GHashTable *keys = keys_of (self, publisher, FALSE);

  if (keys == NULL || !g_hash_table_remove (keys, key_id))
    return TRUE;
  return save (self, error);
}

gboolean
ts_market_keyring_is_pinned (TsMarketKeyring *self, const char *publisher, const char *key_id)
{
  g_return_val_if_fail (TS_IS_MARKET_KEYRING (self), FALSE);
  g_return_val_if_fail (publisher != NULL, FALSE);
  g_return_val_if_fail (key_id != NULL, FALSE);

  GHashTable *keys = keys_of (self, publisher, FALSE);

  return keys != NULL && key_id != NULL && g_hash_table_contains (keys, key_id);
}

gboolean
ts_market_keyring_verify (TsMarketKeyring *self, TsMarketManifest *manifest,
                          const char *key_id, const char *signature_b64, GError **error)
{
  g_return_val_if_fail (manifest != NULL, FALSE);

  GHashTable *keys = keys_of (self, manifest->publisher, FALSE);
  const char *public_b64 = keys && key_id ? g_hash_table_lookup (keys, key_id) : NULL;
  g_autoptr(TsSigningKey) key = NULL;
  g_autofree char *canonical = NULL;
  g_autoptr(GError) local = NULL;

  if (public_b64 == NULL)
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_UNKNOWN_KEY,
                   "%s %s is signed by key %s, which is not pinned for publisher %s",
                   manifest->id, manifest->version, key_id ? key_id : "(none)",
                   manifest->publisher);
      return FALSE;
    }
  key = ts_signing_key_new_public_base64 (public_b64, error);
  if (key == NULL || !ts_market_manifest_validate (manifest, error))
    return FALSE;
  canonical = ts_market_manifest_to_canonical (manifest);
  if (!ts_signing_key_verify (key, canonical, strlen (canonical), signature_b64, &local))
    {
      g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_SIGNATURE,
                   "The signature of %s %s does not verify: %s", manifest->id,
                   manifest->version, local->message);
      return FALSE;
    }
  return TRUE;
}
