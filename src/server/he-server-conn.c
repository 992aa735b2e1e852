/* he-server-conn.c: one evaluator client: frames in, jobs to the pool, answers out.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Everything here runs on the server's main context except he_conn_run_job(),
 * which runs on a worker and only touches its job and the evaluator. A job
 * holds a reference on its connection, so a client that vanishes mid-request
 * leaves the job to finish and its answer to be dropped.
 */
#include "he-server-private.h"

struct _HeConn {
  gatomicrefcount ref_count;
  HeServer *server;
  SoupWebsocketConnection *ws;
  TsHeloraEvaluator *evaluator;  /* after a successful hello */
  GArray *module_map;            /* hello's module i → evaluator index */
  TsHeloraPrivacyEval *private_eval;  /* a private hello's; NULL: plain */
  char *privacy_client;          /* the identity a private hello is charged as */
  gboolean complex_packing;      /* the hello asked for it (TS_HELORA_FLAG_COMPLEX) */
  guint in_flight;
  gboolean hello_pending;
  gboolean closed;
  gsize unread_bytes;            /* answers sent while the socket was full */
  gboolean dropped;              /* closed for not reading: nothing in or out */
  gint64 last_activity_us;
  GSource *idle_source;
};

typedef struct {
  HeConn *conn;
  TsHeloraFrame *request;
  TsHeloraEvaluator *evaluator;  /* evaluate jobs: the connection's at submit time */
  GArray *module_map;
  gboolean complex_packing;      /* evaluate jobs: the connection's; hello: asked for */
  gint64 received_us;
  /* Outputs, read back on the main thread. */
  GBytes *reply;
  guint error_code;
  TsHeloraEvaluator *opened;     /* hello jobs */
  GArray *opened_map;
  TsHeloraPrivacyEval *private_eval;  /* evaluate jobs: the connection's; hello: opened */
  char *privacy_client;          /* hello jobs: the private hello's client identity */
} HeJob;

static HeConn *
conn_ref (HeConn *conn)
{
  g_atomic_ref_count_inc (&conn->ref_count);
  return conn;
}

void
he_conn_unref (HeConn *conn)
{
  if (!g_atomic_ref_count_dec (&conn->ref_count))
    return;
  g_clear_object (&conn->ws);
  g_clear_pointer (&conn->evaluator, ts_helora_evaluator_unref);
  g_clear_pointer (&conn->module_map, g_array_unref);
  g_clear_pointer (&conn->private_eval, ts_helora_privacy_eval_unref);
  g_free (conn->privacy_client);
  g_free (conn);
}

static void
job_free (HeJob *job)
{
  he_conn_unref (job->conn);
  ts_helora_frame_free (job->request);
  g_clear_pointer (&job->evaluator, ts_helora_evaluator_unref);
  g_clear_pointer (&job->module_map, g_array_unref);
  g_clear_pointer (&job->reply, g_bytes_unref);
  g_clear_pointer (&job->opened, ts_helora_evaluator_unref);
  g_clear_pointer (&job->opened_map, g_array_unref);
  g_clear_pointer (&job->private_eval, ts_helora_privacy_eval_unref);
  g_free (job->privacy_client);
  g_free (job);
}

/* ---- sending ---- */

/* Whether the connection's stream takes bytes now: when it does not, the
 * client is not reading and what is sent waits in the WebSocket layer's
 * queue, in this process's memory. */
static gboolean
conn_output_writable (HeConn *conn)
{
  GIOStream *io = soup_websocket_connection_get_io_stream (conn->ws);
  GOutputStream *out = io != NULL ? g_io_stream_get_output_stream (io) : NULL;

  return out == NULL || !G_IS_POLLABLE_OUTPUT_STREAM (out)
         || g_pollable_output_stream_is_writable (G_POLLABLE_OUTPUT_STREAM (out));
}

static gboolean
unregister_cb (gpointer data)
{
  he_conn_unregister (data);
  return G_SOURCE_REMOVE;
}

/* The TCP socket under @io (through TLS and the HTTP layer's wrappers). */
static GSocket *
socket_of_stream (GIOStream *io)
{
  for (int depth = 0; io != NULL && depth < 4; depth++)
    {
      GParamSpec *base;
      GIOStream *next = NULL;

      if (G_IS_SOCKET_CONNECTION (io))
        return g_socket_connection_get_socket (G_SOCKET_CONNECTION (io));
      base = g_object_class_find_property (G_OBJECT_GET_CLASS (io), "base-iostream");
      if (base == NULL)
        base = g_object_class_find_property (G_OBJECT_GET_CLASS (io), "base-io-stream");
      if (base == NULL || base->value_type != G_TYPE_IO_STREAM)
        return NULL;
      g_object_get (io, base->name, &next, NULL);
      g_object_unref (next);   /* the outer stream keeps it alive */
      io = next;
    }
  return NULL;
}

/* A client that leaves more than max_unread_bytes of answers unread is
 * closed at once: the socket is shut down under the WebSocket layer, which
 * then fails its next read and write, closes, and frees the queued answers
 * now, not when a close handshake the client never answers times out. */
static void
conn_drop_unread (HeConn *conn)
{
  GSocket *socket = socket_of_stream (soup_websocket_connection_get_io_stream (conn->ws));

  GSource *later = g_idle_source_new ();

  g_message ("Closing a client that left %" G_GSIZE_FORMAT " bytes of answers unread",
             conn->unread_bytes);
  conn->dropped = TRUE;
  he_metrics_count_unread_close (conn->server->metrics);
  if (socket != NULL)
    g_socket_shutdown (socket, TRUE, TRUE, NULL);
  soup_websocket_connection_close (conn->ws, SOUP_WEBSOCKET_CLOSE_POLICY_VIOLATION,
                                   "Answers not read");
  /* the handshake cannot finish on a shut-down socket: forget the
   * connection from the main loop (not from inside its own signal), which
   * drops the last reference to the WebSocket object and its queue */
  g_source_set_callback (later, unregister_cb, conn_ref (conn), (GDestroyNotify) he_conn_unref);
  g_source_attach (later, conn->server->context);
  g_source_unref (later);
}

static void
conn_send (HeConn *conn, GBytes *message)
{
  gsize len = g_bytes_get_size (message);

  if (conn->closed || conn->dropped
      || soup_websocket_connection_get_state (conn->ws) != SOUP_WEBSOCKET_STATE_OPEN)
    return;
  /* writable before the send: the queue is empty or emptying, and this
   * message goes to the kernel; else it waits behind the full socket */
  conn->unread_bytes = conn_output_writable (conn) ? 0 : conn->unread_bytes + len;
  soup_websocket_connection_send_binary (conn->ws, g_bytes_get_data (message, NULL), len);
  he_metrics_count_bytes (conn->server->metrics, 0, len);
  if (conn->unread_bytes > conn->server->max_unread_bytes)
    conn_drop_unread (conn);
}

static GBytes *
encode_status (TsHeloraFrameType type, guint64 request_id, guint code, const char *text)
{
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_new_status (type, request_id, code, NULL);
  g_autofree char *clipped = g_utf8_substring (text, 0, MIN (g_utf8_strlen (text, -1), 900));

  g_free (frame->u.status.text);
  frame->u.status.text = g_steal_pointer (&clipped);
  return ts_helora_frame_encode (frame, NULL);
}

static void
conn_send_error (HeConn *conn, guint64 request_id, guint code, const char *text)
{
  g_autoptr (GBytes) message = encode_status (TS_HELORA_FRAME_ERROR, request_id, code, text);

  he_metrics_count_error (conn->server->metrics, code);
  conn_send (conn, message);
}

/* ---- lifetime ---- */

/* Forgets the connection; the table's reference goes, jobs may hold more. */
void
he_conn_unregister (HeConn *conn)
{
  HeServer *server = conn->server;

  if (conn->closed)
    return;
  conn->closed = TRUE;
  g_signal_handlers_disconnect_by_data (conn->ws, conn);
  if (conn->idle_source != NULL)
    {
      g_source_destroy (conn->idle_source);
      g_clear_pointer (&conn->idle_source, g_source_unref);
    }
  if (conn->private_eval != NULL)
    he_pads_remove (conn->server->pads, conn->private_eval);
  he_metrics_clients_changed (conn->server->metrics, -1);
  g_hash_table_remove (conn->server->conns, conn);  /* drops the table's ref */
  he_drain_check (server);
}

gboolean
he_conn_has_session (HeConn *conn)
{
  return conn->evaluator != NULL || conn->hello_pending;
}

/* The connection stays registered until the closing handshake ends
 * ("closed"), so the close frame is flushed before the socket goes. */
void
he_conn_shutdown (HeConn *conn, guint16 code, const char *text)
{
  g_autoptr (GBytes) message = encode_status (TS_HELORA_FRAME_CLOSE, 0, code, text);

  conn_send (conn, message);
  if (soup_websocket_connection_get_state (conn->ws) == SOUP_WEBSOCKET_STATE_OPEN)
    soup_websocket_connection_close (conn->ws, SOUP_WEBSOCKET_CLOSE_GOING_AWAY, NULL);
}

static void
on_closed (SoupWebsocketConnection *ws, HeConn *conn)
{
  he_conn_unregister (conn);
}

static gboolean
check_idle_cb (gpointer data)
{
  HeConn *conn = data;
  gint64 idle_ms = (g_get_monotonic_time () - conn->last_activity_us) / 1000;

  if (conn->in_flight > 0 || conn->hello_pending)
    return G_SOURCE_CONTINUE;
  if (idle_ms >= conn->server->idle_timeout_ms)
    {
      g_autofree char *text = g_strdup_printf ("Idle for %u ms", conn->server->idle_timeout_ms);
      he_conn_shutdown (conn, TS_HELORA_ERROR_TIMEOUT, text);
    }
  /* a session between generations lets a drain end; its client reconnects
   * elsewhere when it next asks */
  else if (conn->server->draining && idle_ms >= HE_SERVER_DRAIN_IDLE_MS)
    he_conn_shutdown (conn, TS_HELORA_ERROR_SHUTTING_DOWN, "Server draining, session idle");
  return G_SOURCE_CONTINUE;
}

/* ---- worker side ---- */

static void
job_fail (HeJob *job, const GError *error)
{
  job->error_code = error->domain == TS_HELORA_ERROR ? (guint) error->code
                                                      : TS_HELORA_ERROR_INTERNAL;
  job->reply = encode_status (TS_HELORA_FRAME_ERROR, job->request->request_id,
                              job->error_code, error->message);
}

static void
run_hello (HeJob *job, HeServer *server)
{
  const TsHeloraHello *hello = &job->request->u.hello;
  g_autoptr (TsHeloraFrame) ack = ts_helora_frame_new (TS_HELORA_FRAME_HELLO_ACK,
                                                       job->request->request_id);
  g_autoptr (GError) error = NULL;

  job->opened = he_adapters_open (server->adapters, hello, &error);
  job->opened_map = g_array_new (FALSE, FALSE, sizeof (guint));
  for (guint i = 0; job->opened != NULL && i < hello->modules->len; i++)
    {
      TsHeloraModuleShape shape;
      guint index;

      if (!ts_helora_evaluator_find_module (job->opened, g_ptr_array_index (hello->modules, i),
                                            hello->complex_packing, &index, &shape, &error))
        break;
      g_array_append_val (job->opened_map, index);
      g_array_append_val (ack->u.ack.modules, shape);
    }
  if (error == NULL && job->opened != NULL && hello->private_mode)
    {
      job->private_eval = he_privacy_open (server, job->opened, hello, job->opened_map, &error);
      job->privacy_client = he_privacy_client_id (hello);
    }
  if (error != NULL)
    {
      g_clear_pointer (&job->opened, ts_helora_evaluator_unref);
      job_fail (job, error);
      return;
    }
  ack->u.ack.max_frame_bytes = server->max_frame_bytes;
  ack->u.ack.max_in_flight = server->max_in_flight;
  ack->u.ack.idle_timeout_ms = server->idle_timeout_ms;
  job->reply = ts_helora_frame_encode (ack, NULL);
}

static gboolean
evaluate_modules (HeJob *job, TsHeloraFrame *result, GError **error)
{
  const TsHeloraEvaluate *req = &job->request->u.evaluate;

  for (guint i = 0; i < req->modules->len; i++)
    {
      guint16 m = g_array_index (req->modules, guint16, i);
      TsHeloraModuleResult *mr = ts_helora_result_add_module (result, m);

      guint index = g_array_index (job->module_map, guint, m);
      if (job->private_eval != NULL
          ? !he_privacy_evaluate (job->conn->server, job->private_eval, index, req->ciphertexts,
                                  mr->blobs, error)
          : !ts_helora_evaluator_evaluate (job->evaluator, index, job->complex_packing,
                                           req->ciphertexts, mr->blobs,
                                           error))
        return FALSE;
    }
  return TRUE;
}

static void
run_evaluate (HeJob *job, HeServer *server)
{
  g_autoptr (TsHeloraFrame) result = ts_helora_frame_new (TS_HELORA_FRAME_RESULT,
                                                          job->request->request_id);
  g_autoptr (GError) error = NULL;
  double t0 = g_get_monotonic_time () / 1e6, t1;

  result->u.result.token_index = job->request->u.evaluate.token_index;
  if (!evaluate_modules (job, result, &error))
    {
      job_fail (job, error);
      return;
    }
  t1 = g_get_monotonic_time () / 1e6;
  he_metrics_observe (server->metrics, HE_STAGE_EVALUATE, t1 - t0);
  job->reply = ts_helora_frame_encode (result, &error);
  if (job->reply == NULL)
    {
      job_fail (job, error);
      return;
    }
  he_metrics_observe (server->metrics, HE_STAGE_ENCODE, g_get_monotonic_time () / 1e6 - t1);
}

static void
adopt_hello (HeConn *conn, HeJob *job)
{
  conn->hello_pending = FALSE;
  if (job->opened == NULL)
    return;
  g_clear_pointer (&conn->evaluator, ts_helora_evaluator_unref);
  g_clear_pointer (&conn->module_map, g_array_unref);
  conn->evaluator = g_steal_pointer (&job->opened);
  conn->module_map = g_steal_pointer (&job->opened_map);
  conn->complex_packing = job->request->u.hello.complex_packing;
  if (conn->private_eval != NULL)
    he_pads_remove (conn->server->pads, conn->private_eval);
  g_clear_pointer (&conn->private_eval, ts_helora_privacy_eval_unref);
  conn->private_eval = g_steal_pointer (&job->private_eval);
  g_free (conn->privacy_client);
  conn->privacy_client = g_steal_pointer (&job->privacy_client);
  /* its pools are kept full off the answers' path from now on */
  if (conn->private_eval != NULL && !conn->closed)
    he_pads_add (conn->server->pads, conn->private_eval, conn->module_map);
}

/* Main context: hand the job's answer to its client, if still there. */
static gboolean
job_done_cb (gpointer data)
{
  HeJob *job = data;
  HeConn *conn = job->conn;
  HeServer *server = conn->server;

  if (job->request->type == TS_HELORA_FRAME_HELLO)
    adopt_hello (conn, job);
  else
    {
      conn->in_flight--;
      he_metrics_observe (server->metrics, HE_STAGE_TOTAL,
                          (g_get_monotonic_time () - job->received_us) / 1e6);
    }
  if (job->error_code != 0)
    he_metrics_count_error (server->metrics, job->error_code);
  if (job->reply != NULL)
    conn_send (conn, job->reply);
  conn->last_activity_us = g_get_monotonic_time ();
  return G_SOURCE_REMOVE;
}

void
he_conn_run_job (gpointer data, gpointer user_data)
{
  HeJob *job = data;
  HeServer *server = user_data;

  if (job->request->type == TS_HELORA_FRAME_HELLO)
    run_hello (job, server);
  else
    run_evaluate (job, server);
  g_main_context_invoke_full (server->context, G_PRIORITY_DEFAULT, job_done_cb, job,
                              (GDestroyNotify) job_free);
}

/* ---- receiving ---- */

static void
submit (HeConn *conn, TsHeloraFrame *frame)
{
  HeJob *job = g_new0 (HeJob, 1);

  job->conn = conn_ref (conn);
  job->request = frame;
  job->received_us = g_get_monotonic_time ();
  if (frame->type == TS_HELORA_FRAME_EVALUATE)
    {
      job->evaluator = ts_helora_evaluator_ref (conn->evaluator);
      job->module_map = g_array_ref (conn->module_map);
      job->complex_packing = conn->complex_packing;
      if (conn->private_eval != NULL)
        job->private_eval = ts_helora_privacy_eval_ref (conn->private_eval);
      conn->in_flight++;
      he_metrics_count_request (conn->server->metrics);
    }
  else
    conn->hello_pending = TRUE;
  g_thread_pool_push (conn->server->pool, job, NULL);
}

/* Returns NULL when the evaluate may run, else the reason. */
static const char *
evaluate_refusal (HeConn *conn, const TsHeloraEvaluate *req, guint *code)
{
  *code = TS_HELORA_ERROR_NOT_READY;
  if (conn->hello_pending || conn->evaluator == NULL)
    return "Evaluate before a successful hello";
  *code = TS_HELORA_ERROR_UNKNOWN_MODULE;
  for (guint i = 0; i < req->modules->len; i++)
    if (g_array_index (req->modules, guint16, i) >= conn->module_map->len)
      return "Module index out of range of the hello's list";
  *code = TS_HELORA_ERROR_BUSY;
  if (conn->in_flight >= conn->server->max_in_flight)
    return "Too many evaluate requests in flight";
  return NULL;
}

/* Answered at once: the accountant is thread-safe and charges before an
 * answer is sent, so a client that asks after its answers sees them all. */
static void
answer_privacy_query (HeConn *conn, guint64 request_id)
{
  g_autoptr (TsHeloraFrame) status = NULL;
  g_autoptr (GBytes) message = NULL;

  if (conn->hello_pending || conn->private_eval == NULL)
    {
      conn_send_error (conn, request_id, TS_HELORA_ERROR_NOT_READY,
                       "Privacy query without an adapter-private hello");
      return;
    }
  status = ts_helora_frame_new (TS_HELORA_FRAME_PRIVACY_STATUS, request_id);
  he_privacy_status (conn->server, conn->privacy_client, &status->u.privacy);
  message = ts_helora_frame_encode (status, NULL);
  if (message != NULL)
    conn_send (conn, message);
  else
    conn_send_error (conn, request_id, TS_HELORA_ERROR_INTERNAL, "Unreportable privacy state");
}

/* New sessions belong on another evaluator: the error tells the client
 * why, the close sends it back through the load balancer. */
static void
refuse_while_draining (HeConn *conn, guint64 request_id)
{
  conn_send_error (conn, request_id, TS_HELORA_ERROR_SHUTTING_DOWN,
                   "Server draining: connect to another evaluator");
  he_conn_shutdown (conn, TS_HELORA_ERROR_SHUTTING_DOWN, "Server draining");
}

static void
handle_frame (HeConn *conn, TsHeloraFrame *frame)
{
  const char *why;
  guint code;

  switch (frame->type)
    {
    case TS_HELORA_FRAME_HELLO:
      if (conn->hello_pending)
        break;
      if (conn->server->draining && conn->evaluator == NULL)
        {
          refuse_while_draining (conn, frame->request_id);
          ts_helora_frame_free (frame);
          return;
        }
      submit (conn, frame);
      return;
    case TS_HELORA_FRAME_EVALUATE:
      why = evaluate_refusal (conn, &frame->u.evaluate, &code);
      if (why == NULL)
        {
          submit (conn, frame);
          return;
        }
      conn_send_error (conn, frame->request_id, code, why);
      ts_helora_frame_free (frame);
      return;
    case TS_HELORA_FRAME_CLOSE:
      soup_websocket_connection_close (conn->ws, SOUP_WEBSOCKET_CLOSE_NORMAL, NULL);
      ts_helora_frame_free (frame);
      return;
    case TS_HELORA_FRAME_PRIVACY_QUERY:
      answer_privacy_query (conn, frame->request_id);
      ts_helora_frame_free (frame);
      return;
    default:
      conn_send_error (conn, frame->request_id, TS_HELORA_ERROR_UNKNOWN_TYPE,
                       "This frame type is not accepted by the server");
      ts_helora_frame_free (frame);
      return;
    }
  conn_send_error (conn, frame->request_id, TS_HELORA_ERROR_BUSY, "A hello is already pending");
  ts_helora_frame_free (frame);
}

static void
on_message (SoupWebsocketConnection *ws, int type, GBytes *message, HeConn *conn)
{
  g_autoptr (GError) error = NULL;
  gint64 t0 = g_get_monotonic_time ();
  TsHeloraFrame *frame;

  if (conn->dropped)
    return;   /* closed for not reading: nothing more is taken from it */
  conn->last_activity_us = t0;
  he_metrics_count_bytes (conn->server->metrics, g_bytes_get_size (message), 0);
  if (type != SOUP_WEBSOCKET_DATA_BINARY)
    {
      conn_send_error (conn, 0, TS_HELORA_ERROR_MALFORMED, "Text messages are not part of the protocol");
      return;
    }
  frame = ts_helora_frame_decode (message, conn->server->max_frame_bytes, &error);
  he_metrics_observe (conn->server->metrics, HE_STAGE_DECODE, (g_get_monotonic_time () - t0) / 1e6);
  if (frame == NULL)
    {
      conn_send_error (conn, ts_helora_peek_request_id (message), error->code, error->message);
      if (error->code == TS_HELORA_ERROR_VERSION)
        he_conn_shutdown (conn, TS_HELORA_ERROR_VERSION, error->message);
      return;
    }
  handle_frame (conn, frame);
}

void
he_conn_accept (HeServer *server, SoupWebsocketConnection *ws)
{
  HeConn *conn = g_new0 (HeConn, 1);
  guint period = CLAMP (server->idle_timeout_ms / 4, 10, 1000);

  g_atomic_ref_count_init (&conn->ref_count);
  conn->server = server;
  conn->ws = g_object_ref (ws);
  conn->last_activity_us = g_get_monotonic_time ();
  /* Up to twice the frame limit still reaches us, so an oversized frame gets
   * a readable error; beyond that the WebSocket layer refuses it (1009). */
  soup_websocket_connection_set_max_incoming_payload_size (ws, 2 * (guint64) server->max_frame_bytes);
  g_signal_connect (ws, "message", G_CALLBACK (on_message), conn);
  g_signal_connect (ws, "closed", G_CALLBACK (on_closed), conn);
  conn->idle_source = g_timeout_source_new (period);
  g_source_set_callback (conn->idle_source, check_idle_cb, conn, NULL);
  g_source_attach (conn->idle_source, server->context);
  g_hash_table_add (server->conns, conn);
  he_metrics_clients_changed (server->metrics, +1);
}
