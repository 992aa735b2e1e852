/* ts-market-client-private.h: the JSON request helper shared by the client's parts.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-market-client.h"

G_BEGIN_DECLS

/* Sends @msg and reads a JSON answer of at most TS_MARKET_MAX_JSON_BYTES.
 * Statuses ≥ 400 become GErrors carrying the server's error code and message.
 * The task's result is a JsonNode (free with json_node_unref). */
void _ts_market_client_send_json_async (TsMarketClient *self, SoupMessage *msg,
                                        GCancellable *cancellable,
                                        GAsyncReadyCallback callback, gpointer user_data);
JsonNode *_ts_market_client_send_json_finish (TsMarketClient *self, GAsyncResult *result,
                                              GError **error);

/* Maps a transport GError (libsoup, GIO, TLS) to TS_MARKET_ERROR, keeping
 * G_IO_ERROR_CANCELLED as it is so callers can tell a cancel apart.  A
 * connection lost before the response (@in_body FALSE) is a network error;
 * lost while reading the body, the answer was truncated. */
void _ts_market_error_from_transport (GError **error, const GError *transport,
                                      gboolean in_body);
/* Turns an HTTP error status (and its JSON body, if any) into a GError. */
void _ts_market_error_from_status (GError **error, guint status, const char *body, gsize len);

/* The response's Content-Length, or -1 when the body is not length-delimited.
 * libsoup may report a connection closed early as a clean end of body, so
 * readers compare what they got with this. */
goffset _ts_market_content_length (SoupMessage *msg);

/* Reads the next 64 KiB chunk of @in with @task's cancellable, handing the
 * task reference to @callback (argument order in C is unspecified, so callers
 * must not fetch the cancellable and steal the task in one call). */
void _ts_market_read_next (GInputStream *in, GAsyncReadyCallback callback, GTask *task);

/* ts-market-cache.c: the last good JSON answer per request path, in @dir
 * (NULL: caching off).  Store failures are ignored (the cache is a convenience). */
void _ts_market_cache_store (const char *dir, const char *path, JsonNode *node);
/* Returns a new node, or NULL when nothing usable is cached. */
JsonNode *_ts_market_cache_load (const char *dir, const char *path);

G_END_DECLS
