/* ts-market-download.h: resumable HTTP(S) downloads with SHA-256 checks (adapters and models).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-market-client.h"

G_BEGIN_DECLS

/* Downloads @url to @dest_path.  Bytes land in "@dest_path.part" (with the
 * ETag kept in "@dest_path.part.json"); a later call for the same URL resumes
 * with Range + If-Range, rehashing what is already there on a worker thread.
 * When the body is complete and matches @expected_sha256 (if not NULL) and
 * @expected_size (if ≥ 0), the part file is renamed to @dest_path.
 *
 * Errors: G_IO_ERROR_CANCELLED (the part is kept for resuming),
 * TS_MARKET_ERROR_TRUNCATED (ended early; kept), TS_MARKET_ERROR_CHECKSUM
 * (wrong hash or too many bytes; the part is deleted), TS_MARKET_ERROR_NETWORK,
 * _NOT_FOUND, _SERVER, _IO.  @progress runs on the caller's main context. */
void ts_market_download_async (SoupSession *session, const char *url, const char *dest_path,
                               const char *expected_sha256, gint64 expected_size,
                               TsMarketProgressFunc progress, gpointer progress_data,
                               GDestroyNotify progress_destroy, GCancellable *cancellable,
                               GAsyncReadyCallback callback, gpointer user_data);
/* Returns the SHA-256 (hex, newly allocated) of the finished file; the number
 * of bytes reused from an earlier attempt goes to @resumed_from. */
char *ts_market_download_finish (GAsyncResult *result, gint64 *resumed_from, GError **error);

/* The URL of @file in a Hugging Face-style repository:
 * "@endpoint/@repo/resolve/@revision/@file" (revision "main" when NULL). */
char *ts_market_hf_resolve_url (const char *endpoint, const char *repo, const char *revision,
                                const char *file);

/* Downloads a base model (GGUF) from a plain HTTPS or …/resolve/main/FILE
 * URL into @dest_path with the client's session; see ts_market_download_async. */
void ts_market_client_download_model_async (TsMarketClient *self, const char *url,
                                            const char *dest_path,
                                            const char *expected_sha256,
                                            TsMarketProgressFunc progress,
                                            gpointer progress_data,
                                            GDestroyNotify progress_destroy,
                                            GCancellable *cancellable,
                                            GAsyncReadyCallback callback, gpointer user_data);
char *ts_market_client_download_model_finish (TsMarketClient *self, GAsyncResult *result,
                                              GError **error);

G_END_DECLS
