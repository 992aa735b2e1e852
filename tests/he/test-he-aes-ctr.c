/* test-he-aes-ctr.c: the VAES keystream against OpenSSL and SP 800-38A, and the samplers on it.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <openssl/evp.h>
#include <string.h>

#include "ckks-aes-ctr.h"
#include "ckks-prng.h"

/* OpenSSL's AES-256-CTR keystream from the IV ckks-prng.c uses. */
static void
openssl_keystream (const uint8_t key[32], uint64_t domain, uint8_t *out, size_t len)
{
  uint8_t iv[16] = { 0 };
  int outl = 0;
  for (int b = 0; b < 8; b++)
    iv[b] = (uint8_t) (domain >> (8 * b));
  EVP_CIPHER_CTX *evp = EVP_CIPHER_CTX_new ();
  g_assert_nonnull (evp);
  g_assert_cmpint (EVP_EncryptInit_ex (evp, EVP_aes_256_ctr (), NULL, key, iv), ==, 1);
  memset (out, 0, len);
  g_assert_cmpint (EVP_EncryptUpdate (evp, out, &outl, out, (int) len), ==, 1);
  g_assert_cmpint (outl, ==, (int) len);
  EVP_CIPHER_CTX_free (evp);
}

static void
hex (const char *text, uint8_t *out, size_t len)
{
  for (size_t i = 0; i < len; i++)
    out[i] = (uint8_t) (g_ascii_xdigit_value (text[2 * i]) << 4
                        | g_ascii_xdigit_value (text[2 * i + 1]));
}

/* SP 800-38A F.5.5, CTR-AES256.Encrypt: initial counter block
 * f0f1…feff, which is domain f7f6…f0 (little-endian) and block index
 * f8f9fafbfcfdfeff (big-endian); ciphertext xor plaintext = keystream. */
static void
test_sp800_38a (void)
{
  if (!ckks_aes_ctr_available ())
    {
      g_test_skip ("this CPU has no VAES with AVX-512");
      return;
    }
  static const char *const plain[4] = {
    "6bc1bee22e409f96e93d7e117393172a", "ae2d8a571e03ac9c9eb76fac45af8e51",
    "30c81c46a35ce411e5fbc1191a0a52ef", "f69f2445df4f9b17ad2b417be66c3710",
  };
  static const char *const cipher[4] = {
    "601ec313775789a5b7a7f504bbf3d228", "f443e3ca4d62b59aca84e990cacaf5c5",
    "2b0930daa23de94ce87017ba2d84988d", "dfc9c58db67aada613c2dd08457941a6",
  };
  uint8_t key[32], got[64], want[64];
  hex ("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4", key, 32);
  for (int b = 0; b < 4; b++)
    {
      uint8_t p[16], c[16];
      hex (plain[b], p, 16);
      hex (cipher[b], c, 16);
      for (int i = 0; i < 16; i++)
        want[16 * b + i] = p[i] ^ c[i];
    }
  CkksAesCtr stream;
  ckks_aes_ctr_init (&stream, key, 0xf7f6f5f4f3f2f1f0ull);
  stream.next_block = 0xf8f9fafbfcfdfeffull;   /* the carry into byte 14 happens */
  ckks_aes_ctr_bytes (&stream, got, sizeof got);
  g_assert_cmpmem (got, sizeof got, want, sizeof want);
  ckks_aes_ctr_clear (&stream);
}

/* Random keys and domains, requests of every length from 0 to 300 bytes
 * and long ones, one after another: the same bytes as OpenSSL's stream. */
static void
test_against_openssl (void)
{
  if (!ckks_aes_ctr_available ())
    {
      g_test_skip ("this CPU has no VAES with AVX-512");
      return;
    }
  g_autoptr (GRand) rng = g_rand_new_with_seed (20261128);
  const size_t total = 200000;
  g_autofree uint8_t *want = g_malloc (total), *got = g_malloc (total);
  for (int round = 0; round < 20; round++)
    {
      uint8_t key[32];
      for (int i = 0; i < 32; i++)
        key[i] = (uint8_t) g_rand_int (rng);
      uint64_t domain = round < 2 ? (uint64_t) round : (uint64_t) g_rand_int (rng) << 32
                                                         | g_rand_int (rng);
      openssl_keystream (key, domain, want, total);
      CkksAesCtr stream;
      ckks_aes_ctr_init (&stream, key, domain);
      size_t done = 0;
      while (done < total)
        {
          size_t len = g_rand_int_range (rng, 0, 4) == 0 ? (size_t) g_rand_int_range (rng, 0, 20000)
                                                         : (size_t) g_rand_int_range (rng, 0, 301);
          if (len > total - done)
            len = total - done;
          ckks_aes_ctr_bytes (&stream, got + done, len);
          done += len;
        }
      ckks_aes_ctr_clear (&stream);
      g_assert_cmpmem (got, total, want, total);
    }
}

/* The prng's streams, whichever generator they take, are OpenSSL's. */
static void
test_prng_stream (void)
{
  uint8_t seed[32], want[5000], got[5000];
  for (int i = 0; i < 32; i++)
    seed[i] = (uint8_t) (7 * i + 1);
  openssl_keystream (seed, 3, want, sizeof want);
  CkksPrng prng;
  g_assert_cmpint (ckks_prng_init_seed (&prng, seed, 3), ==, CKKS_OK);
  g_assert_cmpint (ckks_prng_bytes (&prng, got, 1000), ==, CKKS_OK);
  g_assert_cmpint (ckks_prng_bytes (&prng, got + 1000, 7), ==, CKKS_OK);
  g_assert_cmpint (ckks_prng_bytes (&prng, got + 1007, 3993), ==, CKKS_OK);
  ckks_prng_clear (&prng);
  g_assert_cmpmem (got, sizeof got, want, sizeof want);
}

/* Uniform values mod q: the words of OpenSSL's stream, masked to q's bit
 * length, those below q kept in order (the plain rule, here in the test),
 * for lengths that end inside a vector and a block of the sampler. */
static void
test_uniform_mod (void)
{
  static const uint64_t moduli[] = { 1125899906826241ull, (1ull << 50) - 27, 97, 1ull << 61 | 1 };
  static const size_t lengths[] = { 1, 7, 8, 9, 511, 4096, 8192, 12289 };
  uint8_t seed[32];
  for (int i = 0; i < 32; i++)
    seed[i] = (uint8_t) (3 * i + 5);
  g_autofree uint64_t *words = g_malloc (40000 * 8);
  g_autofree uint64_t *got = g_malloc (12289 * 8), *want = g_malloc (12289 * 8);
  for (gsize m = 0; m < G_N_ELEMENTS (moduli); m++)
    for (gsize l = 0; l < G_N_ELEMENTS (lengths); l++)
      {
        uint64_t q = moduli[m], mask = q - 1;
        size_t n = lengths[l], filled = 0;
        for (int shift = 1; shift < 64; shift <<= 1)
          mask |= mask >> shift;
        /* the sampler reads whole 4 KiB blocks: 40000 words hold them */
        openssl_keystream (seed, (uint64_t) m, (uint8_t *) words, 40000 * 8);
        for (size_t i = 0; i < 40000 && filled < n; i++)
          if ((words[i] & mask) < q)
            want[filled++] = words[i] & mask;
        g_assert_cmpuint (filled, ==, n);
        CkksPrng prng;
        g_assert_cmpint (ckks_prng_init_seed (&prng, seed, (uint64_t) m), ==, CKKS_OK);
        g_assert_cmpint (ckks_sample_uniform_mod (&prng, q, got, n), ==, CKKS_OK);
        ckks_prng_clear (&prng);
        g_assert_cmpmem (got, n * 8, want, n * 8);
      }
}

/* Centred binomial errors: per 64-bit word of the stream, the bits set in
 * its low 21 bits minus those in the next 21, counted one bit at a time. */
static void
test_cbd (void)
{
  static const size_t lengths[] = { 1, 7, 8, 9, 511, 512, 513, 4096, 5000 };
  uint8_t seed[32];
  for (int i = 0; i < 32; i++)
    seed[i] = (uint8_t) (11 * i + 2);
  g_autofree uint64_t *words = g_malloc (5000 * 8);
  g_autofree int8_t *got = g_malloc (5000);
  openssl_keystream (seed, 9, (uint8_t *) words, 5000 * 8);
  for (gsize l = 0; l < G_N_ELEMENTS (lengths); l++)
    {
      CkksPrng prng;
      g_assert_cmpint (ckks_prng_init_seed (&prng, seed, 9), ==, CKKS_OK);
      g_assert_cmpint (ckks_sample_cbd (&prng, got, lengths[l]), ==, CKKS_OK);
      ckks_prng_clear (&prng);
      for (size_t i = 0; i < lengths[l]; i++)
        {
          int want = 0;
          for (int b = 0; b < 21; b++)
            want += (int) (words[i] >> b & 1) - (int) (words[i] >> (21 + b) & 1);
          if (got[i] != want)
            g_error ("length %zu, value %zu: %d, want %d", lengths[l], i, got[i], want);
        }
    }
}

/* Ternary values: per byte of the stream below 3^5, its five base-3
 * digits, least significant first, minus one; bytes from 243 skipped. */
static void
test_ternary (void)
{
  static const size_t lengths[] = { 1, 4, 5, 6, 9, 10, 11, 4096, 16384 };
  uint8_t seed[32];
  for (int i = 0; i < 32; i++)
    seed[i] = (uint8_t) (5 * i + 9);
  /* whole 4 KiB blocks: 16384 values need fewer than 4 of them */
  g_autofree uint8_t *bytes = g_malloc (5 * 4096);
  g_autofree int8_t *got = g_malloc (16384), *want = g_malloc (16384);
  openssl_keystream (seed, 4, bytes, 5 * 4096);
  size_t filled = 0;
  for (size_t i = 0; i < 5 * 4096 && filled < 16384; i++)
    for (unsigned v = bytes[i], t = 0; bytes[i] < 243 && t < 5 && filled < 16384; t++, v /= 3)
      want[filled++] = (int8_t) ((int) (v % 3) - 1);
  g_assert_cmpuint (filled, ==, 16384);
  for (gsize l = 0; l < G_N_ELEMENTS (lengths); l++)
    {
      CkksPrng prng;
      g_assert_cmpint (ckks_prng_init_seed (&prng, seed, 4), ==, CKKS_OK);
      g_assert_cmpint (ckks_sample_ternary (&prng, got, lengths[l]), ==, CKKS_OK);
      ckks_prng_clear (&prng);
      g_assert_cmpmem (got, lengths[l], want, lengths[l]);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he/aes-ctr/sp800-38a", test_sp800_38a);
  g_test_add_func ("/he/aes-ctr/against-openssl", test_against_openssl);
  g_test_add_func ("/he/aes-ctr/prng-stream", test_prng_stream);
  g_test_add_func ("/he/aes-ctr/uniform-mod", test_uniform_mod);
  g_test_add_func ("/he/aes-ctr/cbd", test_cbd);
  g_test_add_func ("/he/aes-ctr/ternary", test_ternary);
  return g_test_run ();
}
