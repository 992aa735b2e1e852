/* ts-models-http.h: one file over HTTP(S), resumed with Range after an interruption.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <libsoup/soup.h>

#include "ts-models-progress.h"

G_BEGIN_DECLS

/* A session for model downloads: a product user agent, no transfer
 * compression (digests are of the bytes as stored), a 60 s idle timeout. */
SoupSession *ts_models_session_new (void);

/* Downloads @url into @part_path. Bytes already there from an earlier
 * attempt are kept and the rest asked for with "Range: bytes=N-"; a server
 * that answers 200 instead makes the file start over. With @expected_size
 * (-1: unknown) a file already that long needs no request, and a longer one
 * or a server announcing another length is refused (TS_MODELS_ERROR_CHECKSUM,
 * the part removed). A dropped connection or short body is retried, after a
 * pause of 0.5 s times the attempts so far, up to
 * @attempts times in all, each resuming where the last stopped; after that
 * the part is kept for the next call (TS_MODELS_ERROR_NETWORK or _TRUNCATED).
 * Cancelling gives G_IO_ERROR_CANCELLED and keeps the part. The server's
 * ETag (else Last-Modified) is kept in "@part_path.etag" and sent as
 * If-Range, so that a file changed upstream starts over instead of
 * continuing with another file's bytes. */
gboolean ts_models_http_fetch (SoupSession *session, const char *url, const char *part_path,
                               gint64 expected_size, guint attempts, TsModelsMeter *meter,
                               GCancellable *cancellable, GError **error);

/* Removes @part_path and its validator file. */
void ts_models_http_discard (const char *part_path);

G_END_DECLS
