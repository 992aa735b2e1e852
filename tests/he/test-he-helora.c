/* test-he-helora.c: the HE-LoRA packed product against plaintext A * h.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ckks-internal.h"
#include "ckks-objects.h"
#include "ckks-secret.h"
#include "ckks.h"
#include "he-test-common.h"

static GRand *rng;

/* Evaluates with the counts the plan's layout says. */
static CkksStatus
evaluate_all (const CkksHeloraPlan *plan, CkksCiphertext *const *in, CkksCiphertext *const *out)
{
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  return ckks_helora_evaluate (plan, in, ckks_helora_layout_n_inputs (l), out,
                               ckks_helora_layout_n_outputs (l));
}

/* Encrypts h, evaluates every plan on the same ciphertexts, decrypts and
 * returns the max abs error over all plans. */
static double
run_product (CkksContext *ctx, CkksSecretKey *sk, CkksPublicKey *pk, size_t d,
             const size_t *rs, size_t n_plans, double a_bound, double h_bound)
{
  float *h = he_test_random_floats (rng, d, h_bound);
  CkksHeloraPlan *plans[4];
  float *as[4];
  g_assert_cmpuint (n_plans, <=, 4);
  for (size_t p = 0; p < n_plans; p++)
    {
      as[p] = he_test_random_floats (rng, rs[p] * d, a_bound);
      g_assert_cmpint (ckks_helora_plan_new (ctx, d, rs[p], as[p], &plans[p]), ==, CKKS_OK);
    }
  const CkksHeloraLayout *l0 = ckks_helora_plan_layout (plans[0]);
  size_t k = ckks_helora_layout_n_inputs (l0);
  CkksCiphertext **in;
  g_assert_cmpint (ckks_helora_ciphertexts_new (l0, k, &in), ==, CKKS_OK);
  double factor = 0;
  if (pk)
    g_assert_cmpint (ckks_helora_encrypt_pk (l0, pk, h, in, ckks_helora_layout_n_inputs (l0), &factor), ==, CKKS_OK);
  else
    g_assert_cmpint (ckks_helora_encrypt_sk (l0, sk, h, in, ckks_helora_layout_n_inputs (l0), &factor), ==, CKKS_OK);
  double worst = 0;
  for (size_t p = 0; p < n_plans; p++)
    {
      const CkksHeloraLayout *l = ckks_helora_plan_layout (plans[p]);
      size_t b = ckks_helora_layout_n_outputs (l), r = rs[p];
      g_assert_cmpuint (b, ==, (r + ckks_helora_layout_copies (l) - 1) / ckks_helora_layout_copies (l));
      CkksCiphertext **out;
      g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &out), ==, CKKS_OK);
      g_assert_cmpint (evaluate_all (plans[p], in, out), ==, CKKS_OK);
      double *u = g_new (double, r), *ref = g_new (double, r);
      g_assert_cmpint (ckks_helora_decrypt (l, sk, out, ckks_helora_layout_n_outputs (l), factor, u), ==, CKKS_OK);
      he_test_plain_product (as[p], h, d, r, ref);
      worst = fmax (worst, he_test_max_abs_diff (u, ref, r));
      g_free (u); g_free (ref);
      ckks_helora_ciphertexts_free (out, b);
      ckks_helora_plan_free (plans[p]);
      g_free (as[p]);
    }
  ckks_helora_ciphertexts_free (in, k);
  g_free (h);
  return worst;
}

static void
test_product_presets (void)
{
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksContext *ctx = he_test_context (*name, CKKS_BACKEND_AUTO);
      CkksSecretKey *sk;
      CkksPublicKey *pk;
      g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
      g_assert_cmpint (ckks_public_key_new (sk, &pk), ==, CKKS_OK);
      const size_t r = 32;
      double err_sk = run_product (ctx, sk, NULL, 2048, &r, 1, 0.1, 1.0);
      double err_pk = run_product (ctx, sk, pk, 2048, &r, 1, 0.1, 1.0);
      g_test_message ("%s d=2048 r=32: max |u - A h| = %.3g (sk), %.3g (pk)",
                      *name, err_sk, err_pk);
      g_assert_cmpfloat (err_sk, <=, 1e-6);
      g_assert_cmpfloat (err_pk, <=, 1e-6);
      ckks_public_key_free (pk);
      ckks_secret_key_free (sk);
      ckks_context_free (ctx);
    }
}

/* d not a power of two, r not a multiple of c, d > slots, large |h|, several
 * modules sharing one encryption of h, c above the trace threshold. */
static void
test_product_shapes (void)
{
  CkksContext *fast = he_test_context ("fast", CKKS_BACKEND_AUTO);
  CkksContext *def = he_test_context ("default", CKKS_BACKEND_AUTO);
  CkksContext *wide = he_test_context ("wide", CKKS_BACKEND_AUTO);
  CkksSecretKey *sk_fast, *sk_def, *sk_wide;
  g_assert_cmpint (ckks_secret_key_new (fast, &sk_fast), ==, CKKS_OK);
  g_assert_cmpint (ckks_secret_key_new (def, &sk_def), ==, CKKS_OK);
  g_assert_cmpint (ckks_secret_key_new (wide, &sk_wide), ==, CKKS_OK);
  const size_t r5 = 5, r64 = 64, r3 = 3, shared[] = { 32, 8, 1 };
  double err = run_product (def, sk_def, NULL, 1000, &r5, 1, 0.1, 1.0);
  g_test_message ("default d=1000 r=5: %.3g", err);
  g_assert_cmpfloat (err, <=, 1e-6);
  err = run_product (wide, sk_wide, NULL, 20000, &r64, 1, 0.1, 1.0);
  g_test_message ("wide d=20000 r=64: %.3g", err);
  g_assert_cmpfloat (err, <=, 1e-6);
  err = run_product (fast, sk_fast, NULL, 20000, &r3, 1, 0.1, 1.0);   /* K = 5 */
  g_test_message ("fast d=20000 r=3: %.3g", err);
  g_assert_cmpfloat (err, <=, 1e-6);
  const size_t r2 = 2;
  err = run_product (fast, sk_fast, NULL, 70000, &r2, 1, 0.1, 1.0);    /* K = 18 */
  g_test_message ("fast d=70000 r=2: %.3g", err);
  g_assert_cmpfloat (err, <=, 1e-6);
  err = run_product (def, sk_def, NULL, 2048, shared, 3, 0.1, 1.0);
  g_test_message ("default, three plans on one encryption: %.3g", err);
  g_assert_cmpfloat (err, <=, 1e-6);
  err = run_product (fast, sk_fast, NULL, 100, &r64, 1, 0.1, 1.0);    /* c = 32 */
  g_test_message ("fast d=100 r=64: %.3g", err);
  g_assert_cmpfloat (err, <=, 1e-6);
  err = run_product (fast, sk_fast, NULL, 3, &r5, 1, 2.0, 300.0);     /* c = 1024: decode */
  g_test_message ("fast d=3 r=5 (slot decode), |h| <= 300, |A| <= 2: %.3g", err);
  g_assert_cmpfloat (err, <=, 1e-6 * 300 * 2 * 3);
  /* the portable reference path end to end */
  CkksContext *ref = he_test_context ("default", CKKS_BACKEND_SCALAR);
  CkksSecretKey *sk_ref;
  CkksPublicKey *pk_ref;
  g_assert_cmpstr (ckks_context_backend_name (ref), ==, "scalar");
  g_assert_cmpint (ckks_secret_key_new (ref, &sk_ref), ==, CKKS_OK);
  g_assert_cmpint (ckks_public_key_new (sk_ref, &pk_ref), ==, CKKS_OK);
  err = fmax (run_product (ref, sk_ref, NULL, 1000, &r5, 1, 0.1, 1.0),
              run_product (ref, sk_ref, pk_ref, 3000, &r5, 1, 0.1, 1.0));
  g_test_message ("scalar backend d=1000/3000 r=5: %.3g", err);
  g_assert_cmpfloat (err, <=, 1e-6);
  ckks_public_key_free (pk_ref);
  ckks_secret_key_free (sk_ref);
  ckks_context_free (ref);
  ckks_secret_key_free (sk_fast);
  ckks_secret_key_free (sk_def);
  ckks_secret_key_free (sk_wide);
  ckks_context_free (fast);
  ckks_context_free (def);
  ckks_context_free (wide);
}

/* Zero rows, a zero A and a zero h give exact zeros, no error. */
static void
test_product_zeros (void)
{
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  const size_t d = 1500, r = 7;
  float *a = he_test_random_floats (rng, r * d, 0.1), *h = he_test_random_floats (rng, d, 1.0);
  memset (a + 2 * d, 0, 3 * d * sizeof (float));   /* rows 2..4 zero */
  for (int round = 0; round < 3; round++)
    {
      if (round == 1)
        memset (a, 0, r * d * sizeof (float));
      if (round == 2)
        memset (h, 0, d * sizeof (float));
      CkksHeloraPlan *plan;
      double u[7], ref[7];
      g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
      he_test_helora_token (plan, sk, h, u);
      he_test_plain_product (a, h, d, r, ref);
      g_assert_cmpfloat (he_test_max_abs_diff (u, ref, r), <=, 1e-6);
      ckks_helora_plan_free (plan);
    }
  g_free (a); g_free (h);
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
}

/* Worst case for the modulus: every slot product at its maximum, so the
 * constant coefficient of each result is the largest it can be (K chunks). */
static void
test_product_extremes (void)
{
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  const size_t ds[] = { 2048, 70000 }, r = 3;
  for (size_t i = 0; i < G_N_ELEMENTS (ds); i++)
    {
      size_t d = ds[i];
      float *a = g_new (float, r * d), *h = g_new (float, d);
      for (size_t j = 0; j < d; j++)
        h[j] = -1.0f;
      for (size_t j = 0; j < r * d; j++)
        a[j] = j < d ? -0.1f : 0.1f;
      CkksHeloraPlan *plan;
      double u[3], ref[3];
      g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
      he_test_helora_token (plan, sk, h, u);
      he_test_plain_product (a, h, d, r, ref);
      g_test_message ("d=%zu all-aligned: u = %.6f, %.6f, error %.3g", d, u[0], u[1],
                      he_test_max_abs_diff (u, ref, r));
      g_assert_cmpfloat (he_test_max_abs_diff (u, ref, r), <=, 1e-6 * (double) d / 2048);
      ckks_helora_plan_free (plan);
      g_free (a); g_free (h);
    }
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
}

/* The trace decryption equals a full decode followed by slot sums (copy t
 * of the chunk holds value j in slot t + j c). */
static void
test_trace_matches_decode (void)
{
  CkksContext *ctx = he_test_context ("default", CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  const size_t d = 1000, r = 16;
  float *a = he_test_random_floats (rng, r * d, 0.1), *h = he_test_random_floats (rng, d, 1.0);
  CkksHeloraPlan *plan;
  g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  size_t c = ckks_helora_layout_copies (l), b = ckks_helora_layout_n_outputs (l);
  g_assert_cmpuint (c, ==, 8);
  CkksCiphertext **in, **out;
  double factor, u[16];
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, 1, &in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_encrypt_sk (l, sk, h, in, ckks_helora_layout_n_inputs (l), &factor), ==, CKKS_OK);
  g_assert_cmpint (evaluate_all (plan, in, out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_decrypt (l, sk, out, ckks_helora_layout_n_outputs (l), factor, u), ==, CKKS_OK);
  size_t slots = ckks_context_slots (ctx);
  double *z = g_new (double, slots);
  CkksPlaintext *pt;
  g_assert_cmpint (ckks_plaintext_new (ctx, ckks_helora_layout_limbs (l), &pt), ==, CKKS_OK);
  for (size_t i = 0; i < b; i++)
    {
      g_assert_cmpint (ckks_decrypt (sk, out[i], pt), ==, CKKS_OK);
      g_assert_cmpint (ckks_decode (pt, z, NULL, slots), ==, CKKS_OK);
      for (size_t t = 0; t < c; t++)
        {
          double s = 0;
          for (size_t j = 0; j < d; j++)
            s += z[t + j * c];
          g_assert_cmpfloat (fabs (s * factor - u[i * c + t]), <=, 1e-9);
        }
    }
  ckks_plaintext_free (pt);
  g_free (z);
  ckks_helora_ciphertexts_free (in, 1);
  ckks_helora_ciphertexts_free (out, b);
  ckks_helora_plan_free (plan);
  g_free (a); g_free (h);
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
}

/* The compact evaluation gives the same u bit for bit, and serialises to the
 * same bytes, as the full one. */
static void
test_compact_matches_full (void)
{
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  const size_t ds[] = { 2048, 20000 }, r = 7;
  for (size_t di = 0; di < G_N_ELEMENTS (ds); di++)
    {
      size_t d = ds[di];
      float *a = he_test_random_floats (rng, r * d, 0.1), *h = he_test_random_floats (rng, d, 1.0);
      CkksHeloraPlan *plan;
      g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
      const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
      size_t k = ckks_helora_layout_n_inputs (l), b = ckks_helora_layout_n_outputs (l);
      CkksCiphertext **in, **full, **compact;
      double factor, u_full[7], u_compact[7];
      g_assert_cmpint (ckks_helora_ciphertexts_new (l, k, &in), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &full), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &compact), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_encrypt_sk (l, sk, h, in, k, &factor), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_evaluate (plan, in, k, full, b), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_evaluate_compact (plan, in, k, compact, b), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_decrypt (l, sk, full, b, factor, u_full), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_decrypt (l, sk, compact, b, factor, u_compact), ==, CKKS_OK);
      g_assert_cmpmem (u_full, r * 8, u_compact, r * 8);
      double ref[7];
      he_test_plain_product (a, h, d, r, ref);
      g_assert_cmpfloat (he_test_max_abs_diff (u_compact, ref, r), <=, 1e-6);
      size_t len = ckks_helora_result_serialized_size (l);
      uint8_t *x = g_malloc (len), *y = g_malloc (len);
      for (size_t i = 0; i < b; i++)
        {
          g_assert_cmpint (ckks_helora_result_serialize (l, full[i], x, len), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_result_serialize (l, compact[i], y, len), ==, CKKS_OK);
          g_assert_cmpmem (x, len, y, len);
        }
      g_free (x); g_free (y);
      ckks_helora_ciphertexts_free (in, k);
      ckks_helora_ciphertexts_free (full, b);
      ckks_helora_ciphertexts_free (compact, b);
      ckks_helora_plan_free (plan);
      g_free (a); g_free (h);
    }
  /* layouts decoded in full have no compact evaluation */
  float tiny_a[2 * 3] = { 0.1f };
  CkksHeloraPlan *tiny;
  CkksCiphertext **in, **out;
  g_assert_cmpint (ckks_helora_plan_new (ctx, 3, 2, tiny_a, &tiny), ==, CKKS_OK);
  const CkksHeloraLayout *tl = ckks_helora_plan_layout (tiny);
  g_assert_cmpint (ckks_helora_ciphertexts_new (tl, 1, &in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (tl, 1, &out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_evaluate_compact (tiny, in, 1, out, 1), ==, CKKS_ERR_UNSUPPORTED);
  ckks_helora_ciphertexts_free (in, 1);
  ckks_helora_ciphertexts_free (out, 1);
  ckks_helora_plan_free (tiny);
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
}

/* The complex packing (two rows of A per copy) against a double-precision
 * schoolbook A h: half the results of the real packing, u as precise
 * (relative to max|A| max|h| d), the compact and full evaluations alike,
 * for the real model's width (d = 896, r = 16), an odd rank, and h in
 * several chunks, on the compact (N = 4096), fast and default rings;
 * refused where the layout decodes in full (d = 3: over 64 copies) or for
 * the private scales. */
static void
test_complex_packing (void)
{
  const char *presets[] = { CKKS_PRESET_COMPACT, "fast", "default" };
  const size_t ds[] = { 896, 2048, 20000 }, rs[] = { 16, 7, 5 };
  for (size_t pi = 0; pi < G_N_ELEMENTS (presets); pi++)
    {
      CkksContext *ctx = he_test_context (presets[pi], CKKS_BACKEND_AUTO);
      CkksSecretKey *sk;
      g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
      for (size_t di = 0; di < G_N_ELEMENTS (ds); di++)
        {
          size_t d = ds[di], r = rs[di];
          float *a = he_test_random_floats (rng, r * d, 0.1), *h = he_test_random_floats (rng, d, 3.0);
          CkksHeloraPlan *plan, *real_plan;
          g_assert_cmpint (ckks_helora_plan_new_packed (ctx, d, r, a, CKKS_HELORA_SCALES_PLAIN,
                                                        CKKS_HELORA_PACKING_COMPLEX, &plan), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &real_plan), ==, CKKS_OK);
          const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
          const CkksHeloraLayout *rl = ckks_helora_plan_layout (real_plan);
          size_t k = ckks_helora_layout_n_inputs (l), b = ckks_helora_layout_n_outputs (l);
          size_t c = ckks_helora_layout_copies (l);
          g_assert_cmpint (ckks_helora_layout_packing (l), ==, CKKS_HELORA_PACKING_COMPLEX);
          g_assert_cmpuint (b, ==, (r + 2 * c - 1) / (2 * c));
          g_assert_cmpuint (ckks_helora_layout_n_outputs (rl), ==, (r + c - 1) / c);
          CkksCiphertext **in, **full, **compact;
          double factor, u_full[16], u_compact[16], u_real[16], ref[16];
          g_assert_cmpint (ckks_helora_ciphertexts_new (l, k, &in), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_ciphertexts_new (rl, ckks_helora_layout_n_outputs (rl), &full),
                           ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &compact), ==, CKKS_OK);
          /* the same input ciphertexts serve both packings */
          g_assert_cmpint (ckks_helora_encrypt_sk (rl, sk, h, in, k, &factor), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_evaluate (real_plan, in, k, full,
                                                 ckks_helora_layout_n_outputs (rl)), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_decrypt (rl, sk, full, ckks_helora_layout_n_outputs (rl),
                                                factor, u_real), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_evaluate (plan, in, k, full, b), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_evaluate_compact (plan, in, k, compact, b), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_decrypt (l, sk, full, b, factor, u_full), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_decrypt (l, sk, compact, b, factor, u_compact), ==, CKKS_OK);
          g_assert_cmpmem (u_full, r * 8, u_compact, r * 8);
          he_test_plain_product (a, h, d, r, ref);
          double amax = 0, hmax = 0;
          for (size_t i = 0; i < r * d; i++)
            amax = fmax (amax, fabs (a[i]));
          for (size_t j = 0; j < d; j++)
            hmax = fmax (hmax, fabs (h[j]));
          double bound = amax * hmax * (double) d;
          double err = he_test_max_abs_diff (u_compact, ref, r) / bound;
          double err_real = he_test_max_abs_diff (u_real, ref, r) / bound;
          g_test_message ("%s d=%zu r=%zu: relative error complex %.2e, real %.2e", presets[pi], d,
                          r, err, err_real);
          /* both ~1e-14 here: CKKS noise far below the float inputs' own */
          g_assert_cmpfloat (err, <=, 1e-12);
          g_assert_cmpfloat (err_real, <=, 1e-12);
          ckks_helora_ciphertexts_free (in, k);
          ckks_helora_ciphertexts_free (full, ckks_helora_layout_n_outputs (rl));
          ckks_helora_ciphertexts_free (compact, b);
          ckks_helora_plan_free (plan);
          ckks_helora_plan_free (real_plan);
          g_free (a); g_free (h);
        }
      CkksHeloraLayout *refused = NULL;
      g_assert_cmpint (ckks_helora_layout_new_packed (ctx, 3, 4, CKKS_HELORA_SCALES_PLAIN,
                                                      CKKS_HELORA_PACKING_COMPLEX, &refused),
                       ==, CKKS_ERR_UNSUPPORTED);
      g_assert_cmpint (ckks_helora_layout_new_packed (ctx, 896, 4, CKKS_HELORA_SCALES_PRIVACY,
                                                      CKKS_HELORA_PACKING_COMPLEX, &refused),
                       ==, CKKS_ERR_UNSUPPORTED);
      g_assert_cmpint (ckks_helora_layout_new_packed (ctx, 896, 4, CKKS_HELORA_SCALES_PLAIN,
                                                      (CkksHeloraPacking) 7, &refused),
                       ==, CKKS_ERR_INVALID_ARGUMENT);
      g_assert_null (refused);
      ckks_secret_key_free (sk);
      ckks_context_free (ctx);
    }
}

/* Results [first, first + count) of one token, evaluated and decrypted on a
 * thread of their own. */
typedef struct {
  const CkksHeloraPlan *plan;
  const CkksSecretKey *sk;
  CkksCiphertext **in, **out;
  size_t first, count;
  double factor, *u;
} PartJob;

static gpointer
run_part_job (gpointer data)
{
  PartJob *job = data;
  const CkksHeloraLayout *l = ckks_helora_plan_layout (job->plan);
  size_t k = ckks_helora_layout_n_inputs (l), b = ckks_helora_layout_n_outputs (l);
  g_assert_cmpint (ckks_helora_evaluate_part (job->plan, job->in, k, job->out, b, job->first,
                                              job->count), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_decrypt_part (l, job->sk, job->out, b, job->first, job->count,
                                             job->factor, job->u), ==, CKKS_OK);
  return NULL;
}

/* Disjoint parts of the results, each evaluated and decrypted on its own
 * thread, give u bit for bit as one whole evaluation and decryption, for
 * trace-decrypted (d = 896, the real model's width) and fully decoded
 * (d = 20: 128 copies) layouts; a part past B is refused. */
static void
test_parts_match_whole (void)
{
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  const size_t ds[] = { 896, 20 }, rs[] = { 16, 200 };
  for (size_t di = 0; di < G_N_ELEMENTS (ds); di++)
    {
      size_t d = ds[di], r = rs[di];
      float *a = he_test_random_floats (rng, r * d, 0.1), *h = he_test_random_floats (rng, d, 1.0);
      CkksHeloraPlan *plan;
      g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
      const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
      size_t k = ckks_helora_layout_n_inputs (l), b = ckks_helora_layout_n_outputs (l);
      g_assert_cmpuint (b, >=, 2);
      CkksCiphertext **in, **whole, **parts;
      double factor, u_whole[200], u_parts[200], ref[200];
      g_assert_cmpint (ckks_helora_ciphertexts_new (l, k, &in), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &whole), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &parts), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_encrypt_sk (l, sk, h, in, k, &factor), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_evaluate (plan, in, k, whole, b), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_decrypt (l, sk, whole, b, factor, u_whole), ==, CKKS_OK);
      PartJob jobs[2] = {
        { plan, sk, in, parts, 0, b / 2, factor, u_parts },
        { plan, sk, in, parts, b / 2, b - b / 2, factor, u_parts },
      };
      GThread *other = g_thread_new ("part", run_part_job, &jobs[1]);
      run_part_job (&jobs[0]);
      g_thread_join (other);
      g_assert_cmpmem (u_whole, r * 8, u_parts, r * 8);
      he_test_plain_product (a, h, d, r, ref);
      g_assert_cmpfloat (he_test_max_abs_diff (u_parts, ref, r), <=, 1e-6);
      g_assert_cmpint (ckks_helora_evaluate_part (plan, in, k, parts, b, b, 1), ==,
                       CKKS_ERR_INVALID_ARGUMENT);
      g_assert_cmpint (ckks_helora_evaluate_part (plan, in, k, parts, b, 1, b), ==,
                       CKKS_ERR_INVALID_ARGUMENT);
      g_assert_cmpint (ckks_helora_decrypt_part (l, sk, parts, b, b - 1, 2, factor, u_parts), ==,
                       CKKS_ERR_INVALID_ARGUMENT);
      g_assert_cmpint (ckks_helora_evaluate_part (plan, in, k, parts, b, b, 0), ==, CKKS_OK);
      ckks_helora_ciphertexts_free (in, k);
      ckks_helora_ciphertexts_free (whole, b);
      ckks_helora_ciphertexts_free (parts, b);
      ckks_helora_plan_free (plan);
      g_free (a); g_free (h);
    }
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
}

/* The SIMD evaluation equals the scalar one bit for bit on the same input. */
static void
test_evaluate_simd_matches_scalar (void)
{
  CkksContext *ref = he_test_context ("default", CKKS_BACKEND_SCALAR);
  CkksContext *fast = he_test_context ("default", CKKS_BACKEND_AUTO);
  if (strcmp (ckks_context_backend_name (fast), "scalar") == 0)
    {
      g_test_skip ("no SIMD backend on this CPU");
      ckks_context_free (ref);
      ckks_context_free (fast);
      return;
    }
  const size_t d = 2048, r = 32;
  float *a = he_test_random_floats (rng, r * d, 0.1), *h = he_test_random_floats (rng, d, 1.0);
  CkksSecretKey *sk;
  CkksHeloraPlan *plan_ref, *plan_fast;
  g_assert_cmpint (ckks_secret_key_new (ref, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (ref, d, r, a, &plan_ref), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (fast, d, r, a, &plan_fast), ==, CKKS_OK);
  const CkksHeloraLayout *lr = ckks_helora_plan_layout (plan_ref);
  const CkksHeloraLayout *lf = ckks_helora_plan_layout (plan_fast);
  size_t b = ckks_helora_layout_n_outputs (lr);
  CkksCiphertext **in_ref, **in_fast, **out_ref, **out_fast;
  double factor;
  g_assert_cmpint (ckks_helora_ciphertexts_new (lr, 1, &in_ref), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (lf, 1, &in_fast), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (lr, b, &out_ref), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (lf, b, &out_fast), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_encrypt_sk (lr, sk, h, in_ref, ckks_helora_layout_n_inputs (lr), &factor), ==, CKKS_OK);
  size_t words = (size_t) ckks_helora_layout_limbs (lr) * ckks_context_ring_degree (ref);
  memcpy (in_fast[0]->c0, in_ref[0]->c0, words * 8);
  memcpy (in_fast[0]->c1, in_ref[0]->c1, words * 8);
  in_fast[0]->scale = in_ref[0]->scale;
  g_assert_cmpint (evaluate_all (plan_ref, in_ref, out_ref), ==, CKKS_OK);
  g_assert_cmpint (evaluate_all (plan_fast, in_fast, out_fast), ==, CKKS_OK);
  for (size_t i = 0; i < b; i++)
    {
      g_assert_cmpmem (out_ref[i]->c0, words * 8, out_fast[i]->c0, words * 8);
      g_assert_cmpmem (out_ref[i]->c1, words * 8, out_fast[i]->c1, words * 8);
    }
  ckks_helora_ciphertexts_free (in_ref, 1);
  ckks_helora_ciphertexts_free (in_fast, 1);
  ckks_helora_ciphertexts_free (out_ref, b);
  ckks_helora_ciphertexts_free (out_fast, b);
  ckks_helora_plan_free (plan_ref);
  ckks_helora_plan_free (plan_fast);
  ckks_secret_key_free (sk);
  g_free (a); g_free (h);
  ckks_context_free (ref);
  ckks_context_free (fast);
}

/* One copy of the ciphertexts @src (context A) in @dst (context B, same
 * parameters, another backend). */
static void
copy_ciphertexts (CkksCiphertext *const *src, CkksCiphertext *const *dst, size_t count,
                  size_t words)
{
  for (size_t i = 0; i < count; i++)
    {
      memcpy (dst[i]->c0, src[i]->c0, words * 8);
      memcpy (dst[i]->c1, src[i]->c1, words * 8);
      dst[i]->scale = src[i]->scale;
    }
}

/* The AVX2 backend end to end against the scalar one, at every preset, on
 * one secret key: the same ciphertexts evaluate to the same bits, decrypt
 * to the same doubles, and what either side encrypts (sk and pk) decrypts
 * identically on both. */
static void
test_avx2_end_to_end (void)
{
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksParams p;
      CkksContext *ref = he_test_context (*name, CKKS_BACKEND_SCALAR), *vec = NULL;
      g_assert_cmpint (ckks_params_preset (*name, &p), ==, CKKS_OK);
      CkksStatus st = ckks_context_new_with_backend (&p, CKKS_BACKEND_AVX2, &vec);
      if (st == CKKS_ERR_UNSUPPORTED)
        {
          g_test_skip ("no AVX2 and FMA on this CPU");
          ckks_context_free (ref);
          return;
        }
      g_assert_cmpint (st, ==, CKKS_OK);
      g_assert_cmpstr (ckks_context_backend_name (vec), ==, "avx2");
      size_t n = ckks_context_ring_degree (ref);
      int8_t *c_ref = ckks_alloc (n), *c_vec = ckks_alloc (n);
      for (size_t i = 0; i < n; i++)
        c_ref[i] = c_vec[i] = (int8_t) g_rand_int_range (rng, -1, 2);
      CkksSecretKey *sk_ref, *sk_vec;
      CkksPublicKey *pk_vec;
      g_assert_cmpint (ckks_secret_key_from_coeffs (ref, c_ref, &sk_ref), ==, CKKS_OK);
      g_assert_cmpint (ckks_secret_key_from_coeffs (vec, c_vec, &sk_vec), ==, CKKS_OK);
      g_assert_cmpint (ckks_public_key_new (sk_vec, &pk_vec), ==, CKKS_OK);
      const size_t d = 3000, r = 7;
      float *a = he_test_random_floats (rng, r * d, 0.1), *h = he_test_random_floats (rng, d, 1.0);
      CkksHeloraPlan *plan_ref, *plan_vec;
      g_assert_cmpint (ckks_helora_plan_new (ref, d, r, a, &plan_ref), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_plan_new (vec, d, r, a, &plan_vec), ==, CKKS_OK);
      const CkksHeloraLayout *lr = ckks_helora_plan_layout (plan_ref);
      const CkksHeloraLayout *lv = ckks_helora_plan_layout (plan_vec);
      size_t k = ckks_helora_layout_n_inputs (lr), b = ckks_helora_layout_n_outputs (lr);
      size_t words = (size_t) ckks_helora_layout_limbs (lr) * n;
      CkksCiphertext **in_ref, **in_vec, **out_ref, **out_vec;
      g_assert_cmpint (ckks_helora_ciphertexts_new (lr, k, &in_ref), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_ciphertexts_new (lv, k, &in_vec), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_ciphertexts_new (lr, b, &out_ref), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_ciphertexts_new (lv, b, &out_vec), ==, CKKS_OK);
      double *ref_u = g_new (double, r), *u_ref = g_new (double, r), *u_vec = g_new (double, r);
      he_test_plain_product (a, h, d, r, ref_u);
      /* encrypted by the scalar side (sk), the AVX2 side (sk), the AVX2 side (pk) */
      for (int source = 0; source < 3; source++)
        {
          double factor;
          if (source == 0)
            g_assert_cmpint (ckks_helora_encrypt_sk (lr, sk_ref, h, in_ref, k, &factor), ==, CKKS_OK);
          else if (source == 1)
            g_assert_cmpint (ckks_helora_encrypt_sk (lv, sk_vec, h, in_vec, k, &factor), ==, CKKS_OK);
          else
            g_assert_cmpint (ckks_helora_encrypt_pk (lv, pk_vec, h, in_vec, k, &factor), ==, CKKS_OK);
          if (source == 0)
            copy_ciphertexts (in_ref, in_vec, k, words);
          else
            copy_ciphertexts (in_vec, in_ref, k, words);
          g_assert_cmpint (evaluate_all (plan_ref, in_ref, out_ref), ==, CKKS_OK);
          g_assert_cmpint (evaluate_all (plan_vec, in_vec, out_vec), ==, CKKS_OK);
          for (size_t i = 0; i < b; i++)
            {
              g_assert_cmpmem (out_ref[i]->c0, words * 8, out_vec[i]->c0, words * 8);
              g_assert_cmpmem (out_ref[i]->c1, words * 8, out_vec[i]->c1, words * 8);
            }
          g_assert_cmpint (ckks_helora_decrypt (lr, sk_ref, out_ref, b, factor, u_ref), ==, CKKS_OK);
          g_assert_cmpint (ckks_helora_decrypt (lv, sk_vec, out_vec, b, factor, u_vec), ==, CKKS_OK);
          g_assert_cmpmem (u_ref, r * 8, u_vec, r * 8);
          g_assert_cmpfloat (he_test_max_abs_diff (u_vec, ref_u, r), <=, 1e-6);
        }
      g_free (ref_u); g_free (u_ref); g_free (u_vec);
      ckks_helora_ciphertexts_free (in_ref, k);
      ckks_helora_ciphertexts_free (in_vec, k);
      ckks_helora_ciphertexts_free (out_ref, b);
      ckks_helora_ciphertexts_free (out_vec, b);
      ckks_helora_plan_free (plan_ref);
      ckks_helora_plan_free (plan_vec);
      g_free (a); g_free (h);
      ckks_public_key_free (pk_vec);
      ckks_secret_key_free (sk_ref);
      ckks_secret_key_free (sk_vec);
      ckks_context_free (ref);
      ckks_context_free (vec);
    }
}

/* One context, key and plan shared by several threads, each with its own
 * ciphertexts: every thread gets the right product. */
typedef struct {
  const CkksHeloraPlan *plan;
  const CkksSecretKey *sk;
  const float *a, *h;
  double err;
} ThreadJob;

static gpointer
thread_product (gpointer data)
{
  ThreadJob *job = data;
  const CkksHeloraLayout *l = ckks_helora_plan_layout (job->plan);
  size_t d = ckks_helora_layout_d (l), r = ckks_helora_layout_r (l);
  CkksCiphertext **in, **out;
  double factor, *u = g_new (double, r), *ref = g_new (double, r);
  job->err = INFINITY;
  if (ckks_helora_ciphertexts_new (l, 1, &in) != CKKS_OK
      || ckks_helora_ciphertexts_new (l, ckks_helora_layout_n_outputs (l), &out) != CKKS_OK)
    return NULL;
  for (int round = 0; round < 3; round++)
    if (ckks_helora_encrypt_sk (l, job->sk, job->h, in, 1, &factor) != CKKS_OK
        || evaluate_all (job->plan, in, out) != CKKS_OK
        || ckks_helora_decrypt (l, job->sk, out, ckks_helora_layout_n_outputs (l), factor, u) != CKKS_OK)
      return NULL;
  he_test_plain_product (job->a, job->h, d, r, ref);
  job->err = he_test_max_abs_diff (u, ref, r);
  ckks_helora_ciphertexts_free (in, 1);
  ckks_helora_ciphertexts_free (out, ckks_helora_layout_n_outputs (l));
  g_free (u); g_free (ref);
  return NULL;
}

static void
test_threads_share_plan (void)
{
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  CkksHeloraPlan *plan;
  const size_t d = 2048, r = 32;
  float *a = he_test_random_floats (rng, r * d, 0.1);
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
  ThreadJob jobs[4];
  GThread *threads[4];
  float *hs[4];
  for (int i = 0; i < 4; i++)
    {
      hs[i] = he_test_random_floats (rng, d, 1.0);
      jobs[i] = (ThreadJob) { plan, sk, a, hs[i], INFINITY };
      threads[i] = g_thread_new ("helora", thread_product, &jobs[i]);
    }
  for (int i = 0; i < 4; i++)
    {
      g_thread_join (threads[i]);
      g_assert_cmpfloat (jobs[i].err, <=, 1e-6);
      g_free (hs[i]);
    }
  ckks_helora_plan_free (plan);
  ckks_secret_key_free (sk);
  g_free (a);
  ckks_context_free (ctx);
}

static void
test_bad_arguments (void)
{
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  CkksHeloraLayout *l;
  CkksHeloraPlan *plan;
  float bad[4] = { 0, NAN, 0, 0 };
  g_assert_cmpint (ckks_helora_layout_new (ctx, 0, 4, &l), ==, CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_helora_layout_new (ctx, 4, 0, &l), ==, CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_helora_plan_new (ctx, 2, 2, bad, &plan), ==, CKKS_ERR_INVALID_ARGUMENT);
  /* counts that do not match the layout */
  float a[2 * 64] = { 0.5f };
  CkksCiphertext **in, **out;
  double factor, u[2];
  const float h[64] = { 1.0f };
  CkksSecretKey *sk;
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (ctx, 64, 2, a, &plan), ==, CKKS_OK);
  const CkksHeloraLayout *pl = ckks_helora_plan_layout (plan);
  g_assert_cmpint (ckks_helora_ciphertexts_new (pl, 2, &in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (pl, 2, &out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_encrypt_sk (pl, sk, h, in, 2, &factor), ==, CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_helora_encrypt_sk (pl, sk, h, in, 1, &factor), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_evaluate (plan, in, 1, out, 2), ==, CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_helora_evaluate (plan, in, 1, out, 1), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_decrypt (pl, sk, out, 0, factor, u), ==, CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_helora_decrypt (pl, sk, out, 1, factor, u), ==, CKKS_OK);
  g_assert_cmpfloat (fabs (u[0] - 0.5), <, 1e-9);
  ckks_helora_ciphertexts_free (in, 2);
  ckks_helora_ciphertexts_free (out, 2);
  ckks_helora_plan_free (plan);
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  rng = he_test_rng_new ();
  g_test_add_func ("/he/helora/presets", test_product_presets);
  g_test_add_func ("/he/helora/shapes", test_product_shapes);
  g_test_add_func ("/he/helora/zeros", test_product_zeros);
  g_test_add_func ("/he/helora/extremes", test_product_extremes);
  g_test_add_func ("/he/helora/trace-matches-decode", test_trace_matches_decode);
  g_test_add_func ("/he/helora/simd-matches-scalar", test_evaluate_simd_matches_scalar);
  g_test_add_func ("/he/helora/avx2-end-to-end", test_avx2_end_to_end);
  g_test_add_func ("/he/helora/compact-matches-full", test_compact_matches_full);
  g_test_add_func ("/he/helora/parts-match-whole", test_parts_match_whole);
  g_test_add_func ("/he/helora/complex-packing", test_complex_packing);
  g_test_add_func ("/he/helora/bad-arguments", test_bad_arguments);
  g_test_add_func ("/he/helora/threads", test_threads_share_plan);
  int rc = g_test_run ();
  g_rand_free (rng);
  return rc;
}
