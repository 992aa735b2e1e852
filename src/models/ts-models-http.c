/* ts-models-http.c: Range-resumed downloads, written straight to a part file.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-http.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <stdio.h>

#include "ts-core.h"
#include "ts-models-error.h"
#include "ts-models-files.h"

#define READ_BLOCK (256 * 1024)
#define RETRY_PAUSE_MS 500

typedef struct
{
  SoupSession   *session;
  const char    *url;
  const char    *part;
  gint64         expected;
  TsModelsMeter *meter;
  GCancellable  *cancellable;
  gboolean       retry;    /* the failure may pass on a second try */
  gint64         offset;   /* bytes in the part file before this request */
  gint64         received; /* bytes in the part file now */
  gint64         body_end; /* where the announced body ends, -1 when not announced */
} Fetch;

SoupSession *
ts_models_session_new (void)
{
  g_autofree char *agent = g_strdup_printf ("tensafe/%s ", ts_version ());

  return soup_session_new_with_options ("user-agent", agent, "timeout", 60,
                                        "idle-timeout", 60, NULL);
}

static char *
validator_path (const char *part)
{
  return g_strconcat (part, ".etag", NULL);
}

void
ts_models_http_discard (const char *part_path)
{
  g_autofree char *validator = validator_path (part_path);

  g_unlink (part_path);
  g_unlink (validator);
}

/* The ETag, else the Last-Modified date, of the answer that began the part. */
static void
save_validator (Fetch *f, SoupMessageHeaders *h)
{
  g_autofree char *path = validator_path (f->part);
  const char *etag = soup_message_headers_get_one (h, "ETag");
  const char *value = etag ? etag : soup_message_headers_get_one (h, "Last-Modified");

  /* A weak ETag cannot guard a range (RFC 9110 13.1.5). */
  if (value == NULL || g_str_has_prefix (value, "W/")
      || !g_file_set_contents (path, value, -1, NULL))
    g_unlink (path);
}

static char *
load_validator (Fetch *f)
{
  g_autofree char *path = validator_path (f->part);
  char *value = NULL;

  if (!g_file_get_contents (path, &value, NULL, NULL))
    return NULL;
  return g_strstrip (value);
}

static gboolean
refuse_length (Fetch *f, gint64 length, GError **error)
{
  ts_models_http_discard (f->part);
  g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_CHECKSUM,
               "%s is %" G_GINT64_FORMAT " bytes long; %" G_GINT64_FORMAT " were expected",
               f->url, length, f->expected);
  return FALSE;
}

/* Decides from the answer whether its body continues the part file. */
static gboolean
accept_answer (Fetch *f, SoupMessage *msg, gboolean *append, GError **error)
{
  SoupMessageHeaders *h = soup_message_get_response_headers (msg);
  guint status = soup_message_get_status (msg);
  goffset start = 0, end = 0, total = -1, length = -1;

  if (soup_message_headers_get_encoding (h) == SOUP_ENCODING_CONTENT_LENGTH)
    length = soup_message_headers_get_content_length (h);
  if (status == SOUP_STATUS_PARTIAL_CONTENT && f->offset > 0
      && soup_message_headers_get_content_range (h, &start, &end, &total) && start == f->offset)
    *append = TRUE;  /* the validator of the answer that began the part still holds */
  else if (status == SOUP_STATUS_OK)
    {
      *append = FALSE;
      f->offset = 0;
      save_validator (f, h);
    }
  else if (status == SOUP_STATUS_PARTIAL_CONTENT)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_HTTP,
                   "%s: the server sent a range that was not asked for", f->url);
      return FALSE;
    }
  else
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_HTTP, "%s: HTTP %u %s", f->url,
                   status, soup_message_get_reason_phrase (msg));
      return FALSE;
    }
  f->body_end = length >= 0 ? f->offset + length : -1;
  if (f->expected >= 0 && f->body_end >= 0 && f->body_end != f->expected)
    return refuse_length (f, f->body_end, error);
  return TRUE;
}

static FILE *
open_part (Fetch *f, gboolean append, GError **error)
{
  FILE *out = g_fopen (f->part, append ? "ab" : "wb");

  if (out == NULL)
    g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write %s: %s", f->part,
                 g_strerror (errno));
  return out;
}

/* A transport failure: before an answer (@answered FALSE) the server could
 * not be reached; after one, the connection dropped mid-body. */
static gboolean
transport_failed (Fetch *f, GError *local, gboolean answered, GError **error)
{
  if (g_error_matches (local, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      g_propagate_error (error, local);
      return FALSE;
    }
  f->retry = TRUE;
  if (answered)
    g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NETWORK,
                 "%s: the connection dropped after %" G_GINT64_FORMAT " bytes (%s)", f->url,
                 f->received, local->message);
  else
    g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_NETWORK,
                 "%s: cannot reach the server (%s)", f->url, local->message);
  g_error_free (local);
  return FALSE;
}

static gboolean
copy_body (Fetch *f, GInputStream *in, FILE *out, GError **error)
{
  g_autofree guint8 *buf = g_malloc (READ_BLOCK);
  GError *local = NULL;
  gssize n;

  while ((n = g_input_stream_read (in, buf, READ_BLOCK, f->cancellable, &local)) > 0)
    {
      if (f->expected >= 0 && f->received + n > f->expected)
        return refuse_length (f, f->received + n, error);
      if (fwrite (buf, 1, (size_t) n, out) != (size_t) n || fflush (out) != 0)
        {
          g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write %s: %s",
                       f->part, g_strerror (errno));
          return FALSE;
        }
      f->received += n;
      ts_models_meter_add (f->meter, n);
    }
  if (n < 0)
    return transport_failed (f, local, TRUE, error);
  if ((f->body_end >= 0 && f->received < f->body_end)
      || (f->expected >= 0 && f->received < f->expected))
    {
      f->retry = TRUE;
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_TRUNCATED,
                   "%s: the download ended after %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                   " bytes", f->url, f->received, f->expected >= 0 ? f->expected : f->body_end);
      return FALSE;
    }
  return TRUE;
}

static gboolean
receive (Fetch *f, SoupMessage *msg, GInputStream *in, GError **error)
{
  gboolean append = FALSE, ok;
  FILE *out;

  /* A part longer than the file, or a file that changed: start over once. */
  if (soup_message_get_status (msg) == SOUP_STATUS_REQUESTED_RANGE_NOT_SATISFIABLE
      && f->offset > 0)
    {
      ts_models_http_discard (f->part);
      f->retry = TRUE;
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_HTTP,
                   "%s: the server refused to resume at byte %" G_GINT64_FORMAT, f->url,
                   f->offset);
      return FALSE;
    }
  if (!accept_answer (f, msg, &append, error) || (out = open_part (f, append, error)) == NULL)
    return FALSE;
  f->received = f->offset;
  ts_models_meter_begin (f->meter, TS_MODELS_STAGE_DOWNLOAD,
                         f->expected >= 0 ? f->expected : f->body_end, f->offset, f->url);
  ok = copy_body (f, in, out, error);
  if (fclose (out) != 0 && ok)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_IO, "Cannot write %s: %s", f->part,
                   g_strerror (errno));
      ok = FALSE;
    }
  return ok;
}

static gboolean
fetch_once (Fetch *f, GError **error)
{
  g_autoptr(SoupMessage) msg = NULL;
  g_autoptr(GInputStream) in = NULL;
  GError *local = NULL;
  SoupMessageHeaders *h;

  f->retry = FALSE;
  f->offset = MAX (ts_models_file_size (f->part), 0);
  if (f->expected >= 0 && f->offset > f->expected)
    {
      ts_models_http_discard (f->part);
      f->offset = 0;
    }
  if (f->expected >= 0 && f->offset == f->expected)
    return TRUE;
  msg = soup_message_new ("GET", f->url);
  if (msg == NULL)
    {
      g_set_error (error, TS_MODELS_ERROR, TS_MODELS_ERROR_INVALID, "\"%s\" is not a valid URL",
                   f->url);
      return FALSE;
    }
  h = soup_message_get_request_headers (msg);
  if (f->offset > 0)
    {
      g_autofree char *validator = load_validator (f);

      soup_message_headers_set_range (h, f->offset, -1);
      if (validator != NULL)
        soup_message_headers_replace (h, "If-Range", validator);
    }
  soup_message_headers_replace (h, "Accept-Encoding", "identity");
  in = soup_session_send (f->session, msg, f->cancellable, &local);
  if (in == NULL)
    return transport_failed (f, local, FALSE, error);
  return receive (f, msg, in, error);
}

/* Waits a little longer after each failure, so that a server or link that
 * is restarting gets time; a cancel ends the wait. */
static gboolean
pause_before_retry (guint attempt, GCancellable *cancellable, GError **error)
{
  for (guint waited = 0; waited < attempt * RETRY_PAUSE_MS; waited += 50)
    {
      if (g_cancellable_set_error_if_cancelled (cancellable, error))
        return FALSE;
      g_usleep (50 * 1000);
    }
  return TRUE;
}

gboolean
ts_models_http_fetch (SoupSession *session, const char *url, const char *part_path,
                      gint64 expected_size, guint attempts, TsModelsMeter *meter,
                      GCancellable *cancellable, GError **error)
{
  g_return_val_if_fail (SOUP_IS_SESSION (session), FALSE);
  g_return_val_if_fail (url != NULL, FALSE);
  g_return_val_if_fail (part_path != NULL, FALSE);

  Fetch f = { session, url, part_path, expected_size, meter, cancellable, FALSE, 0, 0, -1 };
  GError *local = NULL;

  for (guint attempt = 1;; attempt++)
    {
      if (fetch_once (&f, &local))
        return TRUE;
      if (!f.retry || attempt >= MAX (attempts, 1))
        {
          g_propagate_error (error, local);
          return FALSE;
        }
      g_debug ("%s; retrying (%u of %u)", local->message, attempt + 1, attempts);
      g_clear_error (&local);
      if (!pause_before_retry (attempt, cancellable, error))
        return FALSE;
    }
}
