/* lm-cuda-check.cu: the GPU kernels' decoders and schedules run on the host.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lm-cuda-check.h"
#include "lm-cuda-matvec.h"
#include "lm-cuda-schedule.cuh"
#include "quant.h"

static uint64_t
next_random (uint64_t *state)
{
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

/* Decodes n values at @src unit by unit through Dec and compares with
 * lm_dequantize_row; @tag names the form in messages. */
template <class Dec>
static bool
check_row (LmTensorType type, const char *tag, const uint8_t *src, uint32_t n, float *want,
           float *got, int *seen, char *why, size_t why_len)
{
  if (lm_dequantize_row (type, src, want, n) != LM_OK)
    {
      snprintf (why, why_len, "%s: lm_dequantize_row refused %u values", tag, n);
      return false;
    }
  memset (seen, 0, n * sizeof *seen);
  uint32_t n_blocks = n / Dec::BV;
  for (uint32_t b = 0; b < n_blocks; b++)
    for (int c = 0; c < Dec::UPB; c++)
      {
        float v[Dec::C];
        Dec::decode (src + (size_t) b * Dec::BB, c, v);
        for (int i = 0; i < Dec::C; i++)
          {
            int pos = Dec::index (c, i);
            if (pos < 0 || pos >= Dec::BV)
              {
                snprintf (why, why_len, "%s: unit %d value %d maps outside its block (%d)", tag,
                          c, i, pos);
                return false;
              }
            got[(size_t) b * Dec::BV + pos] = v[i];
            seen[(size_t) b * Dec::BV + pos]++;
          }
      }
  for (uint32_t i = 0; i < n; i++)
    if (seen[i] != 1)
      {
        snprintf (why, why_len, "%s: position %u decoded %d times", tag, i, seen[i]);
        return false;
      }
  for (int pass = 0; pass < 2; pass++)
    {
      if (pass == 1)   /* whole blocks */
        for (uint32_t b = 0; b < n_blocks; b++)
          lmc_decode_block<Dec> (src + (size_t) b * Dec::BB, got + (size_t) b * Dec::BV);
      for (uint32_t i = 0; i < n; i++)
        if (lmc_float_bits (got[i]) != lmc_float_bits (want[i]))
          {
            snprintf (why, why_len, "%s (%s): value %u is %a (0x%08x), lm_dequantize_row gives %a (0x%08x)",
                      tag, pass ? "blocks" : "units", i, (double) got[i], lmc_float_bits (got[i]),
                      (double) want[i], lmc_float_bits (want[i]));
            return false;
          }
    }
  return true;
}

extern "C" bool
lm_cuda_check_blocks (uint64_t seed, int rounds, char *why, size_t why_len)
{
  const LmTensorType types[] = { LM_TYPE_F32, LM_TYPE_F16, LM_TYPE_BF16, LM_TYPE_Q8_0,
                                 LM_TYPE_Q4_K, LM_TYPE_Q5_K, LM_TYPE_Q6_K };
  const uint32_t max_n = 4 * 256;
  uint64_t state = seed ? seed : 0x9e3779b97f4a7c15ull;
  uint8_t *src = (uint8_t *) malloc (lm_row_bytes (LM_TYPE_F32, max_n));
  float *want = (float *) malloc (max_n * sizeof (float));
  float *got = (float *) malloc (max_n * sizeof (float));
  int *seen = (int *) malloc (max_n * sizeof (int));
  bool ok = src && want && got && seen;
  if (!ok)
    snprintf (why, why_len, "out of memory");

  for (int round = 0; ok && round < rounds; round++)
    for (size_t t = 0; ok && t < sizeof types / sizeof types[0]; t++)
      for (int vector = 0; ok && vector < 2; vector++)
        {
          LmTensorType type = types[t];
          uint32_t block = (uint32_t) lm_type_block_size (type);
          uint32_t n;
          if (block > 1)
            {
              if (vector)
                continue;   /* one form only */
              n = block * (uint32_t) (1 + next_random (&state) % (max_n / block));
            }
          else
            {
              uint32_t unit = type == LM_TYPE_F32 ? 4 : 8;
              n = vector ? unit * (uint32_t) (1 + next_random (&state) % (max_n / unit))
                         : (uint32_t) (1 + next_random (&state) % max_n);
            }
          size_t bytes = lm_row_bytes (type, n);
          for (size_t i = 0; i < bytes; i++)
            src[i] = (uint8_t) (next_random (&state) >> 56);
          char tag[64];
          snprintf (tag, sizeof tag, "%s%s, round %d, n %u", lm_type_name (type),
                    block > 1 ? "" : vector ? " (16-byte form)" : " (scalar form)", round, n);
          ok = lmc_with_decoder (type, vector != 0, [&] (auto dec) {
                 using Dec = decltype (dec);
                 return check_row<Dec> (type, tag, src, n, want, got, seen, why, why_len)
                          ? LM_OK : LM_ERR_FORMAT;
               }) == LM_OK;
        }
  free (seen);
  free (got);
  free (want);
  free (src);
  return ok;
}

/* The warp butterfly of the matvec kernel: v_l += v_(l xor offset). */
static float
butterfly_sum (float v[LMC_WARP])
{
  for (int offset = LMC_WARP / 2; offset > 0; offset /= 2)
    {
      float next[LMC_WARP];
      for (int l = 0; l < LMC_WARP; l++)
        next[l] = v[l] + v[l ^ offset];
      memcpy (v, next, sizeof next);
    }
  return v[0];
}

/* Rows checked as the device checks them (check_product in lm-cuda-matvec.cu). */
static LmStatus
host_product_checks (LmTensorType type, const void *w, size_t mat_stride, uint32_t n_in,
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

extern "C" LmStatus
lm_cuda_matvec_host (LmTensorType type, const void *w, size_t mat_stride, const int32_t *sel,
                     uint32_t k, uint32_t n_in, uint32_t n_out, const float *x, size_t x_stride,
                     float *y, bool accumulate)
{
  size_t row_bytes;
  bool vector;
  LmStatus st = host_product_checks (type, w, mat_stride, n_in, &row_bytes, &vector);
  if (st != LM_OK)
    return st;
  uint32_t slots = sel ? k : 1;
  return lmc_with_decoder (type, vector, [&] (auto dec) {
    using Dec = decltype (dec);
    /* the kernel reads x from shared memory, 16-byte aligned */
    float *sx = (float *) aligned_alloc (16, ((size_t) n_in * sizeof (float) + 15) / 16 * 16);
    if (sx == nullptr)
      return LM_ERR_NO_MEMORY;
    for (uint32_t j = 0; j < slots; j++)
      {
        float *ys = y + (size_t) j * n_out;
        const uint8_t *wm = (const uint8_t *) w;
        if (sel)
          {
            if (sel[j] < 0)
              {
                for (uint32_t o = 0; o < n_out; o++)
                  ys[o] = 0.0f;
                continue;
              }
            wm += (size_t) sel[j] * mat_stride;
          }
        memcpy (sx, x + (size_t) j * x_stride, (size_t) n_in * sizeof (float));
        for (uint32_t row0 = 0; row0 < n_out; row0 += LMC_MV_ROWS)
          {
            int rows = n_out - row0 < LMC_MV_ROWS ? (int) (n_out - row0) : LMC_MV_ROWS;
            float lanes[LMC_MV_ROWS][LMC_WARP];
            for (uint32_t lane = 0; lane < LMC_WARP; lane++)
              {
                float acc[LMC_MV_ROWS];
                lmc_lane_dot<Dec> (wm + (size_t) row0 * row_bytes, row_bytes, rows, sx,
                                   lmc_row_units<Dec> (n_in), lane, acc);
                for (int r = 0; r < LMC_MV_ROWS; r++)
                  lanes[r][lane] = acc[r];
              }
            for (int r = 0; r < rows; r++)
              {
                float sum = butterfly_sum (lanes[r]);
                ys[row0 + r] = accumulate ? ys[row0 + r] + sum : sum;
              }
          }
      }
    free (sx);
    return LM_OK;
  });
}

extern "C" LmStatus
lm_cuda_matmul_host (LmTensorType type, const void *w, uint32_t n_in, uint32_t n_out,
                     const float *x, const int32_t *x_rows, const int32_t *y_rows, uint32_t n,
                     float *y)
{
  size_t row_bytes;
  bool vector;
  LmStatus st = host_product_checks (type, w, 0, n_in, &row_bytes, &vector);
  if (st != LM_OK)
    return st;
  return lmc_with_decoder (type, vector, [&] (auto dec) {
    using Dec = decltype (dec);
    constexpr uint32_t units_per_row = LMC_MM_K / Dec::C;
    uint32_t n_tiles = (n_in + LMC_MM_K - 1) / LMC_MM_K;
    /* row o as the kernel's shared tiles hold it, zero-padded to whole tiles */
    float *tile = (float *) malloc ((size_t) n_tiles * LMC_MM_K * sizeof (float));
    if (tile == nullptr)
      return LM_ERR_NO_MEMORY;
    for (uint32_t o = 0; o < n_out; o++)
      {
        for (uint32_t k0 = 0; k0 < n_in; k0 += LMC_MM_K)
          for (uint32_t uu = 0; uu < units_per_row; uu++)
            {
              float v[Dec::C];
              lmc_tile_unit<Dec> ((const uint8_t *) w, row_bytes, n_in, n_out, o, k0, uu, v);
              for (int i = 0; i < Dec::C; i++)
                tile[k0 + lmc_tile_col<Dec> (k0, uu, i)] = v[i];
            }
        for (uint32_t t = 0; t < n; t++)
          {
            size_t xr = x_rows ? (size_t) x_rows[t] : t, yr = y_rows ? (size_t) y_rows[t] : t;
            float acc = 0.0f;
            for (uint32_t k = 0; k < n_tiles * LMC_MM_K; k++)
              acc = fmaf (tile[k], k < n_in ? x[xr * n_in + k] : 0.0f, acc);
            y[yr * n_out + o] = acc;
          }
      }
    free (tile);
    return LM_OK;
  });
}
