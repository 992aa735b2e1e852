/* ts-market-trust.h: asking the user to trust (pin) a publisher's signing key on first install.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

#include "ts-market-client.h"
#include "ts-market-keyring.h"

G_BEGIN_DECLS

/* Response ids of the trust dialog (an AdwMessageDialog). */
#define TS_MARKET_TRUST_RESPONSE_TRUST  "trust"
#define TS_MARKET_TRUST_RESPONSE_CANCEL "cancel"

/* Fetches @publisher_id's keys from the marketplace, shows the fingerprint of
 * @key_id in an AdwMessageDialog over @parent's window, and pins the key in
 * @keyring when the user answers TS_MARKET_TRUST_RESPONSE_TRUST.  A key the
 * publisher does not list, or lists as revoked, is refused without asking
 * (TS_MARKET_ERROR_UNKNOWN_KEY).  @parent is kept alive until the answer. */
void ts_market_trust_key_async (GtkWidget *parent, TsMarketClient *client,
                                TsMarketKeyring *keyring, const char *publisher_id,
                                const char *publisher_name, const char *key_id,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data);
/* TRUE when the key is now pinned; FALSE with G_IO_ERROR_CANCELLED when the
 * user declined, or another error. */
gboolean ts_market_trust_key_finish (GAsyncResult *result, GError **error);

G_END_DECLS
