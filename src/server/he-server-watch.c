/* he-server-watch.c: hot-swap by directory watch: reload an adapter when its file changes.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A GFileMonitor on the adapters directory (main context). Every event on
 * an entry schedules a reload of its id a moment later, so a file written
 * in several steps is hashed once it is complete; the reload loads, replaces
 * or unloads the id exactly as POST /admin/adapters/{id}/reload does.
 * Hidden names (editors' and g_file_set_contents()'s temporary files) are
 * ignored. Changes inside a PEFT folder are not seen: rename the folder.
 */
#include <gio/gio.h>

#include "he-server-private.h"

#define SETTLE_MS 150

struct _HeWatch {
  HeServer *server;
  GFileMonitor *monitor;
  GHashTable *pending;         /* id → GSource * (the scheduled reload) */
};

typedef struct {
  HeWatch *watch;
  char *id;
} PendingReload;

static void
pending_free (gpointer data)
{
  PendingReload *p = data;

  g_free (p->id);
  g_free (p);
}

static gboolean
reload_cb (gpointer data)
{
  PendingReload *p = data;
  HeAdapterChange change = { 0 };
  g_autoptr (GError) error = NULL;

  if (he_adapters_reload (p->watch->server->adapters, p->id, &change, &error))
    {
      if (g_strcmp0 (change.action, "unchanged") != 0)
        {
          g_message ("adapter %s: %s (directory watch)", change.id, change.action);
          he_metrics_count_swap (p->watch->server->metrics);
        }
    }
  else if (!g_error_matches (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_ADAPTER))
    g_warning ("Reloading adapter %s: %s", p->id, error->message);
  he_adapter_change_clear (&change);
  g_hash_table_remove (p->watch->pending, p->id);   /* destroys this source */
  return G_SOURCE_REMOVE;
}

static void
schedule (HeWatch *self, GFile *file)
{
  g_autofree char *name = file != NULL ? g_file_get_basename (file) : NULL;
  g_autofree char *path = file != NULL ? g_file_get_path (file) : NULL;
  PendingReload *p;
  GSource *source;

  if (name == NULL || path == NULL || name[0] == '.')
    return;
  p = g_new0 (PendingReload, 1);
  p->watch = self;
  p->id = ts_helora_adapter_id (path);
  source = g_timeout_source_new (SETTLE_MS);
  g_source_set_callback (source, reload_cb, p, pending_free);
  /* A newer event for the same id restarts its wait. */
  g_hash_table_replace (self->pending, g_strdup (p->id), source);
  g_source_attach (source, self->server->context);
}

static void
changed_cb (GFileMonitor *monitor, GFile *file, GFile *other, GFileMonitorEvent event,
            gpointer data)
{
  switch (event)
    {
    case G_FILE_MONITOR_EVENT_RENAMED:
      schedule (data, file);
      schedule (data, other);
      break;
    case G_FILE_MONITOR_EVENT_CHANGES_DONE_HINT:
    case G_FILE_MONITOR_EVENT_CREATED:
    case G_FILE_MONITOR_EVENT_DELETED:
    case G_FILE_MONITOR_EVENT_MOVED_IN:
    case G_FILE_MONITOR_EVENT_MOVED_OUT:
      schedule (data, file);
      break;
    default:
      break;
    }
}

static void
destroy_source (gpointer source)
{
  g_source_destroy (source);
  g_source_unref (source);
}

HeWatch *
he_watch_new (HeServer *server, const char *dir, GError **error)
{
  g_autoptr (GFile) file = g_file_new_for_path (dir);
  HeWatch *self = g_new0 (HeWatch, 1);

  self->server = server;
  self->pending = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, destroy_source);
  self->monitor = g_file_monitor_directory (file, G_FILE_MONITOR_WATCH_MOVES, NULL, error);
  if (self->monitor == NULL)
    {
      he_watch_free (self);
      return NULL;
    }
  g_signal_connect (self->monitor, "changed", G_CALLBACK (changed_cb), self);
  return self;
}

void
he_watch_free (HeWatch *self)
{
  if (self == NULL)
    return;
  if (self->monitor != NULL)
    {
      g_signal_handlers_disconnect_by_data (self->monitor, self);
      g_file_monitor_cancel (self->monitor);
      g_object_unref (self->monitor);
    }
  g_hash_table_unref (self->pending);
  g_free (self);
}
