/* ts-market-types.h: catalogue records returned by the marketplace client (adapters, versions, keys).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib-object.h>
#include <json-glib/json-glib.h>

#include "ts-market-manifest.h"

G_BEGIN_DECLS

/* One published version of an adapter, with its signed manifest. */
typedef struct
{
  char             *version;
  gint64            rank;
  double            alpha;
  GStrv             target_modules;
  gint64            created_at;
  TsMarketManifest *manifest;        /* rebuilt from the JSON, not the server's string */
  GPtrArray        *file_urls;       /* char*, parallel to the JSON "files" order */
  char             *signature;       /* base64 Ed25519 signature of the canonical manifest */
  char             *key_id;
} TsMarketVersion;

/* An adapter as the catalogue describes it.  Reference-counted and immutable
 * once returned, so it may be shared between threads; versions is empty in
 * search results and filled by ts_market_client_get_adapter_finish(). */
typedef struct
{
  char      *id;
  char      *name;
  char      *description;
  char      *publisher_id;
  char      *publisher_name;
  char      *base_model;
  char      *base_model_sha256;
  char      *license;
  double     price_per_1k_tokens;
  char      *format;
  gint64     rank;
  double     alpha;
  GStrv      tags;
  GStrv      keywords;      /* routing hints for the chat (ts-router.h); empty when none */
  GStrv      examples;
  GStrv      target_modules;
  char      *latest_version;
  gint64     updated_at;
  GPtrArray *versions;  /* of TsMarketVersion*, newest first */
} TsMarketAdapter;

#define TS_TYPE_MARKET_ADAPTER (ts_market_adapter_get_type ())
GType ts_market_adapter_get_type (void);
TsMarketAdapter *ts_market_adapter_ref (TsMarketAdapter *self);
void ts_market_adapter_unref (TsMarketAdapter *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsMarketAdapter, ts_market_adapter_unref)

/* The version named @version, or the latest when NULL; borrowed, may be NULL. */
TsMarketVersion *ts_market_adapter_find_version (TsMarketAdapter *self, const char *version);

/* A page of search results.  Owned by the caller; free with ts_market_page_free(). */
typedef struct
{
  GPtrArray *adapters;     /* of TsMarketAdapter*, owning references */
  char      *next_cursor;  /* NULL on the last page */
} TsMarketPage;

void ts_market_page_free (TsMarketPage *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsMarketPage, ts_market_page_free)

/* A publisher's signing key as the server lists it. */
typedef struct
{
  char     *key_id;
  char     *algorithm;
  char     *public_key;  /* base64 of the 32 raw bytes */
  gboolean  revoked;
} TsMarketPublisherKey;

void ts_market_publisher_key_free (TsMarketPublisherKey *self);

/* Parsers (used by the client; exposed for tests).  They check every member's
 * type and every name, and fail with TS_MARKET_ERROR_PROTOCOL. */
TsMarketAdapter *ts_market_adapter_from_json (JsonNode *node, GError **error);
TsMarketPage *ts_market_page_from_json (JsonNode *node, GError **error);
GPtrArray *ts_market_publisher_keys_from_json (JsonNode *node, GError **error);

G_END_DECLS
