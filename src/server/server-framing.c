/* server-framing.c: one Content-Length of digits, or chunked without one.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "server-framing.h"

/* Longer would not fit in 63 bits; no body of ours comes near. */
#define MAX_LENGTH_DIGITS 18

static gboolean
is_decimal_length (const char *text)
{
  size_t n = strlen (text);

  if (n == 0 || n > MAX_LENGTH_DIGITS)
    return FALSE;
  for (size_t i = 0; i < n; i++)
    if (!g_ascii_isdigit (text[i]))
      return FALSE;
  return TRUE;
}

static gboolean
refuse (ServerFramingRefusal *refusal, guint status, const char *code, const char *message)
{
  refusal->status = status;
  refusal->code = code;
  refusal->message = message;
  return TRUE;
}

typedef struct {
  guint lengths;
  guint encodings;
  gboolean length_ok;
  gboolean encoding_chunked;
  gboolean space_before_colon;
} Framing;

/* Notes what one header line says about the body's framing. */
static void
read_field (Framing *f, char *line)
{
  char *colon = strchr (line, ':');
  char *value;

  if (colon == NULL || colon == line)
    return;   /* libsoup refuses it, before anything leaks */
  if (g_ascii_isspace (colon[-1]))
    f->space_before_colon = TRUE;
  *colon = '\0';
  value = g_strstrip (colon + 1);
  if (g_ascii_strcasecmp (line, "Content-Length") == 0)
    {
      f->lengths++;
      f->length_ok = is_decimal_length (value);
    }
  else if (g_ascii_strcasecmp (line, "Transfer-Encoding") == 0)
    {
      f->encodings++;
      f->encoding_chunked = g_ascii_strcasecmp (value, "chunked") == 0;
    }
}

gboolean
server_framing_refuse_head (const char *head, gsize len, ServerFramingRefusal *refusal)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;
  Framing f = { 0 };

  g_return_val_if_fail (head != NULL && refusal != NULL, FALSE);

  text = g_strndup (head, len);
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 1; lines[i] != NULL; i++)   /* line 0 is the request line */
    read_field (&f, lines[i]);
  if (f.space_before_colon)
    return refuse (refusal, 400, "bad_request", "Whitespace between a field name and its colon");
  if (f.encodings > 0 && f.lengths > 0)
    return refuse (refusal, 400, "bad_framing", "Transfer-Encoding and Content-Length together");
  if (f.lengths > 1)
    return refuse (refusal, 400, "bad_framing", "More than one Content-Length");
  if (f.lengths == 1 && !f.length_ok)
    return refuse (refusal, 400, "bad_framing", "Content-Length is not a decimal number");
  if (f.encodings > 1 || (f.encodings == 1 && !f.encoding_chunked))
    return refuse (refusal, 501, "unknown_transfer_coding",
                   "Only the chunked transfer coding is understood");
  return FALSE;
}
