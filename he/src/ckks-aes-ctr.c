/* ckks-aes-ctr.c: AES-256-CTR keystreams with VAES (FIPS 197 rounds, SP 800-38A counter).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include <openssl/crypto.h>

#include "ckks-aes-ctr.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define AESNI __attribute__ ((target ("aes,sse4.1")))
#define VAES __attribute__ ((target ("avx512f,vaes,aes")))

bool
ckks_aes_ctr_available (void)
{
  return __builtin_cpu_supports ("vaes") && __builtin_cpu_supports ("avx512f")
         && __builtin_cpu_supports ("aes");
}

/* The next even round key: the previous one's words chained, the first
 * xored with SubWord(RotWord(last word of the odd key)) ^ rcon, which
 * AESKEYGENASSIST leaves in its top word. */
AESNI static inline __m128i
even_round_key (__m128i prev, __m128i assist)
{
  assist = _mm_shuffle_epi32 (assist, 0xff);
  prev = _mm_xor_si128 (prev, _mm_slli_si128 (prev, 4));
  prev = _mm_xor_si128 (prev, _mm_slli_si128 (prev, 8));
  return _mm_xor_si128 (prev, assist);
}

/* The next odd round key: as above with SubWord of the even key's last
 * word and no rotation or rcon (word 2 of AESKEYGENASSIST with rcon 0). */
AESNI static inline __m128i
odd_round_key (__m128i even, __m128i prev)
{
  __m128i assist = _mm_shuffle_epi32 (_mm_aeskeygenassist_si128 (even, 0), 0xaa);
  prev = _mm_xor_si128 (prev, _mm_slli_si128 (prev, 4));
  prev = _mm_xor_si128 (prev, _mm_slli_si128 (prev, 8));
  return _mm_xor_si128 (prev, assist);
}

#define EXPAND_PAIR(i, rcon)                                                     \
  do                                                                             \
    {                                                                            \
      k[i] = even_round_key (k[(i) - 2], _mm_aeskeygenassist_si128 (k[(i) - 1], rcon)); \
      if ((i) + 1 < 15)                                                          \
        k[(i) + 1] = odd_round_key (k[i], k[(i) - 1]);                           \
    }                                                                            \
  while (0)

AESNI static void
expand_key (const uint8_t key[32], uint8_t round_keys[15][16])
{
  __m128i k[15];
  k[0] = _mm_loadu_si128 ((const __m128i *) key);
  k[1] = _mm_loadu_si128 ((const __m128i *) (key + 16));
  EXPAND_PAIR (2, 0x01);
  EXPAND_PAIR (4, 0x02);
  EXPAND_PAIR (6, 0x04);
  EXPAND_PAIR (8, 0x08);
  EXPAND_PAIR (10, 0x10);
  EXPAND_PAIR (12, 0x20);
  EXPAND_PAIR (14, 0x40);
  for (int r = 0; r < 15; r++)
    _mm_storeu_si128 ((__m128i *) round_keys[r], k[r]);
  memset (k, 0, sizeof k);
}

/* Counter blocks @c .. @c + 3, one per 128-bit lane. */
VAES static inline __m512i
counters (uint64_t domain, uint64_t c)
{
  return _mm512_set_epi64 ((long long) __builtin_bswap64 (c + 3), (long long) domain,
                           (long long) __builtin_bswap64 (c + 2), (long long) domain,
                           (long long) __builtin_bswap64 (c + 1), (long long) domain,
                           (long long) __builtin_bswap64 (c), (long long) domain);
}

VAES static inline __m512i
encrypt4 (__m512i x, const __m512i rk[15])
{
  x = _mm512_xor_si512 (x, rk[0]);
  for (int r = 1; r < 14; r++)
    x = _mm512_aesenc_epi128 (x, rk[r]);
  return _mm512_aesenclast_epi128 (x, rk[14]);
}

/* Blocks @first .. @first + @n_blocks of the keystream into @out. */
VAES static void
keystream (const CkksAesCtr *s, uint64_t first, size_t n_blocks, uint8_t *out)
{
  __m512i rk[15];
  for (int r = 0; r < 15; r++)
    rk[r] = _mm512_broadcast_i32x4 (_mm_loadu_si128 ((const __m128i *) s->round_keys[r]));
  size_t b = 0;
  for (; b + 16 <= n_blocks; b += 16)
    {
      /* four independent chains keep the AES unit busy */
      __m512i x0 = _mm512_xor_si512 (counters (s->domain, first + b), rk[0]);
      __m512i x1 = _mm512_xor_si512 (counters (s->domain, first + b + 4), rk[0]);
      __m512i x2 = _mm512_xor_si512 (counters (s->domain, first + b + 8), rk[0]);
      __m512i x3 = _mm512_xor_si512 (counters (s->domain, first + b + 12), rk[0]);
      for (int r = 1; r < 14; r++)
        {
          x0 = _mm512_aesenc_epi128 (x0, rk[r]);
          x1 = _mm512_aesenc_epi128 (x1, rk[r]);
          x2 = _mm512_aesenc_epi128 (x2, rk[r]);
          x3 = _mm512_aesenc_epi128 (x3, rk[r]);
        }
      _mm512_storeu_si512 (out + 16 * b, _mm512_aesenclast_epi128 (x0, rk[14]));
      _mm512_storeu_si512 (out + 16 * b + 64, _mm512_aesenclast_epi128 (x1, rk[14]));
      _mm512_storeu_si512 (out + 16 * b + 128, _mm512_aesenclast_epi128 (x2, rk[14]));
      _mm512_storeu_si512 (out + 16 * b + 192, _mm512_aesenclast_epi128 (x3, rk[14]));
    }
  for (; b < n_blocks; b += 4)
    {
      uint8_t four[64];
      size_t take = n_blocks - b < 4 ? n_blocks - b : 4;
      _mm512_storeu_si512 (four, encrypt4 (counters (s->domain, first + b), rk));
      memcpy (out + 16 * b, four, 16 * take);
      OPENSSL_cleanse (four, sizeof four);
    }
}

void
ckks_aes_ctr_init (CkksAesCtr *s, const uint8_t key[32], uint64_t domain)
{
  expand_key (key, s->round_keys);
  s->domain = domain;
  s->next_block = 0;
  s->left_from = sizeof s->left;
}

void
ckks_aes_ctr_bytes (CkksAesCtr *s, uint8_t *out, size_t len)
{
  size_t from_left = sizeof s->left - s->left_from;
  if (from_left > len)
    from_left = len;
  memcpy (out, s->left + s->left_from, from_left);
  s->left_from += (unsigned) from_left;
  out += from_left;
  len -= from_left;
  size_t whole = len / 16;
  keystream (s, s->next_block, whole, out);
  s->next_block += whole;
  out += 16 * whole;
  len -= 16 * whole;
  if (len > 0)
    {
      keystream (s, s->next_block++, 1, s->left);
      memcpy (out, s->left, len);
      s->left_from = (unsigned) len;
    }
}

#else

bool
ckks_aes_ctr_available (void)
{
  return false;
}

void
ckks_aes_ctr_init (CkksAesCtr *s, const uint8_t key[32], uint64_t domain)
{
  (void) key;
  memset (s, 0, sizeof *s);
  s->domain = domain;
}

void
ckks_aes_ctr_bytes (CkksAesCtr *s, uint8_t *out, size_t len)
{
  (void) s;
  (void) out;
  (void) len;
}

#endif

void
ckks_aes_ctr_clear (CkksAesCtr *s)
{
  OPENSSL_cleanse (s, sizeof *s);
}
