/* ckks-kernels-avx2.c: AVX2 + FMA kernels in double precision (primes < 2^50).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * AVX2 has no 64 x 64 -> 128-bit multiply, but every prime here is below
 * 2^50, so residues and their small multiples are exact doubles, and a
 * modular product is exact with FMA (u = 2^-53, C = 1.5 * 2^52):
 *
 *   hi = fl(y w), lo = fma(y, w, -hi)      y w = hi + lo exactly
 *   c  = fma(y, w', C) - C                 w' = fl(w / q): c = nearest(y w')
 *   r  = fma(-c, q, hi) + lo               r = y w - c q exactly
 *
 * Exactness: y w is an integer, so hi is one (doubles from 2^53 up are
 * integers, and rounding an integer below that gives an integer) and
 * lo = y w - hi is the exactly representable error of the product.
 * fma(-c, q, hi) rounds hi - c q once; that is an integer below 2^53 in
 * magnitude (|hi - c q| <= |r| + ulp(hi) / 2 < q + 2^50), so it is exact,
 * and so is the sum with lo.
 *
 * Rounding: for |t| < 2^51, t + C lies in (2^52, 2^53) where doubles are
 * the integers, so fma(y, w', C) rounds the exact y w' to the nearest
 * integer in one step, and subtracting C is exact. |y| < 2^51 suffices
 * (w' < 1).
 *
 * Size: w' = (w / q)(1 + d), |d| <= u, so |c - y w / q| <= 0.5 + |y| u and
 *   |r| <= q (0.5 + |y| 2^-53) < 0.75 q   for |y| < 2^51 (q < 2^50).
 * Fixed operands (a < q) take the quotient from hi instead, with no
 * companion: c = nearest(fl(hi * qinv)), qinv = fl(1 / q): three roundings
 * (hi, qinv, the product), each a relative 2^-53, on a quotient below
 * q < 2^50, so |c - a w / q| < 0.5 + 3 * 2^-3 and |r| < 0.875 q < q.
 *
 * centre(x) = x - nearest(x qinv) q: x qinv is x / q within |x / q| u, so
 * for |x| < 4q the result is below q / 2 + 4 u q < 0.51 q (exact, as above).
 *
 * NTTs convert the limb to doubles in place (values < 2^52 convert with
 * the 2^52 magic number, two operations each way), keep signed values
 * between stages and convert back fully reduced at the end:
 *   forward (Cooley-Tukey): u = centre(x), v = y w mod q, (u + v, u - v):
 *     with |x|, |y| < 2q: |u| < 0.51q, |v| < 0.75q, outputs < 1.26q; the
 *     stage after such a one skips the centring (u = x): outputs < 1.92q;
 *   inverse (Gentleman-Sande): (centre(u + v), (u - v) w mod q): with
 *     |x|, |y| < q, |u - v| < 2q < 2^51: outputs below 0.75q;
 *   the inverse's last stage multiplies u + v and u - v (< 2q) by N^-1 and
 *     w N^-1: below 0.75q, lifted into [0, q).
 * Outputs are fully reduced, hence bit-identical to the scalar backend
 * (both compute the same residues). Fixed operands are stored as the
 * doubles of their values (exact, no companion word: half the memory
 * traffic of Shoup's form), and the product kernels take a < q.
 */
#include <immintrin.h>
#include <string.h>

#include "ckks-internal.h"

#define AVX2 __attribute__ ((target ("avx2,fma")))

/* 2^52: its bit pattern is the exponent that makes the low 52 bits an
 * integer's mantissa */
#define MAGIC 4503599627370496.0
#define MAGIC_BITS 0x4330000000000000ll
/* 1.5 * 2^52: t + it is t rounded to an integer, for |t| < 2^51 */
#define ROUND_MAGIC 6755399441055744.0

typedef struct {
  __m256d q, qinv, magic;
} ModD;

AVX2 static inline ModD
mod_d (uint64_t q)
{
  return (ModD) { _mm256_set1_pd ((double) q), _mm256_set1_pd (1.0 / (double) q),
                  _mm256_set1_pd (ROUND_MAGIC) };
}

/* A twiddle w and w' = fl(w / q) */
typedef struct {
  __m256d w, wq;
} Twiddle;

/* 0 <= x < 2^52 as exact doubles */
AVX2 static inline __m256d
u64_to_double (__m256i x)
{
  __m256i bits = _mm256_or_si256 (x, _mm256_set1_epi64x (MAGIC_BITS));
  return _mm256_sub_pd (_mm256_castsi256_pd (bits), _mm256_set1_pd (MAGIC));
}

/* an integral double in [0, 2^52) back to an integer */
AVX2 static inline __m256i
double_to_u64 (__m256d x)
{
  __m256i bits = _mm256_castpd_si256 (_mm256_add_pd (x, _mm256_set1_pd (MAGIC)));
  return _mm256_xor_si256 (bits, _mm256_set1_epi64x (MAGIC_BITS));
}

/* nearest(x * y) for |x * y| < 2^51 */
AVX2 static inline __m256d
round_product (__m256d x, __m256d y, ModD m)
{
  return _mm256_sub_pd (_mm256_fmadd_pd (x, y, m.magic), m.magic);
}

/* y w - c q with c = nearest(y w'): |result| < 0.75q for |y| < 2^51 */
AVX2 static inline __m256d
mul_twiddle (__m256d y, Twiddle t, ModD m)
{
  __m256d hi = _mm256_mul_pd (y, t.w);
  __m256d lo = _mm256_fmsub_pd (y, t.w, hi);
  __m256d c = round_product (y, t.wq, m);
  return _mm256_add_pd (_mm256_fnmadd_pd (c, m.q, hi), lo);
}

/* a w - c q with c = nearest(fl(a w) qinv): |result| < 0.875q for a, w < q */
AVX2 static inline __m256d
mul_fixed_mod (__m256d a, __m256d w, ModD m)
{
  __m256d hi = _mm256_mul_pd (a, w);
  __m256d lo = _mm256_fmsub_pd (a, w, hi);
  __m256d c = round_product (hi, m.qinv, m);
  return _mm256_add_pd (_mm256_fnmadd_pd (c, m.q, hi), lo);
}

/* x mod q in (-0.51q, 0.51q) for |x| < 4q */
AVX2 static inline __m256d
centre (__m256d x, ModD m)
{
  return _mm256_fnmadd_pd (round_product (x, m.qinv, m), m.q, x);
}

/* |x| < q into [0, q) */
AVX2 static inline __m256d
lift (__m256d x, ModD m)
{
  __m256d neg = _mm256_cmp_pd (x, _mm256_setzero_pd (), _CMP_LT_OQ);
  return _mm256_add_pd (x, _mm256_and_pd (neg, m.q));
}

/* 0 <= x < 2q into [0, q) */
AVX2 static inline __m256d
sub_if_ge (__m256d x, ModD m)
{
  __m256d ge = _mm256_cmp_pd (x, m.q, _CMP_GE_OQ);
  return _mm256_sub_pd (x, _mm256_and_pd (ge, m.q));
}

/* |x| < 2q to its residue in [0, q) as an integer */
AVX2 static inline __m256i
canonical (__m256d x, ModD m)
{
  return double_to_u64 (lift (centre (x, m), m));
}

/* @reduce: centre x first (inputs below 2q, outputs below 1.26q); without,
 * inputs must be below 1.26q (a reducing stage's outputs) and outputs stay
 * below 1.26q + q (0.5 + 1.26q 2^-53) < 1.92q. */
AVX2 static inline void
fwd_butterfly (__m256d *x, __m256d *y, Twiddle w, ModD m, bool reduce)
{
  __m256d u = reduce ? centre (*x, m) : *x;
  __m256d v = mul_twiddle (*y, w, m);
  *x = _mm256_add_pd (u, v);
  *y = _mm256_sub_pd (u, v);
}

AVX2 static inline void
inv_butterfly (__m256d *x, __m256d *y, Twiddle w, ModD m)
{
  __m256d u = *x, v = *y;
  *x = centre (_mm256_add_pd (u, v), m);
  *y = mul_twiddle (_mm256_sub_pd (u, v), w, m);
}

/* The limb as doubles: the first pass reads integers (@convert) */
AVX2 static inline __m256d
load (const uint64_t *p, bool convert)
{
  if (convert)
    return u64_to_double (_mm256_loadu_si256 ((const __m256i *) p));
  return _mm256_loadu_pd ((const double *) p);
}

AVX2 static inline void
store (uint64_t *p, __m256d v)
{
  _mm256_storeu_pd ((double *) p, v);
}

/* Twiddle tables (CkksNttTables.fwd_d / inv_d): [0, N) the powers in
 * bit-reversed order as doubles; [N, 3N/2) and [3N/2, 2N) the twiddles of
 * the half-size 2 and 1 stages, one per lane of the X vector of each
 * 8-element block (X lanes hold these elements of the block); then
 * [2N, 4N) the same for w' = fl(w / q). */
static const unsigned x_pos_half2[4] = { 0, 1, 4, 5 };
static const unsigned x_pos_half1[4] = { 0, 4, 2, 6 };

static void
expand_table (double *d, const uint64_t *tw, uint64_t q, size_t n)
{
  for (size_t i = 0; i < n; i++)
    d[i] = (double) tw[i];
  for (size_t base = 0; base < n; base += 8)
    for (int l = 0; l < 4; l++)
      {
        d[n + base / 2 + l] = (double) tw[n / 4 + (base + x_pos_half2[l]) / 4];
        d[n + n / 2 + base / 2 + l] = (double) tw[n / 2 + (base + x_pos_half1[l]) / 2];
      }
  for (size_t i = 0; i < 2 * n; i++)
    d[2 * n + i] = d[i] / (double) q;
}

/* Entry @i of a table, broadcast or as four lanes. */
AVX2 static inline Twiddle
tw_set1 (const double *tw, size_t i, size_t n)
{
  return (Twiddle) { _mm256_set1_pd (tw[i]), _mm256_set1_pd (tw[2 * n + i]) };
}

AVX2 static inline Twiddle
tw_load (const double *tw, size_t i, size_t n)
{
  return (Twiddle) { _mm256_loadu_pd (tw + i), _mm256_loadu_pd (tw + 2 * n + i) };
}

static CkksStatus
ntt_tables_expand_avx2 (CkksNttTables *t, size_t n)
{
  t->fwd_d = ckks_alloc (4 * n * sizeof (double));
  t->inv_d = ckks_alloc (4 * n * sizeof (double));
  if (!t->fwd_d || !t->inv_d)
    return CKKS_ERR_NO_MEMORY;
  expand_table (t->fwd_d, t->psi_rev, t->mod.q, n);
  expand_table (t->inv_d, t->ipsi_rev, t->mod.q, n);
  return CKKS_OK;
}

/* Forward stages of half-sizes @half and @half / 2 (>= 8) in one pass. */
AVX2 static inline void
fwd_radix4 (uint64_t *a, size_t m, size_t half, const double *tw, ModD md, bool convert)
{
  size_t qt = half / 2, n = 2 * m * half;
  for (size_t i = 0; i < m; i++)
    {
      const Twiddle wa = tw_set1 (tw, m + i, n);
      const Twiddle wb0 = tw_set1 (tw, 2 * m + 2 * i, n);
      const Twiddle wb1 = tw_set1 (tw, 2 * m + 2 * i + 1, n);
      uint64_t *x = a + 2 * i * half;
      for (size_t j = 0; j < qt; j += 4)
        {
          __m256d v0 = load (x + j, convert), v1 = load (x + qt + j, convert);
          __m256d v2 = load (x + half + j, convert), v3 = load (x + half + qt + j, convert);
          fwd_butterfly (&v0, &v2, wa, md, true);
          fwd_butterfly (&v1, &v3, wa, md, true);
          fwd_butterfly (&v0, &v1, wb0, md, false);
          fwd_butterfly (&v2, &v3, wb1, md, false);
          store (x + j, v0);
          store (x + qt + j, v1);
          store (x + half + j, v2);
          store (x + half + qt + j, v3);
        }
    }
}

/* One forward stage of half-size @half (>= 4). */
AVX2 static inline void
fwd_radix2 (uint64_t *a, size_t m, size_t half, const double *tw, ModD md, bool convert)
{
  size_t n = 2 * m * half;
  for (size_t i = 0; i < m; i++)
    {
      const Twiddle w = tw_set1 (tw, m + i, n);
      uint64_t *x = a + 2 * i * half, *y = x + half;
      for (size_t j = 0; j < half; j += 4)
        {
          __m256d vx = load (x + j, convert), vy = load (y + j, convert);
          fwd_butterfly (&vx, &vy, w, md, true);
          store (x + j, vx);
          store (y + j, vy);
        }
    }
}

AVX2 static void
ntt_forward_avx2 (uint64_t *a, const CkksNttTables *t, size_t n)
{
  const ModD md = mod_d (t->mod.q);
  const double *tw = t->fwd_d;
  size_t m = 1, half = n / 2;
  bool convert = true;
  /* stages down to half-size 8 in pairs; an odd one out goes first */
  size_t large = 0;
  for (size_t h = half; h >= 8; h >>= 1)
    large++;
  if (large % 2)
    {
      fwd_radix2 (a, m, half, tw, md, true);
      convert = false;
      m <<= 1;
      half >>= 1;
    }
  for (; half >= 16; m <<= 2, half >>= 2)
    {
      if (convert)
        fwd_radix4 (a, m, half, tw, md, true);
      else
        fwd_radix4 (a, m, half, tw, md, false);
      convert = false;
    }
  /* half-sizes 4, 2, 1 on 8-element blocks, then the full reduction */
  for (size_t base = 0; base < n; base += 8)
    {
      __m256d v0 = _mm256_loadu_pd ((const double *) a + base);
      __m256d v1 = _mm256_loadu_pd ((const double *) a + base + 4);
      fwd_butterfly (&v0, &v1, tw_set1 (tw, n / 8 + base / 8, n), md, true);
      __m256d x = _mm256_permute2f128_pd (v0, v1, 0x20), y = _mm256_permute2f128_pd (v0, v1, 0x31);
      fwd_butterfly (&x, &y, tw_load (tw, n + base / 2, n), md, false);
      v0 = _mm256_permute2f128_pd (x, y, 0x20);
      v1 = _mm256_permute2f128_pd (x, y, 0x31);
      x = _mm256_unpacklo_pd (v0, v1);
      y = _mm256_unpackhi_pd (v0, v1);
      fwd_butterfly (&x, &y, tw_load (tw, n + n / 2 + base / 2, n), md, true);
      v0 = _mm256_unpacklo_pd (x, y);
      v1 = _mm256_unpackhi_pd (x, y);
      _mm256_storeu_si256 ((__m256i *) (a + base), canonical (v0, md));
      _mm256_storeu_si256 ((__m256i *) (a + base + 4), canonical (v1, md));
    }
}

/* Inverse stages of half-sizes @half and 2 @half (>= 8) in one pass. */
AVX2 static inline void
inv_radix4 (uint64_t *a, size_t half, const double *tw, ModD md, size_t n)
{
  size_t ha = n / (2 * half), hb = ha / 2;
  for (size_t g = 0; g < hb; g++)
    {
      const Twiddle wa0 = tw_set1 (tw, ha + 2 * g, n);
      const Twiddle wa1 = tw_set1 (tw, ha + 2 * g + 1, n);
      const Twiddle wb = tw_set1 (tw, hb + g, n);
      uint64_t *x = a + 4 * g * half;
      for (size_t j = 0; j < half; j += 4)
        {
          __m256d v0 = load (x + j, false), v1 = load (x + half + j, false);
          __m256d v2 = load (x + 2 * half + j, false), v3 = load (x + 3 * half + j, false);
          inv_butterfly (&v0, &v1, wa0, md);
          inv_butterfly (&v2, &v3, wa1, md);
          inv_butterfly (&v0, &v2, wb, md);
          inv_butterfly (&v1, &v3, wb, md);
          store (x + j, v0);
          store (x + half + j, v1);
          store (x + 2 * half + j, v2);
          store (x + 3 * half + j, v3);
        }
    }
}

AVX2 static inline void
inv_radix2 (uint64_t *a, size_t half, const double *tw, ModD md, size_t n)
{
  size_t groups = n / (2 * half);
  for (size_t i = 0; i < groups; i++)
    {
      const Twiddle w = tw_set1 (tw, groups + i, n);
      uint64_t *x = a + 2 * i * half, *y = x + half;
      for (size_t j = 0; j < half; j += 4)
        {
          __m256d vx = load (x + j, false), vy = load (y + j, false);
          inv_butterfly (&vx, &vy, w, md);
          store (x + j, vx);
          store (y + j, vy);
        }
    }
}

AVX2 static void
ntt_inverse_avx2 (uint64_t *a, const CkksNttTables *t, size_t n)
{
  const ModD md = mod_d (t->mod.q);
  const double *tw = t->inv_d;
  /* half-sizes 1, 2, 4 on 8-element blocks, converting to doubles */
  for (size_t base = 0; base < n; base += 8)
    {
      __m256d v0 = load (a + base, true), v1 = load (a + base + 4, true);
      __m256d x = _mm256_unpacklo_pd (v0, v1), y = _mm256_unpackhi_pd (v0, v1);
      inv_butterfly (&x, &y, tw_load (tw, n + n / 2 + base / 2, n), md);
      v0 = _mm256_unpacklo_pd (x, y);
      v1 = _mm256_unpackhi_pd (x, y);
      x = _mm256_permute2f128_pd (v0, v1, 0x20);
      y = _mm256_permute2f128_pd (v0, v1, 0x31);
      inv_butterfly (&x, &y, tw_load (tw, n + base / 2, n), md);
      v0 = _mm256_permute2f128_pd (x, y, 0x20);
      v1 = _mm256_permute2f128_pd (x, y, 0x31);
      inv_butterfly (&v0, &v1, tw_set1 (tw, n / 8 + base / 8, n), md);
      store (a + base, v0);
      store (a + base + 4, v1);
    }
  /* half-sizes 8 .. N/4 in pairs (an odd one out alone), N/2 below */
  size_t half = 8;
  for (; 4 * half <= n / 2; half <<= 2)
    inv_radix4 (a, half, tw, md, n);
  for (; half < n / 2; half <<= 1)
    inv_radix2 (a, half, tw, md, n);
  /* last stage with N^-1 folded in: x' = (u + v) / N, y' = (u - v) w / N */
  const double q = (double) t->mod.q, ni_d = (double) t->n_inv, wn_d = (double) t->w_n_inv;
  const Twiddle ni = { _mm256_set1_pd (ni_d), _mm256_set1_pd (ni_d / q) };
  const Twiddle wn = { _mm256_set1_pd (wn_d), _mm256_set1_pd (wn_d / q) };
  for (size_t j = 0; j < half; j += 4)
    {
      __m256d u = load (a + j, false), v = load (a + half + j, false);
      __m256d x = lift (mul_twiddle (_mm256_add_pd (u, v), ni, md), md);
      __m256d y = lift (mul_twiddle (_mm256_sub_pd (u, v), wn, md), md);
      _mm256_storeu_si256 ((__m256i *) (a + j), double_to_u64 (x));
      _mm256_storeu_si256 ((__m256i *) (a + half + j), double_to_u64 (y));
    }
}

/* Fixed operands: the doubles of the values (w < q < 2^50 is exact). */
static void
fixed_prepare_double (uint64_t *wf, uint64_t *comp, const uint64_t *w, uint64_t q, size_t n)
{
  (void) comp;
  (void) q;
  for (size_t i = 0; i < n; i++)
    {
      double d = (double) w[i];
      memcpy (wf + i, &d, sizeof d);
    }
}

static void
fixed_values_double (uint64_t *out, const uint64_t *wf, const CkksModulus *m, size_t n)
{
  (void) m;
  for (size_t i = 0; i < n; i++)
    {
      double d;
      memcpy (&d, wf + i, sizeof d);
      out[i] = (uint64_t) d;
    }
}

/* a * w mod q in [0, q) for a < q: |mul_fixed_mod| < 0.875q, lifted once. */
AVX2 static inline __m256d
mul_fixed_at (const uint64_t *a, const uint64_t *w, ModD md)
{
  __m256d va = u64_to_double (_mm256_loadu_si256 ((const __m256i *) a));
  return lift (mul_fixed_mod (va, _mm256_loadu_pd ((const double *) w), md), md);
}

/* p + add mod q for p, add in [0, q) */
AVX2 static inline __m256i
add_at (__m256d p, const uint64_t *add, ModD md)
{
  __m256d va = u64_to_double (_mm256_loadu_si256 ((const __m256i *) add));
  return double_to_u64 (sub_if_ge (_mm256_add_pd (p, va), md));
}

/* Any tail below a multiple of 4 (not in this engine: N >= 4096) goes
 * through the scalar path. */
static void
mul_fixed_tail (uint64_t *out, const uint64_t *add, const uint64_t *a, const uint64_t *w,
                uint64_t q, size_t from, size_t n)
{
  CkksModulus m;
  ckks_modulus_init (&m, q);
  for (size_t i = from; i < n; i++)
    {
      double d;
      memcpy (&d, w + i, sizeof d);
      uint64_t p = ckks_mul_mod (a[i], (uint64_t) d, &m);
      out[i] = add ? ckks_add_mod (add[i], p, q) : p;
    }
}

AVX2 static void
mul_fixed_avx2 (uint64_t *out, const uint64_t *a, const uint64_t *w, const uint64_t *ws,
                uint64_t q, size_t n)
{
  const ModD md = mod_d (q);
  size_t i = 0;
  (void) ws;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_si256 ((__m256i *) (out + i), double_to_u64 (mul_fixed_at (a + i, w + i, md)));
  mul_fixed_tail (out, NULL, a, w, q, i, n);
}

/* The products of a block in 64-bit lanes: 1024 per lane (4096 per
 * chunk) below 2^50 each stay below 2^60; each chunk's lanes are added and
 * reduced as in ckks_block_sums. Spans are multiples of 4 here (N >= 4096,
 * at most 64 blocks); any other span goes through the scalar kernel. */
AVX2 static void
mul_fixed_block_sums_avx2 (const uint64_t *a, const uint64_t *w, const uint64_t *ws,
                           const CkksModulus *m, size_t blocks, size_t span, uint64_t *sums)
{
  const ModD md = mod_d (m->q);
  (void) ws;
  if (span % 4 != 0)
    {
      for (size_t beta = 0; beta < blocks; beta++)
        {
          uint64_t acc = 0;
          for (size_t j = beta * span; j < (beta + 1) * span; j++)
            {
              double d;
              memcpy (&d, w + j, sizeof d);
              acc = ckks_add_mod (acc, ckks_mul_mod (a[j], (uint64_t) d, m), m->q);
            }
          sums[beta] = acc;
        }
      return;
    }
  for (size_t beta = 0; beta < blocks; beta++)
    {
      size_t base = beta * span;
      uint64_t acc = 0;
      for (size_t p = 0; p < span; p += 4096)
        {
          size_t end = p + 4096 < span ? p + 4096 : span;
          __m256i part = _mm256_setzero_si256 ();
          for (size_t j = base + p; j < base + end; j += 4)
            part = _mm256_add_epi64 (part, double_to_u64 (mul_fixed_at (a + j, w + j, md)));
          uint64_t lanes[4];
          _mm256_storeu_si256 ((__m256i *) lanes, part);
          uint64_t sum = lanes[0] + lanes[1] + lanes[2] + lanes[3];
          acc = ckks_add_mod (acc, ckks_barrett_reduce_64 (sum, m), m->q);
        }
      sums[beta] = acc;
    }
}

AVX2 static void
mul_fixed_add_avx2 (uint64_t *out, const uint64_t *add, const uint64_t *a,
                    const uint64_t *w, const uint64_t *ws, uint64_t q, size_t n)
{
  const ModD md = mod_d (q);
  size_t i = 0;
  (void) ws;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_si256 ((__m256i *) (out + i), add_at (mul_fixed_at (a + i, w + i, md),
                                                        add + i, md));
  mul_fixed_tail (out, add, a, w, q, i, n);
}

AVX2 static void
mul_fixed_pair_avx2 (uint64_t *out0, uint64_t *out1, const uint64_t *add0,
                     const uint64_t *add1, const uint64_t *a0, const uint64_t *a1,
                     const uint64_t *w, const uint64_t *ws, uint64_t q, size_t n)
{
  const ModD md = mod_d (q);
  size_t i = 0;
  (void) ws;
  for (; i + 4 <= n; i += 4)
    {
      __m256d vw = _mm256_loadu_pd ((const double *) (w + i));
      __m256d p0 = lift (mul_fixed_mod (u64_to_double (_mm256_loadu_si256 ((const __m256i *) (a0 + i))),
                                  vw, md), md);
      __m256d p1 = lift (mul_fixed_mod (u64_to_double (_mm256_loadu_si256 ((const __m256i *) (a1 + i))),
                                  vw, md), md);
      /* every input read before either store: outputs may alias inputs */
      __m256i r0 = add0 ? add_at (p0, add0 + i, md) : double_to_u64 (p0);
      __m256i r1 = add1 ? add_at (p1, add1 + i, md) : double_to_u64 (p1);
      _mm256_storeu_si256 ((__m256i *) (out0 + i), r0);
      _mm256_storeu_si256 ((__m256i *) (out1 + i), r1);
    }
  for (; i < n; i++)
    {
      uint64_t r0, r1;
      mul_fixed_tail (&r0, add0 ? add0 + i : NULL, a0 + i, w + i, q, 0, 1);
      mul_fixed_tail (&r1, add1 ? add1 + i : NULL, a1 + i, w + i, q, 0, 1);
      out0[i] = r0;
      out1[i] = r1;
    }
}

/* No kernel here uses a companion word: the tables keep the scalar
 * backend's 64-bit Shoup companions (unused by these kernels). */
static uint64_t
shoup64 (uint64_t w, uint64_t q)
{
  return ckks_shoup_precompute (w, q);
}

bool
ckks_kernels_avx2 (CkksKernels *k)
{
  __builtin_cpu_init ();
  if (!__builtin_cpu_supports ("avx2") || !__builtin_cpu_supports ("fma"))
    return false;
  k->name = "avx2";
  k->shoup = shoup64;
  k->ntt_tables_expand = ntt_tables_expand_avx2;
  k->ntt_forward = ntt_forward_avx2;
  k->ntt_inverse = ntt_inverse_avx2;
  k->fixed_has_companion = false;
  k->fixed_prepare = fixed_prepare_double;
  k->fixed_values = fixed_values_double;
  k->mul_fixed = mul_fixed_avx2;
  k->mul_fixed_add = mul_fixed_add_avx2;
  k->mul_fixed_pair = mul_fixed_pair_avx2;
  k->mul_fixed_block_sums = mul_fixed_block_sums_avx2;
  return true;
}
