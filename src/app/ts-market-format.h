/* ts-market-format.h: small helpers of the marketplace views: readable values, folders.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Plain functions returning newly allocated, translated strings; callable
 * from any thread.
 */
#pragma once

#include <gtk/gtk.h>

#include "ts-market-types.h"

G_BEGIN_DECLS

/* "Free" or "0.02 per 1k tokens". */
char *ts_market_format_price (double price_per_1k_tokens);
/* "Rank 8 · α 16". */
char *ts_market_format_rank (gint64 rank, double alpha);
/* "o_proj, out_proj", or "—" when there are none. */
char *ts_market_format_modules (const char * const *modules);
/* A public key's fingerprint for people: the base64 key in groups of four,
 * so it can be compared by eye with what the publisher announces. */
char *ts_market_format_fingerprint (const char *public_key_b64);

/* Creates the folder holding @path (mode 0700) if it is missing: files are
 * written there atomically, through a temporary file beside them.  Folders
 * are made only when something is written, so merely showing the page
 * leaves the disk alone. */
void ts_market_ensure_parent_dir (const char *path);

/* The file the marketplace page pins publishers' keys into:
 * $XDG_DATA_HOME/tensafe/market-keyring.json (newly allocated). */
char *ts_market_keyring_path (void);

G_END_DECLS
