/* lm-cuda-schedule.cuh: the arithmetic of the product kernels, shared by the
 * device kernels (lm-cuda-matvec.cu) and their host emulation
 * (lm-cuda-check.cu), which reproduces every kernel's results bit for bit.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Decode (matvec): a block of MV_WARPS warps stages x in shared memory; warp
 * w owns MV_ROWS consecutive rows; lane l takes the units l, l+32, l+64, ...
 * of the row (so a warp reads 32 consecutive units, i.e. contiguous bytes),
 * accumulates in unit order, and the 32 lane sums are reduced by the
 * butterfly v += shfl_xor(v, 16, 8, 4, 2, 1). Per unit, F32/F16/BF16 add
 * w * x value by value (fmaf); the quantised types add the unit's Dec::dot,
 * which sums q * x per group of one scale and applies the scale (and min)
 * once, avoiding a multiply and a subtraction per value.
 *
 * Prefill (matmul): a block computes MM_ROWS outputs x MM_TOKENS tokens;
 * for each tile of MM_K input values it decodes the weight tile once into
 * shared memory (zeros past n_in or n_out) and stages the tokens' x; every
 * output then accumulates fmaf over the tile's values in order, tiles in
 * order, from 0. */
#pragma once

#include <math.h>

#include "lm-cuda-blocks.cuh"

#define LMC_MV_WARPS 4
#define LMC_MV_ROWS 2
#define LMC_WARP 32

#define LMC_MM_ROWS 32
#define LMC_MM_TOKENS 32
#define LMC_MM_K 128
#define LMC_MM_THREADS 256

/* The activations of unit c of block @blk: C values, from x (16-byte
 * aligned when C >= 4: shared memory on the device). */
template <class Dec>
LMC_HD void
lmc_load_unit_x (const float *x, uint32_t blk, int c, float *xv)
{
  const float *xb = x + (size_t) blk * Dec::BV;
  if constexpr (Dec::C % 4 == 0)
    {
      for (int q = 0; q < Dec::C / 4; q++)
        {
          const float *p = xb + Dec::index (c, 4 * q);
#ifdef __CUDA_ARCH__
          float4 f = *reinterpret_cast<const float4 *> (p);
          xv[4 * q] = f.x;
          xv[4 * q + 1] = f.y;
          xv[4 * q + 2] = f.z;
          xv[4 * q + 3] = f.w;
#else
          for (int k = 0; k < 4; k++)
            xv[4 * q + k] = p[k];
#endif
        }
    }
  else
    {
      for (int i = 0; i < Dec::C; i++)
        xv[i] = xb[Dec::index (c, i)];
    }
}

/* Lane @lane's partial sums for @rows (<= MV_ROWS) rows starting at @w. */
template <class Dec>
LMC_HD void
lmc_lane_dot (const uint8_t *w, size_t row_bytes, int rows, const float *x, uint32_t n_units,
              uint32_t lane, float acc[LMC_MV_ROWS])
{
  for (int r = 0; r < LMC_MV_ROWS; r++)
    acc[r] = 0.0f;
  for (uint32_t u = lane; u < n_units; u += LMC_WARP)
    {
      uint32_t blk = u / Dec::UPB;
      int c = (int) (u % Dec::UPB);
      float xv[Dec::C];
      lmc_load_unit_x<Dec> (x, blk, c, xv);
      if constexpr (Dec::FAST)
        {
          /* quantised types: scales applied once per group of values */
          float xs[Dec::XS];
          Dec::xsums (xv, xs);
          for (int r = 0; r < LMC_MV_ROWS; r++)
            if (r < rows)
              acc[r] = lmc_add (acc[r], Dec::dot (w + (size_t) r * row_bytes
                                                  + (size_t) blk * Dec::BB, c, xv, xs));
        }
      else
        {
          for (int r = 0; r < LMC_MV_ROWS; r++)
            if (r < rows)
              {
                float v[Dec::C];
                Dec::decode (w + (size_t) r * row_bytes + (size_t) blk * Dec::BB, c, v);
                for (int i = 0; i < Dec::C; i++)
                  acc[r] = fmaf (v[i], xv[i], acc[r]);
              }
        }
    }
}

/* The units of a row of n_in values. */
template <class Dec>
LMC_HD uint32_t
lmc_row_units (uint32_t n_in)
{
  return n_in / Dec::BV * Dec::UPB;
}

/* The weight value of tile position (row r, k) for the matmul tile at input
 * offset k0: unit uu of the tile's MM_K / C units, value i, at tile column
 * lmc_tile_col. */
template <class Dec>
LMC_HD int
lmc_tile_col (uint32_t k0, uint32_t uu, int i)
{
  uint32_t u = k0 / Dec::C + uu;
  uint32_t blk = u / Dec::UPB;
  int c = (int) (u % Dec::UPB);
  return (int) (blk * Dec::BV + (uint32_t) Dec::index (c, i) - k0);
}

/* Decodes unit uu of row @row's tile at k0 into v (zeros past the row or
 * past n_out). */
template <class Dec>
LMC_HD void
lmc_tile_unit (const uint8_t *w, size_t row_bytes, uint32_t n_in, uint32_t n_out, uint32_t row,
               uint32_t k0, uint32_t uu, float *v)
{
  uint32_t u = k0 / Dec::C + uu;
  if (row < n_out && u < lmc_row_units<Dec> (n_in))
    Dec::decode (w + (size_t) row * row_bytes + (size_t) (u / Dec::UPB) * Dec::BB,
                 (int) (u % Dec::UPB), v);
  else
    for (int i = 0; i < Dec::C; i++)
      v[i] = 0.0f;
}

static_assert (LMC_MM_K % 128 == 0, "a matmul tile holds whole unit groups of every type");
