/* ts-market-cache.c: last good catalogue answers on disk, for browsing while offline.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-client-private.h"

#include "ts-market-json.h"

/* One file per request path, named by its SHA-256 so any query is a safe name. */
static char *
cache_file (const char *dir, const char *path)
{
  g_autofree char *hash = g_compute_checksum_for_string (G_CHECKSUM_SHA256, path, -1);
  g_autofree char *name = g_strconcat (hash, ".json", NULL);

  return g_build_filename (dir, name, NULL);
}

void
_ts_market_cache_store (const char *dir, const char *path, JsonNode *node)
{
  g_autofree char *file = NULL, *text = NULL;

  if (dir == NULL || g_mkdir_with_parents (dir, 0700) != 0)
    return;
  file = cache_file (dir, path);
  text = json_to_string (node, FALSE);
  g_file_set_contents (file, text, -1, NULL);
}

JsonNode *
_ts_market_cache_load (const char *dir, const char *path)
{
  g_autofree char *file = NULL, *text = NULL;
  gsize len = 0;

  if (dir == NULL)
    return NULL;
  file = cache_file (dir, path);
  if (!g_file_get_contents (file, &text, &len, NULL) || len > TS_MARKET_MAX_JSON_BYTES)
    return NULL;
  return ts_json_parse_bounded (text, len, TS_MARKET_MAX_JSON_DEPTH, NULL);
}
