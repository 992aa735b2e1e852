/* ts-keys-page-private.h: what the GUI tests reach inside the keys page.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-keys-page.h"

G_BEGIN_DECLS

/* The dialog the page has open (transfer none), or NULL. */
AdwMessageDialog *_ts_keys_page_get_dialog (TsKeysPage *self);
/* The @index-th passphrase entry of a dialog of the page. */
GtkEditable *_ts_keys_page_dialog_entry (AdwMessageDialog *dialog, guint index);
/* Title of the last toast the page showed, or NULL. */
const char *_ts_keys_page_get_last_toast (TsKeysPage *self);
/* The subtitle of a row of the key view: "status", "fingerprint", "created". */
const char *_ts_keys_page_get_row_text (TsKeysPage *self, const char *row);
/* The name of the visible view: "none", "key" or "damaged". */
const char *_ts_keys_page_get_view (TsKeysPage *self);

G_END_DECLS
