/* ts-keys-page.h: the keys page: the CKKS key kept on this desktop.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only. Shows the state of a TsKeyVault (fingerprint, creation
 * date, parameters, locked or not) and drives it: generate, unlock, lock,
 * change passphrase, rotate, delete, export the public part. Long operations
 * run on the vault's worker thread with a progress bar; failures are toasts.
 * With a sealed key present, the page asks for the passphrase once it is
 * shown in a window (an AdwMessageDialog).
 */
#pragma once

#include <adwaita.h>

#include "ts-key-vault.h"
#include "ts-settings.h"

G_BEGIN_DECLS

#define TS_TYPE_KEYS_PAGE (ts_keys_page_get_type ())
G_DECLARE_FINAL_TYPE (TsKeysPage, ts_keys_page, TS, KEYS_PAGE, AdwBin)

/* The vault the page shows (the application's); NULL shows nothing. */
void ts_keys_page_set_vault (TsKeysPage *self, TsKeyVault *vault);
TsKeyVault *ts_keys_page_get_vault (TsKeysPage *self);
/* A page over the application's @settings (referenced; the construct-only
 * property "settings", which the page requires): the preset a new key
 * starts on. */
GtkWidget *ts_keys_page_new (TsSettings *settings);

G_END_DECLS
