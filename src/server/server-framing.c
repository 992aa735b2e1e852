/* server-framing.c: one Content-Length of digits, or chunked without one.
 * SPDX-License-Identifier: GPL-3.0-or-later */
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

const char *
server_framing_problem (SoupMessageHeaders *headers)
{
  const char *length, *encoding;

  g_return_val_if_fail (headers != NULL, NULL);

  /* the list joins repeated fields with ", " */
  length = soup_message_headers_get_list (headers, "Content-Length");
  encoding = soup_message_headers_get_list (headers, "Transfer-Encoding");
  if (length == NULL)
    return NULL;
  if (encoding != NULL)
    return "Transfer-Encoding and Content-Length together";
  if (strchr (length, ',') != NULL)
    return "More than one Content-Length";
  if (!is_decimal_length (length))
    return "Content-Length is not a decimal number";
  return NULL;
}
