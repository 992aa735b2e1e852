/* server-guard-stream.c: a pass-through stream that bounds request heads.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "server-framing.h"
#include "server-guard-stream.h"
#include "server-reject.h"

/* Shared by the guard and its input stream, which libsoup may keep longer. */
typedef struct {
  GIOStream *base;
  GSocket *socket;
  gsize max_head_bytes;
  gsize head_bytes;
  gboolean in_head;
  gboolean rejected;   /* answered and lingering: the base is not ours now */
  gboolean nudged;     /* an empty line stood in for an end of stream */
  GString *head;       /* the head read so far; NULL once it ended */
} GuardState;

static void
guard_state_clear (gpointer data)
{
  GuardState *state = data;

  g_object_unref (state->base);
  g_object_unref (state->socket);
  if (state->head != NULL)
    g_string_free (state->head, TRUE);
}

static void
guard_state_release (GuardState *state)
{
  g_rc_box_release_full (state, guard_state_clear);
}

/* From here the lingering close owns the connection. */
static gboolean
guard_state_take_over (GuardState *state)
{
  if (state->rejected)
    return FALSE;
  state->rejected = TRUE;
  return TRUE;
}

static void
guard_state_reject (GuardState *state, guint status, const char *reason, const char *code,
                    const char *message)
{
  if (guard_state_take_over (state))
    server_reject (state->base, state->socket, status, reason, code, message);
}

static gboolean
guard_state_refuse_read (GuardState *state, GError **error)
{
  if (!state->rejected)
    return FALSE;
  g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_CLOSED,
                       "The connection was answered with an error and closed");
  return TRUE;
}

/* libsoup 3.2 leaves a kept-alive connection open for good when the
 * client closes it between requests: the message waiting for the next
 * request has no completion handler until its first byte, so the end of
 * stream finishes it silently (the socket stays in CLOSE_WAIT). An empty
 * line in place of that first end of stream starts a request, whose read
 * then meets the real end and closes the connection the usual way. */
static gssize
guard_state_nudge_end (GuardState *state, char *buffer, gsize count)
{
  if (state->nudged || !state->in_head || state->head_bytes > 0 || count < 2)
    return 0;
  state->nudged = TRUE;
  memcpy (buffer, "\r\n", 2);
  return 2;
}

/* libsoup 3.2 has the same blind spot for a socket timeout (the servers
 * set one, g_socket_set_timeout()): when a kept-alive connection waiting
 * for its next request times out, the read fails unheard, nothing reads
 * the connection again and nothing closes it, so a client that sends its
 * next request on it waits forever. Here the socket is shut down (the
 * client sees the server close, as after any idle timeout, and opens a
 * new connection) and the failure becomes the same empty line as above,
 * whose request then reads the end of stream and closes the connection. */
static gssize
guard_state_end_idle (GuardState *state, char *buffer, gsize count, GError **error)
{
  gssize nudge;

  if (!state->in_head || state->head_bytes > 0 || error == NULL
      || !g_error_matches (*error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT))
    return -1;
  g_socket_shutdown (state->socket, TRUE, TRUE, NULL);
  nudge = guard_state_nudge_end (state, buffer, count);
  if (nudge > 0)
    g_clear_error (error);
  return nudge > 0 ? nudge : -1;
}

/* Keeps the head's bytes until its empty line; then TRUE when the head
 * must be refused before libsoup parses it (server-framing.h). */
static gboolean
guard_state_head_refused (GuardState *state, const char *bytes, gsize n,
                          ServerFramingRefusal *refusal)
{
  gsize from;
  const char *end;
  gboolean refused;

  if (state->head == NULL)
    return FALSE;   /* this head ended already; the rest is its body */
  from = state->head->len > 3 ? state->head->len - 3 : 0;
  g_string_append_len (state->head, bytes, (gssize) n);
  end = g_strstr_len (state->head->str + from, (gssize) (state->head->len - from), "\n\r\n");
  if (end == NULL)
    end = g_strstr_len (state->head->str + from, (gssize) (state->head->len - from), "\n\n");
  if (end == NULL)
    return FALSE;
  refused = server_framing_refuse_head (state->head->str, (gsize) (end - state->head->str) + 1,
                                        refusal);
  g_string_free (state->head, TRUE);
  state->head = NULL;
  return refused;
}

static gssize
guard_state_refuse (GuardState *state, guint status, const char *reason, const char *code,
                    const char *message, GError **error)
{
  guard_state_reject (state, status, reason, code, message);
  g_set_error (error, G_IO_ERROR, G_IO_ERROR_CLOSED, "Request refused: %s", message);
  return -1;
}

/* Counts @n bytes just read into @buffer (of @count); a head past its
 * bound is answered 431, one with ambiguous framing 400 or 501. */
static gssize
guard_state_account (GuardState *state, void *buffer, gsize count, gssize n, GError **error)
{
  ServerFramingRefusal refusal;

  if (n == 0)
    return guard_state_nudge_end (state, buffer, count);
  if (n < 0)
    return guard_state_end_idle (state, buffer, count, error);
  if (!state->in_head)
    return n;
  state->head_bytes += (gsize) n;
  if (state->head_bytes > state->max_head_bytes)
    return guard_state_refuse (state, 431, "Request Header Fields Too Large",
                               "headers_too_large",
                               "The request line and headers exceed the server's limit", error);
  if (guard_state_head_refused (state, buffer, (gsize) n, &refusal))
    return guard_state_refuse (state, refusal.status,
                               refusal.status == 501 ? "Not Implemented" : "Bad Request",
                               refusal.code, refusal.message, error);
  return n;
}

/* ---- the input stream libsoup reads ---- */

#define GUARD_TYPE_INPUT (guard_input_get_type ())
G_DECLARE_FINAL_TYPE (GuardInput, guard_input, GUARD, INPUT, GInputStream)

struct _GuardInput {
  GInputStream parent_instance;
  GuardState *state;
};

static void guard_input_pollable_init (GPollableInputStreamInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (GuardInput, guard_input, G_TYPE_INPUT_STREAM,
                               G_IMPLEMENT_INTERFACE (G_TYPE_POLLABLE_INPUT_STREAM,
                                                      guard_input_pollable_init))

static GInputStream *
guard_input_base (GuardInput *self)
{
  return g_io_stream_get_input_stream (self->state->base);
}

static gssize
guard_input_read (GInputStream *stream, void *buffer, gsize count, GCancellable *cancellable,
                  GError **error)
{
  GuardInput *self = GUARD_INPUT (stream);

  if (guard_state_refuse_read (self->state, error))
    return -1;
  return guard_state_account (self->state, buffer, count,
                              g_input_stream_read (guard_input_base (self), buffer, count,
                                                   cancellable, error),
                              error);
}

static gboolean
guard_input_close (GInputStream *stream, GCancellable *cancellable, GError **error)
{
  return TRUE;   /* the guard closes the connection */
}

static gboolean
guard_input_can_poll (GPollableInputStream *stream)
{
  GInputStream *base = guard_input_base (GUARD_INPUT (stream));

  return G_IS_POLLABLE_INPUT_STREAM (base)
         && g_pollable_input_stream_can_poll (G_POLLABLE_INPUT_STREAM (base));
}

static gboolean
guard_input_is_readable (GPollableInputStream *stream)
{
  GuardInput *self = GUARD_INPUT (stream);

  return self->state->rejected
         || g_pollable_input_stream_is_readable (G_POLLABLE_INPUT_STREAM (guard_input_base (self)));
}

static GSource *
guard_input_create_source (GPollableInputStream *stream, GCancellable *cancellable)
{
  GuardInput *self = GUARD_INPUT (stream);
  /* once answered, a read fails at once: wake the reader to see it */
  g_autoptr (GSource) child = self->state->rejected
    ? g_idle_source_new ()
    : g_pollable_input_stream_create_source (G_POLLABLE_INPUT_STREAM (guard_input_base (self)),
                                             cancellable);

  return g_pollable_source_new_full (stream, child, cancellable);
}

static gssize
guard_input_read_nonblocking (GPollableInputStream *stream, void *buffer, gsize count,
                              GError **error)
{
  GuardInput *self = GUARD_INPUT (stream);
  GPollableInputStream *base = G_POLLABLE_INPUT_STREAM (guard_input_base (self));

  if (guard_state_refuse_read (self->state, error))
    return -1;
  return guard_state_account (self->state, buffer, count,
                              g_pollable_input_stream_read_nonblocking (base, buffer, count,
                                                                        NULL, error),
                              error);
}

static void
guard_input_pollable_init (GPollableInputStreamInterface *iface)
{
  iface->can_poll = guard_input_can_poll;
  iface->is_readable = guard_input_is_readable;
  iface->create_source = guard_input_create_source;
  iface->read_nonblocking = guard_input_read_nonblocking;
}

static void
guard_input_finalize (GObject *object)
{
  guard_state_release (GUARD_INPUT (object)->state);
  G_OBJECT_CLASS (guard_input_parent_class)->finalize (object);
}

static void
guard_input_class_init (GuardInputClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = guard_input_finalize;
  G_INPUT_STREAM_CLASS (klass)->read_fn = guard_input_read;
  G_INPUT_STREAM_CLASS (klass)->close_fn = guard_input_close;
}

static void
guard_input_init (GuardInput *self)
{
}

/* ---- the guard ---- */

struct _ServerGuardStream {
  GIOStream parent_instance;
  GuardState *state;
  GInputStream *input;
};

G_DEFINE_FINAL_TYPE (ServerGuardStream, server_guard_stream, G_TYPE_IO_STREAM)

enum { PROP_0, PROP_BASE_IO_STREAM };

static GInputStream *
guard_get_input_stream (GIOStream *stream)
{
  return SERVER_GUARD_STREAM (stream)->input;
}

static GOutputStream *
guard_get_output_stream (GIOStream *stream)
{
  return g_io_stream_get_output_stream (SERVER_GUARD_STREAM (stream)->state->base);
}

static gboolean
guard_close (GIOStream *stream, GCancellable *cancellable, GError **error)
{
  GuardState *state = SERVER_GUARD_STREAM (stream)->state;

  return state->rejected || g_io_stream_close (state->base, cancellable, error);
}

static void
base_closed_cb (GObject *base, GAsyncResult *result, gpointer data)
{
  g_autoptr (GTask) task = data;
  GError *error = NULL;

  if (g_io_stream_close_finish (G_IO_STREAM (base), result, &error))
    g_task_return_boolean (task, TRUE);
  else
    g_task_return_error (task, error);
}

/* GIOStream's own asynchronous close would run guard_close on a worker
 * thread; closing the base asynchronously keeps every step on ours. */
static void
guard_close_async (GIOStream *stream, int io_priority, GCancellable *cancellable,
                   GAsyncReadyCallback callback, gpointer data)
{
  GuardState *state = SERVER_GUARD_STREAM (stream)->state;
  GTask *task = g_task_new (stream, cancellable, callback, data);

  if (state->rejected)
    {
      g_task_return_boolean (task, TRUE);
      g_object_unref (task);
      return;
    }
  g_io_stream_close_async (state->base, io_priority, cancellable, base_closed_cb, task);
}

static gboolean
guard_close_finish (GIOStream *stream, GAsyncResult *result, GError **error)
{
  return g_task_propagate_boolean (G_TASK (result), error);
}

static void
guard_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  if (prop_id != PROP_BASE_IO_STREAM)
    {
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      return;
    }
  g_value_set_object (value, SERVER_GUARD_STREAM (object)->state->base);
}

static void
guard_finalize (GObject *object)
{
  ServerGuardStream *self = SERVER_GUARD_STREAM (object);

  g_object_unref (self->input);
  guard_state_release (self->state);
  G_OBJECT_CLASS (server_guard_stream_parent_class)->finalize (object);
}

static void
server_guard_stream_class_init (ServerGuardStreamClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GIOStreamClass *stream_class = G_IO_STREAM_CLASS (klass);

  object_class->get_property = guard_get_property;
  object_class->finalize = guard_finalize;
  stream_class->get_input_stream = guard_get_input_stream;
  stream_class->get_output_stream = guard_get_output_stream;
  stream_class->close_fn = guard_close;
  stream_class->close_async = guard_close_async;
  stream_class->close_finish = guard_close_finish;
  /* the name TLS and libsoup's wrappers use, so code can walk to the socket */
  g_object_class_install_property (object_class, PROP_BASE_IO_STREAM,
                                   g_param_spec_object ("base-io-stream", NULL, NULL,
                                                        G_TYPE_IO_STREAM,
                                                        G_PARAM_READABLE
                                                          | G_PARAM_STATIC_STRINGS));
}

static void
server_guard_stream_init (ServerGuardStream *self)
{
}

ServerGuardStream *
server_guard_stream_new (GIOStream *base, GSocket *socket, gsize max_head_bytes)
{
  ServerGuardStream *self;
  GuardInput *input;

  g_return_val_if_fail (G_IS_IO_STREAM (base), NULL);
  g_return_val_if_fail (G_IS_SOCKET (socket), NULL);

  self = g_object_new (SERVER_TYPE_GUARD_STREAM, NULL);
  self->state = g_rc_box_new0 (GuardState);
  self->state->base = g_object_ref (base);
  self->state->socket = g_object_ref (socket);
  self->state->max_head_bytes = max_head_bytes;
  self->state->in_head = TRUE;
  self->state->head = g_string_new (NULL);
  input = g_object_new (GUARD_TYPE_INPUT, NULL);
  input->state = g_rc_box_acquire (self->state);
  self->input = G_INPUT_STREAM (input);
  return self;
}

GSocket *
server_guard_stream_get_socket (ServerGuardStream *self)
{
  g_return_val_if_fail (SERVER_IS_GUARD_STREAM (self), NULL);
  return self->state->socket;
}

void
server_guard_stream_head_started (ServerGuardStream *self)
{
  g_return_if_fail (SERVER_IS_GUARD_STREAM (self));
  self->state->in_head = TRUE;
  self->state->head_bytes = 0;
  if (self->state->head == NULL)
    self->state->head = g_string_new (NULL);
  else
    g_string_truncate (self->state->head, 0);
}

void
server_guard_stream_head_done (ServerGuardStream *self)
{
  g_return_if_fail (SERVER_IS_GUARD_STREAM (self));
  self->state->in_head = FALSE;
  if (self->state->head != NULL)
    {
      g_string_free (self->state->head, TRUE);
      self->state->head = NULL;
    }
}

void
server_guard_stream_reject (ServerGuardStream *self, guint status, const char *reason,
                            const char *code, const char *message)
{
  g_return_if_fail (SERVER_IS_GUARD_STREAM (self));
  guard_state_reject (self->state, status, reason, code, message);
}

void
server_guard_stream_reject_with_body (ServerGuardStream *self, guint status, const char *reason,
                                      const char *content_type, GBytes *body)
{
  g_return_if_fail (SERVER_IS_GUARD_STREAM (self));
  if (guard_state_take_over (self->state))
    server_reject_with_body (self->state->base, self->state->socket, status, reason,
                             content_type, body);
}
