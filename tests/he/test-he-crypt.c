/* test-he-crypt.c: encoding, encryption and key-free operations against
 * plaintext arithmetic and a direct evaluation of the canonical embedding.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <complex.h>

#include "ckks-objects.h"
#include "ckks.h"
#include "he-test-common.h"

static GRand *rng;

/* The encoder's coefficients evaluated at zeta^(5^j) directly (O(N) per slot)
 * must give back the slot values times the scale. */
static void
test_encode_direct_evaluation (void)
{
  const unsigned bits[] = { 55, 50 };
  CkksParams p;
  CkksContext *ctx;
  g_assert_cmpint (ckks_params_generate (12, bits, 2, &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&p, &ctx), ==, CKKS_OK);
  size_t n = 4096, slots = n / 2;
  double *re = he_test_uniform (rng, slots, 1), *im = he_test_uniform (rng, slots, 1);
  int64_t *m = g_new (int64_t, n);
  const double scale = 0x1p30;
  g_assert_cmpint (ckks_encode_coeffs (ctx, re, im, slots, scale, m), ==, CKKS_OK);
  for (int probe = 0; probe < 48; probe++)
    {
      size_t j = probe < 4 ? (size_t) probe : (size_t) g_rand_int_range (rng, 0, (gint32) slots);
      uint64_t e = 1;
      for (size_t t = 0; t < j; t++)
        e = e * 5 % (2 * n);
      long double complex acc = 0;
      for (size_t k = 0; k < n; k++)
        {
          long double angle = M_PI * (long double) ((e * k) % (2 * n)) / n;
          acc += m[k] * (cosl (angle) + I * sinl (angle));
        }
      g_assert_cmpfloat_with_epsilon ((double) creall (acc) / scale, re[j], 1e-6);
      g_assert_cmpfloat_with_epsilon ((double) cimagl (acc) / scale, im[j], 1e-6);
    }
  g_free (re); g_free (im); g_free (m);
  ckks_context_free (ctx);
}

/* Encode/decode and encrypt/decrypt (sk and pk) at every preset; the
 * precision in bits is reported. */
static void
test_round_trips (void)
{
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksContext *ctx = he_test_context (*name, CKKS_BACKEND_AUTO);
      size_t slots = ckks_context_slots (ctx);
      double *re = he_test_uniform (rng, slots, 1), *im = he_test_uniform (rng, slots, 1);
      double *dr = g_new (double, slots), *di = g_new (double, slots);
      CkksPlaintext *pt;
      CkksCiphertext *ct;
      CkksSecretKey *sk;
      CkksPublicKey *pk;
      g_assert_cmpint (ckks_plaintext_new (ctx, 2, &pt), ==, CKKS_OK);
      g_assert_cmpint (ckks_ciphertext_new (ctx, 2, &ct), ==, CKKS_OK);
      g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
      g_assert_cmpint (ckks_public_key_new (sk, &pk), ==, CKKS_OK);

      g_assert_cmpint (ckks_encode (re, im, slots, 0x1p40, pt), ==, CKKS_OK);
      g_assert_cmpint (ckks_decode (pt, dr, di, slots), ==, CKKS_OK);
      double err = fmax (he_test_max_abs_diff (re, dr, slots), he_test_max_abs_diff (im, di, slots));
      g_test_message ("%s: encode/decode precision %.1f bits", *name, -log2 (err));
      g_assert_cmpfloat (err, <, 1e-9);

      for (int kind = 0; kind < 3; kind++)
        {
          if (kind == 0)
            g_assert_cmpint (ckks_encrypt_values_sk (sk, re, im, slots, 0x1p40, ct), ==, CKKS_OK);
          else if (kind == 1)
            g_assert_cmpint (ckks_encrypt_values_pk (pk, re, im, slots, 0x1p40, ct), ==, CKKS_OK);
          else
            g_assert_cmpint (ckks_encrypt_pk (pk, pt, ct), ==, CKKS_OK);
          g_assert_true (ckks_ciphertext_is_seeded (ct) == (kind == 0));
          g_assert_cmpint (ckks_decrypt (sk, ct, pt), ==, CKKS_OK);
          g_assert_cmpint (ckks_decode (pt, dr, di, slots), ==, CKKS_OK);
          err = fmax (he_test_max_abs_diff (re, dr, slots), he_test_max_abs_diff (im, di, slots));
          g_test_message ("%s: %s encryption precision %.1f bits", *name,
                          kind == 0 ? "sk" : "pk", -log2 (err));
          /* Public-key noise per slot has a standard deviation near 1e-7 at
           * N = 32768 and scale 2^40; the largest of 16384 slots reaches
           * 1e-6 now and then, so the bound sits at about 8 sigma. */
          g_assert_cmpfloat (err, <, 4e-6);
        }
      /* plaintext-form sk encryption */
      g_assert_cmpint (ckks_encode (re, im, slots, 0x1p40, pt), ==, CKKS_OK);
      g_assert_cmpint (ckks_encrypt_sk (sk, pt, ct), ==, CKKS_OK);
      g_assert_cmpint (ckks_decrypt (sk, ct, pt), ==, CKKS_OK);
      g_assert_cmpint (ckks_decode (pt, dr, NULL, slots), ==, CKKS_OK);
      g_assert_cmpfloat (he_test_max_abs_diff (re, dr, slots), <, 1e-6);
      /* a key of another context cannot decrypt this one */
      CkksContext *other = he_test_context (*name, CKKS_BACKEND_AUTO);
      CkksSecretKey *sk2;
      g_assert_cmpint (ckks_secret_key_new (other, &sk2), ==, CKKS_OK);
      g_assert_cmpint (ckks_decrypt (sk2, ct, pt), ==, CKKS_ERR_MISMATCH);
      ckks_secret_key_free (sk2);
      ckks_context_free (other);

      ckks_public_key_free (pk);
      ckks_secret_key_free (sk);
      ckks_ciphertext_free (ct);
      ckks_plaintext_free (pt);
      g_free (re); g_free (im); g_free (dr); g_free (di);
      ckks_context_free (ctx);
    }
}

/* add, sub, ct x pt, ct x scalar, rescale and level drop against plaintext
 * arithmetic on the slots. */
static void
test_operations (void)
{
  const unsigned bits[] = { 60, 40, 40, 60 };
  CkksParams p;
  CkksContext *ctx;
  g_assert_cmpint (ckks_params_generate (14, bits, 4, &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&p, &ctx), ==, CKKS_OK);
  size_t slots = ckks_context_slots (ctx);
  double *x = he_test_uniform (rng, slots, 1), *y = he_test_uniform (rng, slots, 1);
  double *w = he_test_uniform (rng, slots, 1), *out = g_new (double, slots);
  double *ref = g_new (double, slots);
  CkksSecretKey *sk;
  CkksCiphertext *a, *b, *c;
  CkksPlaintext *pw, *dec;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_ciphertext_new (ctx, 3, &a), ==, CKKS_OK);
  g_assert_cmpint (ckks_ciphertext_new (ctx, 3, &b), ==, CKKS_OK);
  g_assert_cmpint (ckks_ciphertext_new (ctx, 3, &c), ==, CKKS_OK);
  g_assert_cmpint (ckks_plaintext_new (ctx, 4, &pw), ==, CKKS_OK);
  g_assert_cmpint (ckks_plaintext_new (ctx, 4, &dec), ==, CKKS_OK);
  const double scale = 0x1p40;
  g_assert_cmpint (ckks_encrypt_values_sk (sk, x, NULL, slots, scale, a), ==, CKKS_OK);
  g_assert_cmpint (ckks_encrypt_values_sk (sk, y, NULL, slots, scale, b), ==, CKKS_OK);
  g_assert_cmpint (ckks_encode (w, NULL, slots, scale, pw), ==, CKKS_OK);

#define CHECK_SLOTS(ct, expr, tol)                                             \
  do {                                                                         \
    g_assert_cmpint (ckks_decrypt (sk, ct, dec), ==, CKKS_OK);                 \
    g_assert_cmpint (ckks_decode (dec, out, NULL, slots), ==, CKKS_OK);        \
    for (size_t i = 0; i < slots; i++)                                         \
      ref[i] = (expr);                                                         \
    g_assert_cmpfloat (he_test_max_abs_diff (out, ref, slots), <, tol);        \
  } while (0)

  g_assert_cmpint (ckks_add (c, a, b), ==, CKKS_OK);
  CHECK_SLOTS (c, x[i] + y[i], 1e-6);
  g_assert_cmpint (ckks_sub (c, a, b), ==, CKKS_OK);
  CHECK_SLOTS (c, x[i] - y[i], 1e-6);
  g_assert_cmpint (ckks_mul_scalar (c, a, -0.75, 0x1p20), ==, CKKS_OK);
  CHECK_SLOTS (c, -0.75 * x[i], 1e-6);
  g_assert_cmpint (ckks_mul_plain (c, a, pw), ==, CKKS_OK);
  g_assert_cmpfloat (ckks_ciphertext_scale (c), ==, scale * scale);
  CHECK_SLOTS (c, x[i] * w[i], 1e-6);
  /* rescale: divides by the last prime; the exact scale is tracked */
  g_assert_cmpint (ckks_rescale (c), ==, CKKS_OK);
  g_assert_cmpuint (ckks_ciphertext_limbs (c), ==, 2);
  g_assert_cmpfloat (ckks_ciphertext_scale (c), ==, scale * scale / (double) p.moduli[2]);
  CHECK_SLOTS (c, x[i] * w[i], 1e-6);
  /* a level drop keeps the value and (for seeded c1) the seed */
  g_assert_cmpint (ckks_drop_limbs (a, 2), ==, CKKS_OK);
  g_assert_true (ckks_ciphertext_is_seeded (a));
  CHECK_SLOTS (a, x[i], 1e-6);
  /* incompatible operands are refused */
  g_assert_cmpint (ckks_add (c, a, b), ==, CKKS_ERR_LEVEL);
  g_assert_cmpint (ckks_drop_limbs (b, 2), ==, CKKS_OK);
  g_assert_cmpint (ckks_add (b, c, b), ==, CKKS_ERR_SCALE);
  g_assert_cmpint (ckks_drop_limbs (a, 1), ==, CKKS_OK);
  g_assert_cmpint (ckks_rescale (a), ==, CKKS_ERR_LEVEL);
  g_assert_cmpint (ckks_drop_limbs (a, 2), ==, CKKS_ERR_LEVEL);
  g_assert_cmpint (ckks_encode (x, NULL, slots, 0x1p70, pw), ==, CKKS_ERR_SCALE);
#undef CHECK_SLOTS

  ckks_ciphertext_free (a); ckks_ciphertext_free (b); ckks_ciphertext_free (c);
  ckks_plaintext_free (pw); ckks_plaintext_free (dec);
  ckks_secret_key_free (sk);
  g_free (x); g_free (y); g_free (w); g_free (out); g_free (ref);
  ckks_context_free (ctx);
}

/* Decryption CRT over 1..4 limbs agrees with the plaintext value. */
static void
test_crt_limbs (void)
{
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  size_t slots = ckks_context_slots (ctx);
  double *x = he_test_uniform (rng, slots, 1), *out = g_new (double, slots);
  CkksSecretKey *sk;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  for (uint32_t L = 1; L <= 4; L++)
    {
      CkksCiphertext *ct;
      CkksPlaintext *pt;
      double scale = L == 1 ? 0x1p30 : ldexp (1.0, 45 * (int) L - 40);
      if (scale > 0x1p61)
        scale = 0x1p61;
      g_assert_cmpint (ckks_ciphertext_new (ctx, L, &ct), ==, CKKS_OK);
      g_assert_cmpint (ckks_plaintext_new (ctx, L, &pt), ==, CKKS_OK);
      g_assert_cmpint (ckks_encrypt_values_sk (sk, x, NULL, slots, scale, ct), ==, CKKS_OK);
      /* multiply by a big integer to use the whole modulus */
      if (L >= 3)
        g_assert_cmpint (ckks_mul_scalar (ct, ct, 1.0, 0x1p60), ==, CKKS_OK);
      g_assert_cmpint (ckks_decrypt (sk, ct, pt), ==, CKKS_OK);
      g_assert_cmpint (ckks_decode (pt, out, NULL, slots), ==, CKKS_OK);
      g_assert_cmpfloat (he_test_max_abs_diff (out, x, slots), <, L == 1 ? 1e-4 : 1e-7);
      ckks_ciphertext_free (ct);
      ckks_plaintext_free (pt);
    }
  ckks_secret_key_free (sk);
  g_free (x); g_free (out);
  ckks_context_free (ctx);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  rng = he_test_rng_new ();
  g_test_add_func ("/he/encode/direct-evaluation", test_encode_direct_evaluation);
  g_test_add_func ("/he/crypt/round-trips", test_round_trips);
  g_test_add_func ("/he/crypt/operations", test_operations);
  g_test_add_func ("/he/crypt/crt-limbs", test_crt_limbs);
  int rc = g_test_run ();
  g_rand_free (rng);
  return rc;
}
