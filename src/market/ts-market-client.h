/* ts-market-client.h: asynchronous client of the adapter marketplace (catalogue, details, keys).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>
#include <libsoup/soup.h>

#include "ts-market-error.h"
#include "ts-market-types.h"

G_BEGIN_DECLS

/* Largest JSON answer accepted from a server, and how deep it may nest. */
#define TS_MARKET_MAX_JSON_BYTES (4 * 1024 * 1024)
#define TS_MARKET_MAX_JSON_DEPTH 32

/* Reports download progress: bytes received so far and the total (-1 when
 * unknown).  Called on the thread-default main context of the caller. */
typedef void (*TsMarketProgressFunc) (goffset received, goffset total, gpointer user_data);

#define TS_TYPE_MARKET_CLIENT (ts_market_client_get_type ())
G_DECLARE_FINAL_TYPE (TsMarketClient, ts_market_client, TS, MARKET_CLIENT, GObject)

/* A client of the marketplace at @base_url ("http://host:port/" or https).
 * Use it from one thread (the one whose main context runs its callbacks);
 * every call is asynchronous and cancellable. */
TsMarketClient *ts_market_client_new (const char *base_url, GError **error);
const char *ts_market_client_get_base_url (TsMarketClient *self);
/* The session used for every request (borrowed): set a TLS database or a
 * proxy resolver on it if needed. */
SoupSession *ts_market_client_get_session (TsMarketClient *self);
/* Keeps the last good answer of every catalogue call (search, details, keys)
 * under @dir (NULL: no cache).  When the marketplace cannot be reached, those
 * calls answer from there instead of failing, so the catalogue stays
 * browsable offline; the "offline" property (notify) tells the UI to show a
 * banner, and turns FALSE again with the next answered request. */
void ts_market_client_set_cache_dir (TsMarketClient *self, const char *dir);
gboolean ts_market_client_get_offline (TsMarketClient *self);

/* Resolves @path ("/v1/…") against the base URL; newly allocated. */
char *ts_market_client_build_url (TsMarketClient *self, const char *path);

/* Search filters; every field is optional (NULL, 0 or < 0 means “any”).
 * Strings are borrowed for the duration of the call only. */
typedef struct
{
  const char *query;          /* free text, searched with FTS5 */
  const char *base_model;
  gint64      rank;           /* 0: any */
  const char *target_module;
  const char *license;
  double      max_price;      /* < 0: any */
  const char *sort;           /* relevance, name, price, -price, newest */
  guint       limit;          /* 0: server default (20) */
  const char *cursor;         /* next_cursor of the previous page */
} TsMarketSearch;

#define TS_MARKET_SEARCH_INIT { .max_price = -1 }

void ts_market_client_search_async (TsMarketClient *self, const TsMarketSearch *search,
                                    GCancellable *cancellable, GAsyncReadyCallback callback,
                                    gpointer user_data);
/* Returns a page owned by the caller. */
TsMarketPage *ts_market_client_search_finish (TsMarketClient *self, GAsyncResult *result,
                                              GError **error);

void ts_market_client_get_adapter_async (TsMarketClient *self, const char *id,
                                         GCancellable *cancellable,
                                         GAsyncReadyCallback callback, gpointer user_data);
/* Returns the adapter with its versions (a new reference). */
TsMarketAdapter *ts_market_client_get_adapter_finish (TsMarketClient *self,
                                                      GAsyncResult *result, GError **error);

void ts_market_client_get_publisher_keys_async (TsMarketClient *self, const char *publisher,
                                                GCancellable *cancellable,
                                                GAsyncReadyCallback callback,
                                                gpointer user_data);
/* Returns a GPtrArray of TsMarketPublisherKey* owned by the caller. */
GPtrArray *ts_market_client_get_publisher_keys_finish (TsMarketClient *self,
                                                       GAsyncResult *result, GError **error);

G_END_DECLS
