/* ckks-kernels-ifma.c: AVX-512 IFMA52 kernels (every prime below 2^50).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Same algorithms as the scalar reference in ckks-kernels-scalar.c, with
 * Shoup products in 52-bit limbs: w' = floor(w * 2^52 / q), qhat = hi52(x * w'),
 * r = lo52(x * w) - lo52(qhat * q) in [0, 2q) for x < 2^52. Lazy values stay
 * below 4q < 2^52. The three innermost stages (half-sizes 4, 2, 1) work on
 * 16-element blocks with lane permutations and twiddles pre-expanded per
 * lane; outputs are fully reduced, bit-identical to the scalar path.
 */
#include <immintrin.h>

#include "ckks-internal.h"

#define IFMA __attribute__ ((target ("avx512f,avx512ifma,avx512vl,avx512dq,avx512bw")))

static uint64_t
shoup52 (uint64_t w, uint64_t q)
{
  return (uint64_t) (((ckks_u128) w << 52) / q);
}

IFMA static inline __m512i
mul_shoup_lazy (__m512i x, __m512i w, __m512i ws, __m512i q)
{
  const __m512i zero = _mm512_setzero_si512 ();
  const __m512i mask = _mm512_set1_epi64 ((1ll << 52) - 1);
  /* lo52 (qhat * (2^52 - q)) = -lo52 (qhat * q) mod 2^52, so one
   * accumulating product does the subtraction; hoisted out of loops */
  const __m512i neg_q = _mm512_sub_epi64 (_mm512_set1_epi64 (1ll << 52), q);
  __m512i qhat = _mm512_madd52hi_epu64 (zero, x, ws);
  __m512i xw = _mm512_madd52lo_epu64 (zero, x, w);
  return _mm512_and_si512 (_mm512_madd52lo_epu64 (xw, qhat, neg_q), mask);
}

/* v - m if v >= m else v (m <= 2^63). */
IFMA static inline __m512i
reduce_once (__m512i v, __m512i m)
{
  return _mm512_min_epu64 (v, _mm512_sub_epi64 (v, m));
}

IFMA static inline void
fwd_butterfly (__m512i *x, __m512i *y, __m512i w, __m512i ws, __m512i q, __m512i two_q)
{
  __m512i u = reduce_once (*x, two_q);
  __m512i t = mul_shoup_lazy (*y, w, ws, q);
  *x = _mm512_add_epi64 (u, t);
  *y = _mm512_add_epi64 (_mm512_sub_epi64 (u, t), two_q);
}

IFMA static inline void
inv_butterfly (__m512i *x, __m512i *y, __m512i w, __m512i ws, __m512i q, __m512i two_q)
{
  __m512i u = *x, v = *y;
  *x = reduce_once (_mm512_add_epi64 (u, v), two_q);
  *y = mul_shoup_lazy (_mm512_add_epi64 (_mm512_sub_epi64 (u, v), two_q), w, ws, q);
}

/* One stage of @groups butterfly groups of half-size @half (>= 8), twiddle
 * of group i at tw[groups + i]: forward (Cooley-Tukey) or inverse
 * (Gentleman-Sande) butterflies. */
IFMA static inline void
radix2_stage (uint64_t *a, size_t half, size_t groups, const uint64_t *tw,
              const uint64_t *tw_shoup, __m512i q, bool forward)
{
  const __m512i two_q = _mm512_add_epi64 (q, q);
  for (size_t i = 0; i < groups; i++)
    {
      const __m512i w = _mm512_set1_epi64 ((long long) tw[groups + i]);
      const __m512i ws = _mm512_set1_epi64 ((long long) tw_shoup[groups + i]);
      uint64_t *x = a + 2 * i * half, *y = x + half;
      for (size_t j = 0; j < half; j += 8)
        {
          __m512i vx = _mm512_loadu_si512 (x + j), vy = _mm512_loadu_si512 (y + j);
          if (forward)
            fwd_butterfly (&vx, &vy, w, ws, q, two_q);
          else
            inv_butterfly (&vx, &vy, w, ws, q, two_q);
          _mm512_storeu_si512 (x + j, vx);
          _mm512_storeu_si512 (y + j, vy);
        }
    }
}

/* Lane indices of the X (first) halves of each butterfly in a 16-element
 * block for half-sizes 4, 2, 1; Y is X + t. */
static const int8_t small_x_pos[3][8] = {
  { 0, 1, 2, 3, 8, 9, 10, 11 },
  { 0, 1, 4, 5, 8, 9, 12, 13 },
  { 0, 2, 4, 6, 8, 10, 12, 14 },
};
static const unsigned small_t[3] = { 4, 2, 1 };

/* The layouts of a 16-element block across two registers: SMALL_NATURAL
 * (element k in lane k mod 8 of register k / 8) and, for stage s, X in the
 * first register and Y in the second. Position of the element in slot
 * @idx (0-7 first register, 8-15 second) of layout @s. */
enum { SMALL_NATURAL = 3 };

static unsigned
small_pos (int s, unsigned idx)
{
  if (s == SMALL_NATURAL)
    return idx;
  return idx < 8 ? (unsigned) small_x_pos[s][idx] : small_x_pos[s][idx - 8] + small_t[s];
}

/* permutex2var indices taking a block from layout @from to layout @to in
 * two permutations, without passing through the natural order between
 * stages. */
IFMA static inline void
small_transition (int from, int to, __m512i *first, __m512i *second)
{
  int64_t idx[16];
  for (unsigned j = 0; j < 16; j++)
    for (unsigned i = 0; i < 16; i++)
      if (small_pos (from, i) == small_pos (to, j))
        idx[j] = i;
  *first = _mm512_loadu_si512 (idx);
  *second = _mm512_loadu_si512 (idx + 8);
}

static CkksStatus
ntt_tables_expand_ifma (CkksNttTables *t, size_t n)
{
  size_t half = n / 2;
  t->fwd_small = ckks_alloc (3 * half * sizeof (uint64_t));
  t->fwd_small_shoup = ckks_alloc (3 * half * sizeof (uint64_t));
  t->inv_small = ckks_alloc (3 * half * sizeof (uint64_t));
  t->inv_small_shoup = ckks_alloc (3 * half * sizeof (uint64_t));
  if (!t->fwd_small || !t->fwd_small_shoup || !t->inv_small || !t->inv_small_shoup)
    return CKKS_ERR_NO_MEMORY;     /* ckks_ntt_tables_clear frees the rest */
  for (int s = 0; s < 3; s++)
    {
      size_t groups = n / (2 * small_t[s]);
      for (size_t base = 0; base < n; base += 16)
        for (int l = 0; l < 8; l++)
          {
            size_t g = (base + (size_t) small_x_pos[s][l]) / (2 * small_t[s]);
            size_t e = s * half + base / 2 + (size_t) l;
            t->fwd_small[e] = t->psi_rev[groups + g];
            t->fwd_small_shoup[e] = t->psi_rev_shoup[groups + g];
            t->inv_small[e] = t->ipsi_rev[groups + g];
            t->inv_small_shoup[e] = t->ipsi_rev_shoup[groups + g];
          }
    }
  return CKKS_OK;
}

/* The last forward stages on 16-element blocks, fully reduced: half-size
 * 8 if @with_eight (registers as loaded, one twiddle a block), then 4, 2
 * and 1 with lane permutations and per-lane twiddles. */
IFMA __attribute__ ((always_inline)) static inline void
fwd_last_pass (uint64_t *a, const CkksNttTables *t, size_t n, __m512i q, bool with_eight)
{
  const __m512i two_q = _mm512_add_epi64 (q, q);
  /* into[s]: from the layout before stage s to stage s's; into[3]: back */
  __m512i into_x[4], into_y[4];
  for (int s = 0; s < 4; s++)
    small_transition (s == 0 ? SMALL_NATURAL : s - 1, s, &into_x[s], &into_y[s]);
  const size_t stage = n / 2, eight_groups = n / 16;
  for (size_t base = 0; base < n; base += 16)
    {
      __m512i x = _mm512_loadu_si512 (a + base), y = _mm512_loadu_si512 (a + base + 8);
      if (with_eight)
        {
          size_t g = eight_groups + base / 16;
          fwd_butterfly (&x, &y, _mm512_set1_epi64 ((long long) t->psi_rev[g]),
                         _mm512_set1_epi64 ((long long) t->psi_rev_shoup[g]), q, two_q);
        }
      for (int s = 0; s < 3; s++)
        {
          size_t e = s * stage + base / 2;
          __m512i w = _mm512_loadu_si512 (t->fwd_small + e);
          __m512i ws = _mm512_loadu_si512 (t->fwd_small_shoup + e);
          __m512i nx = _mm512_permutex2var_epi64 (x, into_x[s], y);
          y = _mm512_permutex2var_epi64 (x, into_y[s], y);
          x = nx;
          fwd_butterfly (&x, &y, w, ws, q, two_q);
        }
      __m512i v0 = _mm512_permutex2var_epi64 (x, into_x[3], y);
      __m512i v1 = _mm512_permutex2var_epi64 (x, into_y[3], y);
      v0 = reduce_once (reduce_once (v0, two_q), q);
      v1 = reduce_once (reduce_once (v1, two_q), q);
      _mm512_storeu_si512 (a + base, v0);
      _mm512_storeu_si512 (a + base + 8, v1);
    }
}

IFMA static void
ntt_forward_ifma (uint64_t *a, const CkksNttTables *t, size_t n)
{
  const __m512i q = _mm512_set1_epi64 ((long long) t->mod.q);
  const __m512i two_q = _mm512_add_epi64 (q, q);
  /* two stages per pass (half-sizes t and t/2) while t/2 >= 8: each
   * element is loaded and stored once per pair of stages */
  size_t m = 1, half = n / 2;
  for (; half >= 16; m <<= 2, half >>= 2)
    for (size_t i = 0; i < m; i++)
      {
        const __m512i wa = _mm512_set1_epi64 ((long long) t->psi_rev[m + i]);
        const __m512i wsa = _mm512_set1_epi64 ((long long) t->psi_rev_shoup[m + i]);
        const __m512i wb0 = _mm512_set1_epi64 ((long long) t->psi_rev[2 * m + 2 * i]);
        const __m512i wsb0 = _mm512_set1_epi64 ((long long) t->psi_rev_shoup[2 * m + 2 * i]);
        const __m512i wb1 = _mm512_set1_epi64 ((long long) t->psi_rev[2 * m + 2 * i + 1]);
        const __m512i wsb1 = _mm512_set1_epi64 ((long long) t->psi_rev_shoup[2 * m + 2 * i + 1]);
        uint64_t *x = a + 2 * i * half;
        size_t qt = half / 2;
        for (size_t j = 0; j < qt; j += 8)
          {
            __m512i v0 = _mm512_loadu_si512 (x + j), v1 = _mm512_loadu_si512 (x + qt + j);
            __m512i v2 = _mm512_loadu_si512 (x + half + j);
            __m512i v3 = _mm512_loadu_si512 (x + half + qt + j);
            fwd_butterfly (&v0, &v2, wa, wsa, q, two_q);
            fwd_butterfly (&v1, &v3, wa, wsa, q, two_q);
            fwd_butterfly (&v0, &v1, wb0, wsb0, q, two_q);
            fwd_butterfly (&v2, &v3, wb1, wsb1, q, two_q);
            _mm512_storeu_si512 (x + j, v0);
            _mm512_storeu_si512 (x + qt + j, v1);
            _mm512_storeu_si512 (x + half + j, v2);
            _mm512_storeu_si512 (x + half + qt + j, v3);
          }
      }
  /* an odd number of stages left: half-size 8 joins the last pass */
  if (half == 8)
    fwd_last_pass (a, t, n, q, true);
  else
    fwd_last_pass (a, t, n, q, false);
}

IFMA static void
ntt_inverse_ifma (uint64_t *a, const CkksNttTables *t, size_t n)
{
  const __m512i q = _mm512_set1_epi64 ((long long) t->mod.q);
  const __m512i two_q = _mm512_add_epi64 (q, q);
  /* into[s]: from the layout after stage s + 1 to stage s's; into[3]: back */
  __m512i into_x[4], into_y[4];
  for (int s = 0; s < 4; s++)
    small_transition (s == 2 ? SMALL_NATURAL : s == 3 ? 0 : s + 1, s == 3 ? SMALL_NATURAL : s,
                      &into_x[s], &into_y[s]);
  const size_t stage = n / 2;
  for (size_t base = 0; base < n; base += 16)
    {
      __m512i x = _mm512_loadu_si512 (a + base), y = _mm512_loadu_si512 (a + base + 8);
      for (int s = 2; s >= 0; s--)
        {
          size_t e = s * stage + base / 2;
          __m512i w = _mm512_loadu_si512 (t->inv_small + e);
          __m512i ws = _mm512_loadu_si512 (t->inv_small_shoup + e);
          __m512i nx = _mm512_permutex2var_epi64 (x, into_x[s], y);
          y = _mm512_permutex2var_epi64 (x, into_y[s], y);
          x = nx;
          inv_butterfly (&x, &y, w, ws, q, two_q);
        }
      _mm512_storeu_si512 (a + base, _mm512_permutex2var_epi64 (x, into_x[3], y));
      _mm512_storeu_si512 (a + base + 8, _mm512_permutex2var_epi64 (x, into_y[3], y));
    }
  /* two stages per pass (half-sizes t and 2t) while 2t < N/2 */
  size_t half = 8;
  for (; 4 * half <= n / 2; half <<= 2)
    {
      size_t ha = n / (2 * half), hb = ha / 2;
      for (size_t g = 0; g < hb; g++)
        {
          const __m512i wa0 = _mm512_set1_epi64 ((long long) t->ipsi_rev[ha + 2 * g]);
          const __m512i wsa0 = _mm512_set1_epi64 ((long long) t->ipsi_rev_shoup[ha + 2 * g]);
          const __m512i wa1 = _mm512_set1_epi64 ((long long) t->ipsi_rev[ha + 2 * g + 1]);
          const __m512i wsa1 = _mm512_set1_epi64 ((long long) t->ipsi_rev_shoup[ha + 2 * g + 1]);
          const __m512i wb = _mm512_set1_epi64 ((long long) t->ipsi_rev[hb + g]);
          const __m512i wsb = _mm512_set1_epi64 ((long long) t->ipsi_rev_shoup[hb + g]);
          uint64_t *x = a + 4 * g * half;
          for (size_t j = 0; j < half; j += 8)
            {
              __m512i v0 = _mm512_loadu_si512 (x + j), v1 = _mm512_loadu_si512 (x + half + j);
              __m512i v2 = _mm512_loadu_si512 (x + 2 * half + j);
              __m512i v3 = _mm512_loadu_si512 (x + 3 * half + j);
              inv_butterfly (&v0, &v1, wa0, wsa0, q, two_q);
              inv_butterfly (&v2, &v3, wa1, wsa1, q, two_q);
              inv_butterfly (&v0, &v2, wb, wsb, q, two_q);
              inv_butterfly (&v1, &v3, wb, wsb, q, two_q);
              _mm512_storeu_si512 (x + j, v0);
              _mm512_storeu_si512 (x + half + j, v1);
              _mm512_storeu_si512 (x + 2 * half + j, v2);
              _mm512_storeu_si512 (x + 3 * half + j, v3);
            }
        }
    }
  for (; half < n / 2; half <<= 1)
    radix2_stage (a, half, n / (2 * half), t->ipsi_rev, t->ipsi_rev_shoup, q, false);
  /* last stage with N^-1 folded in */
  const __m512i ni = _mm512_set1_epi64 ((long long) t->n_inv);
  const __m512i nis = _mm512_set1_epi64 ((long long) t->n_inv_shoup);
  const __m512i wn = _mm512_set1_epi64 ((long long) t->w_n_inv);
  const __m512i wns = _mm512_set1_epi64 ((long long) t->w_n_inv_shoup);
  half = n / 2;
  for (size_t j = 0; j < half; j += 8)
    {
      __m512i u = _mm512_loadu_si512 (a + j), v = _mm512_loadu_si512 (a + half + j);
      __m512i s = _mm512_add_epi64 (u, v);
      __m512i d = _mm512_add_epi64 (_mm512_sub_epi64 (u, v), two_q);
      _mm512_storeu_si512 (a + j, reduce_once (mul_shoup_lazy (s, ni, nis, q), q));
      _mm512_storeu_si512 (a + half + j, reduce_once (mul_shoup_lazy (d, wn, wns, q), q));
    }
}

/* -q^-1 mod 2^52 (Newton's iteration; q odd). */
static uint64_t
neg_inv52 (uint64_t q)
{
  uint64_t inv = q;               /* correct to 3 bits */
  for (int i = 0; i < 5; i++)
    inv *= 2 - q * inv;           /* doubles the correct bits */
  return (0 - inv) & ((1ull << 52) - 1);
}

static void
fixed_prepare_mont (uint64_t *wf, uint64_t *comp, const uint64_t *w, uint64_t q, size_t n)
{
  CkksModulus m;
  ckks_modulus_init (&m, q);
  uint64_t r = ckks_barrett_reduce_128 ((ckks_u128) 1 << 52, &m);
  (void) comp;
  for (size_t i = 0; i < n; i++)
    wf[i] = ckks_mul_mod (w[i], r, &m);
}

/* Montgomery form back: w 2^52 * 2^-52 */
static void
fixed_values_mont (uint64_t *out, const uint64_t *wf, const CkksModulus *m, size_t n)
{
  uint64_t r_inv = ckks_inv_mod (ckks_barrett_reduce_128 ((ckks_u128) 1 << 52, m), m);
  for (size_t i = 0; i < n; i++)
    out[i] = ckks_mul_mod (wf[i], r_inv, m);
}

/* a * wf * 2^-52 mod q in [0, q) for a < q, wf < q (Montgomery, R = 2^52). */
IFMA static inline __m512i
mul_mont (__m512i a, __m512i wf, __m512i q, __m512i qinv)
{
  const __m512i zero = _mm512_setzero_si512 ();
  __m512i lo = _mm512_madd52lo_epu64 (zero, a, wf);
  __m512i hi = _mm512_madd52hi_epu64 (zero, a, wf);
  __m512i m = _mm512_madd52lo_epu64 (zero, lo, qinv);
  __m512i t = _mm512_madd52hi_epu64 (hi, m, q);
  /* lo + lo52(m q) is 2^52 exactly when lo != 0 */
  t = _mm512_mask_add_epi64 (t, _mm512_test_epi64_mask (lo, lo), t, _mm512_set1_epi64 (1));
  return reduce_once (t, q);
}

IFMA static void
mul_fixed_ifma (uint64_t *out, const uint64_t *a, const uint64_t *w,
                const uint64_t *ws, uint64_t q, size_t n)
{
  const __m512i vq = _mm512_set1_epi64 ((long long) q);
  const __m512i qinv = _mm512_set1_epi64 ((long long) neg_inv52 (q));
  (void) ws;
  for (size_t i = 0; i < n; i += 8)
    _mm512_storeu_si512 (out + i, mul_mont (_mm512_loadu_si512 (a + i),
                                            _mm512_loadu_si512 (w + i), vq, qinv));
}

/* x * 2^-52 mod q for x < q (scalar Montgomery reduction, qinv = -q^-1
 * mod 2^52): x + m q is a multiple of 2^52 below 2^52 (q + 1). */
static uint64_t
mont_reduce52 (uint64_t x, uint64_t q, uint64_t qinv)
{
  uint64_t m = (x * qinv) & ((1ull << 52) - 1);
  uint64_t t = (uint64_t) (((ckks_u128) x + (ckks_u128) m * q) >> 52);
  return t >= q ? t - q : t;
}

/* The lanes of @lo and @hi summed mod q (each lane below 2^64). */
IFMA static void
add_lanes (__m512i lo, __m512i hi, const CkksModulus *m, uint64_t *lo_acc, uint64_t *hi_acc)
{
  uint64_t lanes_lo[8], lanes_hi[8];
  _mm512_storeu_si512 (lanes_lo, lo);
  _mm512_storeu_si512 (lanes_hi, hi);
  for (int l = 0; l < 8; l++)
    {
      *lo_acc = ckks_add_mod (*lo_acc, ckks_barrett_reduce_64 (lanes_lo[l], m), m->q);
      *hi_acc = ckks_add_mod (*hi_acc, ckks_barrett_reduce_64 (lanes_hi[l], m), m->q);
    }
}

/* The block sums of a·w (the decryption's trace step) without writing the
 * products, and without reducing them one by one: w is in Montgomery form
 * (w 2^52), so a·w = H 2^52 + L with H and L its high and low 52 bits, and
 * the sum of a·w 2^-52 over a block is sum H + (sum L) 2^-52 mod q. Two
 * IFMA instructions per 8 products, accumulating: each lane adds at most
 * 4096 terms below 2^52 (< 2^64) before they are reduced, so every sum is
 * the residue the products' sum has. The Montgomery product per element
 * took four, plus its correction, and left the kernel bound by the core on
 * a block in L1. */
IFMA static void
mul_fixed_block_sums_ifma (const uint64_t *a, const uint64_t *w, const uint64_t *ws,
                           const CkksModulus *m, size_t blocks, size_t span, uint64_t *sums)
{
  const uint64_t qinv = neg_inv52 (m->q);
  const size_t chunk = 8 * 4096;
  (void) ws;
  for (size_t beta = 0; beta < blocks; beta++)
    {
      const uint64_t *ab = a + beta * span, *wb = w + beta * span;
      uint64_t lo_acc = 0, hi_acc = 0;
      for (size_t p = 0; p < span; p += chunk)
        {
          size_t end = span < p + chunk ? span : p + chunk, j = p;
          /* two pairs of accumulators: four independent chains */
          __m512i lo0 = _mm512_setzero_si512 (), hi0 = lo0, lo1 = lo0, hi1 = lo0;
          for (; j + 16 <= end; j += 16)
            {
              __m512i x0 = _mm512_loadu_si512 (ab + j), y0 = _mm512_loadu_si512 (wb + j);
              __m512i x1 = _mm512_loadu_si512 (ab + j + 8), y1 = _mm512_loadu_si512 (wb + j + 8);
              lo0 = _mm512_madd52lo_epu64 (lo0, x0, y0);
              hi0 = _mm512_madd52hi_epu64 (hi0, x0, y0);
              lo1 = _mm512_madd52lo_epu64 (lo1, x1, y1);
              hi1 = _mm512_madd52hi_epu64 (hi1, x1, y1);
            }
          for (; j < end; j += 8)
            {
              /* a tail shorter than 8 loads zeros, which add nothing */
              __mmask8 k = end - j >= 8 ? 0xFF : (__mmask8) ((1u << (end - j)) - 1);
              __m512i x = _mm512_maskz_loadu_epi64 (k, ab + j), y = _mm512_maskz_loadu_epi64 (k, wb + j);
              lo0 = _mm512_madd52lo_epu64 (lo0, x, y);
              hi0 = _mm512_madd52hi_epu64 (hi0, x, y);
            }
          add_lanes (lo0, hi0, m, &lo_acc, &hi_acc);
          add_lanes (lo1, hi1, m, &lo_acc, &hi_acc);
        }
      sums[beta] = ckks_add_mod (hi_acc, mont_reduce52 (lo_acc, m->q, qinv), m->q);
    }
}

IFMA static void
mul_fixed_add_ifma (uint64_t *out, const uint64_t *add, const uint64_t *a,
                    const uint64_t *w, const uint64_t *ws, uint64_t q, size_t n)
{
  const __m512i vq = _mm512_set1_epi64 ((long long) q);
  const __m512i qinv = _mm512_set1_epi64 ((long long) neg_inv52 (q));
  (void) ws;
  for (size_t i = 0; i < n; i += 8)
    {
      __m512i p = mul_mont (_mm512_loadu_si512 (a + i), _mm512_loadu_si512 (w + i), vq, qinv);
      _mm512_storeu_si512 (out + i, reduce_once (_mm512_add_epi64 (p, _mm512_loadu_si512 (add + i)), vq));
    }
}

IFMA static void
mul_fixed_pair_ifma (uint64_t *out0, uint64_t *out1, const uint64_t *add0,
                     const uint64_t *add1, const uint64_t *a0, const uint64_t *a1,
                     const uint64_t *w, const uint64_t *ws, uint64_t q, size_t n)
{
  const __m512i vq = _mm512_set1_epi64 ((long long) q);
  const __m512i qinv = _mm512_set1_epi64 ((long long) neg_inv52 (q));
  (void) ws;
  for (size_t i = 0; i < n; i += 8)
    {
      __m512i vw = _mm512_loadu_si512 (w + i);
      __m512i p0 = mul_mont (_mm512_loadu_si512 (a0 + i), vw, vq, qinv);
      __m512i p1 = mul_mont (_mm512_loadu_si512 (a1 + i), vw, vq, qinv);
      if (add0)
        p0 = reduce_once (_mm512_add_epi64 (p0, _mm512_loadu_si512 (add0 + i)), vq);
      if (add1)
        p1 = reduce_once (_mm512_add_epi64 (p1, _mm512_loadu_si512 (add1 + i)), vq);
      _mm512_storeu_si512 (out0 + i, p0);
      _mm512_storeu_si512 (out1 + i, p1);
    }
}

IFMA static void
crt2_ifma (const uint64_t *a0, const uint64_t *a1, double *out, const CkksCrt2 *c,
           size_t n)
{
  const __m512i q1 = _mm512_set1_epi64 ((long long) c->q1);
  const __m512i inv = _mm512_set1_epi64 ((long long) c->inv);
  const __m512i invs = _mm512_set1_epi64 ((long long) c->inv_shoup52);
  const __m512i ht = _mm512_set1_epi64 ((long long) c->half_t);
  const __m512i ha = _mm512_set1_epi64 ((long long) c->half_a);
  const __m512d q0 = _mm512_set1_pd ((double) c->q0);
  const bool small_q0 = c->q0 <= 2 * c->q1;
  for (size_t k = 0; k < n; k += 8)
    {
      __m512i x0 = _mm512_loadu_si512 (a0 + k), x1 = _mm512_loadu_si512 (a1 + k);
      __m512i r0;
      if (small_q0)
        r0 = reduce_once (x0, q1);
      else
        {
          uint64_t tmp[8];
          for (int j = 0; j < 8; j++)
            tmp[j] = a0[k + j] % c->q1;
          r0 = _mm512_loadu_si512 (tmp);
        }
      __m512i diff = _mm512_sub_epi64 (x1, r0);
      diff = _mm512_min_epu64 (diff, _mm512_add_epi64 (diff, q1));
      __m512i t = reduce_once (mul_shoup_lazy (diff, inv, invs, q1), q1);
      __mmask8 neg = _mm512_cmpgt_epu64_mask (t, ht)
                     | (_mm512_cmpeq_epu64_mask (t, ht) & _mm512_cmpgt_epu64_mask (x0, ha));
      t = _mm512_mask_sub_epi64 (t, neg, t, q1);
      __m512d hi = _mm512_mul_pd (_mm512_cvtepi64_pd (t), q0);
      _mm512_storeu_pd (out + k, _mm512_add_pd (hi, _mm512_cvtepu64_pd (x0)));
    }
}

IFMA static double
dot_ifma (const double *a, const double *b, size_t n)
{
  __m512d acc = _mm512_setzero_pd ();
  for (size_t i = 0; i < n; i += 8)
    acc = _mm512_add_pd (acc, _mm512_mul_pd (_mm512_loadu_pd (a + i), _mm512_loadu_pd (b + i)));
  double v[8];
  _mm512_storeu_pd (v, acc);
  return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

/* FFT stages with h >= 8 on 8 doubles at a time; the same operations in the
 * same order as the scalar stages (no FMA contraction), so bit-identical. */
IFMA static void
fft_stages_forward_avx512 (double *re, double *im, const double *tw_re,
                           const double *tw_im, size_t n)
{
  ckks_fft_forward_stages_from (re, im, tw_re, tw_im, n, 1, 8);
  for (size_t h = 8; h < n; h <<= 1)
    for (size_t i = 0; i < n; i += 2 * h)
      for (size_t j = 0; j < h; j += 8)
        {
          __m512d wr = _mm512_loadu_pd (tw_re + h + j), wi = _mm512_loadu_pd (tw_im + h + j);
          double *xr = re + i + j, *xi = im + i + j, *yr = xr + h, *yi = xi + h;
          __m512d vyr = _mm512_loadu_pd (yr), vyi = _mm512_loadu_pd (yi);
          __m512d vxr = _mm512_loadu_pd (xr), vxi = _mm512_loadu_pd (xi);
          __m512d tr = _mm512_sub_pd (_mm512_mul_pd (vyr, wr), _mm512_mul_pd (vyi, wi));
          __m512d ti = _mm512_add_pd (_mm512_mul_pd (vyr, wi), _mm512_mul_pd (vyi, wr));
          _mm512_storeu_pd (yr, _mm512_sub_pd (vxr, tr));
          _mm512_storeu_pd (yi, _mm512_sub_pd (vxi, ti));
          _mm512_storeu_pd (xr, _mm512_add_pd (vxr, tr));
          _mm512_storeu_pd (xi, _mm512_add_pd (vxi, ti));
        }
}

/* Gentleman-Sande: x + y, and (x - y) times the conjugate of w. */
IFMA static inline void
fft_inv_butterfly (__m512d *xr, __m512d *xi, __m512d *yr, __m512d *yi, __m512d wr, __m512d wi)
{
  __m512d dr = _mm512_sub_pd (*xr, *yr), di = _mm512_sub_pd (*xi, *yi);
  *xr = _mm512_add_pd (*xr, *yr);
  *xi = _mm512_add_pd (*xi, *yi);
  *yr = _mm512_add_pd (_mm512_mul_pd (dr, wr), _mm512_mul_pd (di, wi));
  *yi = _mm512_sub_pd (_mm512_mul_pd (di, wr), _mm512_mul_pd (dr, wi));
}

/* Stages of half @h and @h/2 on the four vectors at j, j + h/2, j + h and
 * j + 3h/2 of one group (re, im at its start): the second stage's twiddle
 * depends only on j, so both of its pairs share it. */
IFMA static inline void
fft_inv_radix4 (double *re, double *im, const double *tw_re, const double *tw_im, size_t h,
                size_t j)
{
  size_t qt = h / 2;
  __m512d r0 = _mm512_loadu_pd (re + j), i0 = _mm512_loadu_pd (im + j);
  __m512d r1 = _mm512_loadu_pd (re + j + qt), i1 = _mm512_loadu_pd (im + j + qt);
  __m512d r2 = _mm512_loadu_pd (re + j + h), i2 = _mm512_loadu_pd (im + j + h);
  __m512d r3 = _mm512_loadu_pd (re + j + h + qt), i3 = _mm512_loadu_pd (im + j + h + qt);
  __m512d wr = _mm512_loadu_pd (tw_re + qt + j), wi = _mm512_loadu_pd (tw_im + qt + j);
  fft_inv_butterfly (&r0, &i0, &r2, &i2, _mm512_loadu_pd (tw_re + h + j),
                     _mm512_loadu_pd (tw_im + h + j));
  fft_inv_butterfly (&r1, &i1, &r3, &i3, _mm512_loadu_pd (tw_re + h + qt + j),
                     _mm512_loadu_pd (tw_im + h + qt + j));
  fft_inv_butterfly (&r0, &i0, &r1, &i1, wr, wi);
  fft_inv_butterfly (&r2, &i2, &r3, &i3, wr, wi);
  _mm512_storeu_pd (re + j, r0);
  _mm512_storeu_pd (im + j, i0);
  _mm512_storeu_pd (re + j + qt, r1);
  _mm512_storeu_pd (im + j + qt, i1);
  _mm512_storeu_pd (re + j + h, r2);
  _mm512_storeu_pd (im + j + h, i2);
  _mm512_storeu_pd (re + j + h + qt, r3);
  _mm512_storeu_pd (im + j + h + qt, i3);
}

IFMA static void
fft_stages_inverse_avx512 (double *re, double *im, const double *tw_re,
                           const double *tw_im, size_t n)
{
  size_t h = n >> 1;
  /* two stages per pass while the second's half is a vector or more: the
   * same butterflies in the same order, so the same bits, with half the
   * passes over the slots (8192 of them at N = 16384: 256 KiB, past L1) */
  for (; h >= 16; h >>= 2)
    for (size_t i = 0; i < n; i += 2 * h)
      for (size_t j = 0; j < h / 2; j += 8)
        fft_inv_radix4 (re + i, im + i, tw_re, tw_im, h, j);
  for (; h >= 8; h >>= 1)
    for (size_t i = 0; i < n; i += 2 * h)
      for (size_t j = 0; j < h; j += 8)
        {
          __m512d wr = _mm512_loadu_pd (tw_re + h + j), wi = _mm512_loadu_pd (tw_im + h + j);
          double *xr = re + i + j, *xi = im + i + j, *yr = xr + h, *yi = xi + h;
          __m512d vxr = _mm512_loadu_pd (xr), vxi = _mm512_loadu_pd (xi);
          __m512d vyr = _mm512_loadu_pd (yr), vyi = _mm512_loadu_pd (yi);
          fft_inv_butterfly (&vxr, &vxi, &vyr, &vyi, wr, wi);
          _mm512_storeu_pd (xr, vxr);
          _mm512_storeu_pd (xi, vxi);
          _mm512_storeu_pd (yr, vyr);
          _mm512_storeu_pd (yi, vyi);
        }
  /* half-lengths 4, 2, 1 on 16-slot blocks: the twiddle of a lane depends
   * only on its index within the half, so each stage has one constant vector */
  __m512i into_x[4], into_y[4];
  __m512d wr[3], wi[3];
  for (int s = 0; s < 4; s++)
    small_transition (s == 0 ? SMALL_NATURAL : s - 1, s, &into_x[s], &into_y[s]);
  for (int s = 0; s < 3; s++)
    {
      double vr[8], vi[8];
      for (int l = 0; l < 8; l++)
        {
          size_t half = small_t[s], j = (size_t) small_x_pos[s][l] % half;
          vr[l] = tw_re[half + j];
          vi[l] = tw_im[half + j];
        }
      wr[s] = _mm512_loadu_pd (vr);
      wi[s] = _mm512_loadu_pd (vi);
    }
  for (size_t base = 0; base < n; base += 16)
    {
      __m512d xr = _mm512_loadu_pd (re + base), yr = _mm512_loadu_pd (re + base + 8);
      __m512d xi = _mm512_loadu_pd (im + base), yi = _mm512_loadu_pd (im + base + 8);
      for (int s = 0; s < 3; s++)
        {
          __m512d nxr = _mm512_permutex2var_pd (xr, into_x[s], yr);
          __m512d nxi = _mm512_permutex2var_pd (xi, into_x[s], yi);
          yr = _mm512_permutex2var_pd (xr, into_y[s], yr);
          yi = _mm512_permutex2var_pd (xi, into_y[s], yi);
          __m512d dr = _mm512_sub_pd (nxr, yr), di = _mm512_sub_pd (nxi, yi);
          xr = _mm512_add_pd (nxr, yr);
          xi = _mm512_add_pd (nxi, yi);
          yr = _mm512_add_pd (_mm512_mul_pd (dr, wr[s]), _mm512_mul_pd (di, wi[s]));
          yi = _mm512_sub_pd (_mm512_mul_pd (di, wr[s]), _mm512_mul_pd (dr, wi[s]));
        }
      _mm512_storeu_pd (re + base, _mm512_permutex2var_pd (xr, into_x[3], yr));
      _mm512_storeu_pd (re + base + 8, _mm512_permutex2var_pd (xr, into_y[3], yr));
      _mm512_storeu_pd (im + base, _mm512_permutex2var_pd (xi, into_x[3], yi));
      _mm512_storeu_pd (im + base + 8, _mm512_permutex2var_pd (xi, into_y[3], yi));
    }
}

/* e mod q: eight signed bytes widened, q added to the negative ones. */
IFMA static void
lift_small_avx512 (uint64_t *out, const int8_t *e, uint64_t q, size_t n)
{
  const __m512i vq = _mm512_set1_epi64 ((long long) q);
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    {
      __m512i v = _mm512_cvtepi8_epi64 (_mm_loadl_epi64 ((const __m128i *) (e + i)));
      _mm512_storeu_si512 (out + i, _mm512_mask_add_epi64 (v, _mm512_movepi64_mask (v), v, vq));
    }
  for (; i < n; i++)
    out[i] = ckks_lift_small (e[i], q);
}

/* (x + e) mod q: the quotient estimated in double precision is off by at
 * most one (x < 2^62 is within 2^9 of its double, q > 2^20), the remainder
 * exact in 64-bit integers, then corrected into [0, q). */
IFMA static void
reduce_signed_avx512 (uint64_t *out, const int64_t *x, const int8_t *e,
                      const CkksModulus *m, size_t n)
{
  const __m512i vq = _mm512_set1_epi64 ((long long) m->q);
  const __m512d qinv = _mm512_set1_pd (1.0 / (double) m->q);
  const __m512i zero = _mm512_setzero_si512 ();
  for (size_t i = 0; i < n; i += 8)
    {
      __m512i v = _mm512_loadu_si512 (x + i);
      if (e)
        v = _mm512_add_epi64 (v, _mm512_cvtepi8_epi64 (_mm_loadl_epi64 ((const __m128i *) (e + i))));
      __m512d quo = _mm512_roundscale_pd (_mm512_mul_pd (_mm512_cvtepi64_pd (v), qinv),
                                          _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
      __m512i r = _mm512_sub_epi64 (v, _mm512_mullo_epi64 (_mm512_cvtpd_epi64 (quo), vq));
      for (int round = 0; round < 2; round++)
        {
          r = _mm512_mask_add_epi64 (r, _mm512_cmplt_epi64_mask (r, zero), r, vq);
          r = reduce_once (r, vq);
        }
      _mm512_storeu_si512 (out + i, r);
    }
}

/* Rounds with the MXCSR default (nearest, ties to even), like nearbyint. */
IFMA static bool
round_scaled_avx512 (int64_t *out, const double *v, const uint32_t *idx, double scale,
                     size_t n)
{
  const __m512d s = _mm512_set1_pd (scale);
  const __m512d limit = _mm512_set1_pd (4611686018427387904.0);
  __mmask8 all = 0xff;
  for (size_t i = 0; i < n; i += 8)
    {
      __m256i vi = _mm256_loadu_si256 ((const __m256i *) (idx + i));
      __m512d x = _mm512_roundscale_pd (_mm512_mul_pd (_mm512_i32gather_pd (vi, v, 8), s),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      all &= _mm512_cmp_pd_mask (_mm512_abs_pd (x), limit, _CMP_LT_OQ);
      _mm512_storeu_si512 (out + i, _mm512_maskz_cvtpd_epi64 (all, x));
    }
  return all == 0xff;
}

bool
ckks_kernels_ifma (CkksKernels *k)
{
  __builtin_cpu_init ();
  if (!__builtin_cpu_supports ("avx512f") || !__builtin_cpu_supports ("avx512ifma")
      || !__builtin_cpu_supports ("avx512vl") || !__builtin_cpu_supports ("avx512dq")
      || !__builtin_cpu_supports ("avx512bw"))
    return false;
  k->name = "avx512ifma";
  k->shoup = shoup52;
  k->ntt_tables_expand = ntt_tables_expand_ifma;
  k->ntt_forward = ntt_forward_ifma;
  k->ntt_inverse = ntt_inverse_ifma;
  k->fixed_has_companion = false;
  k->fixed_prepare = fixed_prepare_mont;
  k->fixed_values = fixed_values_mont;
  k->mul_fixed = mul_fixed_ifma;
  k->mul_fixed_add = mul_fixed_add_ifma;
  k->crt2 = crt2_ifma;
  k->mul_fixed_pair = mul_fixed_pair_ifma;
  k->mul_fixed_block_sums = mul_fixed_block_sums_ifma;
  k->fft_stages_forward = fft_stages_forward_avx512;
  k->round_scaled = round_scaled_avx512;
  k->lift_small = lift_small_avx512;
  k->reduce_signed = reduce_signed_avx512;
  k->fft_stages_inverse = fft_stages_inverse_avx512;
  k->dot = dot_ifma;
  return true;
}
