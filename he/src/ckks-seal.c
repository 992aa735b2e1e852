/* ckks-seal.c: the secret key sealed with AES-256-GCM under a caller's key.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Blob: "CKSK", u32 version, u32 body length; body: parameter fingerprint
 * (32), nonce (12), the N ternary coefficients packed 2 bits each (00 = 0,
 * 01 = 1, 10 = -1) encrypted, GCM tag (16). Header and fingerprint are
 * authenticated data, so any change fails with CKKS_ERR_AUTH.
 */
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "ckks-secret.h"
#include "ckks-serial-io.h"

#define NONCE_BYTES 12
#define TAG_BYTES 16

static size_t
sealed_body (const CkksContext *ctx)
{
  return 32 + NONCE_BYTES + ctx->n / 4 + TAG_BYTES;
}

/* AES-256-GCM over @in (encrypt or decrypt in place into @out). */
static CkksStatus
gcm (bool encrypt, const uint8_t key[32], const uint8_t *nonce, const uint8_t *aad,
     size_t aad_len, const uint8_t *in, size_t len, uint8_t *out, uint8_t *tag)
{
  EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new ();
  if (!c)
    return CKKS_ERR_NO_MEMORY;
  int outl = 0, ok = EVP_CipherInit_ex (c, EVP_aes_256_gcm (), NULL, NULL, NULL, encrypt)
                     && EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_SET_IVLEN, NONCE_BYTES, NULL)
                     && EVP_CipherInit_ex (c, NULL, NULL, key, nonce, encrypt)
                     && EVP_CipherUpdate (c, NULL, &outl, aad, (int) aad_len)
                     && EVP_CipherUpdate (c, out, &outl, in, (int) len);
  if (ok && !encrypt)
    ok = EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_SET_TAG, TAG_BYTES, tag);
  CkksStatus st = ok ? CKKS_OK : CKKS_ERR_CRYPTO;
  if (ok && EVP_CipherFinal_ex (c, out + outl, &outl) != 1)
    st = encrypt ? CKKS_ERR_CRYPTO : CKKS_ERR_AUTH;
  if (st == CKKS_OK && encrypt
      && !EVP_CIPHER_CTX_ctrl (c, EVP_CTRL_GCM_GET_TAG, TAG_BYTES, tag))
    st = CKKS_ERR_CRYPTO;
  EVP_CIPHER_CTX_free (c);
  return st;
}

CkksStatus
ckks_secret_key_seal (const CkksSecretKey *sk, const uint8_t key[32], uint8_t **out,
                      size_t *out_len)
{
  if (!sk || !key || !out || !out_len)
    return CKKS_ERR_INVALID_ARGUMENT;
  const CkksContext *ctx = sk->ctx;
  size_t body = sealed_body (ctx), len = CKKS_HEADER_BYTES + body, packed_len = ctx->n / 4;
  uint8_t *buf = malloc (len), *packed = ckks_alloc0 (packed_len);
  if (!buf || !packed)
    {
      free (buf);
      ckks_free (packed);
      return CKKS_ERR_NO_MEMORY;
    }
  for (size_t k = 0; k < ctx->n; k++)
    packed[k / 4] |= (uint8_t) ((sk->coeffs[k] == 1 ? 1 : sk->coeffs[k] == -1 ? 2 : 0)
                                << (2 * (k % 4)));
  CkksWriter w = { buf, len };
  ckks_frame_begin (&w, "CKSK", (uint32_t) body);
  ckks_put_bytes (&w, ctx->fingerprint, 32);
  uint8_t *nonce = w.p;
  CkksStatus st = RAND_bytes (nonce, NONCE_BYTES) == 1 ? CKKS_OK : CKKS_ERR_RANDOM;
  uint8_t *cipher = nonce + NONCE_BYTES, *tag = cipher + packed_len;
  if (st == CKKS_OK)
    st = gcm (true, key, nonce, buf, CKKS_HEADER_BYTES + 32, packed, packed_len, cipher, tag);
  OPENSSL_cleanse (packed, packed_len);
  ckks_free (packed);
  if (st != CKKS_OK)
    {
      free (buf);
      return st;
    }
  *out = buf;
  *out_len = len;
  return CKKS_OK;
}

CkksStatus
ckks_secret_key_unseal (const CkksContext *ctx, const uint8_t key[32], const uint8_t *data,
                        size_t len, CkksSecretKey **out)
{
  if (!ctx || !key || !data || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksReader r = { data, len };
  uint8_t magic[4], fp[32];
  uint32_t version, body_len;
  if (!ckks_get_bytes (&r, magic, 4) || !ckks_get_u32 (&r, &version)
      || !ckks_get_u32 (&r, &body_len))
    return CKKS_ERR_TRUNCATED;
  if (memcmp (magic, "CKSK", 4) != 0)
    return CKKS_ERR_FORMAT;
  if (version != CKKS_FORMAT_VERSION)
    return CKKS_ERR_VERSION;
  if (r.left < body_len)
    return CKKS_ERR_TRUNCATED;
  if (r.left > body_len || body_len != sealed_body (ctx))
    return CKKS_ERR_FORMAT;
  ckks_get_bytes (&r, fp, 32);
  if (memcmp (fp, ctx->fingerprint, 32) != 0)
    return CKKS_ERR_MISMATCH;
  size_t packed_len = ctx->n / 4;
  const uint8_t *nonce = r.p, *cipher = nonce + NONCE_BYTES;
  uint8_t tag[TAG_BYTES];
  memcpy (tag, cipher + packed_len, TAG_BYTES);
  uint8_t *packed = ckks_alloc (packed_len);
  int8_t *coeffs = ckks_alloc (ctx->n);
  CkksStatus st = packed && coeffs ? CKKS_OK : CKKS_ERR_NO_MEMORY;
  if (st == CKKS_OK)
    st = gcm (false, key, nonce, data, CKKS_HEADER_BYTES + 32, cipher, packed_len, packed, tag);
  for (size_t k = 0; st == CKKS_OK && k < ctx->n; k++)
    {
      unsigned v = (packed[k / 4] >> (2 * (k % 4))) & 3;
      if (v == 3)
        st = CKKS_ERR_FORMAT;
      coeffs[k] = (int8_t) (v == 1 ? 1 : v == 2 ? -1 : 0);
    }
  if (packed)
    OPENSSL_cleanse (packed, packed_len);
  ckks_free (packed);
  if (st != CKKS_OK)
    {
      if (coeffs)
        OPENSSL_cleanse (coeffs, ctx->n);
      ckks_free (coeffs);
      return st;
    }
  return ckks_secret_key_from_coeffs (ctx, coeffs, out);
}
