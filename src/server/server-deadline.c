/* server-deadline.c: a request's headers within a deadline, its body moving.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "server-deadline.h"
#include "server-listen.h"

#define DEADLINE_KEY "ts-request-deadline"

typedef struct {
  GSocket *socket;
  GSource *timer;   /* NULL once it fired */
  guint ms;
} Deadline;

static void
deadline_stop (Deadline *d)
{
  if (d->timer == NULL)
    return;
  g_source_destroy (d->timer);
  g_clear_pointer (&d->timer, g_source_unref);
}

static void
deadline_free (Deadline *d)
{
  deadline_stop (d);
  g_object_unref (d->socket);
  g_free (d);
}

static gboolean
expired_cb (gpointer data)
{
  Deadline *d = data;

  /* debug only: an idle keep-alive connection ends this way too */
  g_debug ("Dropping a request whose headers or body stalled for %u ms", d->ms);
  g_clear_pointer (&d->timer, g_source_unref);
  g_socket_shutdown (d->socket, TRUE, TRUE, NULL);
  return G_SOURCE_REMOVE;
}

static void
deadline_restart (Deadline *d)
{
  deadline_stop (d);
  d->timer = g_timeout_source_new (d->ms);
  g_source_set_callback (d->timer, expired_cb, d, NULL);
  g_source_attach (d->timer, g_main_context_get_thread_default ());
}

static void
progress_cb (SoupServerMessage *msg, gpointer data)
{
  deadline_restart (data);
}

static void
chunk_cb (SoupServerMessage *msg, GBytes *chunk, gpointer data)
{
  deadline_restart (data);
}

static void
request_started_cb (SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
  GSocket *socket = server_message_socket (msg);
  Deadline *d;

  if (socket == NULL)
    return;
  d = g_new0 (Deadline, 1);
  d->socket = g_object_ref (socket);
  d->ms = GPOINTER_TO_UINT (user_data);
  deadline_restart (d);
  g_object_set_data_full (G_OBJECT (msg), DEADLINE_KEY, d, (GDestroyNotify) deadline_free);
  g_signal_connect (msg, "got-headers", G_CALLBACK (progress_cb), d);
  g_signal_connect (msg, "got-chunk", G_CALLBACK (chunk_cb), d);
}

/* The whole request is in: from here the handler and the response run
 * under the server's other limits. */
static void
request_read_cb (SoupServer *server, SoupServerMessage *msg, gpointer user_data)
{
  Deadline *d = g_object_get_data (G_OBJECT (msg), DEADLINE_KEY);

  if (d == NULL)
    return;
  g_signal_handlers_disconnect_by_data (msg, d);
  g_object_set_data (G_OBJECT (msg), DEADLINE_KEY, NULL);
}

void
server_set_request_deadline (SoupServer *server, guint ms)
{
  g_signal_connect (server, "request-started", G_CALLBACK (request_started_cb),
                    GUINT_TO_POINTER (MAX (ms, 1)));
  g_signal_connect (server, "request-read", G_CALLBACK (request_read_cb), NULL);
}
