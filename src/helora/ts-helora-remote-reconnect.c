/* ts-helora-remote-reconnect.c: the evaluator client reconnects after a dropped connection.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Behind a load balancer an evaluator may vanish (killed, upgraded, drained)
 * while a generation waits for it. Every request sent is kept until its
 * answer arrives; when the connection goes while answers are awaited, the
 * I/O thread connects again (bounded tries, backoff with jitter so that a
 * fleet's clients do not return in one burst), says the last hello again,
 * and once it is acknowledged sends the unanswered requests again under
 * their own ids, in order. The old connection's handlers are gone before
 * anything else happens, so none of its late answers can reach a caller,
 * and an id's waiter takes one answer only: an answer lost with a
 * connection is computed again by another evaluator and applied once.
 * Requests are pure functions of their ciphertexts, so a recomputed answer
 * equals the lost one (adapter-private answers draw fresh noise, and are
 * charged to the privacy budget again).
 */
#include "ts-helora-remote-private.h"

/* The first try is at once, then 0.5, 1, 2, 4 s (±25 %) after the last. */
#define RETRY_BASE_MS 500
/* A first connection refused by a load balancer keeps trying at most this
 * far apart (0.5, 1, 2, 4, 4, … s) until the connect's own timeout: a
 * fleet mid-upgrade answers 503 for as long as its drain and the proxy's
 * health checks take, seconds under load, whatever the number of tries. */
#define FIRST_CONNECT_MAX_DOUBLINGS 3

static gboolean
awaits_answers (TsHeloraRemote *self)
{
  GHashTableIter iter;
  gpointer key;

  g_hash_table_iter_init (&iter, self->unanswered);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    if (_ts_helora_remote_is_waited (self, *(guint64 *) key))
      return TRUE;
  return FALSE;
}

static gboolean
give_up_closed (TsHeloraRemote *self)
{
  gboolean closed;

  g_mutex_lock (&self->lock);
  closed = self->closed;
  g_mutex_unlock (&self->lock);
  return closed || self->quitting;
}

static void
give_up (TsHeloraRemote *self)
{
  g_autofree char *why = g_strdup_printf (
    "The evaluator at %s is unreachable: %u connection tries in %.1f s failed (last: %s)",
    self->endpoint, self->attempt, (g_get_monotonic_time () - self->dropped_us) / 1e6,
    self->drop_reason ? self->drop_reason : "connection lost");

  self->recovering = FALSE;
  _ts_helora_remote_fail_all (self, why);
}

static gboolean
try_cb (gpointer data)
{
  TsHeloraRemote *self = data;

  g_clear_pointer (&self->retry_source, g_source_unref);
  if (!give_up_closed (self))
    _ts_helora_remote_open (self);
  return G_SOURCE_REMOVE;
}

/* 0 for the first try, then the doubling backoff with ±25 % jitter. */
static guint
backoff_ms (TsHeloraRemote *self)
{
  guint doublings = self->connected_once ? 6 : FIRST_CONNECT_MAX_DOUBLINGS;
  guint base;

  if (self->attempt == 0)
    return 0;
  base = RETRY_BASE_MS << MIN (self->attempt - 1, doublings);
  return (guint) g_random_int_range ((gint32) (base * 3 / 4), (gint32) (base * 5 / 4) + 1);
}

static void
schedule_try_after (TsHeloraRemote *self, guint delay_ms)
{
  self->attempt++;
  self->retry_source = g_timeout_source_new (delay_ms);
  g_source_set_callback (self->retry_source, try_cb, self, NULL);
  g_source_attach (self->retry_source, self->context);
}

static void
schedule_try (TsHeloraRemote *self)
{
  if (give_up_closed (self))
    return;
  if (self->attempt >= self->reconnect_tries)
    {
      give_up (self);
      return;
    }
  schedule_try_after (self, backoff_ms (self));
}

static void
start_recovery (TsHeloraRemote *self)
{
  self->recovering = TRUE;
  self->attempt = 0;
  self->dropped_us = g_get_monotonic_time ();
  schedule_try (self);
}

void
_ts_helora_remote_queue (TsHeloraRemote *self, guint64 request_id, GBytes *message,
                         gboolean is_hello)
{
  gboolean ready = self->ws != NULL
                   && soup_websocket_connection_get_state (self->ws) == SOUP_WEBSOCKET_STATE_OPEN
                   && self->rehello_id == 0;

  if (self->reconnect_tries == 0)
    {
      if (ready)
        _ts_helora_remote_transmit (self, message);
      return;      /* not connected: the waiter sees closed */
    }
  g_hash_table_insert (self->unanswered, g_memdup2 (&request_id, sizeof request_id),
                       g_bytes_ref (message));
  if (is_hello)
    {
      g_clear_pointer (&self->hello_message, g_bytes_unref);
      self->hello_message = g_bytes_ref (message);
      self->hello_id = request_id;
    }
  if (ready)
    _ts_helora_remote_transmit (self, message);
  else if (self->ws == NULL && self->connected_once && !self->recovering)
    start_recovery (self);       /* the connection went while idle */
}

/* Drops the connection's handlers first: from here on nothing it still
 * delivers reaches a caller. */
static void
forget_connection (TsHeloraRemote *self)
{
  SoupWebsocketConnection *ws = g_steal_pointer (&self->ws);

  g_signal_handlers_disconnect_by_data (ws, self);
  if (soup_websocket_connection_get_state (ws) == SOUP_WEBSOCKET_STATE_OPEN)
    soup_websocket_connection_close (ws, SOUP_WEBSOCKET_CLOSE_GOING_AWAY, NULL);
  g_object_unref (ws);
}

void
_ts_helora_remote_lost (TsHeloraRemote *self, const char *reason)
{
  if (self->ws == NULL)
    return;        /* this drop is already being handled */
  forget_connection (self);
  self->rehello_id = 0;
  if (self->quitting || self->reconnect_tries == 0 || give_up_closed (self))
    {
      _ts_helora_remote_fail_all (self, reason);
      if (self->quitting)
        g_main_loop_quit (self->loop);
      return;
    }
  g_free (self->drop_reason);
  self->drop_reason = g_strdup (reason);
  if (self->recovering)
    schedule_try (self);          /* the new connection went before its ack */
  else if (awaits_answers (self))
    start_recovery (self);
}

/* Bounded by the connect's timeout, which the caller waits for, not by
 * the tries: no try is made that would start after it, so the caller
 * hears the last refusal rather than a bare timeout. */
gboolean
_ts_helora_remote_retry_first (TsHeloraRemote *self)
{
  guint delay_ms;

  if (self->quitting || self->reconnect_tries == 0)
    return FALSE;
  if (!self->recovering)
    {
      self->recovering = TRUE;
      self->attempt = 1;
      self->dropped_us = g_get_monotonic_time ();
    }
  delay_ms = backoff_ms (self);
  if ((g_get_monotonic_time () - self->dropped_us) / 1000 + delay_ms >= self->timeout_ms)
    return FALSE;
  schedule_try_after (self, delay_ms);
  return TRUE;
}

void
_ts_helora_remote_connect_failed (TsHeloraRemote *self, const GError *error)
{
  if (self->quitting)
    return;
  g_free (self->drop_reason);
  self->drop_reason = g_strdup (error->message);
  schedule_try (self);
}

static gint
compare_ids (gconstpointer a, gconstpointer b)
{
  guint64 x = **(const guint64 *const *) a, y = **(const guint64 *const *) b;

  return x < y ? -1 : x > y;
}

/* The unanswered requests, oldest first; those nobody waits for any more
 * (timed out) are forgotten instead. */
static void
send_unanswered (TsHeloraRemote *self)
{
  g_autoptr (GPtrArray) ids = g_ptr_array_new ();
  GHashTableIter iter;
  gpointer key;
  guint64 resent = 0, bytes = 0;

  g_hash_table_iter_init (&iter, self->unanswered);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    g_ptr_array_add (ids, key);
  g_ptr_array_sort (ids, compare_ids);
  for (guint i = 0; i < ids->len; i++)
    {
      guint64 id = *(guint64 *) g_ptr_array_index (ids, i);
      GBytes *message;

      if (!_ts_helora_remote_is_waited (self, id))
        {
          g_hash_table_remove (self->unanswered, &id);
          continue;
        }
      message = g_hash_table_lookup (self->unanswered, &id);
      _ts_helora_remote_transmit (self, message);
      resent++;
      bytes += g_bytes_get_size (message);
    }
  g_mutex_lock (&self->lock);
  self->recovery.resent += resent;
  self->bytes_up += bytes;
  g_mutex_unlock (&self->lock);
}

static void
recovered (TsHeloraRemote *self)
{
  double ms = (g_get_monotonic_time () - self->dropped_us) / 1000.0;

  self->recovering = FALSE;
  self->attempt = 0;
  g_mutex_lock (&self->lock);
  self->recovery.reconnects++;
  self->recovery.total_recovery_ms += ms;
  self->recovery.max_recovery_ms = MAX (self->recovery.max_recovery_ms, ms);
  g_mutex_unlock (&self->lock);
  send_unanswered (self);
}

void
_ts_helora_remote_reconnected (TsHeloraRemote *self)
{
  if (self->hello_message == NULL)
    {
      recovered (self);
      return;
    }
  /* evaluates before the ack would be refused (no session yet) */
  self->rehello_id = self->hello_id;
  _ts_helora_remote_transmit (self, self->hello_message);
  g_mutex_lock (&self->lock);
  self->bytes_up += g_bytes_get_size (self->hello_message);
  g_mutex_unlock (&self->lock);
}

static gboolean
is_shutting_down (const TsHeloraFrame *frame)
{
  return frame->type == TS_HELORA_FRAME_ERROR
         && frame->u.status.code == TS_HELORA_ERROR_SHUTTING_DOWN;
}

/* The hello said again was refused for good (the adapter is not served
 * there, say): the caller of that hello, if still waiting, gets the error
 * frame; every other wait fails saying why. */
static void
rehello_refused (TsHeloraRemote *self, TsHeloraFrame *frame)
{
  g_autofree char *why = g_strdup_printf (
    "The evaluator at %s refused the session after a reconnect: %s (%s)", self->endpoint,
    frame->u.status.text, ts_helora_error_name (frame->u.status.code));

  g_hash_table_remove (self->unanswered, &frame->request_id);
  _ts_helora_remote_deliver (self, frame);
  self->recovering = FALSE;
  _ts_helora_remote_fail_all (self, why);
}

gboolean
_ts_helora_remote_take (TsHeloraRemote *self, TsHeloraFrame *frame)
{
  gboolean rehello = self->rehello_id != 0 && frame->request_id == self->rehello_id;

  if (self->reconnect_tries == 0)
    return FALSE;
  /* a draining evaluator refuses new sessions: another one will take it */
  if (is_shutting_down (frame))
    {
      g_autofree char *why = g_strdup_printf ("Evaluator: %s", frame->u.status.text);
      _ts_helora_remote_lost (self, why);
      ts_helora_frame_free (frame);
      return TRUE;
    }
  if (!rehello)
    {
      g_hash_table_remove (self->unanswered, &frame->request_id);
      return FALSE;
    }
  self->rehello_id = 0;
  if (frame->type != TS_HELORA_FRAME_HELLO_ACK)
    {
      rehello_refused (self, frame);
      return TRUE;
    }
  /* the caller of the hello may still be waiting for this very ack */
  g_hash_table_remove (self->unanswered, &frame->request_id);
  _ts_helora_remote_deliver (self, frame);
  recovered (self);
  return TRUE;
}

void
_ts_helora_remote_reconnect_clear (TsHeloraRemote *self)
{
  if (self->retry_source != NULL)
    g_source_destroy (self->retry_source);
  g_clear_pointer (&self->retry_source, g_source_unref);
  g_clear_pointer (&self->hello_message, g_bytes_unref);
  g_clear_pointer (&self->drop_reason, g_free);
  if (self->unanswered != NULL)
    g_hash_table_remove_all (self->unanswered);
}
