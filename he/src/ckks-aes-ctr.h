/* ckks-aes-ctr.h: AES-256-CTR keystreams with VAES, byte for byte OpenSSL's.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every encryption expands its public a from a seed (two limbs: 64 KiB of
 * keystream at N = 4096) and draws its error from a fresh key (32 KiB):
 * through OpenSSL's EVP interface that was about a third of an encryption.
 * On CPUs with VAES and AVX-512 this generates the same keystream sixteen
 * blocks at a time: the key schedule once per stream, no library call per
 * request. The counter block is the IV the streams of ckks-prng.c use:
 * bytes 0-7 the domain (little-endian), bytes 8-15 the block index
 * (big-endian), as OpenSSL's CTR mode counts from an IV whose last eight
 * bytes are zero.
 *
 * Thread-safety: a stream is used by one thread at a time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
  uint8_t round_keys[15][16];  /* secret for a random key: wiped by clear */
  uint64_t domain;
  uint64_t next_block;         /* index of the next counter block */
  uint8_t left[16];            /* keystream of the last block, not yet used */
  unsigned left_from;          /* first unused byte of left; 16: none */
} CkksAesCtr;

/* Whether this CPU runs the VAES keystream (VAES, AVX-512F, AES-NI). */
bool ckks_aes_ctr_available (void);
/* Requires ckks_aes_ctr_available(). */
void ckks_aes_ctr_init (CkksAesCtr *stream, const uint8_t key[32], uint64_t domain);
/* The next @len bytes of the keystream (any length: a partly used block is
 * continued by the next call, as OpenSSL does). */
void ckks_aes_ctr_bytes (CkksAesCtr *stream, uint8_t *out, size_t len);
/* Wipes the key schedule and the unused keystream. */
void ckks_aes_ctr_clear (CkksAesCtr *stream);
