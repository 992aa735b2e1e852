/* ts-marketplace-page-private.h: the marketplace page's parts, for tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-market-details.h"
#include "ts-market-usage.h"
#include "ts-marketplace-page.h"

G_BEGIN_DECLS

GtkEditable *_ts_marketplace_page_get_search_entry (TsMarketplacePage *self);
GtkFlowBox *_ts_marketplace_page_get_grid (TsMarketplacePage *self);
GtkListBox *_ts_marketplace_page_get_installed_list (TsMarketplacePage *self);
TsMarketDetails *_ts_marketplace_page_get_details (TsMarketplacePage *self);
GtkRevealer *_ts_marketplace_page_get_banner (TsMarketplacePage *self);
/* The filter menu @name: "base-model", "rank", "license", "price" or "sort". */
GtkDropDown *_ts_marketplace_page_get_filter (TsMarketplacePage *self, const char *name);
/* The usage reporter behind ts_marketplace_page_report_usage() (borrowed;
 * made on first use). */
TsMarketUsage *_ts_marketplace_page_get_usage (TsMarketplacePage *self);
/* Cards asked for per request (0: the server's default). */
void _ts_marketplace_page_set_page_size (TsMarketplacePage *self, guint page_size);
/* TRUE until the catalogue was asked for and answered (or failed), and
 * while a newer search waits or runs. */
gboolean _ts_marketplace_page_get_busy (TsMarketplacePage *self);

G_END_DECLS
