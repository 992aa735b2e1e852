/* ts-keys-page.h: the keys page: the CKKS keys kept on this desktop.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. Shows "not available yet" until the feature lands.
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

#define TS_TYPE_KEYS_PAGE (ts_keys_page_get_type ())
G_DECLARE_FINAL_TYPE (TsKeysPage, ts_keys_page, TS, KEYS_PAGE, AdwBin)

G_END_DECLS
