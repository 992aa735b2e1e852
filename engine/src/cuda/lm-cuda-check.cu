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
      /* Bit for bit, except that a NaN may come back as another NaN: which
       * operand's payload a NaN sum carries is the compiler's choice (a
       * release build commutes the min's addition), and the device gives
       * its canonical NaN. */
      for (uint32_t i = 0; i < n; i++)
        if (lmc_float_bits (got[i]) != lmc_float_bits (want[i])
            && !(isnan (got[i]) && isnan (want[i])))
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
                                 LM_TYPE_Q4_K, LM_TYPE_Q5_K, LM_TYPE_Q6_K, LM_TYPE_Q4_0,
                                 LM_TYPE_Q4_1, LM_TYPE_Q5_0, LM_TYPE_Q5_1, LM_TYPE_Q2_K,
                                 LM_TYPE_Q3_K };
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
  /* the device's f32 -> fp16 (the Q8_0 activation scale) */
  for (int i = 0; ok && i < rounds * 1000; i++)
    {
      uint32_t bits = (uint32_t) (next_random (&state) >> 32);
      if (i % 2)   /* half of them near the fp16 range */
        bits = (bits & 0x807fffffu) | ((uint32_t) (100 + (bits >> 23) % 50) << 23);
      float f = lmc_bits_float (bits);
      if (lmc_fp32_to_fp16 (f) != lm_fp32_to_fp16 (f))
        {
          snprintf (why, why_len, "fp32 -> fp16 of %a (0x%08x): 0x%04x, lm_fp32_to_fp16 gives 0x%04x",
                    (double) f, bits, lmc_fp32_to_fp16 (f), lm_fp32_to_fp16 (f));
          ok = false;
        }
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

/* x quantised as the CPU's native mode does, in the kernel's layout: n_in
 * int8, then one float scale per group (lmc_q8_smem_bytes). */
template <class Dec>
static bool
quantize_act_host (const float *x, uint32_t n_in, uint8_t *xq, float *dx)
{
  uint32_t groups = n_in / Dec::QG;
  if constexpr (Dec::QG == 256)
    {
      LmBlockQ8_K *a = (LmBlockQ8_K *) malloc (groups * sizeof *a);
      if (a == nullptr)
        return false;
      lm_quantize_row_q8_K (x, a, n_in);
      for (uint32_t g = 0; g < groups; g++)
        {
          memcpy (xq + (size_t) g * 256, a[g].qs, 256);
          dx[g] = a[g].d;
        }
      free (a);
    }
  else
    {
      LmBlockQ8_0 *a = (LmBlockQ8_0 *) malloc (groups * sizeof *a);
      if (a == nullptr)
        return false;
      lm_quantize_row_q8_0_act (x, a, n_in);
      for (uint32_t g = 0; g < groups; g++)
        {
          memcpy (xq + (size_t) g * 32, a[g].qs, 32);
          dx[g] = lm_fp16_to_fp32 (a[g].d);
        }
      free (a);
    }
  return true;
}

extern "C" LmStatus
lm_cuda_matvec_host (LmCudaActMode mode, LmTensorType type, const void *w, size_t mat_stride, const int32_t *sel,
                     uint32_t k, uint32_t n_in, uint32_t n_out, const float *x, size_t x_stride,
                     float *y, bool accumulate)
{
  size_t row_bytes;
  bool vector;
  LmStatus st = lmc_check_mode_product (mode, type, w, mat_stride, n_in, &row_bytes, &vector);
  if (st != LM_OK)
    return st;
  uint32_t slots = sel ? k : 1;
  return lmc_with_decoder (type, vector, [&] (auto dec) {
    using Dec = decltype (dec);
    bool q8 = false;
    if constexpr (Dec::Q8)
      q8 = mode == LM_CUDA_ACT_Q8;
    /* the kernel's shared memory: x (16-byte aligned), or its int8 form */
    size_t smem = q8 ? lmc_q8_smem_bytes (n_in, Dec::QG) : (size_t) n_in * sizeof (float);
    float *sx = (float *) aligned_alloc (16, (smem + 15) / 16 * 16);
    if (sx == nullptr)
      return LM_ERR_NO_MEMORY;
    memset (sx, 0xff, (smem + 15) / 16 * 16);   /* NaN where the staging does not write */
    uint8_t *xq = (uint8_t *) sx;
    float *dx = (float *) (xq + ((size_t) n_in + 15) / 16 * 16);
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
        const float *xj = x + (size_t) j * x_stride;
        if (!q8)
          memcpy (sx, xj, (size_t) n_in * sizeof (float));
        else if (!quantize_act_host<Dec> (xj, n_in, xq, dx))
          {
            free (sx);
            return LM_ERR_NO_MEMORY;
          }
        for (uint32_t row0 = 0; row0 < n_out; row0 += LMC_MV_ROWS)
          {
            int rows = n_out - row0 < LMC_MV_ROWS ? (int) (n_out - row0) : LMC_MV_ROWS;
            float lanes[LMC_MV_ROWS][LMC_WARP];
            for (uint32_t lane = 0; lane < LMC_WARP; lane++)
              {
                float acc[LMC_MV_ROWS];
                const uint8_t *wr = wm + (size_t) row0 * row_bytes;
                if constexpr (Dec::Q8)
                  {
                    if (q8)
                      lmc_lane_dot_q8<Dec> (wr, row_bytes, rows, xq, dx,
                                            lmc_row_units<Dec> (n_in), lane, acc);
                    else
                      lmc_lane_dot<Dec> (wr, row_bytes, rows, sx, lmc_row_units<Dec> (n_in),
                                         lane, acc);
                  }
                else
                  lmc_lane_dot<Dec> (wr, row_bytes, rows, sx, lmc_row_units<Dec> (n_in), lane,
                                     acc);
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
  LmStatus st = lmc_check_product (type, w, 0, n_in, &row_bytes, &vector);
  if (st != LM_OK)
    return st;
  return lmc_with_decoder (type, vector, [&] (auto dec) {
    using Dec = decltype (dec);
    /* the kernel's blocks one after the other, each block's threads one
     * after the other between its barriers */
    LmcMatmulArgs args = { (const uint8_t *) w, row_bytes, n_in, n_out, x, x_rows, y_rows, n, y };
    float *smem = (float *) aligned_alloc (16, LMC_MM_SMEM_FLOATS * sizeof (float));
    float (*acc)[4][4] = (float (*)[4][4]) malloc (LMC_MM_THREADS * sizeof *acc);
    if (smem == nullptr || acc == nullptr)
      {
        free (acc);
        free (smem);
        return LM_ERR_NO_MEMORY;
      }
    float *sw = smem, *sxt = smem + LMC_MM_K * LMC_MM_W_STRIDE;
    for (uint32_t row_base = 0; row_base < n_out; row_base += LMC_MM_ROWS)
      for (uint32_t tok_base = 0; tok_base < n; tok_base += LMC_MM_TOKENS)
        {
          memset (acc, 0, LMC_MM_THREADS * sizeof *acc);
          /* NaN: a read of shared memory the loads did not write shows */
          memset (smem, 0xff, LMC_MM_SMEM_FLOATS * sizeof (float));
          for (uint32_t k0 = 0; k0 < n_in; k0 += LMC_MM_K)
            {
              for (uint32_t tid = 0; tid < LMC_MM_THREADS; tid++)
                {
                  lmc_mm_load_w<Dec> (&args, row_base, k0, tid, sw);
                  lmc_mm_load_x (&args, tok_base, k0, tid, sxt);
                }
              for (uint32_t tid = 0; tid < LMC_MM_THREADS; tid++)
                lmc_mm_compute (tid, sw, sxt, acc[tid]);
            }
          for (uint32_t tid = 0; tid < LMC_MM_THREADS; tid++)
            lmc_mm_store (&args, row_base, tok_base, tid, acc[tid]);
        }
    free (acc);
    free (smem);
    return LM_OK;
  });
}

extern "C" LmStatus
lm_cuda_matmul_host_ex (LmCudaActMode mode, LmTensorType type, const void *w, uint32_t n_in,
                        uint32_t n_out, const float *x, const int32_t *x_rows,
                        const int32_t *y_rows, uint32_t n, float *y)
{
  size_t row_bytes;
  bool vector;
  LmStatus st = lmc_check_mode_product (mode, type, w, 0, n_in, &row_bytes, &vector);
  if (st != LM_OK)
    return st;
  bool q8 = false;
  lmc_with_decoder (type, vector, [&] (auto dec) {
    q8 = decltype (dec)::Q8 && mode == LM_CUDA_ACT_Q8;
    return LM_OK;
  });
  if (!q8)
    return lm_cuda_matmul_host (type, w, n_in, n_out, x, x_rows, y_rows, n, y);
  /* a block of the prefill kernel is a row block of the decode kernel on
   * one token's row (matvec_row_block): the same staging and lane sums */
  for (uint32_t t = 0; t < n && st == LM_OK; t++)
    {
      size_t xr = x_rows ? (size_t) x_rows[t] : t, yr = y_rows ? (size_t) y_rows[t] : t;
      st = lm_cuda_matvec_host (LM_CUDA_ACT_Q8, type, w, 0, nullptr, 1, n_in, n_out,
                                x + xr * n_in, 0, y + yr * n_out, false);
    }
  return st;
}
