/* ts-key-pair.h: an unlocked CKKS key pair in memory, and sealing it into a key file.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsKeyPair owns a CKKS context, the secret key and the public key. Freeing
 * it wipes the secret key (ckks_secret_key_free uses OPENSSL_cleanse). The
 * pair is read-only once made and may be shared between threads for
 * encryption and decryption; freeing must wait until no thread uses it.
 *
 * The functions here block (scrypt, key generation): call them from a
 * worker thread in a GUI. Each reports progress through an optional callback
 * called on the calling thread with a fraction in [0, 1].
 */
#pragma once

#include "ts-key-file.h"

G_BEGIN_DECLS

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  CkksPublicKey *pk;
  char *preset;
} TsKeyPair;

typedef void (*TsKeyProgressFunc) (double fraction, gpointer user_data);

void ts_key_pair_free (TsKeyPair *pair);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsKeyPair, ts_key_pair_free)

/* A fresh key pair for the CKKS preset @preset ("fast", "default", "wide"). */
TsKeyPair *ts_key_pair_generate (const char *preset, TsKeyProgressFunc progress,
                                 gpointer user_data, GError **error);

/* Seals @pair under @passphrase (non-empty) with a fresh random salt and the
 * KDF cost @kdf (NULL: ts_scrypt_default); @created in Unix seconds. */
TsKeyFile *ts_key_pair_seal (const TsKeyPair *pair, const char *passphrase,
                             const TsScryptParams *kdf, gint64 created,
                             TsKeyProgressFunc progress, gpointer user_data, GError **error);

/* Opens @file with @passphrase: TS_KEY_ERROR_WRONG_PASSPHRASE when the tag
 * fails, TS_KEY_ERROR_CORRUPT when its public parts are inconsistent. */
TsKeyPair *ts_key_file_unlock (const TsKeyFile *file, const char *passphrase,
                               TsKeyProgressFunc progress, gpointer user_data, GError **error);

/* Hands the secret key to a TsHeloraSession without the passphrase: seals
 * it under a fresh random 256-bit key written to @key_out. Pass the result
 * as TsHeloraOptions.sealed_key / sealed_key_len and @key_out as
 * unseal_key (with params_preset = pair->preset), then wipe @key_out with
 * OPENSSL_cleanse. The returned bytes are ciphertext (transfer full). */
GBytes *ts_key_pair_seal_for_handover (const TsKeyPair *pair, guint8 key_out[32],
                                       GError **error);

G_END_DECLS
