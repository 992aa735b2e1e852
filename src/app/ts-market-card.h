/* ts-market-card.h: one adapter of the marketplace catalogue, as a card in the grid.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only.  Shows name, publisher, rank, base model, price, license
 * and an "Installed" badge (property "installed").
 */
#pragma once

#include <adwaita.h>

#include "ts-market-types.h"

G_BEGIN_DECLS

#define TS_TYPE_MARKET_CARD (ts_market_card_get_type ())
G_DECLARE_FINAL_TYPE (TsMarketCard, ts_market_card, TS, MARKET_CARD, AdwBin)

/* A card for @adapter (the card keeps a reference). */
GtkWidget *ts_market_card_new (TsMarketAdapter *adapter);
/* The adapter shown (borrowed). */
TsMarketAdapter *ts_market_card_get_adapter (TsMarketCard *self);

gboolean ts_market_card_get_installed (TsMarketCard *self);
void ts_market_card_set_installed (TsMarketCard *self, gboolean installed);

G_END_DECLS
