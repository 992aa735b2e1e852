/* ckks-primes.c: primality, modular powers and NTT-friendly prime chains.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-internal.h"

uint64_t
ckks_pow_mod (uint64_t base, uint64_t exp, const CkksModulus *m)
{
  uint64_t result = 1 % m->q;
  base = ckks_barrett_reduce_128 (base, m);
  while (exp)
    {
      if (exp & 1)
        result = ckks_mul_mod (result, base, m);
      base = ckks_mul_mod (base, base, m);
      exp >>= 1;
    }
  return result;
}

/* Inverse modulo a prime by Fermat. */
uint64_t
ckks_inv_mod (uint64_t a, const CkksModulus *m)
{
  return ckks_pow_mod (a, m->q - 2, m);
}

static uint64_t
mul_mod_slow (uint64_t a, uint64_t b, uint64_t n)
{
  return (uint64_t) (((ckks_u128) a * b) % n);
}

static uint64_t
pow_mod_slow (uint64_t b, uint64_t e, uint64_t n)
{
  uint64_t r = 1 % n;
  b %= n;
  while (e)
    {
      if (e & 1)
        r = mul_mod_slow (r, b, n);
      b = mul_mod_slow (b, b, n);
      e >>= 1;
    }
  return r;
}

int
ckks_is_prime (uint64_t n)
{
  static const uint64_t bases[] = { 2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37 };
  if (n < 2)
    return 0;
  for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++)
    {
      if (n == bases[i])
        return 1;
      if (n % bases[i] == 0)
        return 0;
    }
  uint64_t d = n - 1;
  unsigned s = 0;
  while ((d & 1) == 0)
    {
      d >>= 1;
      s++;
    }
  for (size_t i = 0; i < sizeof bases / sizeof bases[0]; i++)
    {
      uint64_t x = pow_mod_slow (bases[i], d, n);
      if (x == 1 || x == n - 1)
        continue;
      unsigned r;
      for (r = 1; r < s; r++)
        {
          x = mul_mod_slow (x, x, n);
          if (x == n - 1)
            break;
        }
      if (r == s)
        return 0;
    }
  return 1;
}

/* The smallest-base primitive 2N-th root of unity: deterministic, so every
 * party derives the same NTT ordering from the same primes. */
uint64_t
ckks_primitive_root_2n (const CkksModulus *m, size_t n)
{
  uint64_t two_n = 2 * (uint64_t) n;
  if ((m->q - 1) % two_n != 0)
    return 0;
  for (uint64_t x = 2; x < 1000000 && x < m->q; x++)
    {
      uint64_t g = ckks_pow_mod (x, (m->q - 1) / two_n, m);
      if (ckks_pow_mod (g, n, m) == m->q - 1)
        return g;
    }
  return 0;
}

static int
already_used (const uint64_t *primes, size_t count, uint64_t q)
{
  for (size_t i = 0; i < count; i++)
    if (primes[i] == q)
      return 1;
  return 0;
}

CkksStatus
ckks_params_generate (uint32_t log_n, const unsigned *bits, size_t n_moduli,
                      CkksParams *out)
{
  if (!bits || !out || n_moduli == 0 || n_moduli > CKKS_MAX_MODULI
      || log_n < CKKS_MIN_LOG_N || log_n > CKKS_MAX_LOG_N)
    return CKKS_ERR_INVALID_ARGUMENT;
  CkksParams p = { .log_n = log_n, .n_moduli = (uint32_t) n_moduli };
  uint64_t two_n = (uint64_t) 2 << log_n;
  for (size_t i = 0; i < n_moduli; i++)
    {
      if (bits[i] < CKKS_MIN_PRIME_BITS || bits[i] > CKKS_MAX_PRIME_BITS)
        return CKKS_ERR_INVALID_ARGUMENT;
      uint64_t low = (uint64_t) 1 << (bits[i] - 1);
      /* largest q = k * 2N + 1 below 2^bits */
      uint64_t q = (((uint64_t) 1 << bits[i]) - 1) / two_n * two_n + 1;
      while (q > low && (already_used (p.moduli, i, q) || !ckks_is_prime (q)))
        q -= two_n;
      if (q <= low)
        return CKKS_ERR_NO_PRIME;
      p.moduli[i] = q;
    }
  CkksStatus st = ckks_params_validate (&p);
  if (st == CKKS_OK)
    *out = p;
  return st;
}
