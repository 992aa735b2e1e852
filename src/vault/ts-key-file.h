/* ts-key-file.h: the sealed CKKS key file: format and passphrase KDF.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A key file holds one CKKS key pair for one parameter set. Layout (integers
 * little-endian, version 1):
 *
 *   "TSKV" | u16 version | u16 0 | u32 kdf id (1 = scrypt) | u32 log2 N |
 *   u32 r | u32 p | salt[32] | i64 creation time (Unix seconds, UTC) |
 *   u32 len + preset name | u32 len + serialised CkksParams |
 *   u32 len + serialised CkksPublicKey | u32 len + sealed secret key |
 *   SHA-256 of every byte before it
 *
 * The secret key is only ever stored sealed (ckks_secret_key_seal, AES-256-GCM)
 * under a 256-bit key derived from the passphrase with scrypt and the file's
 * salt. The trailing SHA-256 tells a damaged file (TS_KEY_ERROR_CORRUPT, no
 * passphrase tried) from a wrong passphrase (TS_KEY_ERROR_WRONG_PASSPHRASE:
 * the GCM tag fails although the file is intact); a file edited on purpose
 * with a fixed-up checksum still fails the tag. Parsing checks every length
 * against the bytes present and refuses KDF costs outside sane bounds.
 *
 * The fingerprint of a key is the SHA-256 of its serialised parameters
 * followed by its serialised public key: public, it names the key pair.
 *
 * Everything here is plain data and blocking calls, safe from any thread on
 * distinct objects. Buffers that held a derived key or secret-key bytes are
 * wiped with OPENSSL_cleanse.
 */
#pragma once

#include <gio/gio.h>

#include "ckks.h"

G_BEGIN_DECLS

#define TS_KEY_ERROR (ts_key_error_quark ())
GQuark ts_key_error_quark (void);

typedef enum {
  TS_KEY_ERROR_NOT_FOUND,         /* no key file */
  TS_KEY_ERROR_CORRUPT,           /* truncated, altered or not a key file */
  TS_KEY_ERROR_VERSION,           /* written by a newer version */
  TS_KEY_ERROR_WRONG_PASSPHRASE,  /* intact file, passphrase does not open it */
  TS_KEY_ERROR_LOCKED,            /* the operation needs the unlocked key */
  TS_KEY_ERROR_INVALID,           /* bad argument (empty passphrase, unknown preset) */
  TS_KEY_ERROR_FAILED,            /* crypto or I/O failure */
} TsKeyError;

#define TS_KEY_FILE_VERSION 1
#define TS_KEY_SALT_BYTES 32
#define TS_KEY_FINGERPRINT_BYTES 32

/* scrypt cost. The default, N = 2^15, r = 8, p = 1, takes a few hundred ms. */
typedef struct {
  guint32 log2_n;
  guint32 r;
  guint32 p;
} TsScryptParams;

extern const TsScryptParams ts_scrypt_default;

/* The public content of a key file plus the sealed secret key (opaque). */
typedef struct {
  TsScryptParams kdf;
  guint8 salt[TS_KEY_SALT_BYTES];
  gint64 created;              /* Unix seconds, UTC */
  char *preset;                /* CKKS preset name ("fast", "default", "wide") */
  GBytes *params;              /* ckks_params_serialize */
  GBytes *public_key;          /* ckks_public_key_serialize */
  GBytes *sealed;              /* ckks_secret_key_seal */
} TsKeyFile;

void ts_key_file_free (TsKeyFile *file);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsKeyFile, ts_key_file_free)

/* Parses a whole file's bytes; any defect is TS_KEY_ERROR_CORRUPT (or
 * _VERSION). Nothing is half-returned: NULL on every error. */
TsKeyFile *ts_key_file_parse (const guint8 *data, gsize len, GError **error);
/* The file's bytes, checksum included. */
GBytes *ts_key_file_serialize (const TsKeyFile *file);

/* The public part, for a remote evaluator: "TSPK" | u16 version | u16 0 |
 * u32 len + preset | u32 len + params | u32 len + public key | SHA-256 of
 * every byte before it. Holds nothing secret, not even the sealed key. */
GBytes *ts_key_file_export_public (const TsKeyFile *file);

/* Reads and parses @path (TS_KEY_ERROR_NOT_FOUND when it does not exist). */
TsKeyFile *ts_key_file_load (const char *path, GError **error);
/* Writes @file to @path atomically, mode 0600 (ts-write-atomic.h). */
gboolean ts_key_file_save (const TsKeyFile *file, const char *path, GError **error);

/* SHA-256(params || public key), raw and as grouped hex ("AB12 CD34 …"). */
void ts_key_file_fingerprint (const TsKeyFile *file, guint8 out[TS_KEY_FINGERPRINT_BYTES]);
char *ts_key_file_fingerprint_hex (const TsKeyFile *file);

/* scrypt(@passphrase, @salt) → 32 bytes into @out (wipe it after use). */
gboolean ts_key_derive (const char *passphrase, const TsScryptParams *kdf,
                        const guint8 salt[TS_KEY_SALT_BYTES], guint8 out[32], GError **error);

/* Maps a he status to a GError of TS_KEY_ERROR (CKKS_ERR_AUTH → WRONG_PASSPHRASE). */
gboolean ts_key_check (CkksStatus status, const char *what, GError **error);

G_END_DECLS
