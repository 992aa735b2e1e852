/* ts-signing.h: Ed25519 keys, signatures and SHA-256 digests for marketplace releases.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define TS_SIGNING_ERROR (ts_signing_error_quark ())

typedef enum
{
  TS_SIGNING_ERROR_KEY,        /* a key could not be made, read or parsed */
  TS_SIGNING_ERROR_SIGNATURE,  /* a signature is malformed or does not verify */
  TS_SIGNING_ERROR_IO,         /* a key file could not be written */
} TsSigningError;

GQuark ts_signing_error_quark (void);

/* Raw sizes of Ed25519 material. */
#define TS_ED25519_PUBLIC_KEY_LEN 32
#define TS_ED25519_SIGNATURE_LEN  64
/* A SHA-256 digest written as lowercase hex, without the terminating NUL. */
#define TS_SHA256_HEX_LEN 64

/* An Ed25519 key pair (or a public key alone).  Opaque; not thread-safe to
 * share while being freed, otherwise read-only after creation. */
typedef struct _TsSigningKey TsSigningKey;

/* Generates a fresh key pair from OpenSSL's CSPRNG. */
TsSigningKey *ts_signing_key_generate (GError **error);
/* Loads a private key from a PKCS#8 PEM file. */
TsSigningKey *ts_signing_key_load_private (const char *path, GError **error);
/* Writes the private key as PKCS#8 PEM, mode 0600, atomically. */
gboolean ts_signing_key_save_private (TsSigningKey *self, const char *path, GError **error);
/* Makes a verify-only key from 32 raw bytes given in standard base64. */
TsSigningKey *ts_signing_key_new_public_base64 (const char *public_b64, GError **error);
/* Returns the public key as standard base64 (newly allocated). */
char *ts_signing_key_get_public_base64 (TsSigningKey *self);
/* Returns the key id "ed25519:" + the first 16 hex digits of SHA-256(public key). */
char *ts_signing_key_get_id (TsSigningKey *self);
void ts_signing_key_free (TsSigningKey *self);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsSigningKey, ts_signing_key_free)

/* Signs @len bytes at @data; returns the 64-byte signature as base64. */
char *ts_signing_key_sign (TsSigningKey *self, const void *data, gsize len, GError **error);
/* Verifies a base64 signature over @data; FALSE with TS_SIGNING_ERROR_SIGNATURE
 * when it is malformed or does not match. */
gboolean ts_signing_key_verify (TsSigningKey *self, const void *data, gsize len,
                                const char *signature_b64, GError **error);

/* SHA-256 of a whole file as lowercase hex (newly allocated), and its size. */
char *ts_sha256_file (const char *path, goffset *size_out, GCancellable *cancellable,
                      GError **error);
/* TRUE when @hex is 64 lowercase hex digits. */
gboolean ts_sha256_hex_is_valid (const char *hex);

G_END_DECLS
