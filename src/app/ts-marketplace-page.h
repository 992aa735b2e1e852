/* ts-marketplace-page.h: the marketplace page: browse, verify, install and pick LoRA adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only.  (Named "Marketplace" because TsMarketPage is the
 * core's page of search results, ts-market-types.h.)
 *
 * Marketplace address: the setting "marketplace-url" (TsSettings, bound to
 * the property of the same name), or the
 * environment variable TENSAFE_MARKETPLACE_URL, which wins (used by `make
 * market-demo`).
 *
 * Files: adapters go to $XDG_DATA_HOME/tensafe/adapters/<id>/, pinned
 * publisher keys to $XDG_DATA_HOME/tensafe/market-keyring.json, queued usage
 * records to $XDG_DATA_HOME/tensafe/market-usage.json, the last catalogue
 * answers (browsable offline) to $XDG_CACHE_HOME/tensafe/market/<address
 * hash>/, one cache per marketplace.
 *
 * Nothing is fetched until the page is first shown.  When the marketplace
 * cannot be reached a banner says so (property "offline") and the cached
 * catalogue stays browsable.
 *
 * For the chat page:
 *   signal "use-in-chat" (char *id, char *path): the user picked an installed
 *     adapter; @path is its folder (adapters/<id>/, a PEFT adapter with a
 *     verified tensafe-release.json).  Call ts_market_verify_installed()
 *     before loading it.  The page then asks the window to show the chat
 *     (win.show-page "chat").
 *   ts_marketplace_page_report_usage(): meter one chat turn that used a
 *     marketplace adapter (queued, batched, retried; never blocks).  The
 *     bearer token comes from TENSAFE_MARKET_TOKEN or the first line of
 *     $XDG_CONFIG_HOME/tensafe/market-token.
 */
#pragma once

#include <adwaita.h>

#include "ts-settings.h"

G_BEGIN_DECLS

#define TS_TYPE_MARKETPLACE_PAGE (ts_marketplace_page_get_type ())
G_DECLARE_FINAL_TYPE (TsMarketplacePage, ts_marketplace_page, TS, MARKETPLACE_PAGE, AdwBin)

/* A page over the application's @settings (referenced; the construct-only
 * property "settings", which the page requires). */
GtkWidget *ts_marketplace_page_new (TsSettings *settings);
const char *ts_marketplace_page_get_marketplace_url (TsMarketplacePage *self);
void ts_marketplace_page_set_marketplace_url (TsMarketplacePage *self, const char *url);
gboolean ts_marketplace_page_get_offline (TsMarketplacePage *self);

/* The folder adapters are installed into (owned by the page). */
const char *ts_marketplace_page_get_adapters_dir (TsMarketplacePage *self);

/* Queues a usage record: @tokens generated with installed adapter @id at
 * @version.  Returns at once. */
void ts_marketplace_page_report_usage (TsMarketplacePage *self, const char *id, const char *version,
                                  gint64 tokens);

/* Filters the catalogue by the base model the chat has loaded (its file
 * name without .gguf, as adapters name it in their base_model); the user
 * can widen the filter again. */
void ts_marketplace_page_set_loaded_model (TsMarketplacePage *self, const char *base_model);

G_END_DECLS
