/* ts-market-details.h: one marketplace adapter in full: install, remove, use in chat, reduce rank.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only.  Shows description, publisher and whether its key is
 * pinned, versions, base model and hash, rank, alpha, target modules, the
 * files with sizes and SHA-256, price, license and the signature status.
 *
 * Actions (on the widget, so tests drive them with gtk_widget_activate_action):
 *   details.install      verify and install the latest version; on a first
 *                        install asks to trust the publisher's key
 *                        (ts-market-trust.h).  After a cancel or a failure,
 *                        the next install resumes the partial downloads.
 *   details.cancel       cancel the install in progress
 *   details.remove       remove the installed copy (after asking)
 *   details.use-in-chat  emit "use-in-chat"
 *   details.reduce       open the "Reduce Rank" dialog (ts-reduce-dialog.h) for
 *                        the installed copy; the new adapter it makes goes
 *                        into the same folder of adapters ("installed-changed")
 *   details.back         emit "back"
 *
 * Signals:
 *   back ()                               the user leaves the details
 *   installed-changed ()                  adapters/<id>/ appeared or went away
 *   use-in-chat (char *id, char *path)    the user picked this installed adapter
 */
#pragma once

#include <adwaita.h>

#include "ts-market-client.h"
#include "ts-market-keyring.h"

G_BEGIN_DECLS

#define TS_TYPE_MARKET_DETAILS (ts_market_details_get_type ())
G_DECLARE_FINAL_TYPE (TsMarketDetails, ts_market_details, TS, MARKET_DETAILS, AdwBin)

/* What the details work with: the client, the pinned keys and the folder
 * installs go to (all kept by reference/copy).  Set before loading. */
void ts_market_details_set_context (TsMarketDetails *self, TsMarketClient *client,
                                    TsMarketKeyring *keyring, const char *adapters_dir);

/* Fetches adapter @id (with its versions and files) and shows it; a load in
 * flight is cancelled.  The "adapter" property changes when it arrives.  An
 * adapter made on this computer (a local release in adapters/<id>/, such as
 * a rank reduction) is shown at once from its metadata.json instead, with
 * what it was reduced from; it has nothing to install. */
void ts_market_details_load (TsMarketDetails *self, const char *id);
/* The adapter shown (borrowed), or NULL while loading or after an error. */
TsMarketAdapter *ts_market_details_get_adapter (TsMarketDetails *self);

/* Property "installing": TRUE while an install runs.  "progress": its
 * fraction, 0 … 1.  "installed": adapters/<id>/ holds a release. */
gboolean ts_market_details_get_installing (TsMarketDetails *self);
double ts_market_details_get_progress (TsMarketDetails *self);
gboolean ts_market_details_get_installed (TsMarketDetails *self);

G_END_DECLS
