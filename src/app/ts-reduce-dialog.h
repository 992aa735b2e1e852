/* ts-reduce-dialog.h: the "Reduce Rank" dialog: a lower-rank copy of an installed adapter.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only.  Asks for the target rank (1 … the adapter's rank − 1,
 * half of it by default), the new adapter's name ("<id>-r<rank>" until the
 * user types one) and the folder it goes to (the adapter store by default),
 * asks before replacing an adapter of that name, then runs
 * ts_adapter_reduce() on a worker thread with per-module progress and a
 * Cancel button.  The result page lists what each module kept of its squared
 * Frobenius norm (smallest, mean, and every module) and the size saved.
 * Errors are shown in the dialog; a failure or cancel leaves nothing
 * written.  Closing the dialog cancels a reduction under way.
 *
 * Actions (on the dialog): reduce.start, reduce.cancel (cancels a run, or
 * closes), reduce.choose-location, reduce.use-in-chat.
 *
 * Signals:
 *   reduced (char *id, char *path)      a new adapter folder is in place
 *   use-in-chat (char *id, char *path)  the user wants it in the chat (only
 *                                       for adapters saved in the store)
 */
#pragma once

#include <adwaita.h>

#include "ts-market-types.h"

G_BEGIN_DECLS

#define TS_TYPE_REDUCE_DIALOG (ts_reduce_dialog_get_type ())
G_DECLARE_FINAL_TYPE (TsReduceDialog, ts_reduce_dialog, TS, REDUCE_DIALOG, AdwWindow)

/* Shows the dialog over @parent's window for the installed adapter in the
 * folder @source of the store @adapters_dir.  @catalogue: the adapter's
 * catalogue record (its name and metadata), or NULL for an adapter made on
 * this computer (its metadata.json says).  The adapter's shape is read at
 * once (headers only); an unreadable adapter is explained in the dialog. */
TsReduceDialog *ts_reduce_dialog_present (GtkWidget *parent, const char *source,
                                          const char *adapters_dir, TsMarketAdapter *catalogue);

/* TRUE while a reduction runs. */
gboolean ts_reduce_dialog_get_busy (TsReduceDialog *self);

G_END_DECLS
