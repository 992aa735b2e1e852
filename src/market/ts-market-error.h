/* ts-market-error.h: the TS_MARKET_ERROR domain shared by the marketplace client and server.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TS_MARKET_ERROR (ts_market_error_quark ())

typedef enum
{
  TS_MARKET_ERROR_NETWORK,       /* connection refused, dropped or timed out */
  TS_MARKET_ERROR_SERVER,        /* the server answered an error status */
  TS_MARKET_ERROR_NOT_FOUND,     /* 404 from the server */
  TS_MARKET_ERROR_UNAUTHORIZED,  /* 401/403: missing or bad bearer token */
  TS_MARKET_ERROR_PROTOCOL,      /* malformed JSON or an answer of the wrong shape */
  TS_MARKET_ERROR_TOO_LARGE,     /* an answer or request over the size limit */
  TS_MARKET_ERROR_CHECKSUM,      /* a file's SHA-256 or size does not match */
  TS_MARKET_ERROR_TRUNCATED,     /* a download ended early */
  TS_MARKET_ERROR_SIGNATURE,     /* a release signature does not verify */
  TS_MARKET_ERROR_UNKNOWN_KEY,   /* signed by a key that is not pinned */
  TS_MARKET_ERROR_INVALID,       /* bad argument, metadata or file name */
  TS_MARKET_ERROR_IO,            /* local disk error */
} TsMarketError;

GQuark ts_market_error_quark (void);

G_END_DECLS
