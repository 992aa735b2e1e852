/* he-server-stacks.c: stacked adapters: one shared evaluator per stack.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A stacked hello names its adapters' ids, hashes and weights. Each member
 * is pinned like a single adapter (he_adapters_pin()); the stack is then
 * opened once per (members' ids and versions in order, parameter set) and
 * shared by every hello naming the same stack. The weights are not part of
 * that key: stacking folds them into B, which only the client applies, so
 * the packed A, and the adapter-private mode's sensitivity with it, do not
 * depend on them; clients weighting the same adapters differently share one
 * evaluator.
 *
 * The cache is bounded (the least recently used stack goes first) and
 * forgets every stack with a member that was swapped or unloaded. A
 * connection keeps the evaluator its hello got until it closes: that is
 * what pins it to the versions present at its hello.
 */
#include <string.h>

#include "he-server-private.h"

/* Clients choose the stacks and each holds packed plaintexts: keep few. */
#define MAX_STACKS 32

typedef struct {
  gatomicrefcount ref_count;
  GMutex lock;                 /* held while the evaluator is opened */
  TsHeloraEvaluator *evaluator;
  GStrv ids;                   /* the members, for he_stacks_forget() */
  gint64 last_used;            /* under HeStacks.lock */
} StackEntry;

struct _HeStacks {
  GMutex lock;                 /* guards entries and last_used */
  GHashTable *entries;         /* key → StackEntry (the table's reference) */
  TsHeloraEvaluatorOpenStackFunc open_stack;
  gpointer open_data;
};

static StackEntry *
entry_ref (StackEntry *e)
{
  g_atomic_ref_count_inc (&e->ref_count);
  return e;
}

static void
entry_unref (gpointer data)
{
  StackEntry *e = data;

  if (!g_atomic_ref_count_dec (&e->ref_count))
    return;
  g_clear_pointer (&e->evaluator, ts_helora_evaluator_unref);
  g_strfreev (e->ids);
  g_mutex_clear (&e->lock);
  g_free (e);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (StackEntry, entry_unref)

HeStacks *
he_stacks_new (TsHeloraEvaluatorOpenStackFunc open_stack, gpointer open_data)
{
  HeStacks *self = g_new0 (HeStacks, 1);

  g_mutex_init (&self->lock);
  self->entries = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, entry_unref);
  self->open_stack = open_stack;
  self->open_data = open_data;
  return self;
}

void
he_stacks_free (HeStacks *self)
{
  if (self == NULL)
    return;
  g_hash_table_unref (self->entries);
  g_mutex_clear (&self->lock);
  g_free (self);
}

/* "PRESET\nID\nSHA-256 hex\n…": what the packed plaintexts depend on. */
static char *
stack_key (const TsHeloraHello *hello)
{
  GString *key = g_string_new (hello->params_id);

  for (guint i = 0; i < hello->stack->len; i++)
    {
      const TsHeloraStackMember *m = &g_array_index (hello->stack, TsHeloraStackMember, i);
      g_string_append_printf (key, "\n%s\n", m->id);
      for (guint b = 0; b < TS_HELORA_HASH_SIZE; b++)
        g_string_append_printf (key, "%02x", m->sha256[b]);
    }
  return g_string_free (key, FALSE);
}

static GStrv
member_ids (const TsHeloraHello *hello)
{
  GStrv ids = g_new0 (char *, hello->stack->len + 1);

  for (guint i = 0; i < hello->stack->len; i++)
    ids[i] = g_strdup (g_array_index (hello->stack, TsHeloraStackMember, i).id);
  return ids;
}

/* Under self->lock: makes room by dropping the least recently used stack. */
static void
evict_one (HeStacks *self)
{
  GHashTableIter iter;
  gpointer key, value;
  const char *oldest = NULL;
  gint64 oldest_use = G_MAXINT64;

  g_hash_table_iter_init (&iter, self->entries);
  while (g_hash_table_iter_next (&iter, &key, &value))
    if (((StackEntry *) value)->last_used < oldest_use)
      {
        oldest = key;
        oldest_use = ((StackEntry *) value)->last_used;
      }
  if (oldest != NULL)
    g_hash_table_remove (self->entries, oldest);
}

/* The cached entry for @key, made (empty) if new; a new reference. */
static StackEntry *
entry_for (HeStacks *self, const char *key, const TsHeloraHello *hello)
{
  StackEntry *e;

  g_mutex_lock (&self->lock);
  e = g_hash_table_lookup (self->entries, key);
  if (e == NULL)
    {
      if (g_hash_table_size (self->entries) >= MAX_STACKS)
        evict_one (self);
      e = g_new0 (StackEntry, 1);
      g_atomic_ref_count_init (&e->ref_count);
      g_mutex_init (&e->lock);
      e->ids = member_ids (hello);
      g_hash_table_insert (self->entries, g_strdup (key), e);
    }
  e->last_used = g_get_monotonic_time ();
  entry_ref (e);
  g_mutex_unlock (&self->lock);
  return e;
}

/* Drops @e from the cache if @key still maps to it. */
static void
drop_entry (HeStacks *self, const char *key, StackEntry *e)
{
  g_mutex_lock (&self->lock);
  if (g_hash_table_lookup (self->entries, key) == e)
    g_hash_table_remove (self->entries, key);
  g_mutex_unlock (&self->lock);
}

void
he_stacks_forget (HeStacks *self, const char *id)
{
  GHashTableIter iter;
  gpointer value;

  g_mutex_lock (&self->lock);
  g_hash_table_iter_init (&iter, self->entries);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    if (g_strv_contains ((const char *const *) ((StackEntry *) value)->ids, id))
      g_hash_table_iter_remove (&iter);
  g_mutex_unlock (&self->lock);
}

/* Pins every member; on failure unpins those done and says which failed. */
static gboolean
pin_members (HeAdapters *adapters, const TsHeloraHello *hello, HeAdapterVersion **pins,
             GError **error)
{
  for (guint i = 0; i < hello->stack->len; i++)
    {
      const TsHeloraStackMember *m = &g_array_index (hello->stack, TsHeloraStackMember, i);
      pins[i] = he_adapters_pin (adapters, m->id, m->sha256, error);
      if (pins[i] == NULL)
        {
          g_prefix_error (error, "Stacked adapter %u of %u: ", i + 1, hello->stack->len);
          while (i-- > 0)
            he_adapter_version_unref (pins[i]);
          return FALSE;
        }
    }
  return TRUE;
}

/* Under e->lock: stacks the pinned files, then checks they were not
 * rewritten meanwhile (so a stack is never served under old hashes). */
static TsHeloraEvaluator *
open_pinned (HeStacks *self, const TsHeloraHello *hello, HeAdapterVersion **pins,
             GError **error)
{
  guint n = hello->stack->len;
  const char *paths[TS_HELORA_MAX_STACK];
  float weights[TS_HELORA_MAX_STACK];
  TsHeloraEvaluator *ev;

  for (guint i = 0; i < n; i++)
    {
      paths[i] = he_adapter_version_path (pins[i]);
      weights[i] = g_array_index (hello->stack, TsHeloraStackMember, i).weight;
    }
  ev = self->open_stack (paths, weights, n, hello->params_id, self->open_data, error);
  for (guint i = 0; ev != NULL && i < n; i++)
    if (!he_adapter_version_check_file (pins[i], error))
      g_clear_pointer (&ev, ts_helora_evaluator_unref);
  return ev;
}

/* Whether every pinned member is still its id's version: a stack opened
 * across a swap is served to this hello but not cached for later ones. */
static gboolean
all_current (HeAdapters *adapters, const TsHeloraHello *hello, HeAdapterVersion **pins)
{
  for (guint i = 0; i < hello->stack->len; i++)
    if (!he_adapters_is_current (adapters,
                                 g_array_index (hello->stack, TsHeloraStackMember, i).id, pins[i]))
      return FALSE;
  return TRUE;
}

static TsHeloraEvaluator *
open_cached (HeStacks *self, HeAdapters *adapters, const TsHeloraHello *hello,
             HeAdapterVersion **pins, GError **error)
{
  g_autofree char *key = stack_key (hello);
  g_autoptr (StackEntry) e = entry_for (self, key, hello);
  TsHeloraEvaluator *ev;

  g_mutex_lock (&e->lock);
  if (e->evaluator == NULL)
    e->evaluator = open_pinned (self, hello, pins, error);
  ev = e->evaluator != NULL ? ts_helora_evaluator_ref (e->evaluator) : NULL;
  g_mutex_unlock (&e->lock);
  if (ev == NULL || !all_current (adapters, hello, pins))
    drop_entry (self, key, e);
  return ev;
}

TsHeloraEvaluator *
he_stacks_open (HeStacks *self, HeAdapters *adapters, const TsHeloraHello *hello,
                GError **error)
{
  HeAdapterVersion *pins[TS_HELORA_MAX_STACK];
  TsHeloraEvaluator *ev;

  if (self->open_stack == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE,
                   "This server does not evaluate stacked adapters");
      return NULL;
    }
  if (hello->stack->len > TS_HELORA_MAX_STACK || !pin_members (adapters, hello, pins, error))
    return NULL;
  ev = open_cached (self, adapters, hello, pins, error);
  for (guint i = 0; i < hello->stack->len; i++)
    he_adapter_version_unref (pins[i]);
  if (ev != NULL && !he_evaluator_check_params (ev, hello, error))
    g_clear_pointer (&ev, ts_helora_evaluator_unref);
  return ev;
}
