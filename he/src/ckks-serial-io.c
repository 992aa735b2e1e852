/* ckks-serial-io.c: blob framing and the checksum shared by every format.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-modarith.h"
#include "ckks-serial-io.h"

#define MERSENNE61 ((((uint64_t) 1) << 61) - 1)
#define HASH_BASE 0x0b4c8d3e2f1a6957ull   /* below 2^61 - 1 */

static inline uint64_t
mod_mersenne (ckks_u128 x)
{
  uint64_t lo = (uint64_t) (x & MERSENNE61);
  uint64_t hi = (uint64_t) (x >> 61);
  uint64_t s = lo + (hi & MERSENNE61) + (uint64_t) (hi >> 61);
  s = (s & MERSENNE61) + (s >> 61);
  return s >= MERSENNE61 ? s - MERSENNE61 : s;
}

uint64_t
ckks_checksum (const uint8_t *data, size_t len)
{
  uint64_t h = 0;
  for (size_t i = 0; i < len; i += 8)
    {
      uint64_t w = 0;
      size_t take = len - i < 8 ? len - i : 8;
      memcpy (&w, data + i, take);   /* little-endian hosts only, like the rest */
      h = mod_mersenne ((ckks_u128) h * HASH_BASE + mod_mersenne (w) + 1);
    }
  return h;
}

void
ckks_frame_begin (CkksWriter *w, const char magic[4], uint32_t body_len)
{
  ckks_put_bytes (w, magic, 4);
  ckks_put_u32 (w, CKKS_FORMAT_VERSION);   /* u16 version, u16 zero */
  ckks_put_u32 (w, body_len);
}

void
ckks_frame_end (CkksWriter *w, const uint8_t *start)
{
  ckks_put_u64 (w, ckks_checksum (start, (size_t) (w->p - start)));
}

CkksStatus
ckks_frame_open (const uint8_t *data, size_t len, const char magic[4], CkksReader *body)
{
  if (!data || !body)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksReader r = { data, len };
  uint8_t m[4];
  uint32_t version, body_len;
  if (!ckks_get_bytes (&r, m, 4) || !ckks_get_u32 (&r, &version)
      || !ckks_get_u32 (&r, &body_len))
    return CKKS_ERR_TRUNCATED;
  if (memcmp (m, magic, 4) != 0)
    return CKKS_ERR_FORMAT;
  if (version != CKKS_FORMAT_VERSION)
    return (version & 0xffff) != CKKS_FORMAT_VERSION ? CKKS_ERR_VERSION : CKKS_ERR_FORMAT;
  if (r.left < (uint64_t) body_len + CKKS_CHECKSUM_BYTES)
    return CKKS_ERR_TRUNCATED;
  if (r.left > (uint64_t) body_len + CKKS_CHECKSUM_BYTES)
    return CKKS_ERR_FORMAT;
  size_t covered = CKKS_HEADER_BYTES + body_len;
  CkksReader tail = { data + covered, CKKS_CHECKSUM_BYTES };
  uint64_t stored;
  ckks_get_u64 (&tail, &stored);
  if (stored != ckks_checksum (data, covered))
    return CKKS_ERR_CHECKSUM;
  body->p = data + CKKS_HEADER_BYTES;
  body->left = body_len;
  return CKKS_OK;
}
