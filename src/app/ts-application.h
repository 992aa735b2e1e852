/* ts-application.h: the TenSafe application object (org.tensafe.Desktop).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Main-thread only, like every GTK object.
 */
#pragma once

#include <adwaita.h>

#include "ts-key-vault.h"
#include "ts-settings.h"

G_BEGIN_DECLS

#define TS_TYPE_APPLICATION (ts_application_get_type ())
G_DECLARE_FINAL_TYPE (TsApplication, ts_application, TS, APPLICATION, AdwApplication)

/* Creates the application; tests pass G_APPLICATION_NON_UNIQUE so they need
 * no session bus. Registers the compiled resources on first use. */
TsApplication *ts_application_new (GApplicationFlags flags);

/* The org.tensafe.Desktop settings (transfer none; made on first call),
 * shared by every window and page. Without the installed schema (an
 * uninstalled build run without GSETTINGS_SCHEMA_DIR) they hold the
 * defaults and keep nothing (ts_settings_is_kept()). */
TsSettings *ts_application_get_settings (TsApplication *self);

/* The CKKS key kept on this desktop (transfer none; made on first call,
 * reading $XDG_DATA_HOME/tensafe/keys/). Pages that need the key watch its
 * "state" and "fingerprint" properties and take the unlocked key with
 * ts_key_vault_get_key_pair(); see ts-key-vault.h. */
TsKeyVault *ts_application_get_key_vault (TsApplication *self);

/* The model and adapter given with --model / --adapter on the command line
 * (transfer none; NULL when not given): the chat loads them instead of the
 * demo model. Also settable, for the window of a test. */
const char *ts_application_get_start_model (TsApplication *self, const char **adapter_out);
void ts_application_set_start_model (TsApplication *self, const char *model, const char *adapter);

G_END_DECLS
