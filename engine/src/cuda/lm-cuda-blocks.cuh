/* lm-cuda-blocks.cuh: GGUF block decoders for the GPU kernels, also compiled
 * as host code so that the host checks them against lm_dequantize_row.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every type is a decoder struct. A row of a type is a sequence of blocks of
 * BV values and BB bytes (FORMAT.md 4.1); a block is split into UPB units of
 * C values, the work of one thread in one step. decode() yields the C values
 * of unit c of a block, value i belonging at position index(c, i) inside the
 * block. Positions come in runs of four consecutive values starting at a
 * multiple of four (when C >= 4), so the matching activations can be read as
 * float4. The units of a block, taken in order, cover its positions in order
 * by groups of SPAN values: units [a / C, b / C) hold exactly positions
 * [a, b) for a, b multiples of SPAN.
 *
 * Bit-exactness with lm_dequantize_row: the same expressions in the same
 * order, with multiplications and subtractions that the device compiler may
 * not contract into an FMA (lmc_mul, lmc_sub). fp16 is decoded with integer
 * operations, so NaN payloads survive; a product with a NaN scale gives the
 * device's canonical NaN where the host keeps the payload (both are NaN).
 *
 * Loads: a block is read with loads no wider than ALIGN bytes, and every
 * block of a row starts at a multiple of ALIGN when the row does. */
#pragma once

#include <stdint.h>
#include <string.h>

#include "gguf.h"   /* LmTensorType */

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

#if defined(__CUDACC__)
#define LMC_HD __host__ __device__ __forceinline__
#else
#define LMC_HD static inline
#endif

/* ---- scalar helpers ---- */

LMC_HD float
lmc_mul (float a, float b)
{
#ifdef __CUDA_ARCH__
  return __fmul_rn (a, b);
#else
  return a * b;
#endif
}

LMC_HD float
lmc_sub (float a, float b)
{
#ifdef __CUDA_ARCH__
  return __fsub_rn (a, b);
#else
  return a - b;
#endif
}

LMC_HD float
lmc_add (float a, float b)
{
#ifdef __CUDA_ARCH__
  return __fadd_rn (a, b);
#else
  return a + b;
#endif
}

LMC_HD float
lmc_bits_float (uint32_t u)
{
#ifdef __CUDA_ARCH__
  return __uint_as_float (u);
#else
  float f;
  memcpy (&f, &u, sizeof f);
  return f;
#endif
}

LMC_HD uint32_t
lmc_float_bits (float f)
{
#ifdef __CUDA_ARCH__
  return __float_as_uint (f);
#else
  uint32_t u;
  memcpy (&u, &f, sizeof u);
  return u;
#endif
}

/* A little-endian value of type T at p (aligned to sizeof (T) on the device). */
template <typename T>
LMC_HD T
lmc_load (const uint8_t *p)
{
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const T *> (p);
#else
  T v;
  memcpy (&v, p, sizeof v);
  return v;
#endif
}

/* Four bytes at p, two-byte aligned. */
LMC_HD uint32_t
lmc_load4_a2 (const uint8_t *p)
{
  return (uint32_t) lmc_load<uint16_t> (p) | ((uint32_t) lmc_load<uint16_t> (p + 2) << 16);
}

/* Byte k of a 32-bit little-endian word. */
LMC_HD uint32_t
lmc_byte (uint32_t word, int k)
{
  return (word >> (8 * k)) & 0xFFu;
}

/* (float) (u - offset), exactly, for u, offset < 2^22. On the device without
 * the integer-to-float conversion (a quarter-rate instruction): the float
 * 2^23 + u minus 2^23 + offset. */
LMC_HD float
lmc_small_to_float (uint32_t u, uint32_t offset)
{
#ifdef __CUDA_ARCH__
  return __fsub_rn (__uint_as_float (0x4B000000u | u), 8388608.0f + (float) offset);
#else
  return (float) ((int32_t) u - (int32_t) offset);
#endif
}

/* c + the sum of the four products of the signed bytes of a and b. */
LMC_HD int32_t
lmc_dp4a (uint32_t a, uint32_t b, int32_t c)
{
#ifdef __CUDA_ARCH__
  return __dp4a ((int) a, (int) b, c);
#else
  for (int k = 0; k < 4; k++)
    c += (int32_t) (int8_t) (a >> (8 * k)) * (int32_t) (int8_t) (b >> (8 * k));
  return c;
#endif
}

/* f32 -> fp16 exactly as lm_fp32_to_fp16 (quant-fp.c). */
LMC_HD uint16_t
lmc_fp32_to_fp16 (float f)
{
  uint32_t x = lmc_float_bits (f);
  uint16_t sign = (uint16_t) ((x >> 16) & 0x8000u);

  x &= 0x7fffffffu;
  if (x > 0x7f800000u)
    return (uint16_t) (sign | 0x7e00u | (uint16_t) ((x >> 13) & 0x3ffu));
  if (x >= 0x477ff000u)
    return (uint16_t) (sign | 0x7c00u);
  if (x < 0x38800000u)
    {
      float shifted = lmc_add (lmc_bits_float (x), 0.5f);
      return (uint16_t) (sign | (uint16_t) (lmc_float_bits (shifted) - 0x3f000000u));
    }
  uint32_t odd = (x >> 13) & 1u;
  x += ((uint32_t) (15 - 127) << 23) + 0xfffu + odd;
  return (uint16_t) (sign | (uint16_t) (x >> 13));
}

/* fp16 -> f32 exactly as lm_fp16_to_fp32 (quant-fp.c). */
LMC_HD float
lmc_fp16_to_fp32 (uint16_t h)
{
  uint32_t sign = (uint32_t) (h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;

  if (exponent == 0)
    {
      float magnitude = lmc_mul ((float) mantissa, 0x1p-24f);
      return lmc_bits_float (lmc_float_bits (magnitude) | sign);
    }
  if (exponent == 31)
    return lmc_bits_float (sign | 0x7f800000u | (mantissa << 13));
  return lmc_bits_float (sign | ((exponent + 112) << 23) | (mantissa << 13));
}

/* An fp16 block scale inside a dot product: the hardware conversion on the
 * device (one instruction; the same value as lmc_fp16_to_fp32 except that a
 * NaN loses its payload, which no product can show). */
LMC_HD float
lmc_scale_fp16 (uint16_t h)
{
#ifdef __CUDA_ARCH__
  return __half2float (__ushort_as_half (h));
#else
  return lmc_fp16_to_fp32 (h);
#endif
}

LMC_HD float
lmc_bf16_to_fp32 (uint16_t h)
{
  return lmc_bits_float ((uint32_t) h << 16);
}

/* The 6-bit scale and min of sub-block j (0..7) of a Q4_K / Q5_K block, as
 * lm_k4_scale_min (quant-private.h). */
LMC_HD void
lmc_k4_scale_min (const uint8_t *scales, int j, uint32_t *sc, uint32_t *m)
{
  if (j < 4)
    {
      *sc = scales[j] & 63u;
      *m = scales[j + 4] & 63u;
    }
  else
    {
      *sc = (scales[j + 4] & 0xFu) | ((uint32_t) (scales[j - 4] >> 6) << 4);
      *m = (uint32_t) (scales[j + 4] >> 4) | ((uint32_t) (scales[j] >> 6) << 4);
    }
}

/* ---- floating-point rows ---- */

/* Scalar forms: one value per unit, any n_in, natural alignment. */
struct LmcF32S
{
  static constexpr bool FAST = false, Q8 = false;
  static constexpr int QG = 1;
  static constexpr int XS = 1;
  static constexpr int BV = 1, BB = 4, C = 1, UPB = 1, SPAN = 1, ALIGN = 4;
  LMC_HD static void decode (const uint8_t *b, int, float *v) { v[0] = lmc_load<float> (b); }
  LMC_HD static int index (int, int) { return 0; }
};

struct LmcF16S
{
  static constexpr bool FAST = false, Q8 = false;
  static constexpr int QG = 1;
  static constexpr int XS = 1;
  static constexpr int BV = 1, BB = 2, C = 1, UPB = 1, SPAN = 1, ALIGN = 2;
  LMC_HD static void decode (const uint8_t *b, int, float *v)
  {
    v[0] = lmc_fp16_to_fp32 (lmc_load<uint16_t> (b));
  }
  LMC_HD static int index (int, int) { return 0; }
};

struct LmcBF16S
{
  static constexpr bool FAST = false, Q8 = false;
  static constexpr int QG = 1;
  static constexpr int XS = 1;
  static constexpr int BV = 1, BB = 2, C = 1, UPB = 1, SPAN = 1, ALIGN = 2;
  LMC_HD static void decode (const uint8_t *b, int, float *v)
  {
    v[0] = lmc_bf16_to_fp32 (lmc_load<uint16_t> (b));
  }
  LMC_HD static int index (int, int) { return 0; }
};

/* Vector forms: 16-byte loads; n_in a multiple of C and rows 16-byte aligned. */
struct LmcF32V
{
  static constexpr bool FAST = false, Q8 = false;
  static constexpr int QG = 1;
  static constexpr int XS = 1;
  static constexpr int BV = 4, BB = 16, C = 4, UPB = 1, SPAN = 4, ALIGN = 16;
  LMC_HD static void decode (const uint8_t *b, int, float *v)
  {
    uint4 q = lmc_load<uint4> (b);
    v[0] = lmc_bits_float (q.x);
    v[1] = lmc_bits_float (q.y);
    v[2] = lmc_bits_float (q.z);
    v[3] = lmc_bits_float (q.w);
  }
  LMC_HD static int index (int, int i) { return i; }
};

struct LmcF16V
{
  /* FAST: the products convert with the hardware instruction (lmc_scale_fp16) */
  static constexpr bool FAST = true, Q8 = false;
  static constexpr int QG = 1;
  static constexpr int XS = 1;
  LMC_HD static void xsums (const float *, float *) {}
  LMC_HD static float dot (const uint8_t *b, int, const float *xv, const float *)
  {
    uint4 q = lmc_load<uint4> (b);
    uint32_t w[4] = { q.x, q.y, q.z, q.w };
    float s = 0.0f;
    for (int k = 0; k < 4; k++)
      {
        s = fmaf (lmc_scale_fp16 ((uint16_t) (w[k] & 0xFFFFu)), xv[2 * k], s);
        s = fmaf (lmc_scale_fp16 ((uint16_t) (w[k] >> 16)), xv[2 * k + 1], s);
      }
    return s;
  }
  static constexpr int BV = 8, BB = 16, C = 8, UPB = 1, SPAN = 8, ALIGN = 16;
  LMC_HD static void decode (const uint8_t *b, int, float *v)
  {
    uint4 q = lmc_load<uint4> (b);
    uint32_t w[4] = { q.x, q.y, q.z, q.w };
    for (int k = 0; k < 4; k++)
      {
        v[2 * k] = lmc_fp16_to_fp32 ((uint16_t) (w[k] & 0xFFFFu));
        v[2 * k + 1] = lmc_fp16_to_fp32 ((uint16_t) (w[k] >> 16));
      }
  }
  LMC_HD static int index (int, int i) { return i; }
};

struct LmcBF16V
{
  static constexpr bool FAST = false, Q8 = false;
  static constexpr int QG = 1;
  static constexpr int XS = 1;
  static constexpr int BV = 8, BB = 16, C = 8, UPB = 1, SPAN = 8, ALIGN = 16;
  LMC_HD static void decode (const uint8_t *b, int, float *v)
  {
    uint4 q = lmc_load<uint4> (b);
    uint32_t w[4] = { q.x, q.y, q.z, q.w };
    for (int k = 0; k < 4; k++)
      {
        v[2 * k] = lmc_bits_float (w[k] << 16);
        v[2 * k + 1] = lmc_bits_float (w[k] & 0xFFFF0000u);
      }
  }
  LMC_HD static int index (int, int i) { return i; }
};

/* ---- Q8_0: d (fp16), 32 int8; unit c = values 8c .. 8c+7 ---- */

struct LmcQ8_0
{
  static constexpr int BV = 32, BB = 34, C = 8, UPB = 4, SPAN = 8, ALIGN = 2;
  LMC_HD static void decode (const uint8_t *b, int c, float *v)
  {
    float d = lmc_fp16_to_fp32 (lmc_load<uint16_t> (b));
    const uint8_t *qs = b + 2 + 8 * c;
    for (int k = 0; k < 2; k++)
      {
        uint32_t w = lmc_load4_a2 (qs + 4 * k);
        for (int j = 0; j < 4; j++)
          v[4 * k + j] = lmc_mul ((float) (int8_t) lmc_byte (w, j), d);
      }
  }
  LMC_HD static int index (int c, int i) { return 8 * c + i; }

  /* The unit's dot product with xv: d * sum q x. */
  static constexpr bool FAST = true;
  static constexpr int XS = 1;
  LMC_HD static void xsums (const float *, float *) {}
  LMC_HD static float dot (const uint8_t *b, int c, const float *xv, const float *)
  {
    float d = lmc_scale_fp16 (lmc_load<uint16_t> (b));
    const uint8_t *qs = b + 2 + 8 * c;
    float s = 0.0f;
    for (int k = 0; k < 2; k++)
      {
        uint32_t w = lmc_load4_a2 (qs + 4 * k) ^ 0x80808080u;   /* q + 128 */
        for (int j = 0; j < 4; j++)
          s = fmaf (lmc_small_to_float (lmc_byte (w, j), 128), xv[4 * k + j], s);
      }
    return lmc_mul (d, s);
  }

  /* Against Q8_0 activations (xq: the block's 32 int8, dx its scale), as
   * the CPU's native mode: sumi * (d * dx). */
  static constexpr bool Q8 = true;
  static constexpr int QG = 32;   /* activation values per scale */
  LMC_HD static void q8_sums (const uint8_t *, int, int32_t *) {}
  LMC_HD static float dot_q8 (const uint8_t *b, int c, const uint8_t *xq, float dx,
                              const int32_t *)
  {
    float d = lmc_scale_fp16 (lmc_load<uint16_t> (b));
    const uint8_t *qs = b + 2 + 8 * c;
    int32_t sumi = lmc_dp4a (lmc_load4_a2 (qs), lmc_load<uint32_t> (xq + 8 * c), 0);
    sumi = lmc_dp4a (lmc_load4_a2 (qs + 4), lmc_load<uint32_t> (xq + 8 * c + 4), sumi);
    return lmc_mul ((float) sumi, lmc_mul (d, dx));
  }
};

/* ---- Q4_K / Q5_K: unit c (0..15) = group g = c / 4 (values 64g .. 64g+63),
 * bytes l0 .. l0+7 (l0 = 8 (c % 4)) of the group's 32 quant bytes: their low
 * nibbles are values 64g + l0 + i, their high nibbles 64g + 32 + l0 + i. ---- */

/* The scales (d1, d2) and mins (m1, m2) of group g's low-nibble and
 * high-nibble sub-blocks, from the block's d and dmin. */
LMC_HD void
lmc_k4_unit_scales (const uint8_t *b, int g, float d, float dmin, float *d1, float *m1, float *d2,
                    float *m2)
{
  uint32_t sc, m;
  lmc_k4_scale_min (b + 4, 2 * g, &sc, &m);
  *d1 = lmc_mul (d, (float) sc);
  *m1 = lmc_mul (dmin, (float) m);
  lmc_k4_scale_min (b + 4, 2 * g + 1, &sc, &m);
  *d2 = lmc_mul (d, (float) sc);
  *m2 = lmc_mul (dmin, (float) m);
}

/* The unit's 8 quant bytes (qw) and the matching high-bit bytes (hw; zeros
 * without qh), as two 32-bit words each. */
LMC_HD void
lmc_k4_unit_quants (const uint8_t *qs_base, const uint8_t *qh_base, int g, int l0, uint32_t qw[2],
                    uint32_t hw[2])
{
  uint2 q = lmc_load<uint2> (qs_base + 32 * g + l0);
  uint2 h = qh_base ? lmc_load<uint2> (qh_base + l0) : make_uint2 (0, 0);
  qw[0] = q.x;
  qw[1] = q.y;
  hw[0] = h.x;
  hw[1] = h.y;
}

/* Shared by Q4_K (qh NULL) and Q5_K; the layout offsets come from the caller. */
LMC_HD void
lmc_decode_k4_unit (const uint8_t *b, const uint8_t *qs_base, const uint8_t *qh_base, int c,
                    float *v)
{
  int g = c >> 2, l0 = 8 * (c & 3);
  uint32_t dd = lmc_load<uint32_t> (b);
  float d = lmc_fp16_to_fp32 ((uint16_t) (dd & 0xFFFFu));
  float dmin = lmc_fp16_to_fp32 ((uint16_t) (dd >> 16));
  float d1, m1, d2, m2;
  lmc_k4_unit_scales (b, g, d, dmin, &d1, &m1, &d2, &m2);

  uint32_t qw[2], hw[2];
  lmc_k4_unit_quants (qs_base, qh_base, g, l0, qw, hw);
  uint32_t lo_bit = 1u << (2 * g), hi_bit = 2u << (2 * g);
  for (int k = 0; k < 2; k++)
    for (int j = 0; j < 4; j++)
      {
        uint32_t qb = lmc_byte (qw[k], j), hb = lmc_byte (hw[k], j);
        int lo = (int) (qb & 0xFu) + ((hb & lo_bit) ? 16 : 0);
        int hi = (int) (qb >> 4) + ((hb & hi_bit) ? 16 : 0);
        v[4 * k + j] = lmc_sub (lmc_mul (d1, (float) lo), m1);
        v[8 + 4 * k + j] = lmc_sub (lmc_mul (d2, (float) hi), m2);
      }
}

/* The unit's dot product with xv, sub-block scales factored out:
 * d1 sum q x - m1 sum x over the low nibbles, the same with d2, m2 over the
 * high ones; xs[0], xs[1] are the sums of xv[0..7] and xv[8..15]. */
LMC_HD float
lmc_dot_k4_unit (const uint8_t *b, const uint8_t *qs_base, const uint8_t *qh_base, int c,
                 const float *xv, const float *xs)
{
  int g = c >> 2, l0 = 8 * (c & 3);
  uint32_t dd = lmc_load<uint32_t> (b);
  float d = lmc_scale_fp16 ((uint16_t) (dd & 0xFFFFu));
  float dmin = lmc_scale_fp16 ((uint16_t) (dd >> 16));
  float d1, m1, d2, m2;
  lmc_k4_unit_scales (b, g, d, dmin, &d1, &m1, &d2, &m2);

  uint32_t qw[2], hw[2];
  lmc_k4_unit_quants (qs_base, qh_base, g, l0, qw, hw);
  uint32_t lo_shift = 2 * g, hi_shift = 2 * g + 1;
  float s1 = 0.0f, s2 = 0.0f;
  for (int k = 0; k < 2; k++)
    for (int j = 0; j < 4; j++)
      {
        uint32_t qb = lmc_byte (qw[k], j), hb = lmc_byte (hw[k], j);
        uint32_t lo = (qb & 0xFu) | (((hb >> lo_shift) & 1u) << 4);
        uint32_t hi = (qb >> 4) | (((hb >> hi_shift) & 1u) << 4);
        s1 = fmaf (lmc_small_to_float (lo, 0), xv[4 * k + j], s1);
        s2 = fmaf (lmc_small_to_float (hi, 0), xv[8 + 4 * k + j], s2);
      }
  float r = lmc_mul (d1, s1);
  r = fmaf (-m1, xs[0], r);
  r = fmaf (d2, s2, r);
  return fmaf (-m2, xs[1], r);
}

/* Against Q8_K activations (xq: the block's 256 int8, dx its scale), as the
 * CPU's native mode: dx (d (sc1 sumi_lo + sc2 sumi_hi) - dmin (m1 sum_lo +
 * m2 sum_hi)), the sums of the activations (xs) given. */
LMC_HD float
lmc_dot_k4_q8 (const uint8_t *b, const uint8_t *qs_base, const uint8_t *qh_base, int c,
               const uint8_t *xq, float dx, const int32_t *xs)
{
  int g = c >> 2, l0 = 8 * (c & 3);
  uint32_t dd = lmc_load<uint32_t> (b);
  float d = lmc_scale_fp16 ((uint16_t) (dd & 0xFFFFu));
  float dmin = lmc_scale_fp16 ((uint16_t) (dd >> 16));
  uint32_t sc1, m1, sc2, m2;
  lmc_k4_scale_min (b + 4, 2 * g, &sc1, &m1);
  lmc_k4_scale_min (b + 4, 2 * g + 1, &sc2, &m2);

  uint32_t qw[2], hw[2];
  lmc_k4_unit_quants (qs_base, qh_base, g, l0, qw, hw);
  const uint8_t *x_lo = xq + 64 * g + l0, *x_hi = x_lo + 32;
  int32_t sum_lo = 0, sum_hi = 0;
  for (int k = 0; k < 2; k++)
    {
      uint32_t lo = (qw[k] & 0x0F0F0F0Fu) | (((hw[k] >> (2 * g)) & 0x01010101u) << 4);
      uint32_t hi = ((qw[k] >> 4) & 0x0F0F0F0Fu) | (((hw[k] >> (2 * g + 1)) & 0x01010101u) << 4);
      sum_lo = lmc_dp4a (lo, lmc_load<uint32_t> (x_lo + 4 * k), sum_lo);
      sum_hi = lmc_dp4a (hi, lmc_load<uint32_t> (x_hi + 4 * k), sum_hi);
    }
  int32_t scaled = (int32_t) sc1 * sum_lo + (int32_t) sc2 * sum_hi;
  int32_t mins = (int32_t) m1 * xs[0] + (int32_t) m2 * xs[1];
  float r = lmc_mul (lmc_mul (dx, d), (float) scaled);
  return fmaf (-lmc_mul (dx, dmin), (float) mins, r);
}

/* The sums of the unit's low-nibble and high-nibble activations. */
LMC_HD void
lmc_q8_sums_k4 (const uint8_t *xq, int c, int32_t *xs)
{
  const uint8_t *x_lo = xq + 64 * (c >> 2) + 8 * (c & 3), *x_hi = x_lo + 32;
  xs[0] = lmc_dp4a (0x01010101u, lmc_load<uint32_t> (x_lo),
                    lmc_dp4a (0x01010101u, lmc_load<uint32_t> (x_lo + 4), 0));
  xs[1] = lmc_dp4a (0x01010101u, lmc_load<uint32_t> (x_hi),
                    lmc_dp4a (0x01010101u, lmc_load<uint32_t> (x_hi + 4), 0));
}

LMC_HD void
lmc_xsums_k4 (const float *xv, float *xs)
{
  xs[0] = 0.0f;
  xs[1] = 0.0f;
  for (int i = 0; i < 8; i++)
    {
      xs[0] = lmc_add (xs[0], xv[i]);
      xs[1] = lmc_add (xs[1], xv[8 + i]);
    }
}

LMC_HD int
lmc_k4_index (int c, int i)
{
  return 64 * (c >> 2) + 8 * (c & 3) + (i < 8 ? i : 32 + i - 8);
}

/* Q4_K: d, dmin (fp16), scales[12], qs[128]. */
struct LmcQ4_K
{
  static constexpr int BV = 256, BB = 144, C = 16, UPB = 16, SPAN = 64, ALIGN = 8;
  LMC_HD static void decode (const uint8_t *b, int c, float *v)
  {
    lmc_decode_k4_unit (b, b + 16, nullptr, c, v);
  }
  LMC_HD static int index (int c, int i) { return lmc_k4_index (c, i); }
  static constexpr bool FAST = true;
  static constexpr int XS = 2;
  LMC_HD static void xsums (const float *xv, float *xs) { lmc_xsums_k4 (xv, xs); }
  LMC_HD static float dot (const uint8_t *b, int c, const float *xv, const float *xs)
  {
    return lmc_dot_k4_unit (b, b + 16, nullptr, c, xv, xs);
  }
  static constexpr bool Q8 = true;
  static constexpr int QG = 256;
  LMC_HD static void q8_sums (const uint8_t *xq, int c, int32_t *xs) { lmc_q8_sums_k4 (xq, c, xs); }
  LMC_HD static float dot_q8 (const uint8_t *b, int c, const uint8_t *xq, float dx,
                              const int32_t *xs)
  {
    return lmc_dot_k4_q8 (b, b + 16, nullptr, c, xq, dx, xs);
  }
};

/* Q5_K: d, dmin (fp16), scales[12], qh[32], qs[128]. */
struct LmcQ5_K
{
  static constexpr int BV = 256, BB = 176, C = 16, UPB = 16, SPAN = 64, ALIGN = 8;
  LMC_HD static void decode (const uint8_t *b, int c, float *v)
  {
    lmc_decode_k4_unit (b, b + 48, b + 16, c, v);
  }
  LMC_HD static int index (int c, int i) { return lmc_k4_index (c, i); }
  static constexpr bool FAST = true;
  static constexpr int XS = 2;
  LMC_HD static void xsums (const float *xv, float *xs) { lmc_xsums_k4 (xv, xs); }
  LMC_HD static float dot (const uint8_t *b, int c, const float *xv, const float *xs)
  {
    return lmc_dot_k4_unit (b, b + 48, b + 16, c, xv, xs);
  }
  static constexpr bool Q8 = true;
  static constexpr int QG = 256;
  LMC_HD static void q8_sums (const uint8_t *xq, int c, int32_t *xs) { lmc_q8_sums_k4 (xq, c, xs); }
  LMC_HD static float dot_q8 (const uint8_t *b, int c, const uint8_t *xq, float dx,
                              const int32_t *xs)
  {
    return lmc_dot_k4_q8 (b, b + 48, b + 16, c, xq, dx, xs);
  }
};

/* ---- Q6_K: ql[128], qh[64], scales[16] (int8), d (fp16). Unit c (0..15) =
 * half h = c / 8, l = l0 .. l0+3 (l0 = 4 (c % 8)); value 4j + k of the unit
 * is position 128h + l0 + k + 32j, as in lm_dequantize_row_q6_K. ---- */

struct LmcQ6_K
{
  static constexpr int BV = 256, BB = 210, C = 16, UPB = 16, SPAN = 128, ALIGN = 2;
  LMC_HD static void decode (const uint8_t *b, int c, float *v)
  {
    int h = c >> 3, l0 = 4 * (c & 7), is = l0 >> 4;
    float d = lmc_fp16_to_fp32 (lmc_load<uint16_t> (b + 208));
    uint32_t a = lmc_load4_a2 (b + 64 * h + l0);
    uint32_t bq = lmc_load4_a2 (b + 64 * h + 32 + l0);
    uint32_t qh = lmc_load4_a2 (b + 128 + 32 * h + l0);
    const int8_t *sc = (const int8_t *) (b + 192 + 8 * h);
    float ds[4];
    for (int j = 0; j < 4; j++)
      ds[j] = lmc_mul (d, (float) sc[is + 2 * j]);
    for (int k = 0; k < 4; k++)
      {
        uint32_t qa = lmc_byte (a, k), qb = lmc_byte (bq, k), hb = lmc_byte (qh, k);
        int q0 = (int) ((qa & 0xFu) | ((hb & 3u) << 4)) - 32;
        int q1 = (int) ((qb & 0xFu) | (((hb >> 2) & 3u) << 4)) - 32;
        int q2 = (int) ((qa >> 4) | (((hb >> 4) & 3u) << 4)) - 32;
        int q3 = (int) ((qb >> 4) | (((hb >> 6) & 3u) << 4)) - 32;
        v[k] = lmc_mul (ds[0], (float) q0);
        v[4 + k] = lmc_mul (ds[1], (float) q1);
        v[8 + k] = lmc_mul (ds[2], (float) q2);
        v[12 + k] = lmc_mul (ds[3], (float) q3);
      }
  }
  LMC_HD static int index (int c, int i)
  {
    return 128 * (c >> 3) + 4 * (c & 7) + (i & 3) + 32 * (i >> 2);
  }

  /* The unit's dot product with xv: sum over the four scales j of
   * (d sc_j) sum (q - 32) x. */
  static constexpr bool FAST = true;
  static constexpr int XS = 1;
  LMC_HD static void xsums (const float *, float *) {}
  LMC_HD static float dot (const uint8_t *b, int c, const float *xv, const float *)
  {
    int h = c >> 3, l0 = 4 * (c & 7), is = l0 >> 4;
    float d = lmc_scale_fp16 (lmc_load<uint16_t> (b + 208));
    uint32_t a = lmc_load4_a2 (b + 64 * h + l0);
    uint32_t bq = lmc_load4_a2 (b + 64 * h + 32 + l0);
    uint32_t qh = lmc_load4_a2 (b + 128 + 32 * h + l0);
    const int8_t *sc = (const int8_t *) (b + 192 + 8 * h);
    float s[4] = { 0.0f, 0.0f, 0.0f, 0.0f };
    for (int k = 0; k < 4; k++)
      {
        uint32_t qa = lmc_byte (a, k), qb = lmc_byte (bq, k), hb = lmc_byte (qh, k);
        s[0] = fmaf (lmc_small_to_float ((qa & 0xFu) | ((hb & 3u) << 4), 32), xv[k], s[0]);
        s[1] = fmaf (lmc_small_to_float ((qb & 0xFu) | (((hb >> 2) & 3u) << 4), 32), xv[4 + k], s[1]);
        s[2] = fmaf (lmc_small_to_float ((qa >> 4) | (((hb >> 4) & 3u) << 4), 32), xv[8 + k], s[2]);
        s[3] = fmaf (lmc_small_to_float ((qb >> 4) | (((hb >> 6) & 3u) << 4), 32), xv[12 + k], s[3]);
      }
    float r = lmc_mul (lmc_mul (d, (float) sc[is]), s[0]);
    for (int j = 1; j < 4; j++)
      r = fmaf (lmc_mul (d, (float) sc[is + 2 * j]), s[j], r);
    return r;
  }
  /* Against Q8_K activations, as the CPU's native mode: dx d sum_j sc_j
   * sum (q - 32) x, with sum (q - 32) x = sum q x - 32 sum x. */
  static constexpr bool Q8 = true;
  static constexpr int QG = 256;
  LMC_HD static void q8_sums (const uint8_t *, int, int32_t *) {}
  LMC_HD static float dot_q8 (const uint8_t *b, int c, const uint8_t *xq, float dx,
                              const int32_t *)
  {
    int h = c >> 3, l0 = 4 * (c & 7), is = l0 >> 4;
    float d = lmc_scale_fp16 (lmc_load<uint16_t> (b + 208));
    uint32_t a = lmc_load4_a2 (b + 64 * h + l0);
    uint32_t bq = lmc_load4_a2 (b + 64 * h + 32 + l0);
    uint32_t qh = lmc_load4_a2 (b + 128 + 32 * h + l0);
    const int8_t *sc = (const int8_t *) (b + 192 + 8 * h);
    uint32_t wq[4] = {
      (a & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4),
      (bq & 0x0F0F0F0Fu) | (((qh >> 2) & 0x03030303u) << 4),
      ((a >> 4) & 0x0F0F0F0Fu) | (((qh >> 4) & 0x03030303u) << 4),
      ((bq >> 4) & 0x0F0F0F0Fu) | (((qh >> 6) & 0x03030303u) << 4),
    };
    int32_t sumi = 0;
    for (int j = 0; j < 4; j++)
      {
        uint32_t x4 = lmc_load<uint32_t> (xq + 128 * h + l0 + 32 * j);
        int32_t part = lmc_dp4a (wq[j], x4, 0) - 32 * lmc_dp4a (0x01010101u, x4, 0);
        sumi += (int32_t) sc[is + 2 * j] * part;
      }
    return lmc_mul (lmc_mul (dx, d), (float) sumi);
  }
};

/* ---- Q4_0 / Q4_1 / Q5_0 / Q5_1: 32 values, unit c (0..3) = values 8c ..
 * 8c+7: the low (c < 2) or high nibbles of qs[8 (c % 2) .. +7], with bits
 * 8c .. 8c+7 of the little-endian word qh as fifth bits (Q5). ---- */

/* The unit's 8 quants as bytes of two words (nibble plus fifth bit). */
LMC_HD void
lmc_q32_unit_quants (const uint8_t *qs, const uint8_t *qh, int c, uint32_t q[2])
{
  uint32_t high = qh ? lmc_load4_a2 (qh) >> (8 * c) : 0u;
  for (int k = 0; k < 2; k++)
    {
      uint32_t w = lmc_load4_a2 (qs + 8 * (c & 1) + 4 * k);
      uint32_t n = (c < 2 ? w : w >> 4) & 0x0F0F0F0Fu;
      uint32_t h = (high >> (4 * k)) & 0xFu;
      /* bit b of h to bit 4 of byte b */
      n |= ((h & 1u) << 4) | ((h & 2u) << 11) | ((h & 4u) << 18) | ((h & 8u) << 25);
      q[k] = n;
    }
}

/* Shared by the four formats: @offset is 8 or 16 for Q4_0 / Q5_0 (no min),
 * 0 for Q4_1 / Q5_1 (@has_min: an fp16 min after d). */
template <int OFFSET, bool HAS_MIN, bool HAS_QH>
struct LmcQ32
{
  static constexpr int QS_AT = (HAS_MIN ? 4 : 2) + (HAS_QH ? 4 : 0);
  static constexpr int QH_AT = HAS_MIN ? 4 : 2;
  LMC_HD static void quants (const uint8_t *b, int c, uint32_t q[2])
  {
    lmc_q32_unit_quants (b + QS_AT, HAS_QH ? b + QH_AT : nullptr, c, q);
  }
  LMC_HD static void decode (const uint8_t *b, int c, float *v)
  {
    float d = lmc_fp16_to_fp32 (lmc_load<uint16_t> (b));
    float m = HAS_MIN ? lmc_fp16_to_fp32 (lmc_load<uint16_t> (b + 2)) : 0.0f;
    uint32_t q[2];
    quants (b, c, q);
    for (int k = 0; k < 2; k++)
      for (int j = 0; j < 4; j++)
        {
          float scaled = lmc_mul ((float) ((int) lmc_byte (q[k], j) - OFFSET), d);
          v[4 * k + j] = HAS_MIN ? lmc_add (scaled, m) : scaled;
        }
  }
  LMC_HD static int index (int c, int i) { return 8 * c + i; }

  /* The unit's dot product with xv: d sum (q - offset) x (+ m sum x). */
  static constexpr bool FAST = true;
  static constexpr int XS = 1;
  LMC_HD static void xsums (const float *xv, float *xs)
  {
    xs[0] = 0.0f;
    if (HAS_MIN)
      for (int i = 0; i < 8; i++)
        xs[0] = lmc_add (xs[0], xv[i]);
  }
  LMC_HD static float dot (const uint8_t *b, int c, const float *xv, const float *xs)
  {
    float d = lmc_scale_fp16 (lmc_load<uint16_t> (b));
    uint32_t q[2];
    quants (b, c, q);
    float s = 0.0f;
    for (int k = 0; k < 2; k++)
      for (int j = 0; j < 4; j++)
        s = fmaf (lmc_small_to_float (lmc_byte (q[k], j), OFFSET), xv[4 * k + j], s);
    float r = lmc_mul (d, s);
    return HAS_MIN ? fmaf (lmc_scale_fp16 (lmc_load<uint16_t> (b + 2)), xs[0], r) : r;
  }

  /* Against Q8_0 activations as the CPU's native mode (Q4_0 / Q5_0 only: the
   * CPU takes Q4_1 / Q5_1 against Q8_1 blocks, whose sums the GPU does not
   * stage): sumi * (d * dx), sumi = sum q a - offset sum a. */
  static constexpr bool Q8 = !HAS_MIN;
  static constexpr int QG = 32;
  LMC_HD static void q8_sums (const uint8_t *, int, int32_t *) {}
  LMC_HD static float dot_q8 (const uint8_t *b, int c, const uint8_t *xq, float dx,
                              const int32_t *)
  {
    float d = lmc_scale_fp16 (lmc_load<uint16_t> (b));
    uint32_t q[2];
    quants (b, c, q);
    int32_t sumi = 0, suma = 0;
    for (int k = 0; k < 2; k++)
      {
        uint32_t a = lmc_load<uint32_t> (xq + 8 * c + 4 * k);
        sumi = lmc_dp4a (q[k], a, sumi);
        suma = lmc_dp4a (0x01010101u, a, suma);
      }
    sumi -= OFFSET * suma;
    return lmc_mul ((float) sumi, lmc_mul (d, dx));
  }
};

/* Q4_0: d (fp16), qs[16]. */
struct LmcQ4_0 : LmcQ32<8, false, false>
{
  static constexpr int BV = 32, BB = 18, C = 8, UPB = 4, SPAN = 8, ALIGN = 2;
};

/* Q4_1: d, m (fp16), qs[16]. */
struct LmcQ4_1 : LmcQ32<0, true, false>
{
  static constexpr int BV = 32, BB = 20, C = 8, UPB = 4, SPAN = 8, ALIGN = 4;
};

/* Q5_0: d (fp16), qh[4], qs[16]. */
struct LmcQ5_0 : LmcQ32<16, false, true>
{
  static constexpr int BV = 32, BB = 22, C = 8, UPB = 4, SPAN = 8, ALIGN = 2;
};

/* Q5_1: d, m (fp16), qh[4], qs[16]. */
struct LmcQ5_1 : LmcQ32<0, true, true>
{
  static constexpr int BV = 32, BB = 24, C = 8, UPB = 4, SPAN = 8, ALIGN = 4;
};

/* ---- Q2_K / Q3_K: unit c (0..15) = sub-block c, values 16c .. 16c+15: the
 * 2-bit fields 2j of qs[32h + 16p .. +15] (c = 8h + 2j + p) and, for Q3_K,
 * bits 4h + j of hmask[16p .. +15]. Decode only: their products decode the
 * unit (FAST false) with f32 activations. ---- */

/* The unit's 16 2-bit fields as bytes of four words (0..3). */
LMC_HD void
lmc_k23_unit_quants (const uint8_t *qs, int c, uint32_t q[4])
{
  int h = c >> 3, j = (c >> 1) & 3, p = c & 1;
  for (int k = 0; k < 4; k++)
    q[k] = (lmc_load4_a2 (qs + 32 * h + 16 * p + 4 * k) >> (2 * j)) & 0x03030303u;
}

/* Q2_K: scales[16], qs[64], d, dmin (fp16): x = d (sc & 15) q - dmin (sc >> 4). */
struct LmcQ2_K
{
  static constexpr int BV = 256, BB = 84, C = 16, UPB = 16, SPAN = 16, ALIGN = 4;
  LMC_HD static void decode (const uint8_t *b, int c, float *v)
  {
    float d = lmc_fp16_to_fp32 (lmc_load<uint16_t> (b + 80));
    float dmin = lmc_fp16_to_fp32 (lmc_load<uint16_t> (b + 82));
    uint32_t sc = b[c];
    float dl = lmc_mul (d, (float) (sc & 0xFu)), ml = lmc_mul (dmin, (float) (sc >> 4));
    uint32_t q[4];
    lmc_k23_unit_quants (b + 16, c, q);
    for (int k = 0; k < 4; k++)
      for (int i = 0; i < 4; i++)
        v[4 * k + i] = lmc_sub (lmc_mul (dl, (float) lmc_byte (q[k], i)), ml);
  }
  LMC_HD static int index (int c, int i) { return 16 * c + i; }
  static constexpr bool FAST = false, Q8 = false;
  static constexpr int QG = 1;
  static constexpr int XS = 1;
};

/* Q3_K: hmask[32], qs[64], scales[12] (6-bit, packed), d (fp16):
 * x = d (sc - 32) (q - 4 (1 - hbit)). */
struct LmcQ3_K
{
  static constexpr int BV = 256, BB = 110, C = 16, UPB = 16, SPAN = 16, ALIGN = 2;
  /* scale c: low nibble of byte c % 8 (high nibble for c >= 8), over the
   * 2-bit pair c / 4 of byte 8 + c % 4 */
  LMC_HD static int scale (const uint8_t *sc, int c)
  {
    uint32_t low = c < 8 ? sc[c] & 0xFu : (uint32_t) sc[c - 8] >> 4;
    uint32_t high = ((uint32_t) sc[8 + (c & 3)] >> (2 * (c >> 2))) & 3u;
    return (int) (low | high << 4) - 32;
  }
  LMC_HD static void decode (const uint8_t *b, int c, float *v)
  {
    float d = lmc_fp16_to_fp32 (lmc_load<uint16_t> (b + 108));
    float dl = lmc_mul (d, (float) scale (b + 96, c));
    int h = c >> 3, j = (c >> 1) & 3, p = c & 1;
    uint32_t q[4];
    lmc_k23_unit_quants (b + 32, c, q);
    for (int k = 0; k < 4; k++)
      {
        uint32_t hm = lmc_load4_a2 (b + 16 * p + 4 * k);
        for (int i = 0; i < 4; i++)
          {
            int high = (int) ((lmc_byte (hm, i) >> (4 * h + j)) & 1u);
            v[4 * k + i] = lmc_mul (dl, (float) ((int) lmc_byte (q[k], i) - (high ? 0 : 4)));
          }
      }
  }
  LMC_HD static int index (int c, int i) { return 16 * c + i; }
  static constexpr bool FAST = false, Q8 = false;
  static constexpr int QG = 1;
  static constexpr int XS = 1;
};

/* ---- whole blocks ---- */

/* Decodes one block into out[0 .. BV-1] (the host checks and the dequantise
 * kernels' definition). */
template <class Dec>
LMC_HD void
lmc_decode_block (const uint8_t *block, float *out)
{
  for (int c = 0; c < Dec::UPB; c++)
    {
      float v[Dec::C];
      Dec::decode (block, c, v);
      for (int i = 0; i < Dec::C; i++)
        out[Dec::index (c, i)] = v[i];
    }
}

/* ---- choosing the decoder of a type (host side) ---- */

/* True when an F32/F16/BF16 row of n values can use the 16-byte form: n a
 * multiple of its unit and @addr_bits (the OR of every base address and byte
 * stride involved) a multiple of 16. */
static inline bool
lmc_fp_vector_ok (LmTensorType type, uint64_t n, uint64_t addr_bits)
{
  uint64_t unit = type == LM_TYPE_F32 ? 4 : 8;
  return n % unit == 0 && addr_bits % 16 == 0;
}

/* Calls f (Dec ()) with the decoder of @type (the vector form of a
 * floating-point type when @vector); LM_ERR_UNSUPPORTED for other types. */
template <class F>
static LmStatus
lmc_with_decoder (LmTensorType type, bool vector, F &&f)
{
  switch (type)
    {
    case LM_TYPE_F32:
      return vector ? f (LmcF32V ()) : f (LmcF32S ());
    case LM_TYPE_F16:
      return vector ? f (LmcF16V ()) : f (LmcF16S ());
    case LM_TYPE_BF16:
      return vector ? f (LmcBF16V ()) : f (LmcBF16S ());
    case LM_TYPE_Q8_0:
      return f (LmcQ8_0 ());
    case LM_TYPE_Q4_K:
      return f (LmcQ4_K ());
    case LM_TYPE_Q5_K:
      return f (LmcQ5_K ());
    case LM_TYPE_Q6_K:
      return f (LmcQ6_K ());
    case LM_TYPE_Q4_0:
      return f (LmcQ4_0 ());
    case LM_TYPE_Q4_1:
      return f (LmcQ4_1 ());
    case LM_TYPE_Q5_0:
      return f (LmcQ5_0 ());
    case LM_TYPE_Q5_1:
      return f (LmcQ5_1 ());
    case LM_TYPE_Q2_K:
      return f (LmcQ2_K ());
    case LM_TYPE_Q3_K:
      return f (LmcQ3_K ());
    default:
      return LM_ERR_UNSUPPORTED;
    }
}
