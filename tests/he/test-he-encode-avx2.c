/* test-he-encode-avx2.c: the AVX2 encode/decode kernels against the scalar
 * reference, bit for bit, at every preset's N and primes.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <string.h>

#include "ckks-internal.h"
#include "ckks-objects.h"
#include "he-test-common.h"

static GRand *rng;

static uint64_t
rand_u64 (void)
{
  return ((uint64_t) g_rand_int (rng) << 32) | g_rand_int (rng);
}

static uint64_t
rand_below (uint64_t q)
{
  return rand_u64 () % q;
}

/* Scalar and AVX2 tables; false (test skipped) without AVX2 + FMA. */
static bool
kernels (CkksKernels *scalar, CkksKernels *avx2)
{
  ckks_kernels_scalar (scalar);
  ckks_kernels_scalar (avx2);
  if (!ckks_kernels_avx2_encode (avx2))
    {
      g_test_skip ("no AVX2 + FMA on this CPU: the AVX2 encode kernels are not used");
      return false;
    }
  /* the entries really were replaced */
  g_assert_true (avx2->fft_stages_forward != scalar->fft_stages_forward);
  g_assert_true (avx2->fft_stages_inverse != scalar->fft_stages_inverse);
  g_assert_true (avx2->round_scaled != scalar->round_scaled);
  g_assert_true (avx2->reduce_signed != scalar->reduce_signed);
  g_assert_true (avx2->crt2 != scalar->crt2);
  g_assert_true (avx2->dot != scalar->dot);
  /* and nothing else */
  g_assert_true (avx2->ntt_forward == scalar->ntt_forward);
  g_assert_true (avx2->mul_fixed == scalar->mul_fixed);
  return true;
}

static CkksContext *
preset_context (const char *name)
{
  CkksParams p;
  CkksContext *ctx = NULL;
  g_assert_cmpint (ckks_params_preset (name, &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new_with_backend (&p, CKKS_BACKEND_SCALAR, &ctx), ==, CKKS_OK);
  return ctx;
}

/* Both FFT directions on the same input, for inputs of several magnitudes. */
static void
check_fft (const CkksKernels *s, const CkksKernels *v, const CkksContext *ctx, size_t n)
{
  const double bounds[] = { 1.0, 1e-300, 1e12, 1e300 };
  double *xs = g_new (double, 2 * n), *xv = g_new (double, 2 * n);
  for (size_t b = 0; b < G_N_ELEMENTS (bounds); b++)
    {
      for (size_t i = 0; i < 2 * n; i++)
        xs[i] = xv[i] = i % 17 == 3 ? 0.0 : g_rand_double_range (rng, -bounds[b], bounds[b]);
      s->fft_stages_forward (xs, xs + n, ctx->fft_re, ctx->fft_im, n);
      v->fft_stages_forward (xv, xv + n, ctx->fft_re, ctx->fft_im, n);
      g_assert_cmpmem (xs, 16 * n, xv, 16 * n);
      s->fft_stages_inverse (xs, xs + n, ctx->fft_re, ctx->fft_im, n);
      v->fft_stages_inverse (xv, xv + n, ctx->fft_re, ctx->fft_im, n);
      g_assert_cmpmem (xs, 16 * n, xv, 16 * n);
    }
  g_free (xs);
  g_free (xv);
}

static void
test_fft (void)
{
  CkksKernels s, v;
  if (!kernels (&s, &v))
    return;
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksContext *ctx = preset_context (*name);
      check_fft (&s, &v, ctx, ctx->slots);
      /* the shorter transforms of smaller rings use the same table prefix */
      for (size_t n = 4; n <= 64; n <<= 1)
        check_fft (&s, &v, ctx, n);
      ckks_context_free (ctx);
    }
}

/* Rounding: both return values, and the outputs, equal the scalar's. */
static void
check_round (const CkksKernels *s, const CkksKernels *v, const double *x,
             const uint32_t *idx, double scale, size_t n, int64_t *rs, int64_t *rv,
             bool expect)
{
  memset (rs, 0x5a, n * sizeof *rs);
  memset (rv, 0x5a, n * sizeof *rv);
  g_assert_true (s->round_scaled (rs, x, idx, scale, n) == expect);
  g_assert_true (v->round_scaled (rv, x, idx, scale, n) == expect);
  g_assert_cmpmem (rs, 8 * n, rv, 8 * n);
}

static void
test_round_scaled (void)
{
  CkksKernels s, v;
  if (!kernels (&s, &v))
    return;
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksContext *ctx = preset_context (*name);
      size_t n = ctx->slots;
      double *x = g_new (double, n);
      int64_t *rs = g_new (int64_t, n), *rv = g_new (int64_t, n);
      const uint32_t *br = ctx->slot_bitrev;
      /* halves (ties to even), values near 2^52 .. 2^62, both signs */
      for (size_t i = 0; i < n; i++)
        {
          double mag = ldexp (1.0, (int) (i % 62));
          x[i] = i < 16 ? (double) i - 7.5
                        : (g_rand_boolean (rng) ? -1 : 1) * mag * g_rand_double (rng);
        }
      x[17] = 0x1p62 - 512;          /* largest double below 2^62: accepted */
      x[18] = -(0x1p62 - 512);
      x[19] = -0.25;                 /* rounds to -0 */
      x[20] = 0x1p52 + 1;
      x[21] = -0x1p53 - 2;
      check_round (&s, &v, x, br, 1.0, n, rs, rv, true);
      g_assert_cmpint (rs[0], ==, (int64_t) nearbyint (x[br[0]]));
      check_round (&s, &v, x, br, 0.5, n, rs, rv, true);
      uint32_t *idx = g_new (uint32_t, n);
      for (size_t i = 0; i < n; i++)
        idx[i] = (uint32_t) i;
      check_round (&s, &v, x, idx, 1.0, n, rs, rv, true);
      g_assert_cmpint (rs[8], ==, 0);     /*  0.5 -> 0 */
      g_assert_cmpint (rs[9], ==, 2);     /*  1.5 -> 2 */
      g_assert_cmpint (rs[6], ==, -2);    /* -1.5 -> -2 */
      g_assert_cmpint (rs[17], ==, (int64_t) (0x1p62 - 512));
      g_assert_cmpint (rs[21], ==, -(int64_t) 9007199254740994ll);
      /* refused values at the first, a middle and the last lane of a block,
       * and the outputs written before and after them */
      const double bad[] = { 0x1p62, -0x1p62, NAN, INFINITY, -INFINITY, 1e300 };
      const size_t at[] = { 0, 5, 6, 7, n / 2 + 1, n - 1 };
      for (size_t b = 0; b < G_N_ELEMENTS (bad); b++)
        for (size_t a = 0; a < G_N_ELEMENTS (at); a++)
          {
            double keep = x[at[a]];
            x[at[a]] = bad[b];
            check_round (&s, &v, x, idx, 1.0, n, rs, rv, false);
            x[at[a]] = keep;
          }
      /* a scale that pushes in-range values over the limit */
      check_round (&s, &v, x, br, 2.0, n, rs, rv, false);
      /* short lengths (scalar tails) */
      for (size_t len = 0; len < 11; len++)
        check_round (&s, &v, x, br, 1.0, len, rs, rv, true);
      g_free (idx);
      g_free (x); g_free (rs); g_free (rv);
      ckks_context_free (ctx);
    }
}

/* The value mod q by 128-bit arithmetic: the reference of both kernels. */
static uint64_t
mod_ref (int64_t x, int e, uint64_t q)
{
  ckks_i128 r = ((ckks_i128) x + e) % (ckks_i128) q;
  return (uint64_t) (r < 0 ? r + q : r);
}

static void
check_reduce (const CkksKernels *s, const CkksKernels *v, uint64_t q, size_t n)
{
  CkksModulus m;
  ckks_modulus_init (&m, q);
  const int64_t lim = ((int64_t) 1 << 62) - 128;   /* |x + e| < 2^62 */
  int64_t *x = g_new (int64_t, n);
  int8_t *e = g_new (int8_t, n);
  uint64_t *us = g_new (uint64_t, n), *uv = g_new (uint64_t, n);
  for (size_t i = 0; i < n; i++)
    {
      int64_t k = (int64_t) (rand_u64 () >> 44) - (1 << 19);
      k %= lim / (int64_t) q + 1;                  /* |k q| <= lim: no overflow */
      switch (i % 8)
        {
        case 0: x[i] = (int64_t) (rand_u64 () >> 2) - (i & 8 ? lim : 0); break;
        case 1: x[i] = -(int64_t) (rand_u64 () >> 2); break;
        case 2: x[i] = (int64_t) (i % 7) - 3; break;
        case 3: x[i] = (i & 8 ? lim : -lim) - (int64_t) (i % 3); break;
        case 4: x[i] = k * (int64_t) q; break;              /* multiples of q */
        case 5: x[i] = k * (int64_t) q + (i & 8 ? 1 : -1); break;
        case 6: x[i] = (int64_t) rand_below (q) - (int64_t) (q / 2); break;
        default: x[i] = (int64_t) (rand_u64 () >> (2 + i % 40)) * (i & 8 ? -1 : 1); break;
        }
      if (x[i] > lim)
        x[i] = lim;
      if (x[i] < -lim)
        x[i] = -lim;
      e[i] = (int8_t) g_rand_int_range (rng, -128, 128);
    }
  for (int with_e = 0; with_e < 2; with_e++)
    {
      const int8_t *ep = with_e ? e : NULL;
      s->reduce_signed (us, x, ep, &m, n);
      v->reduce_signed (uv, x, ep, &m, n);
      g_assert_cmpmem (us, 8 * n, uv, 8 * n);
      for (size_t i = 0; i < n; i++)
        g_assert_cmpuint (uv[i], ==, mod_ref (x[i], ep ? ep[i] : 0, q));
      /* odd lengths: the tail */
      for (size_t len = 1; len < 12; len += 2)
        {
          memset (uv, 0xa5, 8 * len);
          v->reduce_signed (uv, x + 3, ep ? ep + 3 : NULL, &m, len);
          g_assert_cmpmem (us + 3, 8 * len, uv, 8 * len);
        }
    }
  g_free (x); g_free (e); g_free (us); g_free (uv);
}

static void
test_reduce_signed (void)
{
  CkksKernels s, v;
  if (!kernels (&s, &v))
    return;
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksContext *ctx = preset_context (*name);
      for (uint32_t i = 0; i < ctx->params.n_moduli; i++)
        check_reduce (&s, &v, ctx->params.moduli[i], ctx->n);
      ckks_context_free (ctx);
    }
  /* the smallest and largest prime sizes the parameters allow */
  const unsigned bits[] = { 20, 30, 61 };
  for (size_t b = 0; b < G_N_ELEMENTS (bits); b++)
    {
      CkksParams p;
      g_assert_cmpint (ckks_params_generate (12, &bits[b], 1, &p), ==, CKKS_OK);
      check_reduce (&s, &v, p.moduli[0], 4096);
    }
}

/* a0, a1 of the integer x (0 <= x < q0 q1). */
static void
crt_residues (ckks_u128 x, uint64_t q0, uint64_t q1, uint64_t *a0, uint64_t *a1)
{
  *a0 = (uint64_t) (x % q0);
  *a1 = (uint64_t) (x % q1);
}

static void
check_crt2 (const CkksKernels *s, const CkksKernels *v, uint64_t q0, uint64_t q1, size_t n)
{
  CkksCrt2 c;
  ckks_crt2_init (&c, q0, q1);
  ckks_u128 big_q = (ckks_u128) q0 * q1, half = (big_q - 1) / 2;
  uint64_t *a0 = g_new (uint64_t, n), *a1 = g_new (uint64_t, n);
  double *os = g_new (double, n), *ov = g_new (double, n);
  for (size_t i = 0; i < n; i++)
    {
      ckks_u128 x;
      switch (i % 4)
        {
        case 0: x = half - 8 + (i / 4) % 17; break;          /* the centring threshold */
        case 1: x = ((i / 4) % 2 ? big_q - 1 - (i / 4) % 9 : (i / 4) % 9); break;
        case 2: x = half + (((ckks_u128) rand_u64 () << 40) ^ rand_u64 ()) % half; break;
        default: x = (((ckks_u128) rand_u64 () << 64) | rand_u64 ()) % big_q; break;
        }
      crt_residues (x, q0, q1, &a0[i], &a1[i]);
    }
  s->crt2 (a0, a1, os, &c, n);
  v->crt2 (a0, a1, ov, &c, n);
  g_assert_cmpmem (os, 8 * n, ov, 8 * n);
  /* lengths that leave a tail, from an unaligned start */
  for (size_t len = 1; len < 12; len += 2)
    {
      memset (ov, 0xa5, 8 * len);
      v->crt2 (a0 + 1, a1 + 1, ov, &c, len);
      g_assert_cmpmem (os + 1, 8 * len, ov, 8 * len);
    }
  /* (Q - 1) / 2 is positive, (Q + 1) / 2 negative */
  crt_residues (half, q0, q1, &a0[0], &a1[0]);
  crt_residues (half + 1, q0, q1, &a0[1], &a1[1]);
  v->crt2 (a0, a1, ov, &c, 8);
  g_assert_cmpfloat (ov[0], >, 0);
  g_assert_cmpfloat (ov[1], <, 0);
  /* unreduced first residues (a0 >= 2 q1) take the scalar path per block */
  for (size_t i = 0; i < n; i += 5)
    a0[i] = rand_u64 () >> (i % 3);
  s->crt2 (a0, a1, os, &c, n);
  v->crt2 (a0, a1, ov, &c, n);
  g_assert_cmpmem (os, 8 * n, ov, 8 * n);
  g_free (a0); g_free (a1); g_free (os); g_free (ov);
}

static void
test_crt2 (void)
{
  CkksKernels s, v;
  if (!kernels (&s, &v))
    return;
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksContext *ctx = preset_context (*name);
      const uint64_t *q = ctx->params.moduli;
      check_crt2 (&s, &v, ctx->crt2.q0, ctx->crt2.q1, ctx->n);
      for (uint32_t i = 0; i + 1 < ctx->params.n_moduli; i++)
        {
          check_crt2 (&s, &v, q[i], q[i + 1], ctx->n);
          check_crt2 (&s, &v, q[i + 1], q[i], ctx->n);
        }
      ckks_context_free (ctx);
    }
  /* q0 much larger or smaller than q1, and q1 too large for the exact
   * double route (the kernel hands those to the scalar one) */
  const unsigned pairs[][2] = { { 61, 47 }, { 30, 50 }, { 20, 21 }, { 50, 55 }, { 40, 61 } };
  for (size_t i = 0; i < G_N_ELEMENTS (pairs); i++)
    {
      CkksParams p;
      g_assert_cmpint (ckks_params_generate (12, pairs[i], 2, &p), ==, CKKS_OK);
      check_crt2 (&s, &v, p.moduli[0], p.moduli[1], 4096);
    }
}

static void
test_dot (void)
{
  CkksKernels s, v;
  if (!kernels (&s, &v))
    return;
  const size_t sizes[] = { 0, 8, 16, 4096, 8192, 16384, 32768 };
  for (size_t k = 0; k < G_N_ELEMENTS (sizes); k++)
    {
      size_t n = sizes[k];
      double *a = g_new (double, n + 1), *b = g_new (double, n + 1);
      for (int round = 0; round < 4; round++)
        {
          /* magnitudes spread over 2^-40 .. 2^40, so the summation order
           * shows in the last bits */
          for (size_t i = 0; i < n; i++)
            {
              a[i] = ldexp (g_rand_double_range (rng, -1, 1), g_rand_int_range (rng, -40, 41));
              b[i] = g_rand_double_range (rng, -1, 1);
            }
          double rs = s.dot (a, b, n), rv = v.dot (a, b, n);
          g_assert_cmpmem (&rs, sizeof rs, &rv, sizeof rv);
        }
      g_free (a); g_free (b);
    }
}

/* End to end: encoding and decoding through a context with the AVX2
 * entries give the scalar context's coefficients and slots. */
static void
test_encode_decode (void)
{
  CkksKernels s, v;
  if (!kernels (&s, &v))
    return;
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksContext *ctx = preset_context (*name);
      size_t slots = ctx->slots, n = ctx->n;
      double *re = he_test_uniform (rng, slots, 100), *im = he_test_uniform (rng, slots, 100);
      int64_t *cs = g_new (int64_t, n), *cv = g_new (int64_t, n);
      double *ds = g_new (double, 2 * slots), *dv = g_new (double, 2 * slots);
      double *coeffs = g_new (double, n);
      const double scale = 0x1p40;
      CkksKernels keep = ctx->k;
      g_assert_cmpint (ckks_encode_coeffs (ctx, re, im, slots, scale, cs), ==, CKKS_OK);
      for (size_t i = 0; i < n; i++)
        coeffs[i] = (double) cs[i];
      g_assert_cmpint (ckks_real_coeffs_decode (ctx, coeffs, scale, ds, ds + slots, slots),
                       ==, CKKS_OK);
      ckks_kernels_avx2_encode (&ctx->k);
      g_assert_cmpint (ckks_encode_coeffs (ctx, re, im, slots, scale, cv), ==, CKKS_OK);
      g_assert_cmpint (ckks_real_coeffs_decode (ctx, coeffs, scale, dv, dv + slots, slots),
                       ==, CKKS_OK);
      g_assert_cmpmem (cs, 8 * n, cv, 8 * n);
      g_assert_cmpmem (ds, 16 * slots, dv, 16 * slots);
      g_assert_cmpfloat (he_test_max_abs_diff (ds, re, slots), <, 1e-6);
      /* a scale that overflows is refused by both */
      g_assert_cmpint (ckks_encode_coeffs (ctx, re, im, slots, 0x1p70, cv), ==, CKKS_ERR_SCALE);
      ctx->k = keep;
      g_assert_cmpint (ckks_encode_coeffs (ctx, re, im, slots, 0x1p70, cs), ==, CKKS_ERR_SCALE);
      g_free (re); g_free (im); g_free (cs); g_free (cv);
      g_free (ds); g_free (dv); g_free (coeffs);
      ckks_context_free (ctx);
    }
}

/* A context on the automatic backend uses them where IFMA is absent (on
 * the AVX2 backend, or the scalar one with primes >= 2^50); the scalar
 * backend stays the portable reference. */
static void
test_context_selects (void)
{
  CkksKernels s, v;
  if (!kernels (&s, &v))
    return;
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_SCALAR);
  g_assert_true (ctx->k.crt2 == s.crt2);
  g_assert_true (ctx->k.fft_stages_inverse == s.fft_stages_inverse);
  ckks_context_free (ctx);
  ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  if (g_strcmp0 (ckks_context_backend_name (ctx), "avx512ifma") != 0)
    {
      g_assert_true (ctx->k.crt2 == v.crt2);
      g_assert_true (ctx->k.fft_stages_forward == v.fft_stages_forward);
      g_assert_true (ctx->k.fft_stages_inverse == v.fft_stages_inverse);
      g_assert_true (ctx->k.round_scaled == v.round_scaled);
      g_assert_true (ctx->k.reduce_signed == v.reduce_signed);
      g_assert_true (ctx->k.dot == v.dot);
    }
  ckks_context_free (ctx);
  CkksParams p;
  g_assert_cmpint (ckks_params_preset ("fast", &p), ==, CKKS_OK);
  if (ckks_context_new_with_backend (&p, CKKS_BACKEND_AVX2, &ctx) == CKKS_OK)
    {
      g_assert_true (ctx->k.crt2 == v.crt2);
      g_assert_true (ctx->k.fft_stages_forward == v.fft_stages_forward);
      g_assert_true (ctx->k.dot == v.dot);
      ckks_context_free (ctx);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  rng = he_test_rng_new ();
  g_test_add_func ("/he/avx2-encode/fft", test_fft);
  g_test_add_func ("/he/avx2-encode/round-scaled", test_round_scaled);
  g_test_add_func ("/he/avx2-encode/reduce-signed", test_reduce_signed);
  g_test_add_func ("/he/avx2-encode/crt2", test_crt2);
  g_test_add_func ("/he/avx2-encode/dot", test_dot);
  g_test_add_func ("/he/avx2-encode/encode-decode", test_encode_decode);
  g_test_add_func ("/he/avx2-encode/context", test_context_selects);
  int rc = g_test_run ();
  g_rand_free (rng);
  return rc;
}
