/* ts-market-page.h: the marketplace page: browse and install LoRA adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. Shows "not available yet" until the feature lands.
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define TS_TYPE_MARKET_PAGE (ts_market_page_get_type ())
G_DECLARE_FINAL_TYPE (TsMarketPage, ts_market_page, TS, MARKET_PAGE, AdwBin)

G_END_DECLS
