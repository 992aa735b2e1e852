/* he-server-service.c: the HTTP side of tensafe-he-server: routes, listening, shutdown.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <gio/gio.h>

#include "he-server-private.h"
#include "server-deadline.h"
#include "server-listen.h"

static void
healthz_cb (SoupServer *soup, SoupServerMessage *msg, const char *path,
            GHashTable *query, gpointer data)
{
  HeServer *self = data;

  /* a load balancer's health check takes a draining server out of rotation */
  if (self->draining)
    {
      soup_server_message_set_status (msg, SOUP_STATUS_SERVICE_UNAVAILABLE, NULL);
      soup_server_message_set_response (msg, "text/plain", SOUP_MEMORY_STATIC, "draining\n", 9);
      return;
    }
  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  soup_server_message_set_response (msg, "text/plain", SOUP_MEMORY_STATIC, "ok\n", 3);
}

static void
metrics_cb (SoupServer *soup, SoupServerMessage *msg, const char *path,
            GHashTable *query, gpointer data)
{
  HeServer *self = data;
  char *text = he_metrics_render (self->metrics);

  soup_server_message_set_status (msg, SOUP_STATUS_OK, NULL);
  soup_server_message_set_response (msg, "text/plain; version=0.0.4", SOUP_MEMORY_TAKE,
                                    text, strlen (text));
}

/* Runs on the upgrade's headers: a draining server refuses it with an
 * answer a load balancer can act on (HAProxy's "retry-on 503" with
 * redispatch sends the handshake to another evaluator, the client never
 * sees it); a client talking to it directly gets a failed handshake. */
static void
upgrade_early_cb (SoupServer *soup, SoupServerMessage *msg, const char *path,
                  GHashTable *query, gpointer data)
{
  HeServer *self = data;

  if (!self->draining)
    return;
  soup_server_message_set_status (msg, SOUP_STATUS_SERVICE_UNAVAILABLE, NULL);
  soup_server_message_set_response (msg, "text/plain", SOUP_MEMORY_STATIC, "draining\n", 9);
}

static void
websocket_cb (SoupServer *soup, SoupServerMessage *msg, const char *path,
              SoupWebsocketConnection *ws, gpointer data)
{
  HeServer *self = data;

  if (self->shut_down || self->draining)
    {
      soup_websocket_connection_close (ws, SOUP_WEBSOCKET_CLOSE_GOING_AWAY, NULL);
      return;
    }
  he_conn_accept (self, ws);
}

static SoupServer *
create_soup (const HeServerOptions *options, GError **error)
{
  g_autoptr (GTlsCertificate) cert = NULL;

  if ((options->tls_cert == NULL) != (options->tls_key == NULL))
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "TLS needs both a certificate and a key");
      return NULL;
    }
  if (options->tls_cert == NULL)
    return soup_server_new ("server-header", "tensafe-he-server", NULL);
  cert = g_tls_certificate_new_from_files (options->tls_cert, options->tls_key, error);
  if (cert == NULL)
    return NULL;
  return soup_server_new ("server-header", "tensafe-he-server", "tls-certificate", cert, NULL);
}

HeServer *
he_server_new (const HeServerOptions *options, GError **error)
{
  HeServer *self = g_new0 (HeServer, 1);
  guint threads = options->n_threads ? options->n_threads : g_get_num_processors ();

  self->context = g_main_context_ref_thread_default ();
  self->metrics = he_metrics_new ();
  self->conns = g_hash_table_new_full (NULL, NULL, (GDestroyNotify) he_conn_unref, NULL);
  self->max_frame_bytes = options->max_frame_bytes ? options->max_frame_bytes
                                                   : HE_SERVER_DEFAULT_MAX_FRAME;
  self->max_frame_bytes = MAX (self->max_frame_bytes, 1024);
  self->max_in_flight = options->max_in_flight ? options->max_in_flight
                                               : HE_SERVER_DEFAULT_MAX_IN_FLIGHT;
  self->max_in_flight = MIN (self->max_in_flight, G_MAXUINT16);
  self->idle_timeout_ms = options->idle_timeout_ms ? options->idle_timeout_ms
                                                   : HE_SERVER_DEFAULT_IDLE_TIMEOUT_MS;
  self->max_unread_bytes = options->max_unread_bytes ? options->max_unread_bytes
                                                     : HE_SERVER_DEFAULT_MAX_UNREAD_BYTES;
  self->max_conns_per_address = options->max_conns_per_address == 0
                                  ? SERVER_DEFAULT_MAX_PER_ADDRESS
                                  : (guint) MAX (options->max_conns_per_address, 0);
  self->drain_timeout_ms = options->drain_timeout_ms ? options->drain_timeout_ms
                                                     : HE_SERVER_DEFAULT_DRAIN_TIMEOUT_MS;
  self->adapters = he_adapters_new (options->adapters_dir, options->open_evaluator,
                                    options->open_stack, options->open_data, error);
  if (self->adapters == NULL || !he_privacy_init (self, options, error)
      || (self->pool = g_thread_pool_new (he_conn_run_job, self, threads, FALSE, error)) == NULL
      || (self->soup = create_soup (options, error)) == NULL
      || (options->watch_adapters
          && (self->watch = he_watch_new (self, options->adapters_dir, error)) == NULL))
    {
      he_server_free (self);
      return NULL;
    }
  server_set_request_deadline (self->soup, MIN (self->idle_timeout_ms, HE_SERVER_REQUEST_DEADLINE_MS));
  soup_server_add_handler (self->soup, "/healthz", healthz_cb, self, NULL);
  soup_server_add_handler (self->soup, "/metrics", metrics_cb, self, NULL);
  he_admin_install (self);
  soup_server_add_early_handler (self->soup, TS_HELORA_PATH, upgrade_early_cb, self, NULL);
  soup_server_add_websocket_handler (self->soup, TS_HELORA_PATH, NULL, NULL,
                                     websocket_cb, self, NULL);
  return self;
}

static GSocketAddress *
parse_address (const char *address, GError **error)
{
  g_autoptr (GSocketConnectable) conn = g_network_address_parse (address, 0, error);
  g_autoptr (GInetAddress) inet = NULL;

  if (conn == NULL)
    return NULL;
  inet = g_inet_address_new_from_string (g_network_address_get_hostname (G_NETWORK_ADDRESS (conn)));
  if (inet == NULL)
    {
      g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                   "'%s' is not a numeric ADDR:PORT", address);
      return NULL;
    }
  return g_inet_socket_address_new (inet, g_network_address_get_port (G_NETWORK_ADDRESS (conn)));
}

gboolean
he_server_listen (HeServer *self, const char *address, GError **error)
{
  g_autoptr (GSocketAddress) addr = parse_address (address, error);
  ServerListenLimits limits = { .max_per_address = self->max_conns_per_address };

  if (addr == NULL)
    return FALSE;
  return server_listen (self->soup, addr, &limits, error);
}

static GUri *
first_uri (HeServer *self)
{
  GSList *uris = server_listen_get_uris (self->soup);
  GUri *uri = uris != NULL ? g_uri_ref (uris->data) : NULL;

  g_slist_free_full (uris, (GDestroyNotify) g_uri_unref);
  return uri;
}

char *
he_server_get_url (HeServer *self)
{
  g_autoptr (GUri) uri = first_uri (self);

  if (uri == NULL)
    return NULL;
  return g_strdup_printf ("%s://%s:%d/", g_uri_get_scheme (uri), g_uri_get_host (uri),
                          g_uri_get_port (uri));
}

guint16
he_server_get_port (HeServer *self)
{
  g_autoptr (GUri) uri = first_uri (self);

  return uri != NULL ? (guint16) g_uri_get_port (uri) : 0;
}

HeMetrics *
he_server_get_metrics (HeServer *self)
{
  return self->metrics;
}

/* A snapshot: the table changes while connections close. */
static GPtrArray *
connections (HeServer *self)
{
  GPtrArray *out = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer conn;

  g_hash_table_iter_init (&iter, self->conns);
  while (g_hash_table_iter_next (&iter, &conn, NULL))
    g_ptr_array_add (out, conn);
  return out;
}

/* Lets closing handshakes finish for a moment, then forgets the rest. */
static void
close_all_connections (HeServer *self)
{
  gint64 deadline = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  g_autoptr (GPtrArray) conns = connections (self);

  for (guint i = 0; i < conns->len; i++)
    he_conn_shutdown (g_ptr_array_index (conns, i), TS_HELORA_ERROR_SHUTTING_DOWN,
                      "Server shutting down");
  while (g_hash_table_size (self->conns) > 0 && g_get_monotonic_time () < deadline)
    if (!g_main_context_iteration (self->context, FALSE))
      g_usleep (1000);
  g_clear_pointer (&conns, g_ptr_array_unref);
  conns = connections (self);
  for (guint i = 0; i < conns->len; i++)
    he_conn_unregister (g_ptr_array_index (conns, i));
}

void
he_server_shutdown (HeServer *self)
{
  if (self->shut_down)
    return;
  self->shut_down = TRUE;
  g_clear_pointer (&self->watch, he_watch_free);
  if (self->soup != NULL)
    {
      server_listen_stop (self->soup);
      soup_server_disconnect (self->soup);
    }
  if (self->conns != NULL)
    close_all_connections (self);
  if (self->pool != NULL)
    {
      /* Waits for running jobs; their answers are queued on our context. */
      g_thread_pool_free (self->pool, FALSE, TRUE);
      self->pool = NULL;
    }
  while (g_main_context_iteration (self->context, FALSE))
    ;
}

void
he_server_free (HeServer *self)
{
  if (self == NULL)
    return;
  he_server_shutdown (self);
  he_drain_clear (self);
  g_clear_pointer (&self->watch, he_watch_free);
  g_clear_object (&self->soup);
  g_clear_pointer (&self->conns, g_hash_table_unref);
  g_clear_pointer (&self->adapters, he_adapters_free);
  he_privacy_clear (self);     /* before the metrics: the refill thread reports there */
  g_clear_pointer (&self->metrics, he_metrics_free);
  g_main_context_unref (self->context);
  g_free (self);
}
