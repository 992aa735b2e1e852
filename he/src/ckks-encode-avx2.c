/* ckks-encode-avx2.c: AVX2 (+FMA) versions of the encode/decode kernels.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The special FFT stages, the rounding gather, the signed reduction, the
 * two-limb CRT and the dot product on 4 doubles or 4 64-bit lanes at a time.
 * Every kernel gives the scalar reference's results bit for bit: the
 * floating-point ones do the same operations in the same order (no FMA
 * contraction: the library builds with -ffp-contract=off, and the tests
 * compare bit patterns); FMA appears only in the CRT, as an exact
 * error-free product. Inputs outside a kernel's fast range go to the scalar
 * reference.
 */
#include <immintrin.h>
#include <string.h>

#include "ckks-internal.h"

#define AVX2 __attribute__ ((target ("avx2,fma")))

/* ---- helpers: exact conversions AVX2 lacks (no 64-bit <-> double) ---- */

/* x as a double for 0 <= x < 2^52: x's bits under the exponent of 2^52 give
 * 2^52 + x exactly. */
AVX2 static inline __m256d
u52_to_pd (__m256i x)
{
  const __m256d two52 = _mm256_set1_pd (0x1p52);
  return _mm256_sub_pd (_mm256_or_pd (_mm256_castsi256_pd (x), two52), two52);
}

/* An integer-valued double with |x| < 2^51 to int64: x + 1.5 * 2^52 has x
 * in its low mantissa bits (two's complement relative to the magic). */
AVX2 static inline __m256i
pd_to_i51 (__m256d x)
{
  const __m256d magic = _mm256_set1_pd (0x1.8p52);
  return _mm256_sub_epi64 (_mm256_castpd_si256 (_mm256_add_pd (x, magic)),
                           _mm256_castpd_si256 (magic));
}

/* Any int64 to the nearest double (one rounding, in the final add): the
 * high half goes under the exponent of 2^84 + 2^63 (sign bit flipped), the
 * low half under 2^52. */
AVX2 static inline __m256d
i64_to_pd (__m256i x)
{
  const __m256i lo_magic = _mm256_set1_epi64x (0x4330000000000000ll);   /* 2^52 */
  const __m256i hi_magic = _mm256_set1_epi64x (0x4530000080000000ll);   /* 2^84 + 2^63 */
  const __m256d all_magic = _mm256_set1_pd (0x1p84 + 0x1p63 + 0x1p52);
  __m256i lo = _mm256_blend_epi32 (lo_magic, x, 0x55);
  __m256i hi = _mm256_xor_si256 (_mm256_srli_epi64 (x, 32), hi_magic);
  __m256d h = _mm256_sub_pd (_mm256_castsi256_pd (hi), all_magic);
  return _mm256_add_pd (h, _mm256_castsi256_pd (lo));
}

/* An integer-valued double with |x| < 2^62 to int64, exactly: x = hi * 2^32
 * + lo with hi = floor(x / 2^32) (|hi| < 2^30) and lo in [0, 2^32); hi * 2^32
 * and x - hi * 2^32 are exact (the difference is representable). */
AVX2 static inline __m256i
pd_to_i62 (__m256d x)
{
  __m256d hi = _mm256_floor_pd (_mm256_mul_pd (x, _mm256_set1_pd (0x1p-32)));
  __m256d lo = _mm256_sub_pd (x, _mm256_mul_pd (hi, _mm256_set1_pd (0x1p32)));
  return _mm256_add_epi64 (_mm256_slli_epi64 (pd_to_i51 (hi), 32), pd_to_i51 (lo));
}

/* Low 64 bits of a * b (AVX2 has only 32 x 32 -> 64 products). */
AVX2 static inline __m256i
mullo_epi64 (__m256i a, __m256i b)
{
  __m256i lo = _mm256_mul_epu32 (a, b);
  __m256i cross = _mm256_add_epi64 (_mm256_mul_epu32 (_mm256_srli_epi64 (a, 32), b),
                                    _mm256_mul_epu32 (a, _mm256_srli_epi64 (b, 32)));
  return _mm256_add_epi64 (lo, _mm256_slli_epi64 (cross, 32));
}

/* ---- special FFT ---- */

/* The scalar butterflies, 4 lanes wide; the twiddles are vectors, so the
 * same code serves the long stages and the in-register short ones. */
AVX2 static inline void
fwd_butterfly (__m256d *xr, __m256d *xi, __m256d *yr, __m256d *yi, __m256d wr, __m256d wi)
{
  __m256d tr = _mm256_sub_pd (_mm256_mul_pd (*yr, wr), _mm256_mul_pd (*yi, wi));
  __m256d ti = _mm256_add_pd (_mm256_mul_pd (*yr, wi), _mm256_mul_pd (*yi, wr));
  *yr = _mm256_sub_pd (*xr, tr);
  *yi = _mm256_sub_pd (*xi, ti);
  *xr = _mm256_add_pd (*xr, tr);
  *xi = _mm256_add_pd (*xi, ti);
}

AVX2 static inline void
inv_butterfly (__m256d *xr, __m256d *xi, __m256d *yr, __m256d *yi, __m256d wr, __m256d wi)
{
  __m256d dr = _mm256_sub_pd (*xr, *yr), di = _mm256_sub_pd (*xi, *yi);
  *xr = _mm256_add_pd (*xr, *yr);
  *xi = _mm256_add_pd (*xi, *yi);
  /* times conj(w) */
  *yr = _mm256_add_pd (_mm256_mul_pd (dr, wr), _mm256_mul_pd (di, wi));
  *yi = _mm256_sub_pd (_mm256_mul_pd (di, wr), _mm256_mul_pd (dr, wi));
}

/* One stage of half-length h >= 4 over n slots. */
AVX2 static void
fft_stage (double *re, double *im, const double *tw_re, const double *tw_im, size_t n,
           size_t h, bool forward)
{
  for (size_t i = 0; i < n; i += 2 * h)
    for (size_t j = 0; j < h; j += 4)
      {
        __m256d wr = _mm256_loadu_pd (tw_re + h + j), wi = _mm256_loadu_pd (tw_im + h + j);
        double *pxr = re + i + j, *pxi = im + i + j, *pyr = pxr + h, *pyi = pxi + h;
        __m256d xr = _mm256_loadu_pd (pxr), xi = _mm256_loadu_pd (pxi);
        __m256d yr = _mm256_loadu_pd (pyr), yi = _mm256_loadu_pd (pyi);
        if (forward)
          fwd_butterfly (&xr, &xi, &yr, &yi, wr, wi);
        else
          inv_butterfly (&xr, &xi, &yr, &yi, wr, wi);
        _mm256_storeu_pd (pxr, xr);
        _mm256_storeu_pd (pxi, xi);
        _mm256_storeu_pd (pyr, yr);
        _mm256_storeu_pd (pyi, yi);
      }
}

/* Half-lengths 1 and 2 on 8-slot blocks A = v[0..3], B = v[4..7]:
 * h = 1 pairs (0,1), (2,3): X = unpacklo(A, B) = v0 v4 v2 v6, Y = unpackhi;
 * h = 2 pairs (0,2), (1,3): X = low halves v0 v1 v4 v5, Y = high halves.
 * Both shuffles are their own inverse on (X', Y'). */
typedef struct {
  __m256d r0, r1, i0, i1;
} FftBlock8;

AVX2 static inline void
block_split (const FftBlock8 *b, int h, __m256d *xr, __m256d *xi, __m256d *yr, __m256d *yi)
{
  if (h == 1)
    {
      *xr = _mm256_unpacklo_pd (b->r0, b->r1);
      *yr = _mm256_unpackhi_pd (b->r0, b->r1);
      *xi = _mm256_unpacklo_pd (b->i0, b->i1);
      *yi = _mm256_unpackhi_pd (b->i0, b->i1);
    }
  else
    {
      *xr = _mm256_permute2f128_pd (b->r0, b->r1, 0x20);
      *yr = _mm256_permute2f128_pd (b->r0, b->r1, 0x31);
      *xi = _mm256_permute2f128_pd (b->i0, b->i1, 0x20);
      *yi = _mm256_permute2f128_pd (b->i0, b->i1, 0x31);
    }
}

AVX2 static inline void
block_join (FftBlock8 *b, int h, __m256d xr, __m256d xi, __m256d yr, __m256d yi)
{
  if (h == 1)
    {
      b->r0 = _mm256_unpacklo_pd (xr, yr);
      b->r1 = _mm256_unpackhi_pd (xr, yr);
      b->i0 = _mm256_unpacklo_pd (xi, yi);
      b->i1 = _mm256_unpackhi_pd (xi, yi);
    }
  else
    {
      b->r0 = _mm256_permute2f128_pd (xr, yr, 0x20);
      b->r1 = _mm256_permute2f128_pd (xr, yr, 0x31);
      b->i0 = _mm256_permute2f128_pd (xi, yi, 0x20);
      b->i1 = _mm256_permute2f128_pd (xi, yi, 0x31);
    }
}

/* Lane twiddles of the short stages: h = 1 uses tw[1] in every lane, h = 2
 * tw[2], tw[3] twice (lane l of X is index l % 2 within its half). */
AVX2 static inline void
short_twiddles (const double *tw_re, const double *tw_im, __m256d wr[2], __m256d wi[2])
{
  wr[0] = _mm256_set1_pd (tw_re[1]);
  wi[0] = _mm256_set1_pd (tw_im[1]);
  wr[1] = _mm256_setr_pd (tw_re[2], tw_re[3], tw_re[2], tw_re[3]);
  wi[1] = _mm256_setr_pd (tw_im[2], tw_im[3], tw_im[2], tw_im[3]);
}

AVX2 static inline void
block_load (FftBlock8 *b, const double *re, const double *im)
{
  b->r0 = _mm256_loadu_pd (re);
  b->r1 = _mm256_loadu_pd (re + 4);
  b->i0 = _mm256_loadu_pd (im);
  b->i1 = _mm256_loadu_pd (im + 4);
}

AVX2 static inline void
block_store (const FftBlock8 *b, double *re, double *im)
{
  _mm256_storeu_pd (re, b->r0);
  _mm256_storeu_pd (re + 4, b->r1);
  _mm256_storeu_pd (im, b->i0);
  _mm256_storeu_pd (im + 4, b->i1);
}

AVX2 static void
fft_stages_forward_avx2 (double *re, double *im, const double *tw_re, const double *tw_im,
                         size_t n)
{
  if (n < 8)
    {
      ckks_fft_stages_forward_scalar (re, im, tw_re, tw_im, n);
      return;
    }
  __m256d wr[2], wi[2];
  short_twiddles (tw_re, tw_im, wr, wi);
  for (size_t base = 0; base < n; base += 8)
    {
      FftBlock8 b;
      block_load (&b, re + base, im + base);
      for (int s = 0; s < 2; s++)
        {
          __m256d xr, xi, yr, yi;
          block_split (&b, s + 1, &xr, &xi, &yr, &yi);
          fwd_butterfly (&xr, &xi, &yr, &yi, wr[s], wi[s]);
          block_join (&b, s + 1, xr, xi, yr, yi);
        }
      block_store (&b, re + base, im + base);
    }
  for (size_t h = 4; h < n; h <<= 1)
    fft_stage (re, im, tw_re, tw_im, n, h, true);
}

AVX2 static void
fft_stages_inverse_avx2 (double *re, double *im, const double *tw_re, const double *tw_im,
                         size_t n)
{
  if (n < 8)
    {
      ckks_fft_stages_inverse_scalar (re, im, tw_re, tw_im, n);
      return;
    }
  for (size_t h = n >> 1; h >= 4; h >>= 1)
    fft_stage (re, im, tw_re, tw_im, n, h, false);
  __m256d wr[2], wi[2];
  short_twiddles (tw_re, tw_im, wr, wi);
  for (size_t base = 0; base < n; base += 8)
    {
      FftBlock8 b;
      block_load (&b, re + base, im + base);
      for (int s = 1; s >= 0; s--)
        {
          __m256d xr, xi, yr, yi;
          block_split (&b, s + 1, &xr, &xi, &yr, &yi);
          inv_butterfly (&xr, &xi, &yr, &yi, wr[s], wi[s]);
          block_join (&b, s + 1, xr, xi, yr, yi);
        }
      block_store (&b, re + base, im + base);
    }
}

/* ---- rounding with the bit-reversal gather ---- */

/* Rounds with the MXCSR default (nearest, ties to even), like nearbyint.
 * At the first block with a value out of range the scalar reference takes
 * over from that block, so even the zeros it writes after a failure match. */
AVX2 static bool
round_scaled_avx2 (int64_t *out, const double *v, const uint32_t *idx, double scale,
                   size_t n)
{
  const __m256d s = _mm256_set1_pd (scale);
  const __m256d limit = _mm256_set1_pd (0x1p62), limit51 = _mm256_set1_pd (0x1p51);
  const __m256d abs_mask = _mm256_castsi256_pd (_mm256_set1_epi64x (INT64_MAX));
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    {
      __m128i vi = _mm_loadu_si128 ((const __m128i *) (idx + i));
      __m256d x = _mm256_round_pd (_mm256_mul_pd (_mm256_i32gather_pd (v, vi, 8), s),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      /* ordered compares: false for NaN */
      __m256d ax = _mm256_and_pd (x, abs_mask);
      int small = _mm256_movemask_pd (_mm256_cmp_pd (ax, limit51, _CMP_LT_OQ));
      if (small != 0xf && _mm256_movemask_pd (_mm256_cmp_pd (ax, limit, _CMP_LT_OQ)) != 0xf)
        break;
      _mm256_storeu_si256 ((__m256i *) (out + i), small == 0xf ? pd_to_i51 (x) : pd_to_i62 (x));
    }
  return ckks_round_scaled_scalar (out + i, v, idx + i, scale, n - i);
}

/* ---- signed reduction ---- */

/* (x + e) mod q: the quotient estimated in double precision is off by at
 * most one from floor((x + e) / q) (|x + e| < 2^62 + 2^7 is within 2^9 of
 * its double, which moves the quotient by under 2^-10 as q > 2^19; the
 * two roundings of fl(x) * fl(1/q) add under 2^-52 * 2^43 = 2^-9), so
 * the remainder, exact in 64-bit integers, lies in [-q, 2q): one
 * correction each way brings it into [0, q). */
AVX2 static inline __m256i
reduce_signed4 (__m256i v, __m256i vq, __m256d qinv)
{
  const __m256i q_minus_1 = _mm256_sub_epi64 (vq, _mm256_set1_epi64x (1));
  __m256d quo = _mm256_floor_pd (_mm256_mul_pd (i64_to_pd (v), qinv));
  __m256i r = _mm256_sub_epi64 (v, mullo_epi64 (pd_to_i51 (quo), vq));
  r = _mm256_add_epi64 (r, _mm256_and_si256 (_mm256_cmpgt_epi64 (_mm256_setzero_si256 (), r), vq));
  return _mm256_sub_epi64 (r, _mm256_and_si256 (_mm256_cmpgt_epi64 (r, q_minus_1), vq));
}

AVX2 static void
reduce_signed_avx2 (uint64_t *out, const int64_t *x, const int8_t *e, const CkksModulus *m,
                    size_t n)
{
  const __m256i vq = _mm256_set1_epi64x ((long long) m->q);
  const __m256d qinv = _mm256_set1_pd (1.0 / (double) m->q);
  size_t i = 0;
  for (; i + 4 <= n; i += 4)
    {
      __m256i v = _mm256_loadu_si256 ((const __m256i *) (x + i));
      if (e)
        {
          int32_t four;
          memcpy (&four, e + i, sizeof four);
          v = _mm256_add_epi64 (v, _mm256_cvtepi8_epi64 (_mm_cvtsi32_si128 (four)));
        }
      _mm256_storeu_si256 ((__m256i *) (out + i), reduce_signed4 (v, vq, qinv));
    }
  for (; i < n; i++)
    out[i] = ckks_reduce_i64 (x[i] + (e ? e[i] : 0), m);
}

/* ---- two-limb CRT ---- */

/* diff * inv mod q1 in doubles, exactly, for diff, inv < q1 < 2^50. Write
 * P = diff * inv < q1^2 < 2^100 and u = 2^-53 (unit roundoff).
 * - hi = fl(P) and lo = fma(diff, inv, -hi) give P = hi + lo exactly (the
 *   error-free product), hi and lo integers, |lo| <= u hi, so
 *   |lo| / q1 < u q1 < 1/8.
 * - qe = floor(fl(hi * fl(1/q1))): the two roundings change hi / q1 by a
 *   factor within 1 +- 2.0001u, an absolute error below 2.0001 u q1 < 1/4
 *   (hi / q1 < q1 (1 + u) < 2^50). With the 1/8 of lo, fl(hi * fl(1/q1))
 *   is within 3/8 of P / q1, so qe is floor(P / q1) or one off either way.
 * - r = P - qe q1 is then in [-q1, 2 q1); D = hi - qe q1 = r - lo is an
 *   integer below 2^52 in magnitude, so fma(-qe, q1, hi) gives it exactly,
 *   and r = D + lo, a sum of integers below 2^52, is exact too.
 * - One correction each way brings r into [0, q1): P mod q1 itself. */
AVX2 static inline __m256d
mul_mod_exact (__m256d a, __m256d b, __m256d q, __m256d qinv)
{
  __m256d hi = _mm256_mul_pd (a, b);
  __m256d lo = _mm256_fmsub_pd (a, b, hi);
  __m256d qe = _mm256_floor_pd (_mm256_mul_pd (hi, qinv));
  __m256d r = _mm256_add_pd (_mm256_fnmadd_pd (qe, q, hi), lo);
  r = _mm256_add_pd (r, _mm256_and_pd (_mm256_cmp_pd (r, _mm256_setzero_pd (), _CMP_LT_OQ), q));
  return _mm256_sub_pd (r, _mm256_and_pd (_mm256_cmp_pd (r, q, _CMP_GE_OQ), q));
}

/* All arithmetic on exact integer-valued doubles: a0 < 2 q1 < 2^51 and
 * a1 < q1 (checked per block; other blocks take the scalar path), so the
 * sums, differences and compares below are exact, and the last two steps
 * are the scalar's own double operations (product, then sum: no FMA). */
AVX2 static void
crt2_avx2 (const uint64_t *a0, const uint64_t *a1, double *out, const CkksCrt2 *c, size_t n)
{
  if (c->q1 >= ((uint64_t) 1 << 50))
    {
      ckks_crt2_scalar (a0, a1, out, c, n);
      return;
    }
  const __m256i lim0 = _mm256_set1_epi64x ((long long) (2 * c->q1 - 1));
  const __m256i lim1 = _mm256_set1_epi64x ((long long) (c->q1 - 1));
  const __m256d q1 = _mm256_set1_pd ((double) c->q1);
  const __m256d q1inv = _mm256_set1_pd (1.0 / (double) c->q1);
  const __m256d inv = _mm256_set1_pd ((double) c->inv);
  const __m256d ht = _mm256_set1_pd ((double) c->half_t);
  const __m256d ha = _mm256_set1_pd ((double) c->half_a);
  const __m256d q0 = _mm256_set1_pd ((double) c->q0);
  const __m256d zero = _mm256_setzero_pd ();
  size_t k = 0;
  for (; k + 4 <= n; k += 4)
    {
      __m256i x0 = _mm256_loadu_si256 ((const __m256i *) (a0 + k));
      __m256i x1 = _mm256_loadu_si256 ((const __m256i *) (a1 + k));
      /* unsigned x > lim as signed: values >= 2^63 look negative */
      __m256i bad = _mm256_or_si256 (_mm256_cmpgt_epi64 (x0, lim0),
                                     _mm256_cmpgt_epi64 (x1, lim1));
      bad = _mm256_or_si256 (bad, _mm256_or_si256 (x0, x1));
      if (_mm256_movemask_pd (_mm256_castsi256_pd (bad)) != 0)
        {
          /* a lane with the top bit set or out of range */
          bool slow = false;
          for (int j = 0; j < 4; j++)
            slow = slow || a0[k + j] >= 2 * c->q1 || a1[k + j] >= c->q1;
          if (slow)
            {
              ckks_crt2_scalar (a0 + k, a1 + k, out + k, c, 4);
              continue;
            }
        }
      __m256d d0 = u52_to_pd (x0), d1 = u52_to_pd (x1);
      __m256d r0 = _mm256_sub_pd (d0, _mm256_and_pd (_mm256_cmp_pd (d0, q1, _CMP_GE_OQ), q1));
      __m256d diff = _mm256_sub_pd (d1, r0);
      diff = _mm256_add_pd (diff, _mm256_and_pd (_mm256_cmp_pd (diff, zero, _CMP_LT_OQ), q1));
      __m256d t = mul_mod_exact (diff, inv, q1, q1inv);
      __m256d neg = _mm256_or_pd (_mm256_cmp_pd (t, ht, _CMP_GT_OQ),
                                  _mm256_and_pd (_mm256_cmp_pd (t, ht, _CMP_EQ_OQ),
                                                 _mm256_cmp_pd (d0, ha, _CMP_GT_OQ)));
      __m256d st = _mm256_sub_pd (t, _mm256_and_pd (neg, q1));
      _mm256_storeu_pd (out + k, _mm256_add_pd (_mm256_mul_pd (st, q0), d0));
    }
  if (k < n)
    ckks_crt2_scalar (a0 + k, a1 + k, out + k, c, n - k);
}

/* ---- dot product ---- */

/* The scalar's 8 partial sums as two vectors (lanes 0-3 and 4-7), then its
 * pairing: (acc_j + acc_j+4) first, then ((s0 + s1) + (s2 + s3)). */
AVX2 static double
dot_avx2 (const double *a, const double *b, size_t n)
{
  __m256d lo = _mm256_setzero_pd (), hi = _mm256_setzero_pd ();
  for (size_t i = 0; i < n; i += 8)
    {
      lo = _mm256_add_pd (lo, _mm256_mul_pd (_mm256_loadu_pd (a + i), _mm256_loadu_pd (b + i)));
      hi = _mm256_add_pd (hi, _mm256_mul_pd (_mm256_loadu_pd (a + i + 4),
                                             _mm256_loadu_pd (b + i + 4)));
    }
  double s[4];
  _mm256_storeu_pd (s, _mm256_add_pd (lo, hi));
  return (s[0] + s[1]) + (s[2] + s[3]);
}

bool
ckks_kernels_avx2_encode (CkksKernels *k)
{
  __builtin_cpu_init ();
  if (!__builtin_cpu_supports ("avx2") || !__builtin_cpu_supports ("fma"))
    return false;
  k->fft_stages_forward = fft_stages_forward_avx2;
  k->fft_stages_inverse = fft_stages_inverse_avx2;
  k->round_scaled = round_scaled_avx2;
  k->reduce_signed = reduce_signed_avx2;
  k->crt2 = crt2_avx2;
  k->dot = dot_avx2;
  return true;
}
