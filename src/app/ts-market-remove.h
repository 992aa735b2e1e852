/* ts-market-remove.h: asks before an installed adapter is deleted.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Removing deletes the adapter's files and cannot be undone: the
 * marketplace page and the details dialog both ask first, as deleting a
 * conversation does.
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

G_BEGIN_DECLS

/* Called when the user confirmed removing the adapter @id. */
typedef void (*TsMarketRemoveFunc) (GtkWidget *owner, const char *id);

/* Asks (over @owner's window) whether to remove the installed adapter @id,
 * shown as @name; "Remove" calls @remove with @owner and @id, unless
 * @owner is gone by then. */
void ts_market_confirm_remove (GtkWidget *owner, const char *id, const char *name,
                               TsMarketRemoveFunc remove);

G_END_DECLS
