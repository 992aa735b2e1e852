/* ckks-prng.c: AES-256-CTR streams and the samplers built on them.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdbool.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "ckks-prng.h"

static CkksStatus
prng_init_key (CkksPrng *prng, const uint8_t key[32], uint64_t domain)
{
  uint8_t iv[16] = { 0 };
  for (int b = 0; b < 8; b++)
    iv[b] = (uint8_t) (domain >> (8 * b));
  EVP_CIPHER_CTX *evp = EVP_CIPHER_CTX_new ();
  if (!evp)
    return CKKS_ERR_NO_MEMORY;
  if (EVP_EncryptInit_ex (evp, EVP_aes_256_ctr (), NULL, key, iv) != 1)
    {
      EVP_CIPHER_CTX_free (evp);
      return CKKS_ERR_CRYPTO;
    }
  prng->evp = evp;
  return CKKS_OK;
}

CkksStatus
ckks_prng_init_random (CkksPrng *prng)
{
  uint8_t key[32];
  prng->evp = NULL;
  if (RAND_priv_bytes (key, sizeof key) != 1)
    return CKKS_ERR_RANDOM;
  CkksStatus st = prng_init_key (prng, key, 0);
  OPENSSL_cleanse (key, sizeof key);
  return st;
}

CkksStatus
ckks_prng_init_seed (CkksPrng *prng, const uint8_t seed[32], uint64_t domain)
{
  prng->evp = NULL;
  return prng_init_key (prng, seed, domain);
}

CkksStatus
ckks_prng_bytes (CkksPrng *prng, void *out, size_t len)
{
  uint8_t *p = out;
  memset (p, 0, len);
  while (len > 0)
    {
      int chunk = len > (1u << 30) ? 1 << 30 : (int) len;
      int outl = 0;
      if (EVP_EncryptUpdate (prng->evp, p, &outl, p, chunk) != 1 || outl != chunk)
        return CKKS_ERR_CRYPTO;
      p += chunk;
      len -= (size_t) chunk;
    }
  return CKKS_OK;
}

void
ckks_prng_clear (CkksPrng *prng)
{
  EVP_CIPHER_CTX_free (prng->evp);   /* wipes the key schedule */
  prng->evp = NULL;
}

#define BLOCK 4096

/* Bit count of a 21-bit field (SWAR; no dependence on the popcnt extension). */
static inline int
popcount21 (uint64_t x)
{
  x = x - ((x >> 1) & 0x55555555u);
  x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
  x = (x + (x >> 4)) & 0x0f0f0f0fu;
  return (int) ((x * 0x01010101u) >> 24 & 0xff);
}

CkksStatus
ckks_sample_ternary (CkksPrng *prng, int8_t *out, size_t n)
{
  uint8_t buf[BLOCK];
  size_t filled = 0;
  while (filled < n)
    {
      CkksStatus st = ckks_prng_bytes (prng, buf, sizeof buf);
      if (st != CKKS_OK)
        return st;
      for (size_t i = 0; i < sizeof buf && filled < n; i++)
        {
          unsigned v = buf[i];
          if (v >= 243)             /* 3^5: five uniform trits per byte */
            continue;
          for (int t = 0; t < 5 && filled < n; t++, v /= 3)
            out[filled++] = (int8_t) ((int) (v % 3) - 1);
        }
    }
  OPENSSL_cleanse (buf, sizeof buf);
  return CKKS_OK;
}

#define CBD_MASK ((1u << 21) - 1)

static void
cbd_swar (const uint64_t *w, int8_t *out, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = (int8_t) (popcount21 (w[i] & CBD_MASK) - popcount21 ((w[i] >> 21) & CBD_MASK));
}

/* Same values with the popcnt instruction where the CPU has it. */
__attribute__ ((target ("popcnt"))) static void
cbd_popcnt (const uint64_t *w, int8_t *out, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = (int8_t) (__builtin_popcountll (w[i] & CBD_MASK)
                       - __builtin_popcountll ((w[i] >> 21) & CBD_MASK));
}

CkksStatus
ckks_sample_cbd (CkksPrng *prng, int8_t *out, size_t n)
{
  uint64_t buf[BLOCK / 8];
  bool popcnt = __builtin_cpu_supports ("popcnt");
  for (size_t done = 0; done < n;)
    {
      size_t take = n - done < BLOCK / 8 ? n - done : BLOCK / 8;
      CkksStatus st = ckks_prng_bytes (prng, buf, take * 8);
      if (st != CKKS_OK)
        return st;
      (popcnt ? cbd_popcnt : cbd_swar) (buf, out + done, take);
      done += take;
    }
  OPENSSL_cleanse (buf, sizeof buf);
  return CKKS_OK;
}

CkksStatus
ckks_sample_uniform_mod (CkksPrng *prng, uint64_t q, uint64_t *out, size_t n)
{
  uint64_t buf[BLOCK / 8];
  uint64_t mask = q - 1;
  mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4;
  mask |= mask >> 8; mask |= mask >> 16; mask |= mask >> 32;
  size_t filled = 0;
  while (filled < n)
    {
      CkksStatus st = ckks_prng_bytes (prng, buf, sizeof buf);
      if (st != CKKS_OK)
        return st;
      for (size_t i = 0; i < BLOCK / 8 && filled < n; i++)
        {
          uint64_t v = buf[i] & mask;
          if (v < q)
            out[filled++] = v;
        }
    }
  return CKKS_OK;
}
