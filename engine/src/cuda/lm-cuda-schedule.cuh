/* lm-cuda-schedule.cuh: the arithmetic of the product kernels, shared by the
 * device kernels (lm-cuda-matvec.cu) and their host emulation
 * (lm-cuda-check.cu), which reproduces every kernel's results bit for bit.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Decode (matvec): a block of 4 or 8 warps stages x in shared memory; warp
 * w owns MV_ROWS consecutive rows; lane l takes the units l, l+32, l+64, ...
 * of the row (so a warp reads 32 consecutive units, i.e. contiguous bytes),
 * accumulates in unit order, and the 32 lane sums are reduced by the
 * butterfly v += shfl_xor(v, 16, 8, 4, 2, 1). Per unit, F32 and BF16 add
 * w * x value by value into the lane's sum (fmaf); the quantised types and
 * F16 add the unit's Dec::dot (Dec::FAST), which for the quantised types
 * sums q * x per group of one scale and applies the scale (and min) once,
 * and converts fp16 scales and weights with the hardware instruction.
 *
 * Prefill (matmul): a block computes MM_ROWS outputs x MM_TOKENS tokens,
 * each thread 4 rows x 4 tokens; for each tile of MM_K input values it
 * decodes the weight tile once into shared memory (k-major, zeros past n_in
 * or n_out) and stages the tokens' x (token-major); every output then
 * accumulates fmaf over the tile's values in order, tiles in order, from 0.
 *
 * Prefill with 8-bit activations (lm_cuda_matmul_ex, LM_CUDA_ACT_Q8): one
 * block per (token, row block of the decode kernel), running the decode
 * kernel's row block on that token's row: the row quantised in shared
 * memory, then lmc_lane_dot_q8 and the butterfly, so each token gets
 * exactly the decode product's float sequence. */
#pragma once

#include <math.h>

#include "lm-cuda-blocks.cuh"
#include "lm-cuda-matvec.h"
#include "quant.h"

/* Warps per block of the decode kernel: more for tall matrices, so that
 * each block's staging of x serves more rows; fewer for short ones, so that
 * there are blocks for every SM. The rows' arithmetic does not depend on it. */
#define LMC_MV_MAX_WARPS 8
#define LMC_MV_TALL 2048
#define LMC_MV_ROWS 2
#define LMC_WARP 32

#define LMC_MM_ROWS 64
#define LMC_MM_TOKENS 64
#define LMC_MM_K 128
#define LMC_MM_THREADS 256
#define LMC_MM_W_STRIDE (LMC_MM_ROWS + 4)   /* floats per k of the weight tile */
#define LMC_MM_X_STRIDE (LMC_MM_K + 1)      /* floats per token of the x tile */

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

/* Integer activations (LM_CUDA_ACT_Q8): x quantised per group of QG values
 * exactly as the CPU's native mode does (lm_quantize_row_q8_K for the
 * K-quants, lm_quantize_row_q8_0_act for Q8_0), kept as n_in int8 (padded
 * to 16 bytes) followed by one float scale per group; each unit adds
 * Dec::dot_q8 (integer dot products, dp4a on the device). */
LMC_HD size_t
lmc_q8_smem_bytes (uint32_t n_in, int qg)
{
  return ((size_t) n_in + 15) / 16 * 16 + (size_t) (n_in / (uint32_t) qg) * sizeof (float);
}

template <class Dec>
LMC_HD void
lmc_lane_dot_q8 (const uint8_t *w, size_t row_bytes, int rows, const uint8_t *xq,
                 const float *dx, uint32_t n_units, uint32_t lane, float acc[LMC_MV_ROWS])
{
  static_assert (Dec::BV == Dec::QG, "one activation scale per weight block");
  for (int r = 0; r < LMC_MV_ROWS; r++)
    acc[r] = 0.0f;
  for (uint32_t u = lane; u < n_units; u += LMC_WARP)
    {
      uint32_t blk = u / Dec::UPB;
      int c = (int) (u % Dec::UPB);
      const uint8_t *xb = xq + (size_t) blk * Dec::BV;
      int32_t xs[2] = { 0, 0 };
      Dec::q8_sums (xb, c, xs);
      for (int r = 0; r < LMC_MV_ROWS; r++)
        if (r < rows)
          acc[r] = lmc_add (acc[r], Dec::dot_q8 (w + (size_t) r * row_bytes
                                                 + (size_t) blk * Dec::BB, c, xb, dx[blk], xs));
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

/* ---- the prefill kernel's phases, per thread (tid < MM_THREADS) ----
 * The kernel runs, per block: for each k0, load_w and load_x on every
 * thread, a barrier, compute on every thread, a barrier; then store. The
 * host emulation runs the same phases thread after thread. Shared memory:
 * sw[MM_K][MM_W_STRIDE] (k-major weight tile), then sxt[MM_TOKENS][MM_X_STRIDE]. */

typedef struct
{
  const uint8_t *w;
  size_t row_bytes;
  uint32_t n_in, n_out;
  const float *x;
  const int32_t *x_rows, *y_rows;   /* NULL: token t is row t */
  uint32_t n;
  float *y;
} LmcMatmulArgs;

#define LMC_MM_SMEM_FLOATS (LMC_MM_K * LMC_MM_W_STRIDE + LMC_MM_TOKENS * LMC_MM_X_STRIDE)

/* Decodes this thread's units of the weight tile at k0 into sw. */
template <class Dec>
LMC_HD void
lmc_mm_load_w (const LmcMatmulArgs *a, uint32_t row_base, uint32_t k0, uint32_t tid, float *sw)
{
  constexpr uint32_t units_per_row = LMC_MM_K / Dec::C;
  for (uint32_t idx = tid; idx < LMC_MM_ROWS * units_per_row; idx += LMC_MM_THREADS)
    {
      uint32_t r = idx / units_per_row, uu = idx % units_per_row;
      float v[Dec::C];
      lmc_tile_unit<Dec> (a->w, a->row_bytes, a->n_in, a->n_out, row_base + r, k0, uu, v);
      for (int i = 0; i < Dec::C; i++)
        sw[lmc_tile_col<Dec> (k0, uu, i) * LMC_MM_W_STRIDE + r] = v[i];
    }
}

/* Stages this thread's share of the tokens' x at k0 into sxt (zeros past
 * n_in or n). */
LMC_HD void
lmc_mm_load_x (const LmcMatmulArgs *a, uint32_t tok_base, uint32_t k0, uint32_t tid, float *sxt)
{
  for (uint32_t idx = tid; idx < LMC_MM_TOKENS * LMC_MM_K; idx += LMC_MM_THREADS)
    {
      uint32_t t = idx / LMC_MM_K, kk = idx % LMC_MM_K, tok = tok_base + t;
      float v = 0.0f;
      if (tok < a->n && k0 + kk < a->n_in)
        {
          size_t xr = a->x_rows ? (size_t) a->x_rows[tok] : tok;
          v = a->x[xr * a->n_in + k0 + kk];
        }
      sxt[t * LMC_MM_X_STRIDE + kk] = v;
    }
}

/* Thread tid's 4 rows (4 tx ..) x 4 tokens (4 ty ..), tx = tid % 16,
 * ty = tid / 16: acc += the tile's products, k in order. */
LMC_HD void
lmc_mm_compute (uint32_t tid, const float *sw, const float *sxt, float acc[4][4])
{
  const uint32_t tx = tid % 16, ty = tid / 16;
  for (int k = 0; k < LMC_MM_K; k++)
    {
      const float *wp = sw + k * LMC_MM_W_STRIDE + 4 * tx;
      float wr[4];
#ifdef __CUDA_ARCH__
      float4 wv = *reinterpret_cast<const float4 *> (wp);
      wr[0] = wv.x;
      wr[1] = wv.y;
      wr[2] = wv.z;
      wr[3] = wv.w;
#else
      for (int i = 0; i < 4; i++)
        wr[i] = wp[i];
#endif
      float xv[4];
      for (int b = 0; b < 4; b++)
        xv[b] = sxt[(4 * ty + b) * LMC_MM_X_STRIDE + k];
      for (int r = 0; r < 4; r++)
        for (int b = 0; b < 4; b++)
          acc[r][b] = fmaf (wr[r], xv[b], acc[r][b]);
    }
}

LMC_HD void
lmc_mm_store (const LmcMatmulArgs *a, uint32_t row_base, uint32_t tok_base, uint32_t tid,
              const float acc[4][4])
{
  const uint32_t tx = tid % 16, ty = tid / 16;
  for (int r = 0; r < 4; r++)
    for (int b = 0; b < 4; b++)
      {
        uint32_t row = row_base + 4 * tx + r, tok = tok_base + 4 * ty + b;
        if (row < a->n_out && tok < a->n)
          {
            size_t yr = a->y_rows ? (size_t) a->y_rows[tok] : tok;
            a->y[yr * a->n_out + row] = acc[r][b];
          }
      }
}

static_assert (LMC_MM_THREADS == 256 && LMC_MM_ROWS == 64 && LMC_MM_TOKENS == 64,
               "lmc_mm_compute maps 256 threads onto 64 x 64 outputs, 4 x 4 each");

/* Shape and alignment checks shared by every product, on the device calls
 * and their host emulation alike; *vector says whether a floating-point type
 * may use its 16-byte form. Host code. */
static inline LmStatus
lmc_check_product (LmTensorType type, const void *w, size_t mat_stride, uint32_t n_in,
                   size_t *row_bytes, bool *vector)
{
  if (!lm_cuda_matvec_supports (type))
    return LM_ERR_UNSUPPORTED;
  *row_bytes = lm_row_bytes (type, n_in);
  if (n_in == 0 || *row_bytes == 0)
    return LM_ERR_SHAPE;
  uint64_t bits = (uint64_t) (uintptr_t) w | mat_stride | *row_bytes;
  *vector = lmc_fp_vector_ok (type, n_in, bits);
  return lmc_with_decoder (type, *vector, [&] (auto dec) {
    using Dec = decltype (dec);
    return w != nullptr && bits % Dec::ALIGN == 0 ? LM_OK : LM_ERR_INVALID_ARGUMENT;
  });
}

/* lmc_check_product, then the activation mode of a call that takes one. */
static inline LmStatus
lmc_check_mode_product (LmCudaActMode mode, LmTensorType type, const void *w, size_t mat_stride,
                        uint32_t n_in, size_t *row_bytes, bool *vector)
{
  LmStatus st = lmc_check_product (type, w, mat_stride, n_in, row_bytes, vector);
  if (st != LM_OK)
    return st;
  return mode == LM_CUDA_ACT_F32 || mode == LM_CUDA_ACT_Q8 ? LM_OK : LM_ERR_INVALID_ARGUMENT;
}
