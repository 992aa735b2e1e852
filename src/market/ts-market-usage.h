/* ts-market-usage.h: usage metering — queued, batched, retried, recorded exactly once.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-market-client.h"

G_BEGIN_DECLS

#define TS_TYPE_MARKET_USAGE (ts_market_usage_get_type ())
G_DECLARE_FINAL_TYPE (TsMarketUsage, ts_market_usage, TS, MARKET_USAGE, GObject)

/* A reporter that POSTs /v1/usage with @token as bearer.  Each record gets a
 * random idempotency key when it is queued, and keeps it through every retry,
 * so the server counts it once however often it is sent.  With @queue_path the
 * queue is saved (atomically, 0600) on every change and reloaded by
 * ts_market_usage_load(), so records survive a restart.  Use it from the thread
 * whose main context it was created on; nothing it does blocks that thread. */
TsMarketUsage *ts_market_usage_new (TsMarketClient *client, const char *token,
                                    const char *queue_path);
gboolean ts_market_usage_load (TsMarketUsage *self, GError **error);

/* Queues one record (say, after a chat turn) and schedules a send after the
 * batch delay; returns its idempotency key (newly allocated). */
char *ts_market_usage_record (TsMarketUsage *self, const char *adapter, const char *version,
                              gint64 tokens);
/* Number of records not yet acknowledged by the server ("pending" property). */
guint ts_market_usage_get_pending (TsMarketUsage *self);

/* Timing: wait @batch_delay_ms after a record before sending, and retry
 * failures after @retry_base_ms doubling up to @retry_max_ms.  Defaults:
 * 2 s, 1 s, 5 min. */
void ts_market_usage_set_timing (TsMarketUsage *self, guint batch_delay_ms,
                                 guint retry_base_ms, guint retry_max_ms);

/* Sends everything queued now, batch by batch.  TRUE when the queue is empty;
 * otherwise the error of the failed batch (its records stay queued and the
 * automatic retry stays scheduled). */
void ts_market_usage_flush_async (TsMarketUsage *self, GCancellable *cancellable,
                                  GAsyncReadyCallback callback, gpointer user_data);
gboolean ts_market_usage_flush_finish (TsMarketUsage *self, GAsyncResult *result,
                                       GError **error);

G_END_DECLS
