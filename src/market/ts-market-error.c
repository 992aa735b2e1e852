/* ts-market-error.c: the TS_MARKET_ERROR quark.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-market-error.h"

G_DEFINE_QUARK (ts-market-error-quark, ts_market_error)
