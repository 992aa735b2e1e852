/* ckks-modarith.h: 64-bit modular arithmetic (internal, inline).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Moduli are odd primes below 2^61. Shoup products multiply by a fixed
 * operand w with its precomputed w' = floor(w * 2^64 / q); Barrett reduces
 * general 128-bit products with floor(2^128 / q).
 */
#pragma once

#include <stdint.h>

__extension__ typedef unsigned __int128 ckks_u128;
__extension__ typedef __int128 ckks_i128;

typedef struct {
  uint64_t q;
  uint64_t ratio_lo, ratio_hi;   /* floor(2^128 / q) */
  uint64_t ratio64;              /* floor(2^64 / q) */
} CkksModulus;

static inline uint64_t
ckks_mul_hi (uint64_t a, uint64_t b)
{
  return (uint64_t) (((ckks_u128) a * b) >> 64);
}

static inline uint64_t
ckks_add_mod (uint64_t a, uint64_t b, uint64_t q)
{
  uint64_t s = a + b;
  return s >= q ? s - q : s;
}

static inline uint64_t
ckks_sub_mod (uint64_t a, uint64_t b, uint64_t q)
{
  return a >= b ? a - b : a + q - b;
}

static inline uint64_t
ckks_neg_mod (uint64_t a, uint64_t q)
{
  return a == 0 ? 0 : q - a;
}

/* floor(w * 2^64 / q) for w < q. */
static inline uint64_t
ckks_shoup_precompute (uint64_t w, uint64_t q)
{
  return (uint64_t) (((ckks_u128) w << 64) / q);
}

/* x * w mod q in [0, 2q), any 64-bit x. */
static inline uint64_t
ckks_mul_shoup_lazy (uint64_t x, uint64_t w, uint64_t w_shoup, uint64_t q)
{
  uint64_t qhat = ckks_mul_hi (x, w_shoup);
  return x * w - qhat * q;
}

static inline uint64_t
ckks_mul_shoup (uint64_t x, uint64_t w, uint64_t w_shoup, uint64_t q)
{
  uint64_t r = ckks_mul_shoup_lazy (x, w, w_shoup, q);
  return r >= q ? r - q : r;
}

/* z mod q for any z < 2^128 (Barrett, base 2^64). */
static inline uint64_t
ckks_barrett_reduce_128 (ckks_u128 z, const CkksModulus *m)
{
  uint64_t z0 = (uint64_t) z, z1 = (uint64_t) (z >> 64);
  ckks_u128 p00 = (ckks_u128) z0 * m->ratio_lo;
  ckks_u128 p01 = (ckks_u128) z0 * m->ratio_hi;
  ckks_u128 p10 = (ckks_u128) z1 * m->ratio_lo;
  ckks_u128 mid = (p00 >> 64) + (uint64_t) p01 + (uint64_t) p10;
  uint64_t qhat = (uint64_t) (mid >> 64) + (uint64_t) (p01 >> 64)
                  + (uint64_t) (p10 >> 64) + z1 * m->ratio_hi;
  uint64_t r = z0 - qhat * m->q;
  while (r >= m->q)
    r -= m->q;
  return r;
}

static inline uint64_t
ckks_mul_mod (uint64_t a, uint64_t b, const CkksModulus *m)
{
  return ckks_barrett_reduce_128 ((ckks_u128) a * b, m);
}

/* x mod q for a 64-bit x (Barrett with floor(2^64 / q): r < 2q before the
 * last correction). */
static inline uint64_t
ckks_barrett_reduce_64 (uint64_t x, const CkksModulus *m)
{
  uint64_t r = x - ckks_mul_hi (x, m->ratio64) * m->q;
  return r >= m->q ? r - m->q : r;
}

/* Reduces a signed 64-bit integer into [0, q), without branches on the sign
 * (random signs of errors would mispredict half the time). */
static inline uint64_t
ckks_reduce_i64 (int64_t x, const CkksModulus *m)
{
  uint64_t sign = (uint64_t) (x >> 63);                  /* all ones if x < 0 */
  uint64_t r = ckks_barrett_reduce_64 (((uint64_t) x ^ sign) - sign, m);
  uint64_t neg = m->q - r;
  neg = neg == m->q ? 0 : neg;
  return r ^ ((r ^ neg) & sign);
}

/* A small signed value (|x| < q) into [0, q), branch-free. */
static inline uint64_t
ckks_lift_small (int64_t x, uint64_t q)
{
  return (uint64_t) x + (q & (uint64_t) (x >> 63));
}

static inline void
ckks_modulus_init (CkksModulus *m, uint64_t q)
{
  ckks_u128 all = ~(ckks_u128) 0;
  ckks_u128 ratio = all / q;            /* floor((2^128 - 1) / q) */
  if (all % q == q - 1)                 /* q divides 2^128: impossible, odd q */
    ratio++;
  m->q = q;
  m->ratio64 = (uint64_t) (((ckks_u128) 1 << 64) / q);
  m->ratio_lo = (uint64_t) ratio;
  m->ratio_hi = (uint64_t) (ratio >> 64);
}

uint64_t ckks_pow_mod (uint64_t base, uint64_t exp, const CkksModulus *m);
uint64_t ckks_inv_mod (uint64_t a, const CkksModulus *m);
