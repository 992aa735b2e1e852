/* server-reject.c: an error answer, then a lingering close.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "server-reject.h"

typedef struct {
  GIOStream *stream;
  GSocket *socket;
  GSource *readable;
  GSource *timer;
  gsize discarded;
} Linger;

static void
linger_finish (Linger *l)
{
  g_source_destroy (l->readable);
  g_source_unref (l->readable);
  g_source_destroy (l->timer);
  g_source_unref (l->timer);
  /* closing a TLS stream would try to send on a socket shut for sending */
  g_socket_close (l->socket, NULL);
  g_io_stream_close (l->stream, NULL, NULL);
  g_object_unref (l->stream);
  g_object_unref (l->socket);
  g_free (l);
}

static gboolean
linger_timeout_cb (gpointer data)
{
  linger_finish (data);
  return G_SOURCE_REMOVE;
}

/* Reads what is there without blocking; ends at end of stream, an error,
 * or the byte bound. */
static gboolean
linger_readable_cb (GSocket *socket, GIOCondition condition, gpointer data)
{
  Linger *l = data;
  char buf[16384];

  for (;;)
    {
      g_autoptr (GError) error = NULL;
      gssize n = g_socket_receive_with_blocking (socket, buf, sizeof buf, FALSE, NULL, &error);

      if (n < 0 && g_error_matches (error, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK))
        return G_SOURCE_CONTINUE;
      if (n <= 0 || (l->discarded += (gsize) n) >= SERVER_REJECT_LINGER_BYTES)
        break;
    }
  linger_finish (l);
  return G_SOURCE_REMOVE;
}

static void
write_answer (GIOStream *stream, guint status, const char *reason, const char *content_type,
              GBytes *body)
{
  GOutputStream *out = g_io_stream_get_output_stream (stream);
  gsize len = body != NULL ? g_bytes_get_size (body) : 0;
  g_autoptr (GString) text = g_string_new (NULL);

  g_string_printf (text, "HTTP/1.1 %u %s\r\n", status, reason);
  if (content_type != NULL && len > 0)
    g_string_append_printf (text, "Content-Type: %s\r\n", content_type);
  g_string_append_printf (text, "Content-Length: %zu\r\nConnection: close\r\n\r\n", len);
  if (len > 0)
    g_string_append_len (text, g_bytes_get_data (body, NULL), (gssize) len);
  /* the connection is new or between requests, so its send buffer is
   * empty and an error answer fits; if not, the client gets the close */
  if (G_IS_POLLABLE_OUTPUT_STREAM (out))
    g_pollable_output_stream_write_nonblocking (G_POLLABLE_OUTPUT_STREAM (out), text->str,
                                                text->len, NULL, NULL);
}

void
server_reject (GIOStream *stream, GSocket *socket, guint status, const char *reason,
               const char *code, const char *message)
{
  char *json = g_strdup_printf ("{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}", code,
                                message);
  g_autoptr (GBytes) body = g_bytes_new_take (json, strlen (json));

  server_reject_with_body (stream, socket, status, reason, "application/json", body);
}

void
server_reject_with_body (GIOStream *stream, GSocket *socket, guint status, const char *reason,
                         const char *content_type, GBytes *body)
{
  Linger *l;

  g_return_if_fail (G_IS_IO_STREAM (stream));
  g_return_if_fail (G_IS_SOCKET (socket));

  write_answer (stream, status, reason, content_type, body);
  g_socket_shutdown (socket, FALSE, TRUE, NULL);
  l = g_new0 (Linger, 1);
  l->stream = g_object_ref (stream);
  l->socket = g_object_ref (socket);
  l->readable = g_socket_create_source (socket, G_IO_IN | G_IO_HUP | G_IO_ERR, NULL);
  g_source_set_callback (l->readable, G_SOURCE_FUNC (linger_readable_cb), l, NULL);
  l->timer = g_timeout_source_new (SERVER_REJECT_LINGER_MS);
  g_source_set_callback (l->timer, linger_timeout_cb, l, NULL);
  g_source_attach (l->readable, g_main_context_get_thread_default ());
  g_source_attach (l->timer, g_main_context_get_thread_default ());
}
