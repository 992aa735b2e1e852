/* ckks-serial-io.h: bounds-checked little-endian readers and writers and the
 * common blob framing (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ckks-status.h"

#define CKKS_FORMAT_VERSION 1
#define CKKS_HEADER_BYTES 12
#define CKKS_CHECKSUM_BYTES 8

typedef struct {
  uint8_t *p;
  size_t left;
} CkksWriter;

typedef struct {
  const uint8_t *p;
  size_t left;
} CkksReader;

static inline void
ckks_put_u32 (CkksWriter *w, uint32_t v)
{
  for (int b = 0; b < 4; b++)
    w->p[b] = (uint8_t) (v >> (8 * b));
  w->p += 4;
  w->left -= 4;
}

static inline void
ckks_put_u64 (CkksWriter *w, uint64_t v)
{
  for (int b = 0; b < 8; b++)
    w->p[b] = (uint8_t) (v >> (8 * b));
  w->p += 8;
  w->left -= 8;
}

static inline void
ckks_put_bytes (CkksWriter *w, const void *src, size_t len)
{
  memcpy (w->p, src, len);
  w->p += len;
  w->left -= len;
}

static inline bool
ckks_get_u32 (CkksReader *r, uint32_t *v)
{
  if (r->left < 4)
    return false;
  *v = 0;
  for (int b = 0; b < 4; b++)
    *v |= (uint32_t) r->p[b] << (8 * b);
  r->p += 4;
  r->left -= 4;
  return true;
}

static inline bool
ckks_get_u64 (CkksReader *r, uint64_t *v)
{
  if (r->left < 8)
    return false;
  *v = 0;
  for (int b = 0; b < 8; b++)
    *v |= (uint64_t) r->p[b] << (8 * b);
  r->p += 8;
  r->left -= 8;
  return true;
}

static inline bool
ckks_get_bytes (CkksReader *r, void *dst, size_t len)
{
  if (r->left < len)
    return false;
  memcpy (dst, r->p, len);
  r->p += len;
  r->left -= len;
  return true;
}

/* Polynomial hash of @len bytes (little-endian words, zero padded) mod 2^61-1. */
uint64_t ckks_checksum (const uint8_t *data, size_t len);

/* Writes the 12-byte header for @magic and @body_len. */
void ckks_frame_begin (CkksWriter *w, const char magic[4], uint32_t body_len);
/* Appends the checksum of everything from @start to the writer's position. */
void ckks_frame_end (CkksWriter *w, const uint8_t *start);
/* Checks magic, version, exact length and checksum; on success @body is a
 * reader over the body only. */
CkksStatus ckks_frame_open (const uint8_t *data, size_t len, const char magic[4],
                            CkksReader *body);
