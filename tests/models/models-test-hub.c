/* models-test-hub.c: the test server: whole files, Range requests, dropped and stalled
 * connections.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "models-test-hub.h"

#include <libsoup/soup.h>

struct ModelsTestHub
{
  GThread      *thread;
  GMainContext *context;
  GMainLoop    *loop;
  SoupServer   *server;
  guint         port;
  GMutex        lock;
  GCond         ready;
  gboolean      started;
  GHashTable   *files;   /* path -> GBytes */
  GHashTable   *drops;   /* path -> DropPlan */
  GPtrArray    *stalled; /* GIOStream, held open by the hub's thread */
  GPtrArray    *log;
};

typedef struct
{
  gint64   after;
  guint    count;
  gboolean stall;        /* keep the connection open instead of closing it */
} DropPlan;

/* A strong ETag: the body's SHA-256, quoted. */
static char *
etag_of (GBytes *bytes)
{
  g_autofree char *sha = g_compute_checksum_for_bytes (G_CHECKSUM_SHA256, bytes);

  return g_strdup_printf ("\"%s\"", sha);
}

/* Writes a raw 200 with the whole length announced, then only @after bytes;
 * closes the connection, or with @stall keeps it open in @hub->stalled. */
static void
drop_connection (ModelsTestHub *hub, SoupServerMessage *msg, GBytes *bytes, gint64 after,
                 gboolean stall)
{
  g_autoptr(GIOStream) io = soup_server_message_steal_connection (msg);
  GOutputStream *out = g_io_stream_get_output_stream (io);
  g_autofree char *etag = etag_of (bytes);
  g_autofree char *head = g_strdup_printf ("HTTP/1.1 200 OK\r\nContent-Length: %" G_GSIZE_FORMAT
                                           "\r\nETag: %s\r\nConnection: close\r\n\r\n",
                                           g_bytes_get_size (bytes), etag);

  g_output_stream_write_all (out, head, strlen (head), NULL, NULL, NULL);
  g_output_stream_write_all (out, g_bytes_get_data (bytes, NULL), (gsize) after, NULL, NULL,
                             NULL);
  g_output_stream_flush (out, NULL, NULL);
  if (stall)
    g_ptr_array_add (hub->stalled, g_steal_pointer (&io));
  else
    g_io_stream_close (io, NULL, NULL);
}

static void
serve_range (SoupServerMessage *msg, GBytes *bytes)
{
  SoupMessageHeaders *req = soup_server_message_get_request_headers (msg);
  SoupMessageHeaders *resp = soup_server_message_get_response_headers (msg);
  gsize size = g_bytes_get_size (bytes);
  g_autofree char *etag = etag_of (bytes);
  const char *if_range = soup_message_headers_get_one (req, "If-Range");
  SoupRange *ranges = NULL;
  int n = 0;

  soup_message_headers_replace (resp, "ETag", etag);
  /* A range of another version of the file is answered with the whole file. */
  if (if_range != NULL && g_strcmp0 (if_range, etag) != 0)
    {
      /* SoupServer would otherwise cut a 200 down to the range asked for. */
      soup_message_headers_remove (req, "Range");
      soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
      soup_server_message_set_response (msg, "application/octet-stream", SOUP_MEMORY_COPY,
                                        g_bytes_get_data (bytes, NULL), size);
      return;
    }
  if (soup_message_headers_get_ranges (req, size, &ranges, &n) && n == 1
      && (gsize) ranges[0].start < size)
    {
      gsize start = (gsize) ranges[0].start, end = (gsize) ranges[0].end;
      g_autoptr(GBytes) part = g_bytes_new_from_bytes (bytes, start, end - start + 1);
      soup_message_headers_set_content_range (resp, start, end, size);
      soup_server_message_set_status (msg, SOUP_STATUS_PARTIAL_CONTENT, NULL);
      soup_server_message_set_response (msg, "application/octet-stream", SOUP_MEMORY_COPY,
                                        g_bytes_get_data (part, NULL), g_bytes_get_size (part));
      soup_message_headers_free_ranges (req, ranges);
      return;
    }
  if (ranges != NULL)
    soup_message_headers_free_ranges (req, ranges);
  if (soup_message_headers_get_one (req, "Range") != NULL)
    {
      soup_server_message_set_status (msg, SOUP_STATUS_REQUESTED_RANGE_NOT_SATISFIABLE, NULL);
      return;
    }
  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  soup_server_message_set_response (msg, "application/octet-stream", SOUP_MEMORY_COPY,
                                    g_bytes_get_data (bytes, NULL), size);
}

static void
handle (SoupServer *server, SoupServerMessage *msg, const char *path, GHashTable *query,
        gpointer user_data)
{
  ModelsTestHub *hub = user_data;
  SoupMessageHeaders *req = soup_server_message_get_request_headers (msg);
  const char *range = soup_message_headers_get_one (req, "Range");
  const char *if_range = soup_message_headers_get_one (req, "If-Range");
  g_autoptr(GBytes) bytes = NULL;
  DropPlan *drop;
  gint64 drop_after = -1;
  gboolean stall = FALSE;

  g_mutex_lock (&hub->lock);
  g_ptr_array_add (hub->log, g_strdup_printf ("%s %s%s", path, range ? range : "-",
                                              if_range ? " if-range" : ""));
  bytes = g_hash_table_lookup (hub->files, path);
  if (bytes != NULL)
    g_bytes_ref (bytes);
  drop = g_hash_table_lookup (hub->drops, path);
  if (drop != NULL && drop->count > 0)
    {
      drop->count--;
      drop_after = drop->after;
      stall = drop->stall;
    }
  g_mutex_unlock (&hub->lock);
  if (bytes == NULL)
    soup_server_message_set_status (msg, SOUP_STATUS_NOT_FOUND, NULL);
  else if (drop_after >= 0)
    drop_connection (hub, msg, bytes, drop_after, stall);
  else
    serve_range (msg, bytes);
}

static gpointer
hub_thread (gpointer data)
{
  ModelsTestHub *hub = data;
  g_autoptr(GError) error = NULL;
  GSList *uris;

  g_main_context_push_thread_default (hub->context);
  hub->server = soup_server_new (NULL, NULL);
  soup_server_add_handler (hub->server, NULL, handle, hub, NULL);
  if (!soup_server_listen_local (hub->server, 0, SOUP_SERVER_LISTEN_IPV4_ONLY, &error))
    g_error ("cannot listen on 127.0.0.1: %s", error->message);
  uris = soup_server_get_uris (hub->server);
  g_mutex_lock (&hub->lock);
  hub->port = (guint) g_uri_get_port (uris->data);
  hub->started = TRUE;
  g_cond_signal (&hub->ready);
  g_mutex_unlock (&hub->lock);
  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  g_main_loop_run (hub->loop);
  /* Stalled clients see their connection close. */
  g_ptr_array_set_size (hub->stalled, 0);
  /* Let the closed connections finish before the server goes. */
  soup_server_disconnect (hub->server);
  while (g_main_context_iteration (hub->context, FALSE))
    ;
  g_clear_object (&hub->server);
  while (g_main_context_iteration (hub->context, FALSE))
    ;
  g_main_context_pop_thread_default (hub->context);
  return NULL;
}

static void
close_stream (gpointer io)
{
  g_io_stream_close (io, NULL, NULL);
  g_object_unref (io);
}

ModelsTestHub *
models_test_hub_new (void)
{
  ModelsTestHub *hub = g_new0 (ModelsTestHub, 1);

  g_mutex_init (&hub->lock);
  g_cond_init (&hub->ready);
  hub->context = g_main_context_new ();
  hub->loop = g_main_loop_new (hub->context, FALSE);
  hub->files = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                      (GDestroyNotify) g_bytes_unref);
  hub->drops = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  hub->stalled = g_ptr_array_new_with_free_func (close_stream);
  hub->log = g_ptr_array_new_with_free_func (g_free);
  hub->thread = g_thread_new ("models-test-hub", hub_thread, hub);
  g_mutex_lock (&hub->lock);
  while (!hub->started)
    g_cond_wait (&hub->ready, &hub->lock);
  g_mutex_unlock (&hub->lock);
  return hub;
}

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

void
models_test_hub_free (ModelsTestHub *hub)
{
  g_main_context_invoke (hub->context, quit_loop, hub->loop);
  g_thread_join (hub->thread);
  g_main_loop_unref (hub->loop);
  g_main_context_unref (hub->context);
  g_hash_table_unref (hub->files);
  g_hash_table_unref (hub->drops);
  g_ptr_array_unref (hub->stalled);
  g_ptr_array_unref (hub->log);
  g_mutex_clear (&hub->lock);
  g_cond_clear (&hub->ready);
  g_free (hub);
}

char *
models_test_hub_url (ModelsTestHub *hub, const char *path)
{
  return g_strdup_printf ("http://127.0.0.1:%u%s", hub->port, path);
}

void
models_test_hub_serve (ModelsTestHub *hub, const char *path, GBytes *bytes)
{
  g_mutex_lock (&hub->lock);
  g_hash_table_replace (hub->files, g_strdup (path), g_bytes_ref (bytes));
  g_mutex_unlock (&hub->lock);
}

static void
plan_drops (ModelsTestHub *hub, const char *path, gint64 after, guint count, gboolean stall)
{
  DropPlan *plan = g_new0 (DropPlan, 1);

  plan->after = after;
  plan->count = count;
  plan->stall = stall;
  g_mutex_lock (&hub->lock);
  g_hash_table_replace (hub->drops, g_strdup (path), plan);
  g_mutex_unlock (&hub->lock);
}

void
models_test_hub_drop (ModelsTestHub *hub, const char *path, gint64 after, guint count)
{
  plan_drops (hub, path, after, count, FALSE);
}

void
models_test_hub_stall (ModelsTestHub *hub, const char *path, gint64 after, guint count)
{
  plan_drops (hub, path, after, count, TRUE);
}

GPtrArray *
models_test_hub_log (ModelsTestHub *hub)
{
  GPtrArray *copy = g_ptr_array_new_with_free_func (g_free);

  g_mutex_lock (&hub->lock);
  for (guint i = 0; i < hub->log->len; i++)
    g_ptr_array_add (copy, g_strdup (g_ptr_array_index (hub->log, i)));
  g_mutex_unlock (&hub->lock);
  return copy;
}

void
models_test_hub_clear_log (ModelsTestHub *hub)
{
  g_mutex_lock (&hub->lock);
  g_ptr_array_set_size (hub->log, 0);
  g_mutex_unlock (&hub->lock);
}
