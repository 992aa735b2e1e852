/* ts-key-vault.h: the CKKS key kept on this desktop: generate, unlock, rotate, delete.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsKeyVault manages one key file, key.tskey, in a folder (by default
 * $XDG_DATA_HOME/tensafe/keys/, created 0700; the file is 0600 and always
 * replaced atomically, see ts-key-file.h). It knows the key's public facts
 * from the file alone (fingerprint, creation date, preset) and holds the
 * secret key in memory only while unlocked.
 *
 * How the rest of the application gets the key: the application owns one
 * vault (ts_application_get_key_vault()). Watch its "state" and
 * "fingerprint" properties (notify::) to show the key's status; while the
 * state is TS_KEY_STATE_UNLOCKED, ts_key_vault_get_key_pair() returns the
 * CKKS context, secret and public key (transfer none, valid until the next
 * state change: take what you need on the main thread, and do not keep the
 * pointer across a notify::state). To encrypt with it in a TsHeloraSession
 * on a worker thread, hand it over sealed: ts_key_pair_seal_for_handover()
 * gives the sealed bytes and a one-time key for TsHeloraOptions.sealed_key /
 * unseal_key (params_preset = the pair's preset). The secret key is never
 * displayed, logged or exported by the vault.
 *
 * Threads: the object is main-thread only. The slow operations (scrypt,
 * key generation) run on a worker thread through the _async/_finish pairs;
 * _finish applies the result to the vault and must be called (from the
 * callback) for the vault to change. One operation at a time: "busy" is TRUE
 * meanwhile and another call fails with G_IO_ERROR_BUSY. "progress" moves
 * from 0 to 1 during an operation.
 */
#pragma once

#include <gio/gio.h>

#include "ts-key-file.h"
#include "ts-key-pair.h"

G_BEGIN_DECLS

typedef enum {
  TS_KEY_STATE_NONE,      /* no key file */
  TS_KEY_STATE_LOCKED,    /* a sealed key, not unlocked */
  TS_KEY_STATE_UNLOCKED,  /* the secret key is in memory */
  TS_KEY_STATE_DAMAGED,   /* a key file that cannot be read (see "problem") */
} TsKeyState;

GType ts_key_state_get_type (void);
#define TS_TYPE_KEY_STATE (ts_key_state_get_type ())

#define TS_TYPE_KEY_VAULT (ts_key_vault_get_type ())
G_DECLARE_FINAL_TYPE (TsKeyVault, ts_key_vault, TS, KEY_VAULT, GObject)

/* @directory: the key folder, or NULL for the default. Reads the key file
 * (ts_key_vault_reload) at once. */
TsKeyVault *ts_key_vault_new (const char *directory);

/* $XDG_DATA_HOME/tensafe/keys (newly allocated). */
char *ts_key_vault_default_directory (void);

const char *ts_key_vault_get_path (TsKeyVault *self);
TsKeyState ts_key_vault_get_state (TsKeyVault *self);
/* Grouped hex SHA-256 of parameters and public key; NULL without a key. */
const char *ts_key_vault_get_fingerprint (TsKeyVault *self);
/* Creation time (local time zone); NULL without a key. */
GDateTime *ts_key_vault_get_created (TsKeyVault *self);
/* CKKS preset name of the key; NULL without a key. */
const char *ts_key_vault_get_preset (TsKeyVault *self);
/* Why the file could not be read, in the DAMAGED state; else NULL. */
const char *ts_key_vault_get_problem (TsKeyVault *self);
gboolean ts_key_vault_get_busy (TsKeyVault *self);
double ts_key_vault_get_progress (TsKeyVault *self);
/* The unlocked key (transfer none), NULL unless UNLOCKED. See above. */
const TsKeyPair *ts_key_vault_get_key_pair (TsKeyVault *self);

/* Sets the KDF cost for keys sealed from now on (tests use a cheap one). */
void ts_key_vault_set_kdf (TsKeyVault *self, const TsScryptParams *kdf);

/* Re-reads the file: NONE, LOCKED or DAMAGED (an unlocked key is dropped
 * unless the file still holds the same key). */
void ts_key_vault_reload (TsKeyVault *self);

/* Forgets the secret key (wiped); the state goes back to LOCKED. */
void ts_key_vault_lock (TsKeyVault *self);

/* Generates a key for @preset, seals it under @passphrase and writes it.
 * Fails with G_IO_ERROR_EXISTS when a key exists (rotate or delete it). */
void ts_key_vault_generate_async (TsKeyVault *self, const char *preset, const char *passphrase,
                                  GCancellable *cancellable, GAsyncReadyCallback callback,
                                  gpointer user_data);
gboolean ts_key_vault_generate_finish (TsKeyVault *self, GAsyncResult *result, GError **error);

/* Opens the sealed key. A wrong passphrase fails with
 * TS_KEY_ERROR_WRONG_PASSPHRASE and changes nothing. */
void ts_key_vault_unlock_async (TsKeyVault *self, const char *passphrase,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data);
gboolean ts_key_vault_unlock_finish (TsKeyVault *self, GAsyncResult *result, GError **error);

/* Reseals the same key under @new_passphrase; @old_passphrase must open it.
 * The key is unlocked afterwards. */
void ts_key_vault_change_passphrase_async (TsKeyVault *self, const char *old_passphrase,
                                           const char *new_passphrase,
                                           GCancellable *cancellable,
                                           GAsyncReadyCallback callback, gpointer user_data);
gboolean ts_key_vault_change_passphrase_finish (TsKeyVault *self, GAsyncResult *result,
                                                GError **error);

/* Replaces the key with a new one of the same preset sealed under the same
 * @passphrase (which must open the current one). The old file stays in
 * place until the new one is completely written. */
void ts_key_vault_rotate_async (TsKeyVault *self, const char *passphrase,
                                GCancellable *cancellable, GAsyncReadyCallback callback,
                                gpointer user_data);
gboolean ts_key_vault_rotate_finish (TsKeyVault *self, GAsyncResult *result, GError **error);

/* Deletes the key file and forgets the key. */
gboolean ts_key_vault_delete (TsKeyVault *self, GError **error);

/* Writes the public part (ts_key_file_export_public) to @path atomically. */
gboolean ts_key_vault_export_public (TsKeyVault *self, const char *path, GError **error);

G_END_DECLS
