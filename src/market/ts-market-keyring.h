/* ts-market-keyring.h: publisher keys the user trusts (pinned), and release signature checks.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

#include "ts-market-manifest.h"
#include "ts-signing.h"

G_BEGIN_DECLS

#define TS_TYPE_MARKET_KEYRING (ts_market_keyring_get_type ())
G_DECLARE_FINAL_TYPE (TsMarketKeyring, ts_market_keyring, TS, MARKET_KEYRING, GObject)

/* A keyring stored in @path (JSON, written atomically, mode 0600), or held in
 * memory only when @path is NULL.  Not thread-safe: use it from one thread. */
TsMarketKeyring *ts_market_keyring_new (const char *path);
/* Reads @path; a missing file is an empty keyring. */
gboolean ts_market_keyring_load (TsMarketKeyring *self, GError **error);

/* Trusts @public_key_b64 for @publisher.  @key_id must be the key's own id
 * (see ts_signing_key_get_id), so a server cannot pin one key under the name of
 * another.  Saves the keyring when it has a path. */
gboolean ts_market_keyring_pin (TsMarketKeyring *self, const char *publisher,
                                const char *key_id, const char *public_key_b64,
                                GError **error);
gboolean ts_market_keyring_unpin (TsMarketKeyring *self, const char *publisher,
                                  const char *key_id, GError **error);
gboolean ts_market_keyring_is_pinned (TsMarketKeyring *self, const char *publisher,
                                      const char *key_id);

/* Checks @signature_b64 over the canonical form of @manifest with the key
 * @key_id pinned for manifest->publisher.  Fails with
 * TS_MARKET_ERROR_UNKNOWN_KEY when that key is not pinned for that publisher,
 * TS_MARKET_ERROR_SIGNATURE when it does not verify. */
gboolean ts_market_keyring_verify (TsMarketKeyring *self, TsMarketManifest *manifest,
                                   const char *key_id, const char *signature_b64,
                                   GError **error);

G_END_DECLS
