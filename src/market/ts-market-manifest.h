/* ts-market-manifest.h: a release manifest and its canonical JSON form, the bytes that get signed.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "ts-market-error.h"

G_BEGIN_DECLS

/* One file of a release.  Strings owned by the struct. */
typedef struct
{
  char   *name;
  char   *sha256;  /* 64 lowercase hex digits */
  gint64  size;
} TsMarketFile;

/* What a publisher signs for one release.  Plain data, not thread-safe;
 * owned by whoever made it, freed with ts_market_manifest_free(). */
typedef struct
{
  char      *id;
  char      *version;
  char      *publisher;
  char      *base_model_sha256;  /* may be "" when the publisher gave none */
  GPtrArray *files;              /* of TsMarketFile*, owned */
} TsMarketManifest;

TsMarketManifest *ts_market_manifest_new (const char *id, const char *version,
                                          const char *publisher,
                                          const char *base_model_sha256);
void ts_market_manifest_add_file (TsMarketManifest *self, const char *name,
                                  const char *sha256, gint64 size);
/* Looks a file up by name; NULL when absent.  Borrowed pointer. */
const TsMarketFile *ts_market_manifest_find_file (TsMarketManifest *self, const char *name);
void ts_market_manifest_free (TsMarketManifest *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsMarketManifest, ts_market_manifest_free)

/* Checks ids, names, digests and sizes (TS_MARKET_ERROR_INVALID otherwise). */
gboolean ts_market_manifest_validate (TsMarketManifest *self, GError **error);

/* The canonical form: UTF-8 JSON, no whitespace, object keys in bytewise
 * order, files sorted by name, integers in decimal (see docs/protocol.md).
 * Sorts self->files in place.  Returns a newly allocated string. */
char *ts_market_manifest_to_canonical (TsMarketManifest *self);

/* Reads a manifest back from its JSON form (canonical or not); fails with
 * TS_MARKET_ERROR_INVALID on a missing member.  Does not validate names. */
TsMarketManifest *ts_market_manifest_from_json (const char *text, GError **error);

/* TRUE for a name safe as an id, version or file name: 1 to 128 characters of
 * [A-Za-z0-9._+-], not starting with '.' or '-'. */
gboolean ts_market_name_is_safe (const char *name);

G_END_DECLS
