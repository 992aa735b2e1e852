/* ts-market-download.c: resumable downloads (Range, If-Range/ETag) hashed with SHA-256 on the fly.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-download.h"

#include <glib/gstdio.h>

#include "ts-market-client-private.h"
#include "ts-market-json.h"

#define READ_CHUNK (64 * 1024)

typedef struct
{
  SoupSession          *session;
  char                 *url;
  char                 *dest;
  char                 *part;
  char                 *meta;
  char                 *expected_sha;
  gint64                expected_size;
  TsMarketProgressFunc  progress;
  gpointer              progress_data;
  GDestroyNotify        progress_destroy;
  GChecksum            *sum;
  char                 *etag;
  gint64                offset;      /* bytes already in the part file */
  gint64                received;    /* bytes in the part file now */
  gint64                total;       /* expected final size, -1 when unknown */
  gint64                resumed_from;
  gint64                body_end;    /* received + Content-Length at the response, or -1 */
  gboolean              restarted;   /* a bad resume fell back to a full download */
  SoupMessage          *msg;
  GInputStream         *in;
  GOutputStream        *out;
} Download;

static void
download_free (Download *d)
{
  if (d->progress_destroy)
    d->progress_destroy (d->progress_data);
  g_clear_object (&d->session);
  g_free (d->url);
  g_free (d->dest);
  g_free (d->part);
  g_free (d->meta);
  g_free (d->expected_sha);
  g_clear_pointer (&d->sum, g_checksum_free);
  g_free (d->etag);
  g_clear_object (&d->msg);
  g_clear_object (&d->in);
  g_clear_object (&d->out);
  g_free (d);
}

static void
forget_part (Download *d)
{
  g_unlink (d->part);
  g_unlink (d->meta);
  g_checksum_reset (d->sum);
  d->offset = d->received = 0;
  g_clear_pointer (&d->etag, g_free);
}

/* The part file is resumable only if it was fetched from the same URL for
 * the same expected digest. */
static gboolean
part_matches (Download *d)
{
  g_autofree char *text = NULL;
  g_autoptr(JsonNode) root = NULL;
  gsize len = 0;
  JsonObject *o;

  if (!g_file_get_contents (d->meta, &text, &len, NULL)
      || (root = ts_json_parse_bounded (text, len, 4, NULL)) == NULL
      || !JSON_NODE_HOLDS_OBJECT (root))
    return FALSE;
  o = json_node_get_object (root);
  if (g_strcmp0 (ts_json_get_string (o, "url"), d->url) != 0
      || g_strcmp0 (ts_json_get_string (o, "sha256"), d->expected_sha) != 0)
    return FALSE;
  d->etag = g_strdup (ts_json_get_string (o, "etag"));
  return TRUE;
}

static void
prehash_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  Download *d = task_data;
  g_autoptr(GFile) file = g_file_new_for_path (d->part);
  g_autoptr(GFileInputStream) in = NULL;
  g_autofree guchar *buf = NULL;
  GError *error = NULL;
  gssize n;

  if (!g_file_test (d->part, G_FILE_TEST_IS_REGULAR) || !part_matches (d))
    {
      forget_part (d);
      g_task_return_boolean (task, TRUE);
      return;
    }
  in = g_file_read (file, cancellable, &error);
  buf = g_malloc (READ_CHUNK);
  while (in != NULL && (n = g_input_stream_read (G_INPUT_STREAM (in), buf, READ_CHUNK,
                                                 cancellable, &error)) > 0)
    {
      g_checksum_update (d->sum, buf, n);
      d->offset += n;
    }
  if (error != NULL)
    g_task_return_error (task, error);
  else
    g_task_return_boolean (task, TRUE);
}

static void
save_meta (Download *d)
{
  g_autoptr(JsonBuilder) b = json_builder_new ();
  g_autoptr(JsonNode) root = NULL;
  g_autofree char *text = NULL;

  json_builder_begin_object (b);
  ts_json_add_string (b, "url", d->url);
  ts_json_add_string (b, "etag", d->etag);
  ts_json_add_string (b, "sha256", d->expected_sha);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  text = json_to_string (root, FALSE);
  g_file_set_contents (d->meta, text, -1, NULL);
}

static void send_request (GTask *task);

static void
finish_download (GTask *task)
{
  Download *d = g_task_get_task_data (task);
  GError *error = NULL;
  const char *sha;

  if (d->out != NULL && !g_output_stream_close (d->out, NULL, &error))
    {
      g_task_return_error (task, error);
      return;
    }
  if ((d->expected_size >= 0 && d->received < d->expected_size)
      || (d->body_end >= 0 && d->received < d->body_end))
    {
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_TRUNCATED,
                               "Download ended after %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                               " bytes", d->received,
                               d->expected_size >= 0 ? d->expected_size : d->body_end);
      return;
    }
  sha = g_checksum_get_string (d->sum);
  if (d->expected_sha != NULL && g_strcmp0 (sha, d->expected_sha) != 0)
    {
      forget_part (d);
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_CHECKSUM,
                               "SHA-256 mismatch for %s: got %s, expected %s", d->url,
                               g_checksum_get_string (d->sum), d->expected_sha);
      return;
    }
  if (g_rename (d->part, d->dest) != 0)
    {
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_IO,
                               "Cannot move the download into place at %s", d->dest);
      return;
    }
  g_unlink (d->meta);
  g_task_return_pointer (task, g_strdup (sha), g_free);
}

static void
read_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  Download *d = g_task_get_task_data (task);
  g_autoptr(GError) local = NULL;
  g_autoptr(GBytes) chunk = g_input_stream_read_bytes_finish (d->in, result, &local);
  GError *error = NULL;
  gsize n;

  if (chunk == NULL)
    {
      g_output_stream_close (d->out, NULL, NULL);
      _ts_market_error_from_transport (&error, local, TRUE);
      g_task_return_error (task, error);
      return;
    }
  n = g_bytes_get_size (chunk);
  if (n == 0)
    {
      finish_download (task);
      return;
    }
  if (d->expected_size >= 0 && d->received + (gint64) n > d->expected_size)
    {
      g_output_stream_close (d->out, NULL, NULL);
      forget_part (d);
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_CHECKSUM,
                               "%s is larger than the %" G_GINT64_FORMAT " bytes expected",
                               d->url, d->expected_size);
      return;
    }
  if (!g_output_stream_write_all (d->out, g_bytes_get_data (chunk, NULL), n, NULL,
                                  NULL, &error))
    {
      g_task_return_error (task, error);
      return;
    }
  g_checksum_update (d->sum, g_bytes_get_data (chunk, NULL), n);
  d->received += n;
  if (d->progress)
    d->progress (d->received, d->total, d->progress_data);
  _ts_market_read_next (d->in, read_cb, g_steal_pointer (&task));
}

/* Opens the part file for appending after a 206, or from scratch after a 200. */
static gboolean
open_part (Download *d, gboolean append, GError **error)
{
  g_autoptr(GFile) file = g_file_new_for_path (d->part);
  GFileOutputStream *out;

  if (append)
    out = g_file_append_to (file, G_FILE_CREATE_PRIVATE, NULL, error);
  else
    out = g_file_replace (file, NULL, FALSE, G_FILE_CREATE_PRIVATE, NULL, error);
  d->out = G_OUTPUT_STREAM (out);
  return out != NULL;
}

/* Decides, from the status, whether the body continues the part file. */
static gboolean
accept_response (GTask *task, Download *d, GError **error)
{
  SoupMessageHeaders *h = soup_message_get_response_headers (d->msg);
  guint status = soup_message_get_status (d->msg);
  goffset start = 0, end = 0, total = -1;

  if (status == 206 && d->offset > 0
      && soup_message_headers_get_content_range (h, &start, &end, &total)
      && start == d->offset)
    d->resumed_from = d->offset;
  else if (status == 200 || status == 206)
    {
      if (status == 206)
        {
          g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_PROTOCOL,
                       "The server sent a range that was not asked for");
          return FALSE;
        }
      g_checksum_reset (d->sum);
      d->offset = d->received = 0;
    }
  else
    {
      _ts_market_error_from_status (error, status, NULL, 0);
      return FALSE;
    }
  g_free (d->etag);
  d->etag = g_strdup (soup_message_headers_get_one (h, "ETag"));
  save_meta (d);
  d->received = d->offset;
  d->total = d->expected_size;
  d->body_end = _ts_market_content_length (d->msg);
  if (d->body_end >= 0)
    d->body_end += d->offset;
  if (d->total < 0)
    d->total = d->body_end;
  return open_part (d, d->offset > 0, error);
}

static void
sent_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  Download *d = g_task_get_task_data (task);
  g_autoptr(GError) local = NULL;
  GError *error = NULL;

  d->in = soup_session_send_finish (SOUP_SESSION (source), result, &local);
  if (d->in == NULL)
    {
      _ts_market_error_from_transport (&error, local, FALSE);
      g_task_return_error (task, error);
      return;
    }
  /* A stale part (the file changed, or it is longer than the file): start over once. */
  if (soup_message_get_status (d->msg) == 416 && d->offset > 0 && !d->restarted)
    {
      d->restarted = TRUE;
      forget_part (d);
      g_clear_object (&d->in);
      send_request (g_steal_pointer (&task));
      return;
    }
  if (!accept_response (task, d, &error))
    {
      g_task_return_error (task, error);
      return;
    }
  _ts_market_read_next (d->in, read_cb, g_steal_pointer (&task));
}

static void
send_request (GTask *task)
{
  Download *d = g_task_get_task_data (task);
  SoupMessageHeaders *h;

  g_clear_object (&d->msg);
  d->msg = soup_message_new ("GET", d->url);
  if (d->msg == NULL)
    {
      g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                               "Invalid URL %s", d->url);
      g_object_unref (task);
      return;
    }
  h = soup_message_get_request_headers (d->msg);
  if (d->offset > 0)
    {
      soup_message_headers_set_range (h, d->offset, -1);
      if (d->etag != NULL)
        soup_message_headers_replace (h, "If-Range", d->etag);
    }
  /* Hashes are of the bytes as stored, so no transfer compression. */
  soup_message_headers_replace (h, "Accept-Encoding", "identity");
  soup_session_send_async (d->session, d->msg, G_PRIORITY_DEFAULT,
                           g_task_get_cancellable (task), sent_cb, task);
}

static void
prehash_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  GTask *task = user_data;
  Download *d = g_task_get_task_data (task);
  GError *error = NULL;

  if (!g_task_propagate_boolean (G_TASK (result), &error))
    {
      g_task_return_error (task, error);
      g_object_unref (task);
      return;
    }
  d->received = d->offset;
  if (d->expected_size >= 0 && d->offset >= d->expected_size)
    {
      d->resumed_from = d->offset;
      finish_download (task);
      g_object_unref (task);
      return;
    }
  send_request (task);
}

void
ts_market_download_async (SoupSession *session, const char *url, const char *dest_path,
                          const char *expected_sha256, gint64 expected_size,
                          TsMarketProgressFunc progress, gpointer progress_data,
                          GDestroyNotify progress_destroy, GCancellable *cancellable,
                          GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (SOUP_IS_SESSION (session));
  g_return_if_fail (url != NULL);
  g_return_if_fail (dest_path != NULL);

  GTask *task = g_task_new (NULL, cancellable, callback, user_data);
  g_autoptr(GTask) prehash = NULL;
  Download *d = g_new0 (Download, 1);

  g_task_set_source_tag (task, ts_market_download_async);
  d->session = g_object_ref (session);
  d->url = g_strdup (url);
  d->dest = g_strdup (dest_path);
  d->part = g_strconcat (dest_path, ".part", NULL);
  d->meta = g_strconcat (dest_path, ".part.json", NULL);
  d->expected_sha = g_strdup (expected_sha256);
  d->expected_size = expected_size;
  d->progress = progress;
  d->progress_data = progress_data;
  d->progress_destroy = progress_destroy;
  d->sum = g_checksum_new (G_CHECKSUM_SHA256);
  d->total = -1;
  d->body_end = -1;
  g_task_set_task_data (task, d, (GDestroyNotify) download_free);
  /* Rehashing a large partial file must not stall the caller's main loop. */
  prehash = g_task_new (NULL, cancellable, prehash_done_cb, task);
  g_task_set_task_data (prehash, d, NULL);
  g_task_run_in_thread (prehash, prehash_thread);
}

char *
ts_market_download_finish (GAsyncResult *result, gint64 *resumed_from, GError **error)
{
  Download *d;

  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  d = g_task_get_task_data (G_TASK (result));
  if (resumed_from != NULL)
    *resumed_from = d->resumed_from;
  return g_task_propagate_pointer (G_TASK (result), error);
}

char *
ts_market_hf_resolve_url (const char *endpoint, const char *repo, const char *revision,
                          const char *file)
{
  g_return_val_if_fail (endpoint != NULL, NULL);
  g_return_val_if_fail (repo != NULL, NULL);
  g_return_val_if_fail (file != NULL, NULL);

  g_autofree char *base = g_strdup (endpoint);
  g_autofree char *rev = g_uri_escape_string (revision ? revision : "main", NULL, FALSE);
  g_autofree char *path = g_uri_escape_string (file, "/", FALSE);

  while (g_str_has_suffix (base, "/"))
    base[strlen (base) - 1] = '\0';
  return g_strdup_printf ("%s/%s/resolve/%s/%s", base, repo, rev, path);
}

static void
model_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr(GTask) task = user_data;
  GError *error = NULL;
  char *sha = ts_market_download_finish (result, NULL, &error);

  if (sha == NULL)
    g_task_return_error (task, error);
  else
    g_task_return_pointer (task, sha, g_free);
}

void
ts_market_client_download_model_async (TsMarketClient *self, const char *url,
                                       const char *dest_path, const char *expected_sha256,
                                       TsMarketProgressFunc progress, gpointer progress_data,
                                       GDestroyNotify progress_destroy,
                                       GCancellable *cancellable,
                                       GAsyncReadyCallback callback, gpointer user_data)
{
  g_return_if_fail (TS_IS_MARKET_CLIENT (self));
  g_return_if_fail (url != NULL);
  g_return_if_fail (dest_path != NULL);

  GTask *task = g_task_new (self, cancellable, callback, user_data);

  g_task_set_source_tag (task, ts_market_client_download_model_async);
  ts_market_download_async (ts_market_client_get_session (self), url, dest_path,
                            expected_sha256, -1, progress, progress_data, progress_destroy,
                            cancellable, model_done_cb, task);
}

char *
ts_market_client_download_model_finish (TsMarketClient *self, GAsyncResult *result,
                                        GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}
