/* ts-helora-remote.c: evaluator protocol client: an I/O thread and blocking calls.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-helora-remote-private.h"

/* Results of wide parameter sets are large; the server's own limit is what
 * bounds what it accepts, this bounds what we buffer. */
#define MAX_INCOMING (512u << 20)

/* ---- I/O thread ---- */

void
_ts_helora_remote_fail_all (TsHeloraRemote *self, const char *reason)
{
  g_mutex_lock (&self->lock);
  self->closed = TRUE;
  if (self->close_reason == NULL)
    self->close_reason = g_strdup (reason);
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

gboolean
_ts_helora_remote_is_waited (TsHeloraRemote *self, guint64 request_id)
{
  gpointer answer = NULL;
  gboolean waited;

  g_mutex_lock (&self->lock);
  waited = g_hash_table_lookup_extended (self->waiting, &request_id, NULL, &answer)
           && answer == NULL;
  g_mutex_unlock (&self->lock);
  return waited;
}

/* An id's waiter takes one answer: a second one for it is dropped. */
void
_ts_helora_remote_deliver (TsHeloraRemote *self, TsHeloraFrame *frame)
{
  gpointer old;

  g_mutex_lock (&self->lock);
  if (g_hash_table_lookup_extended (self->waiting, &frame->request_id, NULL, &old) && old == NULL)
    {
      /* insert() frees the key passed when one is there: give it a copy. */
      g_hash_table_insert (self->waiting, g_memdup2 (&frame->request_id, sizeof (guint64)), frame);
      frame = NULL;
      g_cond_broadcast (&self->cond);
    }
  g_mutex_unlock (&self->lock);
  ts_helora_frame_free (frame);  /* nobody waits (timed out): drop */
}

static void
on_message (SoupWebsocketConnection *ws, int type, GBytes *message, TsHeloraRemote *self)
{
  g_autoptr (GError) error = NULL;
  TsHeloraFrame *frame;

  if (ws != self->ws)
    return;        /* a connection given up: its answers are not ours */
  g_mutex_lock (&self->lock);
  self->bytes_down += g_bytes_get_size (message);
  g_mutex_unlock (&self->lock);
  frame = ts_helora_frame_decode (message, MAX_INCOMING, &error);
  if (frame == NULL)
    {
      g_autofree char *why = g_strdup_printf ("Unreadable frame from the evaluator: %s",
                                              error->message);
      _ts_helora_remote_fail_all (self, why);
      soup_websocket_connection_close (ws, SOUP_WEBSOCKET_CLOSE_PROTOCOL_ERROR, NULL);
      return;
    }
  if (frame->type == TS_HELORA_FRAME_CLOSE)
    {
      g_autofree char *why = g_strdup_printf ("Evaluator closed the connection: %s (%s)",
                                              frame->u.status.text,
                                              ts_helora_error_name (frame->u.status.code));
      ts_helora_frame_free (frame);
      _ts_helora_remote_lost (self, why);
      return;
    }
  if (!_ts_helora_remote_take (self, frame))
    _ts_helora_remote_deliver (self, frame);
}

static void
on_closed (SoupWebsocketConnection *ws, TsHeloraRemote *self)
{
  _ts_helora_remote_lost (self, "Connection to the evaluator closed");
}

static void
install (TsHeloraRemote *self, SoupWebsocketConnection *ws)
{
  self->ws = ws;
  soup_websocket_connection_set_max_incoming_payload_size (ws, MAX_INCOMING);
  soup_websocket_connection_set_keepalive_interval (ws, 0);
  g_signal_connect (ws, "message", G_CALLBACK (on_message), self);
  g_signal_connect (ws, "closed", G_CALLBACK (on_closed), self);
}

/* A load balancer answers the handshake itself when no evaluator is up. */
static void
explain_refusal (SoupMessage *msg, GError **error)
{
  guint status = msg != NULL ? soup_message_get_status (msg) : 0;

  if (status == SOUP_STATUS_SERVICE_UNAVAILABLE)
    g_prefix_error (error, "HTTP 503, no evaluator available there: ");
  else if (status >= 300)
    g_prefix_error (error, "HTTP %u: ", status);
}

/* The first connection's end wakes ts_helora_remote_connect(). */
static void
first_connect_done (TsHeloraRemote *self, GError *error)
{
  g_mutex_lock (&self->lock);
  self->connect_done = TRUE;
  self->connect_error = error;
  self->closed = error != NULL;
  g_cond_broadcast (&self->cond);
  g_mutex_unlock (&self->lock);
}

static void
connect_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  TsHeloraRemote *self = data;
  GError *error = NULL;
  SoupWebsocketConnection *ws =
    soup_session_websocket_connect_finish (SOUP_SESSION (source), result, &error);

  guint status = self->connect_msg != NULL ? soup_message_get_status (self->connect_msg) : 0;

  g_clear_object (&self->cancellable);
  if (ws == NULL)
    explain_refusal (self->connect_msg, &error);
  g_clear_object (&self->connect_msg);
  if (ws != NULL && self->quitting)
    {
      g_object_unref (ws);
      ws = NULL;
      error = g_error_new_literal (G_IO_ERROR, G_IO_ERROR_CANCELLED, "Closing");
    }
  if (ws != NULL)
    install (self, ws);
  if (!self->connected_once)
    {
      /* a load balancer's 502/503/504: an evaluator went away, or none is up yet */
      if (ws == NULL && status >= 502 && status <= 504 && _ts_helora_remote_retry_first (self))
        {
          g_clear_error (&error);
          return;
        }
      self->connected_once = ws != NULL;
      self->recovering = FALSE;
      first_connect_done (self, error);
      return;
    }
  if (ws != NULL)
    _ts_helora_remote_reconnected (self);
  else
    _ts_helora_remote_connect_failed (self, error);
  g_clear_error (&error);
}

void
_ts_helora_remote_open (TsHeloraRemote *self)
{
  g_clear_object (&self->connect_msg);
  self->connect_msg = soup_message_new ("GET", self->url);
  self->cancellable = g_cancellable_new ();
  soup_session_websocket_connect_async (self->session, self->connect_msg, NULL, NULL,
                                        G_PRIORITY_DEFAULT, self->cancellable, connect_cb, self);
}

static gboolean
start_connect_cb (gpointer data)
{
  TsHeloraRemote *self = data;

  self->session = soup_session_new ();
  if (self->tls_db != NULL)
    soup_session_set_tls_database (self->session, self->tls_db);
  _ts_helora_remote_open (self);
  return G_SOURCE_REMOVE;
}

static gpointer
io_thread_main (gpointer data)
{
  TsHeloraRemote *self = data;

  g_main_context_push_thread_default (self->context);
  g_main_loop_run (self->loop);
  if (self->ws != NULL)
    g_signal_handlers_disconnect_by_data (self->ws, self);
  g_clear_object (&self->ws);
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  _ts_helora_remote_reconnect_clear (self);
  g_clear_object (&self->session);
  while (g_main_context_iteration (self->context, FALSE))
    ;
  g_clear_object (&self->connect_msg);
  g_main_context_pop_thread_default (self->context);
  return NULL;
}

typedef struct {
  TsHeloraRemote *self;
  GBytes *message;
  guint64 request_id;
  gboolean is_hello;
} SendData;

static void
send_data_free (gpointer data)
{
  SendData *sd = data;

  g_bytes_unref (sd->message);
  g_free (sd);
}

void
_ts_helora_remote_transmit (TsHeloraRemote *self, GBytes *message)
{
  if (self->tap != NULL)
    self->tap (message, self->tap_data);
  soup_websocket_connection_send_binary (self->ws, g_bytes_get_data (message, NULL),
                                         g_bytes_get_size (message));
}

static gboolean
send_cb (gpointer data)
{
  SendData *sd = data;

  _ts_helora_remote_queue (sd->self, sd->request_id, sd->message, sd->is_hello);
  return G_SOURCE_REMOVE;
}

static gboolean
quit_cb (gpointer data)
{
  g_main_loop_quit (((TsHeloraRemote *) data)->loop);
  return G_SOURCE_REMOVE;
}

static gboolean
shutdown_cb (gpointer data)
{
  TsHeloraRemote *self = data;
  g_autoptr (TsHeloraFrame) close_frame = NULL;
  g_autoptr (GBytes) message = NULL;
  GSource *timeout;

  self->quitting = TRUE;
  if (self->ws == NULL || soup_websocket_connection_get_state (self->ws) != SOUP_WEBSOCKET_STATE_OPEN)
    {
      g_main_loop_quit (self->loop);
      return G_SOURCE_REMOVE;
    }
  close_frame = ts_helora_frame_new_status (TS_HELORA_FRAME_CLOSE, 0, 0, "Client done");
  message = ts_helora_frame_encode (close_frame, NULL);
  if (message != NULL)
    soup_websocket_connection_send_binary (self->ws, g_bytes_get_data (message, NULL),
                                           g_bytes_get_size (message));
  soup_websocket_connection_close (self->ws, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
  /* Do not wait long for a peer that does not finish the handshake. */
  timeout = g_timeout_source_new (1000);
  g_source_set_callback (timeout, quit_cb, self, NULL);
  g_source_attach (timeout, self->context);
  g_source_unref (timeout);
  return G_SOURCE_REMOVE;
}

/* ---- caller threads ---- */

static char *
http_url (const char *url, GError **error)
{
  g_autoptr (GUri) uri = g_uri_parse (url, G_URI_FLAGS_NONE, error);
  const char *scheme;
  const char *path;

  if (uri == NULL)
    return NULL;
  scheme = g_uri_get_scheme (uri);
  if (g_strcmp0 (scheme, "ws") != 0 && g_strcmp0 (scheme, "wss") != 0
      && g_strcmp0 (scheme, "http") != 0 && g_strcmp0 (scheme, "https") != 0)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED,
                   _("'%s' is not a ws:// or wss:// address"), url);
      return NULL;
    }
  path = g_uri_get_path (uri);
  return g_strdup_printf ("%s://%s:%d%s",
                          scheme[0] == 'w' ? (scheme[2] == 's' ? "https" : "http") : scheme,
                          g_uri_get_host (uri),
                          g_uri_get_port (uri) > 0 ? g_uri_get_port (uri)
                            : (strchr (scheme, 's') != NULL ? 443 : 80),
                          path[0] == '\0' || g_str_equal (path, "/") ? TS_HELORA_PATH : path);
}

static gint64
deadline (TsHeloraRemote *self)
{
  return g_get_monotonic_time () + (gint64) self->timeout_ms * G_TIME_SPAN_MILLISECOND;
}

TsHeloraRemote *
ts_helora_remote_connect (const char *url, guint timeout_ms, GError **error)
{
  g_return_val_if_fail (url != NULL, NULL);

  return ts_helora_remote_connect_with_ca (url, timeout_ms, NULL, error);
}

TsHeloraRemote *
ts_helora_remote_connect_with_ca (const char *url, guint timeout_ms, const char *ca_file,
                                  GError **error)
{
  g_return_val_if_fail (url != NULL, NULL);

  return ts_helora_remote_connect_retrying (url, timeout_ms, ca_file, 0, error);
}

TsHeloraRemote *
ts_helora_remote_connect_retrying (const char *url, guint timeout_ms, const char *ca_file,
                                   guint tries, GError **error)
{
  g_return_val_if_fail (url != NULL, NULL);

  g_autofree char *http = http_url (url, error);
  g_autoptr (GTlsDatabase) tls_db = NULL;
  g_autoptr (GError) ca_error = NULL;
  TsHeloraRemote *self;
  gint64 end;

  if (http == NULL)
    return NULL;
  if (ca_file != NULL && (tls_db = g_tls_file_database_new (ca_file, &ca_error)) == NULL)
    {
      g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED,
                   _("Cannot read the CA certificates in %s: %s"), ca_file, ca_error->message);
      return NULL;
    }
  self = g_new0 (TsHeloraRemote, 1);
  self->url = g_steal_pointer (&http);
  self->endpoint = g_strdup (url);
  self->tls_db = g_steal_pointer (&tls_db);
  self->context = g_main_context_new ();
  self->loop = g_main_loop_new (self->context, FALSE);
  self->waiting = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                         (GDestroyNotify) ts_helora_frame_free);
  self->unanswered = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free,
                                            (GDestroyNotify) g_bytes_unref);
  self->timeout_ms = timeout_ms ? timeout_ms : TS_HELORA_REMOTE_DEFAULT_TIMEOUT_MS;
  self->next_id = 1;
  self->reconnect_tries = tries;
  g_mutex_init (&self->lock);
  g_cond_init (&self->cond);
  self->thread = g_thread_new ("helora-remote", io_thread_main, self);
  g_main_context_invoke (self->context, start_connect_cb, self);

  end = deadline (self);
  g_mutex_lock (&self->lock);
  while (!self->connect_done && g_cond_wait_until (&self->cond, &self->lock, end))
    ;
  if (self->connect_done && self->connect_error == NULL)
    {
      g_mutex_unlock (&self->lock);
      return self;
    }
  if (self->connect_error != NULL)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED,
                 _("Cannot reach the evaluator at %s: %s"), url, self->connect_error->message);
  else
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_TIMEOUT,
                 _("No answer from the evaluator at %s in %u ms"), url, self->timeout_ms);
  g_mutex_unlock (&self->lock);
  ts_helora_remote_free (self);
  return NULL;
}

void
ts_helora_remote_free (TsHeloraRemote *self)
{
  if (self == NULL)
    return;
  g_main_context_invoke (self->context, shutdown_cb, self);
  g_thread_join (self->thread);
  g_main_loop_unref (self->loop);
  g_main_context_unref (self->context);
  g_hash_table_unref (self->waiting);
  g_hash_table_unref (self->unanswered);
  g_clear_error (&self->connect_error);
  g_free (self->close_reason);
  g_free (self->url);
  g_free (self->endpoint);
  g_clear_object (&self->tls_db);
  g_mutex_clear (&self->lock);
  g_cond_clear (&self->cond);
  g_free (self);
}

void
ts_helora_remote_set_timeout (TsHeloraRemote *self, guint timeout_ms)
{
  g_return_if_fail (self != NULL);

  g_mutex_lock (&self->lock);
  self->timeout_ms = timeout_ms;
  g_mutex_unlock (&self->lock);
}

void
ts_helora_remote_set_tap (TsHeloraRemote *self, TsHeloraTapFunc func, gpointer user_data)
{
  g_return_if_fail (self != NULL);

  self->tap = func;
  self->tap_data = user_data;
}

guint64
ts_helora_remote_next_id (TsHeloraRemote *self)
{
  guint64 id;

  g_return_val_if_fail (self != NULL, 0);

  g_mutex_lock (&self->lock);
  id = self->next_id++;
  g_mutex_unlock (&self->lock);
  return id;
}

static void
send_message (TsHeloraRemote *self, GBytes *message, guint64 request_id, gboolean is_hello)
{
  SendData *sd = g_new0 (SendData, 1);

  g_mutex_lock (&self->lock);
  self->bytes_up += g_bytes_get_size (message);
  if (!g_hash_table_contains (self->waiting, &request_id))
    g_hash_table_insert (self->waiting, g_memdup2 (&request_id, sizeof request_id), NULL);
  g_mutex_unlock (&self->lock);
  sd->self = self;
  sd->message = g_bytes_ref (message);
  sd->request_id = request_id;
  sd->is_hello = is_hello;
  g_main_context_invoke_full (self->context, G_PRIORITY_DEFAULT, send_cb, sd, send_data_free);
}

void
ts_helora_remote_send (TsHeloraRemote *self, GBytes *message, guint64 request_id)
{
  g_return_if_fail (self != NULL);

  send_message (self, message, request_id, FALSE);
}

TsHeloraFrame *
ts_helora_remote_wait (TsHeloraRemote *self, guint64 request_id, GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);

  TsHeloraFrame *frame = NULL;
  gpointer key = NULL;
  gint64 end;

  g_mutex_lock (&self->lock);
  end = deadline (self);
  while (g_hash_table_lookup_extended (self->waiting, &request_id, &key, (gpointer *) &frame)
         && frame == NULL && !self->closed)
    if (!g_cond_wait_until (&self->cond, &self->lock, end))
      break;
  if (frame != NULL)
    g_hash_table_steal (self->waiting, &request_id);
  else if (self->closed)
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_CLOSED, "%s",
                 self->close_reason ? self->close_reason : _("Not connected"));
  else
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_TIMEOUT,
                 _("No answer from the evaluator in %u ms"), self->timeout_ms);
  g_hash_table_remove (self->waiting, &request_id);
  g_mutex_unlock (&self->lock);
  if (frame != NULL)
    g_free (key);
  return frame;
}

static guint64
send_frame (TsHeloraRemote *self, TsHeloraFrame *frame, GError **error)
{
  g_autoptr (GBytes) message = NULL;

  frame->request_id = ts_helora_remote_next_id (self);
  message = ts_helora_frame_encode (frame, error);
  if (message == NULL)
    return 0;
  send_message (self, message, frame->request_id, frame->type == TS_HELORA_FRAME_HELLO);
  return frame->request_id;
}

guint64
ts_helora_remote_send_frame (TsHeloraRemote *self, TsHeloraFrame *frame, GError **error)
{
  g_return_val_if_fail (frame != NULL, 0);

  return send_frame (self, frame, error);
}

TsHeloraFrame *
ts_helora_remote_wait_for (TsHeloraRemote *self, guint64 request_id, TsHeloraFrameType expected,
                           GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);

  TsHeloraFrame *reply = ts_helora_remote_wait (self, request_id, error);

  if (reply == NULL || reply->type == expected)
    return reply;
  if (reply->type == TS_HELORA_FRAME_ERROR)
    g_set_error (error, TS_HELORA_ERROR,
                 reply->u.status.code >= 1 && reply->u.status.code <= TS_HELORA_ERROR_LAST
                   ? reply->u.status.code : TS_HELORA_ERROR_INTERNAL,
                 "Evaluator: %s", reply->u.status.text);
  else
    g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNKNOWN_TYPE,
                 _("Evaluator answered with frame type %d"), reply->type);
  ts_helora_frame_free (reply);
  return NULL;
}

static TsHeloraFrame *
round_trip (TsHeloraRemote *self, TsHeloraFrame *frame, TsHeloraFrameType expected,
            GError **error)
{
  guint64 id = ts_helora_remote_send_frame (self, frame, error);

  return id != 0 ? ts_helora_remote_wait_for (self, id, expected, error) : NULL;
}

static void
copy_hello (TsHeloraHello *dst, const TsHeloraHello *src)
{
  dst->params_id = g_strdup (src->params_id);
  memcpy (dst->params_sha256, src->params_sha256, TS_HELORA_HASH_SIZE);
  dst->adapter_id = g_strdup (src->adapter_id);
  memcpy (dst->adapter_sha256, src->adapter_sha256, TS_HELORA_HASH_SIZE);
  for (guint i = 0; i < src->modules->len; i++)
    g_ptr_array_add (dst->modules, g_strdup (g_ptr_array_index (src->modules, i)));
  dst->private_mode = src->private_mode;
  dst->complex_packing = src->complex_packing;
  dst->split_scales = src->split_scales;
  dst->lambda_s = src->lambda_s;
  dst->dp = src->dp;
  dst->rho_per_answer = src->rho_per_answer;
  dst->public_key = src->public_key ? g_bytes_ref (src->public_key) : NULL;
  for (guint i = 0; i < src->stack->len; i++)
    {
      const TsHeloraStackMember *m = &g_array_index (src->stack, TsHeloraStackMember, i);
      ts_helora_hello_add_stacked (dst, m->id, m->sha256, m->weight);
    }
}

TsHeloraFrame *
ts_helora_remote_hello (TsHeloraRemote *self, const TsHeloraHello *hello, GError **error)
{
  g_return_val_if_fail (self != NULL, NULL);
  g_return_val_if_fail (hello != NULL, NULL);

  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_new (TS_HELORA_FRAME_HELLO, 0);

  copy_hello (&frame->u.hello, hello);
  return round_trip (self, frame, TS_HELORA_FRAME_HELLO_ACK, error);
}

TsHeloraFrame *
ts_helora_remote_evaluate (TsHeloraRemote *self, guint32 token_index, const guint16 *modules,
                           guint n_modules, GPtrArray *cts, GError **error)
{
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_new (TS_HELORA_FRAME_EVALUATE, 0);

  g_return_val_if_fail (cts != NULL, NULL);

  frame->u.evaluate.token_index = token_index;
  g_array_append_vals (frame->u.evaluate.modules, modules, n_modules);
  for (guint i = 0; i < cts->len; i++)
    g_ptr_array_add (frame->u.evaluate.ciphertexts, g_bytes_ref (g_ptr_array_index (cts, i)));
  return round_trip (self, frame, TS_HELORA_FRAME_RESULT, error);
}

gboolean
ts_helora_remote_privacy_status (TsHeloraRemote *self, TsHeloraPrivacyStatus *out,
                                 GError **error)
{
  g_autoptr (TsHeloraFrame) frame = NULL;
  g_autoptr (TsHeloraFrame) reply = NULL;

  g_return_val_if_fail (out != NULL, FALSE);

  frame = ts_helora_frame_new (TS_HELORA_FRAME_PRIVACY_QUERY, 0);
  reply = round_trip (self, frame, TS_HELORA_FRAME_PRIVACY_STATUS, error);
  if (reply == NULL)
    return FALSE;
  *out = reply->u.privacy;
  return TRUE;
}

void
ts_helora_remote_set_reconnect (TsHeloraRemote *self, guint tries)
{
  g_return_if_fail (self != NULL);

  g_mutex_lock (&self->lock);
  self->reconnect_tries = tries;
  g_mutex_unlock (&self->lock);
}

void
ts_helora_remote_get_recovery (TsHeloraRemote *self, TsHeloraRemoteRecovery *out)
{
  g_return_if_fail (self != NULL && out != NULL);

  g_mutex_lock (&self->lock);
  *out = self->recovery;
  g_mutex_unlock (&self->lock);
}

void
ts_helora_remote_get_bytes (TsHeloraRemote *self, guint64 *up, guint64 *down)
{
  g_return_if_fail (self != NULL);

  g_mutex_lock (&self->lock);
  if (up != NULL)
    *up = self->bytes_up;
  if (down != NULL)
    *down = self->bytes_down;
  g_mutex_unlock (&self->lock);
}

static gboolean
close_cb (gpointer data)
{
  TsHeloraRemote *self = data;

  if (self->ws != NULL && soup_websocket_connection_get_state (self->ws) == SOUP_WEBSOCKET_STATE_OPEN)
    soup_websocket_connection_close (self->ws, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
  return G_SOURCE_REMOVE;
}

void
ts_helora_remote_cancel (TsHeloraRemote *self)
{
  g_return_if_fail (self != NULL);

  _ts_helora_remote_fail_all (self, "Cancelled");
  g_main_context_invoke (self->context, close_cb, self);
}

gboolean
ts_helora_remote_is_closed (TsHeloraRemote *self)
{
  gboolean closed;

  g_return_val_if_fail (self != NULL, FALSE);

  g_mutex_lock (&self->lock);
  closed = self->closed;
  g_mutex_unlock (&self->lock);
  return closed;
}
