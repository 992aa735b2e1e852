/* marketd-files.c: file downloads with a SHA-256 ETag, If-None-Match, If-Range and byte ranges.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"

#include <string.h>

typedef enum
{
  RANGE_NONE,           /* no usable Range header: send everything */
  RANGE_OK,             /* one satisfiable range */
  RANGE_UNSATISFIABLE,  /* malformed or outside the file: 416 */
} RangeResult;

static gboolean
parse_offset (const char *s, gsize len, guint64 *out)
{
  g_autofree char *copy = g_strndup (s, len);

  return len > 0 && len <= 19
         && g_ascii_string_to_unsigned (copy, 10, 0, G_MAXINT64, out, NULL);
}

/* Reads "bytes=A-B", "bytes=A-" or "bytes=-N" against a file of @size bytes.
 * A list of several ranges is answered in full, as RFC 9110 allows. */
static RangeResult
parse_range (const char *header, gint64 size, gint64 *start, gint64 *end)
{
  const char *spec, *dash;
  guint64 a = 0, b = 0;

  if (header == NULL)
    return RANGE_NONE;
  if (!g_str_has_prefix (header, "bytes="))
    return RANGE_UNSATISFIABLE;
  spec = header + strlen ("bytes=");
  if (strchr (spec, ',') != NULL)
    return RANGE_NONE;
  dash = strchr (spec, '-');
  if (dash == NULL)
    return RANGE_UNSATISFIABLE;
  if (dash == spec)
    {
      if (!parse_offset (dash + 1, strlen (dash + 1), &b) || b == 0 || size == 0)
        return RANGE_UNSATISFIABLE;
      *start = (gint64) b >= size ? 0 : size - (gint64) b;
      *end = size - 1;
      return RANGE_OK;
    }
  if (!parse_offset (spec, dash - spec, &a) || (gint64) a >= size)
    return RANGE_UNSATISFIABLE;
  if (dash[1] == '\0')
    b = size - 1;
  else if (!parse_offset (dash + 1, strlen (dash + 1), &b) || b < a)
    return RANGE_UNSATISFIABLE;
  *start = (gint64) a;
  *end = MIN ((gint64) b, size - 1);
  return RANGE_OK;
}

/* TRUE when an If-None-Match or If-Range list names @etag (weak or strong) or "*". */
static gboolean
etag_listed (const char *header, const char *etag)
{
  g_auto(GStrv) items = NULL;

  if (header == NULL)
    return FALSE;
  items = g_strsplit (header, ",", 32);
  for (char **i = items; *i; i++)
    {
      const char *tag = g_strstrip (*i);
      if (g_str_has_prefix (tag, "W/"))
        tag += 2;
      if (strcmp (tag, "*") == 0 || strcmp (tag, etag) == 0)
        return TRUE;
    }
  return FALSE;
}

static gboolean
lookup_file (Marketd *self, const char *id, const char *version, const char *name,
             char **sha256, gint64 *size)
{
  MarketdValue params[] = { marketd_text (id), marketd_text (version), marketd_text (name) };
  g_autoptr(GError) error = NULL;
  g_autoptr(MarketdRows) s = marketd_store_query (
      self->store, "SELECT sha256, size FROM files WHERE adapter_id = ?1 AND version = ?2 "
      "AND name = ?3", params, G_N_ELEMENTS (params), &error);

  if (s == NULL)
    g_message ("file: %s", error->message);
  if (s == NULL || marketd_rows_count (s) == 0)
    return FALSE;
  *sha256 = g_strdup (marketd_rows_text (s, 0, 0));
  *size = marketd_rows_int64 (s, 0, 1);
  return TRUE;
}

static void
send_bytes (SoupServerMessage *msg, guint status, GBytes *bytes)
{
  soup_server_message_set_status (msg, status, NULL);
  soup_message_headers_set_content_type (soup_server_message_get_response_headers (msg),
                                         "application/octet-stream", NULL);
  soup_message_body_append_bytes (soup_server_message_get_response_body (msg), bytes);
}

/* Serves the blob as stored: its integrity is the client's to check against
 * the signed manifest, end to end. */
void
marketd_handle_file (Marketd *self, SoupServerMessage *msg, const char *id,
                     const char *version, const char *name)
{
  SoupMessageHeaders *req = soup_server_message_get_request_headers (msg);
  SoupMessageHeaders *resp = soup_server_message_get_response_headers (msg);
  g_autofree char *sha = NULL, *etag = NULL, *path = NULL;
  g_autoptr(GMappedFile) map = NULL;
  g_autoptr(GBytes) all = NULL, part = NULL;
  const char *if_range = soup_message_headers_get_one (req, "If-Range");
  gint64 size = 0, start = 0, end = 0;
  RangeResult range;

  if (!lookup_file (self, id, version, name, &sha, &size))
    {
      marketd_reply_error (msg, 404, "not_found", "No file %s in %s %s", name, id, version);
      return;
    }
  path = marketd_blob_path (self, sha);
  map = g_mapped_file_new (path, FALSE, NULL);
  if (map == NULL)
    {
      g_message ("blob %s is missing", sha);
      marketd_reply_error (msg, 500, "blob_missing", "The file is missing on the server");
      return;
    }
  all = g_mapped_file_get_bytes (map);
  size = g_bytes_get_size (all);
  etag = g_strdup_printf ("\"%s\"", sha);
  soup_message_headers_replace (resp, "ETag", etag);
  soup_message_headers_replace (resp, "Accept-Ranges", "bytes");
  soup_message_headers_replace (resp, "Cache-Control", "public, max-age=31536000, immutable");
  if (etag_listed (soup_message_headers_get_one (req, "If-None-Match"), etag))
    {
      soup_server_message_set_status (msg, 304, NULL);
      return;
    }
  range = parse_range (soup_message_headers_get_one (req, "Range"), size, &start, &end);
  if (if_range != NULL && !etag_listed (if_range, etag))
    range = RANGE_NONE;
  if (range == RANGE_UNSATISFIABLE)
    {
      g_autofree char *cr = g_strdup_printf ("bytes */%" G_GINT64_FORMAT, size);
      soup_message_headers_replace (resp, "Content-Range", cr);
      marketd_reply_error (msg, 416, "range_not_satisfiable", "Bad or unsatisfiable range");
      return;
    }
  if (range == RANGE_NONE)
    {
      /* Keep libsoup from applying a Range we chose to ignore. */
      soup_message_headers_remove (req, "Range");
      send_bytes (msg, 200, all);
      return;
    }
  soup_message_headers_set_content_range (resp, start, end, size);
  part = g_bytes_new_from_bytes (all, start, end - start + 1);
  send_bytes (msg, 206, part);
}
