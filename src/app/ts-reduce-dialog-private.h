/* ts-reduce-dialog-private.h: the reduce dialog's parts, for tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-adapter-reduce.h"
#include "ts-reduce-dialog.h"

G_BEGIN_DECLS

GtkSpinButton *_ts_reduce_dialog_get_rank_spin (TsReduceDialog *self);
GtkEditable *_ts_reduce_dialog_get_name_entry (TsReduceDialog *self);
/* As the folder chooser sets it. */
void _ts_reduce_dialog_set_location (TsReduceDialog *self, const char *folder);
/* "setup", "running", "done" or "problem". */
const char *_ts_reduce_dialog_get_page (TsReduceDialog *self);
/* The error shown on the setup page, or NULL. */
const char *_ts_reduce_dialog_get_error (TsReduceDialog *self);
/* The last reduction's outcome (borrowed), or NULL. */
const TsAdapterReduction *_ts_reduce_dialog_get_result (TsReduceDialog *self);
/* The result page's list of modules. */
GtkWidget *_ts_reduce_dialog_get_modules_group (TsReduceDialog *self);

G_END_DECLS
