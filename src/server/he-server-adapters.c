/* he-server-adapters.c: the adapter directory, its hashes and the evaluator cache.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "he-server-private.h"

typedef struct {
  char *path;
  guint8 sha256[TS_HELORA_HASH_SIZE];
} AdapterEntry;

/* One evaluator per (adapter, parameter set), opened by the first hello that
 * asks; the entry lock makes concurrent hellos wait for that one open. */
typedef struct {
  GMutex lock;
  TsHeloraEvaluator *evaluator;
} CacheEntry;

struct _HeAdapters {
  GHashTable *entries;         /* id → AdapterEntry; read-only after new() */
  GMutex cache_lock;
  GHashTable *cache;           /* "id\nparams id" → CacheEntry */
  TsHeloraEvaluatorOpenFunc open_func;
  gpointer open_data;
};

static void
adapter_entry_free (gpointer data)
{
  AdapterEntry *e = data;

  g_free (e->path);
  g_free (e);
}

static void
cache_entry_free (gpointer data)
{
  CacheEntry *c = data;

  g_clear_pointer (&c->evaluator, ts_helora_evaluator_unref);
  g_mutex_clear (&c->lock);
  g_free (c);
}

/* An adapter is a regular file (id: its name without the last extension) or
 * a PEFT folder holding adapter_config.json (id: the folder name). */
static char *
adapter_id_for (const char *dir, const char *name, char **path_out)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);

  if (name[0] == '.')
    return NULL;
  if (g_file_test (path, G_FILE_TEST_IS_DIR))
    {
      g_autofree char *config = g_build_filename (path, "adapter_config.json", NULL);
      if (!g_file_test (config, G_FILE_TEST_IS_REGULAR))
        return NULL;
    }
  else if (!g_file_test (path, G_FILE_TEST_IS_REGULAR))
    return NULL;
  *path_out = g_steal_pointer (&path);
  return ts_helora_adapter_id (*path_out);
}

static gboolean
scan (HeAdapters *self, const char *dir, GError **error)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, error);
  const char *name;

  if (d == NULL)
    return FALSE;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = NULL;
      g_autofree char *id = adapter_id_for (dir, name, &path);
      AdapterEntry *e;

      if (id == NULL || strlen (id) > TS_HELORA_MAX_NAME)
        continue;
      if (g_hash_table_contains (self->entries, id))
        {
          g_warning ("Two adapters named '%s' in %s; keeping the first", id, dir);
          continue;
        }
      e = g_new0 (AdapterEntry, 1);
      if (!ts_helora_adapter_sha256 (path, e->sha256, error))
        {
          adapter_entry_free (e);
          return FALSE;
        }
      e->path = g_steal_pointer (&path);
      g_hash_table_insert (self->entries, g_steal_pointer (&id), e);
    }
  return TRUE;
}

HeAdapters *
he_adapters_new (const char *dir, TsHeloraEvaluatorOpenFunc open_func,
                 gpointer open_data, GError **error)
{
  HeAdapters *self = g_new0 (HeAdapters, 1);

  self->entries = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, adapter_entry_free);
  self->cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, cache_entry_free);
  g_mutex_init (&self->cache_lock);
  self->open_func = open_func;
  self->open_data = open_data;
  if (!scan (self, dir, error))
    {
      he_adapters_free (self);
      return NULL;
    }
  return self;
}

void
he_adapters_free (HeAdapters *self)
{
  if (self == NULL)
    return;
  g_hash_table_unref (self->entries);
  g_hash_table_unref (self->cache);
  g_mutex_clear (&self->cache_lock);
  g_free (self);
}

guint
he_adapters_count (HeAdapters *self)
{
  return g_hash_table_size (self->entries);
}

/* Clients choose the params id, so the cache is bounded: failed opens stay
 * cached as empty entries and count. */
#define MAX_CACHE_ENTRIES 256

static CacheEntry *
cache_entry_for (HeAdapters *self, const TsHeloraHello *hello, GError **error)
{
  g_autofree char *key = g_strdup_printf ("%s\n%s", hello->adapter_id, hello->params_id);
  CacheEntry *c;

  g_mutex_lock (&self->cache_lock);
  c = g_hash_table_lookup (self->cache, key);
  if (c == NULL && g_hash_table_size (self->cache) >= MAX_CACHE_ENTRIES)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                 "Too many parameter sets requested from this server");
  else if (c == NULL)
    {
      c = g_new0 (CacheEntry, 1);
      g_mutex_init (&c->lock);
      g_hash_table_insert (self->cache, g_steal_pointer (&key), c);
    }
  g_mutex_unlock (&self->cache_lock);
  return c;                    /* entries live as long as self */
}

TsHeloraEvaluator *
he_adapters_open (HeAdapters *self, const TsHeloraHello *hello, GError **error)
{
  AdapterEntry *e = g_hash_table_lookup (self->entries, hello->adapter_id);
  CacheEntry *c;
  TsHeloraEvaluator *ev;

  if (e == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER,
                   "No adapter '%s' on this server", hello->adapter_id);
      return NULL;
    }
  if (memcmp (e->sha256, hello->adapter_sha256, TS_HELORA_HASH_SIZE) != 0)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_ADAPTER_HASH,
                   "Adapter '%s' on this server has a different SHA-256", hello->adapter_id);
      return NULL;
    }
  c = cache_entry_for (self, hello, error);
  if (c == NULL)
    return NULL;
  g_mutex_lock (&c->lock);
  if (c->evaluator == NULL)
    c->evaluator = self->open_func (e->path, hello->params_id, self->open_data, error);
  ev = c->evaluator != NULL ? ts_helora_evaluator_ref (c->evaluator) : NULL;
  g_mutex_unlock (&c->lock);
  if (ev != NULL && memcmp (ev->params_sha256, hello->params_sha256, TS_HELORA_HASH_SIZE) != 0)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                   "Parameter set '%s' differs on this server (another library version?)",
                   hello->params_id);
      g_clear_pointer (&ev, ts_helora_evaluator_unref);
    }
  return ev;
}
