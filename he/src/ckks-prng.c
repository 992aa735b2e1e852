/* ckks-prng.c: AES-256-CTR streams and the samplers built on them.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ckks-prng.h"

/* The VAES keystream where the CPU has it, unless TENSAFE_AES_OPENSSL is
 * set (the same bytes through OpenSSL: for comparing the two). */
static bool
use_vaes (void)
{
  static int decided = -1;   /* a race only decides it twice, the same way */
  int v = __atomic_load_n (&decided, __ATOMIC_RELAXED);
  if (v < 0)
    {
      v = ckks_aes_ctr_available () && getenv ("TENSAFE_AES_OPENSSL") == NULL;
      __atomic_store_n (&decided, v, __ATOMIC_RELAXED);
    }
  return v;
}

static CkksStatus
prng_init_key (CkksPrng *prng, const uint8_t key[32], uint64_t domain)
{
  prng->vaes = use_vaes ();
  if (prng->vaes)
    {
      ckks_aes_ctr_init (&prng->stream, key, domain);
      return CKKS_OK;
    }
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
  prng->vaes = false;
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
  prng->vaes = false;
  return prng_init_key (prng, seed, domain);
}

CkksStatus
ckks_prng_bytes (CkksPrng *prng, void *out, size_t len)
{
  uint8_t *p = out;
  if (prng->vaes)
    {
      ckks_aes_ctr_bytes (&prng->stream, p, len);
      return CKKS_OK;
    }
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
  if (prng->vaes)
    ckks_aes_ctr_clear (&prng->stream);
  prng->vaes = false;
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

/* The five trits of a byte v < 243, least significant first, each minus
 * one: a table instead of five divisions per byte. */
#define TRITS(v) { (v) % 3 - 1, (v) / 3 % 3 - 1, (v) / 9 % 3 - 1, (v) / 27 % 3 - 1, (v) / 81 % 3 - 1 }
#define TRITS3(v) TRITS (v), TRITS ((v) + 1), TRITS ((v) + 2)
#define TRITS9(v) TRITS3 (v), TRITS3 ((v) + 3), TRITS3 ((v) + 6)
#define TRITS27(v) TRITS9 (v), TRITS9 ((v) + 9), TRITS9 ((v) + 18)
#define TRITS81(v) TRITS27 (v), TRITS27 ((v) + 27), TRITS27 ((v) + 54)
static const int8_t ternary_trits[243][5] = { TRITS81 (0), TRITS81 (81), TRITS81 (162) };

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
          if (buf[i] >= 243)        /* 3^5: five uniform trits per byte */
            continue;
          const int8_t *trits = ternary_trits[buf[i]];
          if (n - filled >= 5)
            {
              memcpy (out + filled, trits, 5);
              filled += 5;
            }
          else
            while (filled < n)
              out[filled++] = *trits++;
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

#if defined(__x86_64__)
/* The same, eight words a step, where AVX-512 counts bits. */
__attribute__ ((target ("avx512f,avx512vpopcntdq,popcnt"))) static void
cbd_avx512 (const uint64_t *w, int8_t *out, size_t n)
{
  const __m512i field = _mm512_set1_epi64 (CBD_MASK);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    {
      __m512i v = _mm512_loadu_si512 (w + i);
      __m512i plus = _mm512_popcnt_epi64 (_mm512_and_si512 (v, field));
      __m512i minus = _mm512_popcnt_epi64 (_mm512_and_si512 (_mm512_srli_epi64 (v, 21), field));
      _mm512_mask_cvtepi64_storeu_epi8 (out + i, 0xff, _mm512_sub_epi64 (plus, minus));
    }
  cbd_popcnt (w + i, out + i, n - i);
}
#endif

CkksStatus
ckks_sample_cbd (CkksPrng *prng, int8_t *out, size_t n)
{
  uint64_t buf[BLOCK / 8];
  bool popcnt = __builtin_cpu_supports ("popcnt");
  void (*count) (const uint64_t *, int8_t *, size_t) = popcnt ? cbd_popcnt : cbd_swar;
#if defined(__x86_64__)
  if (__builtin_cpu_supports ("avx512vpopcntdq") && __builtin_cpu_supports ("avx512f"))
    count = cbd_avx512;
#endif
  for (size_t done = 0; done < n;)
    {
      size_t take = n - done < BLOCK / 8 ? n - done : BLOCK / 8;
      CkksStatus st = ckks_prng_bytes (prng, buf, take * 8);
      if (st != CKKS_OK)
        return st;
      count (buf, out + done, take);
      done += take;
    }
  OPENSSL_cleanse (buf, sizeof buf);
  return CKKS_OK;
}

/* Keeps the words of @buf[*i, BLOCK / 8) that, masked, are below @q, in
 * order, while @out has room for a whole vector of them. */
#if defined(__x86_64__)
__attribute__ ((target ("avx512f"))) static void
keep_below_avx512 (const uint64_t *buf, size_t *i, uint64_t q, uint64_t mask, uint64_t *out,
                   size_t *filled, size_t n)
{
  const __m512i vq = _mm512_set1_epi64 ((long long) q);
  const __m512i vmask = _mm512_set1_epi64 ((long long) mask);
  for (; *i + 8 <= BLOCK / 8 && *filled + 8 <= n; *i += 8)
    {
      __m512i v = _mm512_and_si512 (_mm512_loadu_si512 (buf + *i), vmask);
      __mmask8 below = _mm512_cmplt_epu64_mask (v, vq);
      _mm512_mask_compressstoreu_epi64 (out + *filled, below, v);
      *filled += (size_t) __builtin_popcount (below);
    }
}
#endif

CkksStatus
ckks_sample_uniform_mod (CkksPrng *prng, uint64_t q, uint64_t *out, size_t n)
{
  uint64_t buf[BLOCK / 8];
  uint64_t mask = q - 1;
  mask |= mask >> 1; mask |= mask >> 2; mask |= mask >> 4;
  mask |= mask >> 8; mask |= mask >> 16; mask |= mask >> 32;
#if defined(__x86_64__)
  bool avx512 = __builtin_cpu_supports ("avx512f");
#endif
  size_t filled = 0;
  while (filled < n)
    {
      CkksStatus st = ckks_prng_bytes (prng, buf, sizeof buf);
      if (st != CKKS_OK)
        return st;
      size_t i = 0;
#if defined(__x86_64__)
      if (avx512)
        keep_below_avx512 (buf, &i, q, mask, out, &filled, n);
#endif
      for (; i < BLOCK / 8 && filled < n; i++)
        {
          uint64_t v = buf[i] & mask;
          if (v < q)
            out[filled++] = v;
        }
    }
  return CKKS_OK;
}
