/* he-server-drain.c: draining for rolling upgrades: open sessions finish, new ones go elsewhere.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Once draining, /healthz answers 503 so that a load balancer stops sending
 * new clients here, new WebSocket connections are closed at once, and a
 * hello on a connection without a session is refused with SHUTTING_DOWN:
 * the client reconnects and the balancer picks another evaluator.
 * Connections with a session keep being served until their clients close
 * them (or stay idle for HE_SERVER_DRAIN_IDLE_MS); when none is left, or
 * the drain timeout passed, the drained callback runs once, on the main
 * context (the program then exits; a shutdown closes what is left, and
 * those clients reconnect elsewhere and resend what was unanswered).
 */
#include "he-server-private.h"

static gboolean
drained_cb (gpointer data)
{
  HeServer *self = data;

  he_drain_clear (self);
  g_message ("drained: no session left");
  if (self->drained_func != NULL)
    self->drained_func (self->drained_data);
  return G_SOURCE_REMOVE;
}

static gboolean
drain_timeout_cb (gpointer data)
{
  HeServer *self = data;

  he_drain_clear (self);
  self->drained_notified = TRUE;
  g_message ("drain timeout: %u connections still open are closed",
             g_hash_table_size (self->conns));
  if (self->drained_func != NULL)
    self->drained_func (self->drained_data);
  return G_SOURCE_REMOVE;
}

/* Sources on the server's context (a test's server runs on its own). */
static GSource *
attach (HeServer *self, GSource *source, GSourceFunc func)
{
  g_source_set_callback (source, func, self, NULL);
  g_source_attach (source, self->context);
  return source;
}

/* From the source's own callback, or at teardown. */
void
he_drain_clear (HeServer *self)
{
  if (self->drained_source != NULL)
    g_source_destroy (self->drained_source);
  g_clear_pointer (&self->drained_source, g_source_unref);
  if (self->drain_timer != NULL)
    g_source_destroy (self->drain_timer);
  g_clear_pointer (&self->drain_timer, g_source_unref);
}

/* Runs the callback from the main loop, not from inside a connection's
 * "closed" signal that may have got us here. */
void
he_drain_check (HeServer *self)
{
  if (!self->draining || self->shut_down || self->drained_notified
      || g_hash_table_size (self->conns) > 0)
    return;
  self->drained_notified = TRUE;
  self->drained_source = attach (self, g_idle_source_new (), drained_cb);
}

void
he_server_set_drained_func (HeServer *self, HeServerDrainedFunc func, gpointer data)
{
  self->drained_func = func;
  self->drained_data = data;
}

gboolean
he_server_is_draining (HeServer *self)
{
  return self->draining;
}

void
he_server_drain (HeServer *self)
{
  GHashTableIter iter;
  gpointer conn;
  g_autoptr (GPtrArray) idle = g_ptr_array_new ();

  if (self->draining || self->shut_down)
    return;
  self->draining = TRUE;
  self->drain_timer = attach (self, g_timeout_source_new (self->drain_timeout_ms),
                              drain_timeout_cb);
  g_message ("draining: %u connections open, no new sessions",
             g_hash_table_size (self->conns));
  /* connections that never said hello hold no session to finish */
  g_hash_table_iter_init (&iter, self->conns);
  while (g_hash_table_iter_next (&iter, &conn, NULL))
    if (!he_conn_has_session (conn))
      g_ptr_array_add (idle, conn);
  for (guint i = 0; i < idle->len; i++)
    he_conn_shutdown (g_ptr_array_index (idle, i), TS_HELORA_ERROR_SHUTTING_DOWN,
                      "Server draining: connect to another evaluator");
  he_drain_check (self);
}
