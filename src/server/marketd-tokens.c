/* marketd-tokens.c: bearer tokens for usage metering, read from a file of "ACCOUNT TOKEN" lines.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "marketd.h"

#include <string.h>

#include "ts-market-error.h"

/* Only the SHA-256 of each token stays in memory, so a heap dump shows none. */
gboolean
marketd_tokens_load (Marketd *self, const char *path, GError **error)
{
  g_autofree char *text = NULL;
  g_auto(GStrv) lines = NULL;
  guint line_no = 0;

  if (!g_file_get_contents (path, &text, NULL, error))
    return FALSE;
  lines = g_strsplit (text, "\n", -1);
  for (char **l = lines; *l; l++)
    {
      g_auto(GStrv) fields = NULL;
      char *line = g_strstrip (*l);

      line_no++;
      if (*line == '\0' || *line == '#')
        continue;
      fields = g_strsplit_set (line, " \t", 2);
      if (g_strv_length (fields) != 2 || strlen (g_strstrip (fields[1])) < 16)
        {
          g_set_error (error, TS_MARKET_ERROR, TS_MARKET_ERROR_INVALID,
                       "%s:%u: expected “ACCOUNT TOKEN” with a token of 16+ characters",
                       path, line_no);
          return FALSE;
        }
      g_hash_table_insert (self->tokens,
                           g_compute_checksum_for_string (G_CHECKSUM_SHA256, fields[1], -1),
                           g_strdup (fields[0]));
    }
  return TRUE;
}

const char *
marketd_tokens_lookup (Marketd *self, const char *token)
{
  g_autofree char *hash = NULL;

  if (token == NULL || *token == '\0')
    return NULL;
  hash = g_compute_checksum_for_string (G_CHECKSUM_SHA256, token, -1);
  return g_hash_table_lookup (self->tokens, hash);
}
