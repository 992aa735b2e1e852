/* he-server-adapters.c: the adapter directory as refcounted versions, hot-swappable.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each adapter id maps to its current version: the file's path, its SHA-256
 * and a cache of evaluators opened for it (one per parameter set). A version
 * is refcounted: the table holds one reference, an open in progress another,
 * and every connection holds its evaluator. Replacing or unloading an id
 * only swaps the table's entry, so clients pinned (by hello hash) to the old
 * version keep evaluating on its evaluator until they disconnect, while new
 * hellos see the new version. Stacks of adapters are cached apart
 * (he-server-stacks.c) and forgotten when one of their members is swapped.
 */
#include <string.h>

#include "he-server-private.h"

/* One evaluator per parameter set, opened by the first hello that asks; the
 * entry lock makes concurrent hellos wait for that one open. */
typedef struct {
  GMutex lock;
  TsHeloraEvaluator *evaluator;
  gboolean checked;            /* the file still had the version's hash after the open */
} CacheEntry;

typedef struct _HeAdapterVersion {
  gatomicrefcount ref_count;
  char *path;
  guint8 sha256[TS_HELORA_HASH_SIZE];
  GMutex cache_lock;
  GHashTable *cache;           /* params id → CacheEntry */
} AdapterVersion;

struct _HeAdapters {
  char *dir;
  GMutex lock;                 /* guards entries */
  GHashTable *entries;         /* id → AdapterVersion (the table's reference) */
  TsHeloraEvaluatorOpenFunc open_func;
  gpointer open_data;
  HeStacks *stacks;
};

static void
cache_entry_free (gpointer data)
{
  CacheEntry *c = data;

  g_clear_pointer (&c->evaluator, ts_helora_evaluator_unref);
  g_mutex_clear (&c->lock);
  g_free (c);
}

static AdapterVersion *
version_ref (AdapterVersion *v)
{
  g_atomic_ref_count_inc (&v->ref_count);
  return v;
}

static void
version_unref (gpointer data)
{
  AdapterVersion *v = data;

  if (!g_atomic_ref_count_dec (&v->ref_count))
    return;
  g_hash_table_unref (v->cache);
  g_mutex_clear (&v->cache_lock);
  g_free (v->path);
  g_free (v);
}

static AdapterVersion *
version_new (char *path, GError **error)
{
  AdapterVersion *v = g_new0 (AdapterVersion, 1);

  g_atomic_ref_count_init (&v->ref_count);
  v->path = path;
  g_mutex_init (&v->cache_lock);
  v->cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, cache_entry_free);
  if (!ts_helora_adapter_sha256 (path, v->sha256, error))
    {
      version_unref (v);
      return NULL;
    }
  return v;
}

/* An adapter is a regular file (id: its name without the last extension) or
 * a PEFT folder holding adapter_config.json (id: the folder name). */
static char *
adapter_id_for (const char *dir, const char *name, char **path_out)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  char *id;

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
  id = ts_helora_adapter_id (path);
  if (id == NULL || strlen (id) > TS_HELORA_MAX_NAME)
    {
      g_free (id);
      return NULL;
    }
  *path_out = g_steal_pointer (&path);
  return id;
}

/* The directory's adapters as id → path; on duplicates the first name read
 * wins. Nothing is hashed yet. */
static GHashTable *
list_dir (const char *dir, GError **error)
{
  g_autoptr (GDir) d = g_dir_open (dir, 0, error);
  g_autoptr (GHashTable) found = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  const char *name;

  if (d == NULL)
    return NULL;
  while ((name = g_dir_read_name (d)) != NULL)
    {
      char *path = NULL;
      g_autofree char *id = adapter_id_for (dir, name, &path);

      if (id == NULL)
        continue;
      if (g_hash_table_contains (found, id))
        {
          g_warning ("Two adapters named '%s' in %s; keeping the first", id, dir);
          g_free (path);
          continue;
        }
      g_hash_table_insert (found, g_steal_pointer (&id), path);
    }
  return g_steal_pointer (&found);
}

/* Reads the directory into a fresh id → version table, hashing every adapter. */
static GHashTable *
scan (const char *dir, GError **error)
{
  g_autoptr (GHashTable) paths = list_dir (dir, error);
  g_autoptr (GHashTable) found = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                                        version_unref);
  GHashTableIter iter;
  gpointer id, path;

  if (paths == NULL)
    return NULL;
  g_hash_table_iter_init (&iter, paths);
  while (g_hash_table_iter_next (&iter, &id, &path))
    {
      AdapterVersion *v = version_new (g_strdup (path), error);
      if (v == NULL)
        return NULL;
      g_hash_table_insert (found, g_strdup (id), v);
    }
  return g_steal_pointer (&found);
}

HeAdapters *
he_adapters_new (const char *dir, TsHeloraEvaluatorOpenFunc open_func,
                 TsHeloraEvaluatorOpenStackFunc open_stack, gpointer open_data, GError **error)
{
  GHashTable *entries = scan (dir, error);
  HeAdapters *self;

  if (entries == NULL)
    return NULL;
  self = g_new0 (HeAdapters, 1);
  self->dir = g_strdup (dir);
  self->entries = entries;
  g_mutex_init (&self->lock);
  self->open_func = open_func;
  self->open_data = open_data;
  self->stacks = he_stacks_new (open_stack, open_data);
  return self;
}

void
he_adapters_free (HeAdapters *self)
{
  if (self == NULL)
    return;
  he_stacks_free (self->stacks);
  g_hash_table_unref (self->entries);
  g_mutex_clear (&self->lock);
  g_free (self->dir);
  g_free (self);
}

guint
he_adapters_count (HeAdapters *self)
{
  guint n;

  g_mutex_lock (&self->lock);
  n = g_hash_table_size (self->entries);
  g_mutex_unlock (&self->lock);
  return n;
}

static AdapterVersion *
lookup (HeAdapters *self, const char *id)
{
  AdapterVersion *v;

  g_mutex_lock (&self->lock);
  v = g_hash_table_lookup (self->entries, id);
  if (v != NULL)
    version_ref (v);
  g_mutex_unlock (&self->lock);
  return v;
}

/* Clients choose the params id, so the cache is bounded: failed opens stay
 * cached as empty entries and count. */
#define MAX_CACHE_ENTRIES 256

static CacheEntry *
cache_entry_for (AdapterVersion *v, const char *params_id, GError **error)
{
  CacheEntry *c;

  g_mutex_lock (&v->cache_lock);
  c = g_hash_table_lookup (v->cache, params_id);
  if (c == NULL && g_hash_table_size (v->cache) >= MAX_CACHE_ENTRIES)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
                 "Too many parameter sets requested from this server");
  else if (c == NULL)
    {
      c = g_new0 (CacheEntry, 1);
      g_mutex_init (&c->lock);
      g_hash_table_insert (v->cache, g_strdup (params_id), c);
    }
  g_mutex_unlock (&v->cache_lock);
  return c;                    /* entries live as long as their version */
}

/* Files are opened lazily, so a file rewritten since the version was hashed
 * (a reload not yet asked for) must not be served under the old hash. */
gboolean
he_adapter_version_check_file (AdapterVersion *v, GError **error)
{
  guint8 now[TS_HELORA_HASH_SIZE];

  if (ts_helora_adapter_sha256 (v->path, now, NULL)
      && memcmp (now, v->sha256, TS_HELORA_HASH_SIZE) == 0)
    return TRUE;
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_ADAPTER_HASH,
               "Adapter file %s changed on disk since it was loaded; reload it", v->path);
  return FALSE;
}

gboolean
he_evaluator_check_params (TsHeloraEvaluator *ev, const TsHeloraHello *hello, GError **error)
{
  if (memcmp (ev->params_sha256, hello->params_sha256, TS_HELORA_HASH_SIZE) == 0)
    return TRUE;
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS,
               "Parameter set '%s' differs on this server (another library version?)",
               hello->params_id);
  return FALSE;
}

static TsHeloraEvaluator *
version_open (HeAdapters *self, AdapterVersion *v, const TsHeloraHello *hello, GError **error)
{
  CacheEntry *c = cache_entry_for (v, hello->params_id, error);
  TsHeloraEvaluator *ev;

  if (c == NULL)
    return NULL;
  g_mutex_lock (&c->lock);
  if (c->evaluator == NULL)
    c->evaluator = self->open_func (v->path, hello->params_id, self->open_data, error);
  if (c->evaluator != NULL && !c->checked && !he_adapter_version_check_file (v, error))
    g_clear_pointer (&c->evaluator, ts_helora_evaluator_unref);
  else if (c->evaluator != NULL)
    c->checked = TRUE;
  ev = c->evaluator != NULL ? ts_helora_evaluator_ref (c->evaluator) : NULL;
  g_mutex_unlock (&c->lock);
  if (ev != NULL && !he_evaluator_check_params (ev, hello, error))
    g_clear_pointer (&ev, ts_helora_evaluator_unref);
  return ev;
}

AdapterVersion *
he_adapters_pin (HeAdapters *self, const char *id, const guint8 *sha256, GError **error)
{
  AdapterVersion *v = lookup (self, id);

  if (v == NULL)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER,
                 "No adapter '%s' on this server", id);
  else if (memcmp (v->sha256, sha256, TS_HELORA_HASH_SIZE) != 0)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_ADAPTER_HASH,
                   "Adapter '%s' on this server has a different SHA-256", id);
      g_clear_pointer (&v, version_unref);
    }
  return v;
}

gboolean
he_adapters_is_current (HeAdapters *self, const char *id, AdapterVersion *v)
{
  AdapterVersion *now = lookup (self, id);
  gboolean same = now == v;

  if (now != NULL)
    version_unref (now);
  return same;
}

const char *
he_adapter_version_path (AdapterVersion *v)
{
  return v->path;
}

void
he_adapter_version_unref (AdapterVersion *v)
{
  version_unref (v);
}

TsHeloraEvaluator *
he_adapters_open (HeAdapters *self, const TsHeloraHello *hello, GError **error)
{
  AdapterVersion *v;
  TsHeloraEvaluator *ev;

  if (hello->stack->len > 0)
    return he_stacks_open (self->stacks, self, hello, error);
  v = he_adapters_pin (self, hello->adapter_id, hello->adapter_sha256, error);
  if (v == NULL)
    return NULL;
  ev = version_open (self, v, hello, error);
  version_unref (v);
  return ev;
}

/* ---- hot-swap ---- */

static char *
hash_hex (const guint8 *hash)
{
  GString *out = g_string_sized_new (2 * TS_HELORA_HASH_SIZE);

  for (guint i = 0; i < TS_HELORA_HASH_SIZE; i++)
    g_string_append_printf (out, "%02x", hash[i]);
  return g_string_free (out, FALSE);
}

static void
set_outcome (HeAdapterChange *change, const char *id, AdapterVersion *v, const char *what)
{
  if (change == NULL)
    return;
  change->id = g_strdup (id);
  change->action = what;
  if (v != NULL)
    change->sha256_hex = hash_hex (v->sha256);
}

gboolean
he_adapters_reload (HeAdapters *self, const char *id, HeAdapterChange *change, GError **error)
{
  g_autoptr (GHashTable) paths = list_dir (self->dir, error);
  const char *path = paths != NULL ? g_hash_table_lookup (paths, id) : NULL;
  AdapterVersion *fresh = NULL, *old;
  const char *what;

  if (paths == NULL || (path != NULL && (fresh = version_new (g_strdup (path), error)) == NULL))
    return FALSE;
  g_mutex_lock (&self->lock);
  old = g_hash_table_lookup (self->entries, id);
  if (fresh == NULL && old == NULL)
    what = NULL;
  else if (fresh == NULL)
    what = "unloaded";
  else if (old == NULL)
    what = "loaded";
  else if (memcmp (old->sha256, fresh->sha256, TS_HELORA_HASH_SIZE) == 0
           && strcmp (old->path, fresh->path) == 0)
    what = "unchanged";
  else
    what = "replaced";
  if (what != NULL && fresh == NULL)
    g_hash_table_remove (self->entries, id);
  else if (what != NULL && strcmp (what, "unchanged") != 0)
    g_hash_table_replace (self->entries, g_strdup (id), version_ref (fresh));
  g_mutex_unlock (&self->lock);
  if (what != NULL && g_strcmp0 (what, "unchanged") != 0)
    he_stacks_forget (self->stacks, id);
  if (what == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER,
                   "No adapter '%s' on this server or in its directory", id);
      return FALSE;
    }
  set_outcome (change, id, fresh, what);
  g_clear_pointer (&fresh, version_unref);
  return TRUE;
}

gboolean
he_adapters_unload (HeAdapters *self, const char *id, HeAdapterChange *change, GError **error)
{
  gboolean removed;

  g_mutex_lock (&self->lock);
  removed = g_hash_table_remove (self->entries, id);
  g_mutex_unlock (&self->lock);
  if (!removed)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER,
                   "No adapter '%s' on this server", id);
      return FALSE;
    }
  he_stacks_forget (self->stacks, id);
  set_outcome (change, id, NULL, "unloaded");
  return TRUE;
}

void
he_adapter_change_clear (HeAdapterChange *change)
{
  g_clear_pointer (&change->id, g_free);
  g_clear_pointer (&change->sha256_hex, g_free);
  change->action = NULL;
}
