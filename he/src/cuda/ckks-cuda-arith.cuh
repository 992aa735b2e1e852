/* ckks-cuda-arith.cuh: 64-bit modular arithmetic for the CUDA kernels.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every function mirrors its namesake in ckks-modarith.h operation for
 * operation, so a kernel gives the CPU's bits. They are __host__ __device__:
 * the host test (ckks-cuda-selfcheck.cu) runs the very code the kernels run.
 * The only difference between the two sides is the high half of a 64x64-bit
 * product: __umul64hi on the device, unsigned __int128 on the host. The
 * 128-bit Barrett reduction is written with 64-bit words and explicit
 * carries (no __int128), so the host test checks the carry logic the device
 * executes.
 *
 * Moduli are odd primes below 2^61, so 4q < 2^63 and the lazy ranges below
 * never overflow.
 */
#pragma once

#include <stdint.h>

#define CKKS_CUDA_HD __host__ __device__ __forceinline__

/* Loop unrolling for the device pass only (the host compiler knows no such
 * pragma). */
#ifdef __CUDA_ARCH__
#define CKKS_CUDA_UNROLL _Pragma ("unroll")
#else
#define CKKS_CUDA_UNROLL
#endif

CKKS_CUDA_HD uint64_t
ckks_cu_mul_hi (uint64_t a, uint64_t b)
{
#ifdef __CUDA_ARCH__
  return __umul64hi (a, b);
#else
  return (uint64_t) (((unsigned __int128) a * b) >> 64);
#endif
}

CKKS_CUDA_HD uint64_t
ckks_cu_add_mod (uint64_t a, uint64_t b, uint64_t q)
{
  uint64_t s = a + b;
  return s >= q ? s - q : s;
}

CKKS_CUDA_HD uint64_t
ckks_cu_sub_mod (uint64_t a, uint64_t b, uint64_t q)
{
  return a >= b ? a - b : a + q - b;
}

CKKS_CUDA_HD uint64_t
ckks_cu_neg_mod (uint64_t a, uint64_t q)
{
  return a == 0 ? 0 : q - a;
}

/* x * w mod q in [0, 2q), any 64-bit x; w_shoup = floor(w * 2^64 / q). */
CKKS_CUDA_HD uint64_t
ckks_cu_mul_shoup_lazy (uint64_t x, uint64_t w, uint64_t w_shoup, uint64_t q)
{
  uint64_t qhat = ckks_cu_mul_hi (x, w_shoup);
  return x * w - qhat * q;
}

CKKS_CUDA_HD uint64_t
ckks_cu_mul_shoup (uint64_t x, uint64_t w, uint64_t w_shoup, uint64_t q)
{
  uint64_t r = ckks_cu_mul_shoup_lazy (x, w, w_shoup, q);
  return r >= q ? r - q : r;
}

/* (z1 * 2^64 + z0) mod q with ratio = floor(2^128 / q) = (ratio_hi, ratio_lo):
 * ckks_barrett_reduce_128 with the 128-bit sums spelled out. */
CKKS_CUDA_HD uint64_t
ckks_cu_barrett_reduce_128 (uint64_t z0, uint64_t z1, uint64_t q, uint64_t ratio_lo,
                            uint64_t ratio_hi)
{
  /* mid = hi(z0 * lo) + lo(z0 * hi) + lo(z1 * lo), below 3 * 2^64 */
  uint64_t p01_lo = z0 * ratio_hi, p10_lo = z1 * ratio_lo;
  uint64_t s = ckks_cu_mul_hi (z0, ratio_lo) + p01_lo;
  uint64_t carry = s < p01_lo;
  s += p10_lo;
  carry += s < p10_lo;
  uint64_t qhat = carry + ckks_cu_mul_hi (z0, ratio_hi) + ckks_cu_mul_hi (z1, ratio_lo)
                  + z1 * ratio_hi;
  uint64_t r = z0 - qhat * q;
  while (r >= q)
    r -= q;
  return r;
}

/* A 64-bit x mod q: the 128-bit reduction with a zero high word, as the
 * CPU's rescale calls it. */
CKKS_CUDA_HD uint64_t
ckks_cu_barrett_reduce_64w (uint64_t x, uint64_t q, uint64_t ratio_lo, uint64_t ratio_hi)
{
  return ckks_cu_barrett_reduce_128 (x, 0, q, ratio_lo, ratio_hi);
}

/* Harvey's lazy forward (Cooley-Tukey) butterfly of ntt_forward_scalar:
 * x, y in [0, 4q) in and out. */
CKKS_CUDA_HD void
ckks_cu_ntt_fwd_butterfly (uint64_t *x, uint64_t *y, uint64_t w, uint64_t w_shoup,
                           uint64_t q)
{
  const uint64_t two_q = 2 * q;
  uint64_t u = *x;
  u = u >= two_q ? u - two_q : u;
  uint64_t v = ckks_cu_mul_shoup_lazy (*y, w, w_shoup, q);
  *x = u + v;
  *y = u - v + two_q;
}

/* [0, 4q) to [0, q): the forward transform's final pass. */
CKKS_CUDA_HD uint64_t
ckks_cu_reduce_4q (uint64_t v, uint64_t q)
{
  const uint64_t two_q = 2 * q;
  v = v >= two_q ? v - two_q : v;
  return v >= q ? v - q : v;
}

/* Gentleman-Sande butterfly of ntt_inverse_scalar: [0, 2q) in and out. */
CKKS_CUDA_HD void
ckks_cu_ntt_inv_butterfly (uint64_t *x, uint64_t *y, uint64_t w, uint64_t w_shoup,
                           uint64_t q)
{
  const uint64_t two_q = 2 * q;
  uint64_t u = *x, v = *y;
  uint64_t s = u + v;
  *x = s >= two_q ? s - two_q : s;
  *y = ckks_cu_mul_shoup_lazy (u - v + two_q, w, w_shoup, q);
}

/* The inverse's last stage with N^-1 folded in: fully reduced out. */
CKKS_CUDA_HD void
ckks_cu_ntt_inv_last_butterfly (uint64_t *x, uint64_t *y, uint64_t n_inv,
                                uint64_t n_inv_shoup, uint64_t w_n_inv,
                                uint64_t w_n_inv_shoup, uint64_t q)
{
  const uint64_t two_q = 2 * q;
  uint64_t u = *x, v = *y;
  *x = ckks_cu_mul_shoup (u + v, n_inv, n_inv_shoup, q);
  *y = ckks_cu_mul_shoup (u - v + two_q, w_n_inv, w_n_inv_shoup, q);
}
