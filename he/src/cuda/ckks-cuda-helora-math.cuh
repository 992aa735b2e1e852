/* ckks-cuda-helora-math.cuh: the arithmetic of the GPU HE-LoRA pipeline as
 * __host__ __device__ functions (internal, CUDA only).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Everything a kernel of ckks-cuda-helora.cu computes per element is here,
 * so that the same code runs on the host in the self-checks of
 * ckks-cuda-helora-check.cu (the only evidence there is without a GPU):
 * the ChaCha20 block function (RFC 8439), the samplers built on it, modular
 * arithmetic as in ckks-modarith.h, the encoder's butterfly and rounding,
 * and the two-limb CRT. Floating point goes through hd_dmul/hd_dadd, which
 * are correctly rounded on both sides (no fused multiply-add on the device),
 * so the encoder gives the CPU scalar backend's values exactly.
 */
#pragma once

#include <math.h>
#include <stdint.h>

#include "ckks-cuda-arith.cuh"
#include "ckks-cuda-helora.h"

#define HD __host__ __device__ __forceinline__


/* Centred binomial with parameter 21, as ckks_sample_cbd: two 21-bit
 * fields of a 64-bit word. */
#define CKKS_CUDA_CBD_MASK ((1ull << 21) - 1)

HD int
hd_popcount (uint64_t x)
{
#ifdef __CUDA_ARCH__
  return __popcll (x);
#else
  return __builtin_popcountll (x);
#endif
}

/* Correctly rounded double operations, never contracted into an FMA. */
HD double
hd_dmul (double a, double b)
{
#ifdef __CUDA_ARCH__
  return __dmul_rn (a, b);
#else
  return a * b;
#endif
}

HD double
hd_dadd (double a, double b)
{
#ifdef __CUDA_ARCH__
  return __dadd_rn (a, b);
#else
  return a + b;
#endif
}

HD double
hd_dsub (double a, double b)
{
#ifdef __CUDA_ARCH__
  return __dsub_rn (a, b);
#else
  return a - b;
#endif
}

/* Round half to even, as nearbyint in the default rounding mode. */
HD double
hd_rint (double x)
{
  return rint (x);
}

/* ---- modular arithmetic (odd q < 2^61), as ckks-modarith.h; the
 * shared pieces are ckks-cuda-arith.cuh's ---- */

HD uint64_t
hd_mul_mod (uint64_t a, uint64_t b, uint64_t q, uint64_t ratio_lo, uint64_t ratio_hi)
{
  return ckks_cu_barrett_reduce_128 (a * b, ckks_cu_mul_hi (a, b), q, ratio_lo, ratio_hi);
}

/* x mod q for a signed x, ratio64 = floor(2^64 / q) (as ckks_reduce_i64). */
HD uint64_t
hd_reduce_i64 (int64_t x, uint64_t q, uint64_t ratio64)
{
  uint64_t mag = x < 0 ? (uint64_t) 0 - (uint64_t) x : (uint64_t) x;
  uint64_t r = mag - ckks_cu_mul_hi (mag, ratio64) * q;
  r = r >= q ? r - q : r;
  return x < 0 && r != 0 ? q - r : r;
}

/* A small signed value (|x| < q) into [0, q). */
HD uint64_t
hd_lift_small (int64_t x, uint64_t q)
{
  return x < 0 ? (uint64_t) (x + (int64_t) q) : (uint64_t) x;
}

/* ---- ChaCha20 (RFC 8439, section 2.3) ---- */

HD uint32_t
hd_rotl32 (uint32_t x, int n)
{
  return (x << n) | (x >> (32 - n));
}

HD void
hd_chacha_quarter (uint32_t *s, int a, int b, int c, int d)
{
  s[a] += s[b]; s[d] ^= s[a]; s[d] = hd_rotl32 (s[d], 16);
  s[c] += s[d]; s[b] ^= s[c]; s[b] = hd_rotl32 (s[b], 12);
  s[a] += s[b]; s[d] ^= s[a]; s[d] = hd_rotl32 (s[d], 8);
  s[c] += s[d]; s[b] ^= s[c]; s[b] = hd_rotl32 (s[b], 7);
}

/* One 64-byte block as 16 little-endian words: key = 8 words (the 32-byte
 * key read little-endian), nonce = 3 words. */
HD void
hd_chacha20_block (const uint32_t key[8], uint32_t counter, const uint32_t nonce[3],
                   uint32_t out[16])
{
  uint32_t init[16] = { 0x61707865u, 0x3320646eu, 0x79622d32u, 0x6b206574u,
                        key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
                        counter, nonce[0], nonce[1], nonce[2] };
  for (int i = 0; i < 16; i++)
    out[i] = init[i];
  for (int round = 0; round < 10; round++)
    {
      hd_chacha_quarter (out, 0, 4, 8, 12);
      hd_chacha_quarter (out, 1, 5, 9, 13);
      hd_chacha_quarter (out, 2, 6, 10, 14);
      hd_chacha_quarter (out, 3, 7, 11, 15);
      hd_chacha_quarter (out, 0, 5, 10, 15);
      hd_chacha_quarter (out, 1, 6, 11, 12);
      hd_chacha_quarter (out, 2, 7, 8, 13);
      hd_chacha_quarter (out, 3, 4, 9, 14);
    }
  for (int i = 0; i < 16; i++)
    out[i] += init[i];
}

/* Word j (0..7) of a block as a 64-bit little-endian integer. */
HD uint64_t
hd_block_word64 (const uint32_t blk[16], int j)
{
  return (uint64_t) blk[2 * j] | ((uint64_t) blk[2 * j + 1] << 32);
}

/* Errors e[8 blk .. 8 blk + 8) of ciphertext @ct: block @blk of the stream
 * (key, nonce = (ERROR, ct, 0)), one centred binomial value per 64-bit word. */
HD void
hd_sample_error8 (const uint32_t key[8], uint32_t ct, uint32_t blk, int8_t e[8])
{
  uint32_t nonce[3] = { CKKS_CUDA_DOMAIN_ERROR, ct, 0 }, s[16];
  hd_chacha20_block (key, blk, nonce, s);
  for (int j = 0; j < 8; j++)
    {
      uint64_t w = hd_block_word64 (s, j);
      e[j] = (int8_t) (hd_popcount (w & CKKS_CUDA_CBD_MASK)
                       - hd_popcount ((w >> 21) & CKKS_CUDA_CBD_MASK));
    }
}

/* Uniform a[4 blk .. 4 blk + 4) mod q of ciphertext @ct, limb @limb: block
 * @blk of the stream (key, nonce = (UNIFORM, ct, limb)), each value a
 * 128-bit integer (two words, low first) reduced mod q: statistical
 * distance from uniform below q / 2^128 < 2^-67 per value. */
HD void
hd_sample_uniform4 (const uint32_t key[8], uint32_t ct, uint32_t limb, uint32_t blk,
                    uint64_t q, uint64_t ratio_lo, uint64_t ratio_hi, uint64_t a[4])
{
  uint32_t nonce[3] = { CKKS_CUDA_DOMAIN_UNIFORM, ct, limb }, s[16];
  hd_chacha20_block (key, blk, nonce, s);
  for (int j = 0; j < 4; j++)
    a[j] = ckks_cu_barrett_reduce_128 (hd_block_word64 (s, 2 * j),
                                       hd_block_word64 (s, 2 * j + 1), q, ratio_lo, ratio_hi);
}

/* Butterfly @idx (< n/2) of the forward NTT stage with @m blocks of
 * half-length @half (m half = n/2): upper element *x, lower *x + half,
 * twiddle psi_rev[m + block] (ckks_ntt_forward_limb's order). */
HD uint32_t
hd_ntt_butterfly (uint32_t idx, uint32_t m, uint32_t half, uint32_t *x)
{
  uint32_t blk = idx / half;
  *x = 2 * blk * half + idx % half;
  return m + blk;
}

/* The butterfly itself on fully reduced values. */
HD void
hd_ntt_forward_butterfly (uint64_t *x, uint64_t *y, uint64_t w, uint64_t w_shoup, uint64_t q)
{
  uint64_t u = *x, v = ckks_cu_mul_shoup (*y, w, w_shoup, q);
  *x = ckks_cu_add_mod (u, v, q);
  *y = ckks_cu_sub_mod (u, v, q);
}

/* ---- encoder (ckks-encode.c, scalar backend) ---- */

/* Slot value of the replicated packing: slot s = t + j c holds value j of
 * the chunk in every copy t (ckks_helora_slot), zero past the chunk. */
HD double
hd_helora_slot_value (const float *chunk, uint32_t len, uint32_t copies, double inv,
                      uint32_t slot)
{
  uint32_t j = slot / copies;
  return j < len ? hd_dmul ((double) chunk[j], inv) : 0.0;
}

/* One butterfly of the inverse special FFT (ckks_fft_inverse_stages_from):
 * x += y; y = (x - y) conj(w). */
HD void
hd_fft_inverse_butterfly (double *xr, double *xi, double *yr, double *yi, double wr,
                          double wi)
{
  double dr = hd_dsub (*xr, *yr), di = hd_dsub (*xi, *yi);
  *xr = hd_dadd (*xr, *yr);
  *xi = hd_dadd (*xi, *yi);
  *yr = hd_dadd (hd_dmul (dr, wr), hd_dmul (di, wi));
  *yi = hd_dsub (hd_dmul (di, wr), hd_dmul (dr, wi));
}

/* Stages @hl and @hl / 2 of the inverse special FFT on the four elements
 * of group @idx (< slots / 4): x0, x0 + hl / 2, x0 + hl, x0 + 3 hl / 2 with
 * x0 mod 2 hl < hl / 2. Stage hl pairs (x0, x0 + hl) and (x0 + hl / 2,
 * x0 + 3 hl / 2); stage hl / 2 pairs (x0, x0 + hl / 2) and (x0 + hl,
 * x0 + 3 hl / 2); the twiddles are [h + (x mod 2h)] of each stage h. */
HD void
hd_fft_inverse_two_stages (double *re, double *im, uint32_t idx, uint32_t hl, const double *fft_re,
                const double *fft_im)
{
  uint32_t h2 = hl >> 1, x0 = (idx / h2) * 2 * hl + idx % h2;
  uint32_t x[4] = { x0, x0 + h2, x0 + hl, x0 + hl + h2 };
  double r[4], i[4];
  for (int e = 0; e < 4; e++)
    {
      r[e] = re[x[e]];
      i[e] = im[x[e]];
    }
  uint32_t j = x0 % (2 * hl);
  hd_fft_inverse_butterfly (&r[0], &i[0], &r[2], &i[2], fft_re[hl + j], fft_im[hl + j]);
  hd_fft_inverse_butterfly (&r[1], &i[1], &r[3], &i[3], fft_re[hl + j + h2],
                            fft_im[hl + j + h2]);
  uint32_t j2 = x0 % hl;
  hd_fft_inverse_butterfly (&r[0], &i[0], &r[1], &i[1], fft_re[h2 + j2], fft_im[h2 + j2]);
  hd_fft_inverse_butterfly (&r[2], &i[2], &r[3], &i[3], fft_re[h2 + j2], fft_im[h2 + j2]);
  for (int e = 0; e < 4; e++)
    {
      re[x[e]] = r[e];
      im[x[e]] = i[e];
    }
}

/* A coefficient: round-half-even(v * scale) (ckks_round_scaled_scalar; the
 * pipeline's values are below 2^50, far from its 2^62 bound). */
HD int64_t
hd_round_scaled (double v, double scale)
{
  return (int64_t) hd_rint (hd_dmul (v, scale));
}

/* Coefficient of the message in limb i: (m 2^lift + e) mod q, with
 * lift_w = 2^lift mod q (1 for no lift), as ckks_message_to_limb. */
HD uint64_t
hd_message_limb (int64_t m, int8_t e, uint64_t q, uint64_t ratio64, uint64_t lift_w,
                 uint64_t lift_shoup)
{
  uint64_t x = ckks_cu_mul_shoup (hd_reduce_i64 (m, q, ratio64), lift_w, lift_shoup, q);
  return ckks_cu_add_mod (x, hd_lift_small (e, q), q);
}

/* ---- decryption ---- */

/* Two-limb CRT to a centred double (ckks_crt2_scalar). */
HD double
hd_crt2 (uint64_t a0, uint64_t a1, uint64_t q0, uint64_t q1, uint64_t inv, uint64_t inv_shoup,
         uint64_t half_t, uint64_t half_a)
{
  uint64_t r0 = a0 < 2 * q1 ? (a0 >= q1 ? a0 - q1 : a0) : a0 % q1;
  uint64_t t = ckks_cu_mul_shoup (ckks_cu_sub_mod (a1, r0, q1), inv, inv_shoup, q1);
  int64_t st = (int64_t) t;
  if (t > half_t || (t == half_t && a0 > half_a))
    st -= (int64_t) q1;
  return hd_dadd (hd_dmul ((double) st, (double) q0), (double) a0);
}

/* ---- max|h| on the device (the device-pointer run) ---- */

/* Threads of the block that reduces one group's h. */
#define CKKS_CUDA_ABS_MAX_THREADS 256

/* One value into a running max|h|: a non-finite value makes it +inf, which
 * no finite value exceeds, so "some value was not finite" survives every
 * later step and the tree. */
HD double
hd_abs_max_step (double m, float v)
{
  double a = isfinite (v) ? fabs ((double) v) : INFINITY;
  return a > m ? a : m;
}

HD double
hd_abs_max_combine (double a, double b)
{
  return a > b ? a : b;
}

/* From the reduced max|h| to the encoder's 1/max|h| and the decoder's
 * factor, as ckks-gpu-helora.c's h_max: h = 0 scales by 1. A non-finite h
 * encodes zeros (inv 0) and decodes to NaN (factor NaN): u comes out NaN,
 * as a plain A h would. */
HD void
hd_abs_max_finish (double m, double *inv, double *factor)
{
  if (isinf (m))
    {
      *inv = 0;
      *factor = NAN;
      return;
    }
  *factor = m > 0 ? m : 1;
  *inv = 1.0 / *factor;
}
