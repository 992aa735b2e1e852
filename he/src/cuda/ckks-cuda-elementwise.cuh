/* ckks-cuda-elementwise.cuh: the per-coefficient work of the element-wise
 * kernels, as __host__ __device__ functions (the self-check runs them for
 * every element on the host).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-cuda-arith.cuh"
#include "ckks-params.h"

/* Inputs kept in registers across the outputs of mul_plain_accumulate;
 * further inputs are read again for each output. */
#define CKKS_CUDA_MPA_CACHED_INPUTS 4u

/* The arguments of ckks_cuda_mul_plain_accumulate, plus the moduli. */
typedef struct {
  const uint64_t *a0, *a1;
  size_t in_stride;
  uint32_t n_in;
  const uint64_t *w, *w_shoup;
  size_t pt_stride;
  uint32_t n_out;
  const uint64_t *add0, *add1;
  uint64_t *out0, *out1;
  size_t out_stride;
  uint32_t log_n, n_limbs;
  uint64_t q[CKKS_MAX_MODULI];
} CkksCuMpaArgs;

/* acc + p with acc, p in [0, 2q): back into [0, 2q) (4q < 2^63). */
CKKS_CUDA_HD uint64_t
ckks_cu_lazy_add (uint64_t acc, uint64_t p, uint64_t q)
{
  uint64_t s = acc + p;
  return s >= 2 * q ? s - 2 * q : s;
}

CKKS_CUDA_HD uint64_t
ckks_cu_finish_sum (uint64_t acc, const uint64_t *add, size_t at, uint64_t q)
{
  uint64_t r = acc >= q ? acc - q : acc;
  return add ? ckks_cu_add_mod (add[at], r, q) : r;
}

/* Outputs one thread computes (grid y runs over the groups). */
#define CKKS_CUDA_MPA_OUTPUTS_PER_THREAD 2u

CKKS_CUDA_HD uint32_t
ckks_cu_mpa_groups (uint32_t n_out)
{
  return (n_out + CKKS_CUDA_MPA_OUTPUTS_PER_THREAD - 1) / CKKS_CUDA_MPA_OUTPUTS_PER_THREAD;
}

/* Outputs [group * 2, group * 2 + 2) of coefficient @e (limb e >> log_n)
 * of mul_plain_accumulate: the sums stay in [0, 2q) in registers and are
 * fully reduced once, so the result equals the CPU's chain of fully
 * reduced mul_fixed_pair calls. */
CKKS_CUDA_HD void
ckks_cu_mpa_element (const CkksCuMpaArgs &a, size_t e, uint32_t group)
{
  const uint64_t q = a.q[e >> a.log_n];
  uint64_t x0[CKKS_CUDA_MPA_CACHED_INPUTS] = { 0 }, x1[CKKS_CUDA_MPA_CACHED_INPUTS] = { 0 };
CKKS_CUDA_UNROLL
  for (uint32_t k = 0; k < CKKS_CUDA_MPA_CACHED_INPUTS; k++)
    if (k < a.n_in)
      {
        x0[k] = a.a0[k * a.in_stride + e];
        x1[k] = a.a1[k * a.in_stride + e];
      }
CKKS_CUDA_UNROLL
  for (uint32_t j = 0; j < CKKS_CUDA_MPA_OUTPUTS_PER_THREAD; j++)
    {
      const uint32_t b = group * CKKS_CUDA_MPA_OUTPUTS_PER_THREAD + j;
      if (b >= a.n_out)
        break;
      const uint64_t *w = a.w + (size_t) b * a.n_in * a.pt_stride + e;
      const uint64_t *ws = a.w_shoup + (size_t) b * a.n_in * a.pt_stride + e;
      uint64_t acc0 = 0, acc1 = 0;
CKKS_CUDA_UNROLL
      for (uint32_t k = 0; k < CKKS_CUDA_MPA_CACHED_INPUTS; k++)
        if (k < a.n_in)
          {
            uint64_t wk = w[k * a.pt_stride], wsk = ws[k * a.pt_stride];
            acc0 = ckks_cu_lazy_add (acc0, ckks_cu_mul_shoup_lazy (x0[k], wk, wsk, q), q);
            acc1 = ckks_cu_lazy_add (acc1, ckks_cu_mul_shoup_lazy (x1[k], wk, wsk, q), q);
          }
      for (uint32_t k = CKKS_CUDA_MPA_CACHED_INPUTS; k < a.n_in; k++)
        {
          uint64_t wk = w[k * a.pt_stride], wsk = ws[k * a.pt_stride];
          uint64_t y0 = a.a0[k * a.in_stride + e], y1 = a.a1[k * a.in_stride + e];
          acc0 = ckks_cu_lazy_add (acc0, ckks_cu_mul_shoup_lazy (y0, wk, wsk, q), q);
          acc1 = ckks_cu_lazy_add (acc1, ckks_cu_mul_shoup_lazy (y1, wk, wsk, q), q);
        }
      size_t at = b * a.out_stride + e;
      a.out0[at] = ckks_cu_finish_sum (acc0, a.add0, at, q);
      a.out1[at] = ckks_cu_finish_sum (acc1, a.add1, at, q);
    }
}

/* Rescale, before the forward NTT: the last limb's coefficient (already
 * inverse transformed) plus q_last / 2, reduced to q_i, minus
 * (q_last / 2 mod q_i), as rescale_poly in ckks-eval.c. */
CKKS_CUDA_HD uint64_t
ckks_cu_rescale_lift (uint64_t last, uint64_t q_last, uint64_t q, uint64_t ratio_lo,
                      uint64_t ratio_hi)
{
  const uint64_t half = q_last >> 1;
  uint64_t half_i = ckks_cu_barrett_reduce_64w (half, q, ratio_lo, ratio_hi);
  uint64_t v = ckks_cu_add_mod (last, half, q_last);
  return ckks_cu_sub_mod (ckks_cu_barrett_reduce_64w (v, q, ratio_lo, ratio_hi), half_i, q);
}

/* Rescale, after: (p - t) * q_last^-1 mod q. */
CKKS_CUDA_HD uint64_t
ckks_cu_rescale_finish (uint64_t p, uint64_t t, uint64_t inv, uint64_t inv_shoup, uint64_t q)
{
  return ckks_cu_mul_shoup (ckks_cu_sub_mod (p, t, q), inv, inv_shoup, q);
}
