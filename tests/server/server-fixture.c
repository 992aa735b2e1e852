/* server-fixture.c: an evaluator server on 127.0.0.1:0 in its own thread, for tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <libsoup/soup.h>

#include "server-fixture.h"

struct _ServerFixture {
  HeServerOptions options;
  const char *address;
  GThread *thread;
  GMainContext *context;
  GMainLoop *loop;
  GMutex lock;
  GCond cond;
  gboolean ready;
  HeServer *server;
  char *ws_url;
  char *http_url;
};

static gpointer
server_thread (gpointer data)
{
  ServerFixture *self = data;
  g_autoptr (GError) error = NULL;

  g_main_context_push_thread_default (self->context);
  self->server = he_server_new (&self->options, &error);
  g_assert_no_error (error);
  g_assert_true (he_server_listen (self->server, self->address, &error));
  g_assert_no_error (error);
  self->http_url = he_server_get_url (self->server);
  self->ws_url = g_strdup_printf ("ws://127.0.0.1:%u%s", he_server_get_port (self->server),
                                  TS_HELORA_PATH);
  g_mutex_lock (&self->lock);
  self->ready = TRUE;
  g_cond_signal (&self->cond);
  g_mutex_unlock (&self->lock);
  g_main_loop_run (self->loop);
  he_server_free (self->server);
  g_main_context_pop_thread_default (self->context);
  return NULL;
}

ServerFixture *
server_fixture_start (const HeServerOptions *options)
{
  return server_fixture_start_on (options, "127.0.0.1:0");
}

ServerFixture *
server_fixture_start_on (const HeServerOptions *options, const char *address)
{
  ServerFixture *self = g_new0 (ServerFixture, 1);

  self->options = *options;
  self->address = address;
  self->context = g_main_context_new ();
  self->loop = g_main_loop_new (self->context, FALSE);
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  self->thread = g_thread_new ("he-server", server_thread, self);
  g_mutex_lock (&self->lock);
  while (!self->ready)
    g_cond_wait (&self->cond, &self->lock);
  g_mutex_unlock (&self->lock);
  return self;
}

static gboolean
quit_cb (gpointer loop)
{
  g_main_loop_quit (loop);
  return G_SOURCE_REMOVE;
}

void
server_fixture_stop (ServerFixture *self)
{
  g_main_context_invoke (self->context, quit_cb, self->loop);
  g_thread_join (self->thread);
  g_main_loop_unref (self->loop);
  g_main_context_unref (self->context);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  g_free (self->ws_url);
  g_free (self->http_url);
  g_free (self);
}

const char *
server_fixture_ws_url (ServerFixture *self)
{
  return self->ws_url;
}

const char *
server_fixture_http_url (ServerFixture *self)
{
  return self->http_url;
}

HeMetrics *
server_fixture_metrics (ServerFixture *self)
{
  return he_server_get_metrics (self->server);
}

char *
server_fixture_get (ServerFixture *self, const char *path)
{
  return http_get (self->http_url, path[0] == '/' ? path + 1 : path);
}

char *
server_fixture_request (ServerFixture *self, const char *method, const char *path,
                        guint *status)
{
  g_autoptr (SoupSession) session = soup_session_new ();
  g_autofree char *url = g_strconcat (self->http_url, path, NULL);
  g_autoptr (SoupMessage) msg = soup_message_new (method, url);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body = soup_session_send_and_read (session, msg, NULL, &error);

  g_assert_no_error (error);
  *status = soup_message_get_status (msg);
  return g_strndup (g_bytes_get_data (body, NULL), g_bytes_get_size (body));
}

char *
http_get (const char *base, const char *path)
{
  g_autoptr (SoupSession) session = soup_session_new ();
  g_autofree char *url = g_strconcat (base, path, NULL);
  g_autoptr (SoupMessage) msg = soup_message_new ("GET", url);
  g_autoptr (GError) error = NULL;
  g_autoptr (GBytes) body = soup_session_send_and_read (session, msg, NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (soup_message_get_status (msg), ==, SOUP_STATUS_OK);
  return g_strndup (g_bytes_get_data (body, NULL), g_bytes_get_size (body));
}
