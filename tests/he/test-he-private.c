/* test-he-private.c: adapter-private HE-LoRA results -- masks hide every
 * product while segment sums survive, flooding costs what the model says,
 * DP noise lands on the segment sums, c1 no longer reveals A.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ckks-objects.h"
#include "ckks-private.h"
#include "ckks.h"
#include "ckks-helora-compat.h"
#include "he-test-common.h"

#define D 512
#define R 32

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  CkksPublicKey *pk;
  CkksHeloraLayout *lay;
  CkksHeloraPlan *plan;
  CkksCiphertext **in, **out;
  size_t k, b;
  float a[R * D], h[D];
  double factor;
  double u_plain[R];     /* A·h in double */
} Token;

static void
token_setup (Token *t, GRand *rng)
{
  CkksParams p;
  g_assert_cmpint (ckks_params_preset ("fast", &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new (&p, &t->ctx), ==, CKKS_OK);
  g_assert_cmpint (ckks_secret_key_new (t->ctx, &t->sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_public_key_new (t->sk, &t->pk), ==, CKKS_OK);
  for (size_t i = 0; i < R * D; i++)
    t->a[i] = (float) g_rand_double_range (rng, -0.05, 0.05);
  for (size_t j = 0; j < D; j++)
    t->h[j] = (float) g_rand_double_range (rng, -3.0, 3.0);
  for (size_t i = 0; i < R; i++)
    {
      t->u_plain[i] = 0.0;
      for (size_t j = 0; j < D; j++)
        t->u_plain[i] += (double) t->a[i * D + j] * t->h[j];
    }
  g_assert_cmpint (ckks_helora_layout_new (t->ctx, D, R, &t->lay), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (t->ctx, D, R, t->a, &t->plan), ==, CKKS_OK);
  t->k = ckks_helora_layout_n_inputs (t->lay);
  t->b = ckks_helora_layout_n_outputs (t->lay);
  g_assert_cmpint (ckks_helora_ciphertexts_new (t->lay, t->k, &t->in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (t->lay, t->b, &t->out), ==, CKKS_OK);
}

/* A fresh encryption of h and its evaluation into t->out. */
static void
token_run (Token *t)
{
  g_assert_cmpint (he_compat_encrypt_sk (t->lay, t->sk, t->h, t->in, t->k, &t->factor), ==,
                   CKKS_OK);
  g_assert_cmpint (he_compat_evaluate (t->plan, t->in, t->k, t->out, t->b), ==, CKKS_OK);
}

static void
token_decrypt (Token *t, double *u)
{
  g_assert_cmpint (he_compat_decrypt (t->lay, t->sk, t->out, t->b, t->factor, u), ==, CKKS_OK);
}

static void
token_free (Token *t)
{
  ckks_helora_ciphertexts_free (t->in, t->k);
  ckks_helora_ciphertexts_free (t->out, t->b);
  ckks_helora_plan_free (t->plan);
  ckks_helora_layout_free (t->lay);
  ckks_public_key_free (t->pk);
  ckks_secret_key_free (t->sk);
  ckks_context_free (t->ctx);
}

/* Pearson correlation of every decrypted slot of every result with the
 * product h_j·A_ij it holds in the plain evaluation (0 for padding slots). */
static double
slot_correlation (Token *t)
{
  size_t slots = ckks_context_slots (t->ctx), c = ckks_helora_layout_copies (t->lay);
  g_autofree double *re = g_new (double, slots);
  double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0, n = 0;
  CkksPlaintext *pt = NULL;
  g_assert_cmpint (ckks_plaintext_new (t->ctx, ckks_helora_layout_limbs (t->lay), &pt), ==, CKKS_OK);
  for (size_t b = 0; b < t->b; b++)
    {
      g_assert_cmpint (ckks_decrypt (t->sk, t->out[b], pt), ==, CKKS_OK);
      g_assert_cmpint (ckks_decode (pt, re, NULL, slots), ==, CKKS_OK);
      for (size_t s = 0; s < slots; s++)
        {
          size_t copy = s % c, j = s / c, row = b * c + copy;
          double x = row < R && j < D ? t->a[row * D + j] * (double) t->h[j] / t->factor : 0.0;
          double y = re[s];
          sx += x, sy += y, sxx += x * x, syy += y * y, sxy += x * y, n++;
        }
    }
  ckks_plaintext_free (pt);
  double cov = sxy / n - sx / n * sy / n;
  return cov / sqrt ((sxx / n - sx / n * sx / n) * (syy / n - sy / n * sy / n));
}

static double
u_error (const Token *t, const double *u)
{
  return he_test_max_abs_diff (u, t->u_plain, R);
}

/* Plain results show every product (correlation 1); masked and
 * re-randomised ones show none (|corr| ~ 1/sqrt(slots)), and u is the same. */
static void
test_masks_hide_products (void)
{
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token t;
  token_setup (&t, rng);
  double u[R];
  for (int trial = 0; trial < 6; trial++)
    {
      token_run (&t);
      double bound = 1e-6 * t.factor * 0.05 * D;
      g_assert_cmpfloat (slot_correlation (&t), >, 0.9999);
      token_decrypt (&t, u);
      double plain_err = u_error (&t, u);
      g_assert_cmpfloat (plain_err, <, bound);
      CkksCiphertext *zero = NULL;
      g_assert_cmpint (ckks_private_zero_new (t.lay, t.pk, 0, &zero), ==, CKKS_OK);
      for (size_t b = 0; b < t.b; b++)
        g_assert_cmpint (ckks_private_add_zero (t.out[b], zero), ==, CKKS_OK);
      ckks_ciphertext_free (zero);
      g_assert_cmpint (ckks_private_mask (t.lay, t.out, t.b), ==, CKKS_OK);
      double corr = slot_correlation (&t);
      g_test_message ("trial %d: |corr| masked %.4f; u error plain %.3g", trial, fabs (corr),
                      plain_err);
      g_assert_cmpfloat (fabs (corr), <, 5.0 / sqrt ((double) ckks_context_slots (t.ctx) * t.b));
      token_decrypt (&t, u);
      g_assert_cmpfloat (u_error (&t, u), <, bound);
    }
  g_assert_cmpint (ckks_private_mask (t.lay, t.out, t.b + 1), ==, CKKS_ERR_INVALID_ARGUMENT);
  token_free (&t);
}

/* Without re-randomisation, out.c1 / in.c1 (NTT values, mod q_0) is the same
 * for every token: the encoded A itself. With it, the ratio changes. */
static void
test_rerandomisation_hides_c1 (void)
{
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token t;
  token_setup (&t, rng);
  uint64_t q = t.ctx->ntt[0].mod.q;
  uint64_t ratio[2][4];
  for (int run = 0; run < 2; run++)
    {
      token_run (&t);
      for (size_t k = 0; k < 4; k++)
        {
          /* ratio = out / in mod q by Fermat's little theorem */
          unsigned __int128 inv = 1, base = t.in[0]->c1[k];
          for (uint64_t e = q - 2; e; e >>= 1, base = base * base % q)
            if (e & 1)
              inv = inv * base % q;
          ratio[run][k] = (uint64_t) ((unsigned __int128) t.out[0]->c1[k] * inv % q);
        }
    }
  g_assert_cmpmem (ratio[0], sizeof ratio[0], ratio[1], sizeof ratio[1]);   /* the leak */
  CkksCiphertext *zero = NULL;
  g_assert_cmpint (ckks_private_zero_new (t.lay, t.pk, 0, &zero), ==, CKKS_OK);
  g_assert_cmpint (ckks_private_add_zero (t.out[0], zero), ==, CKKS_OK);
  ckks_ciphertext_free (zero);
  unsigned same = 0;
  for (size_t k = 0; k < 4; k++)
    {
      unsigned __int128 inv = 1, base = t.in[0]->c1[k];
      for (uint64_t e = q - 2; e; e >>= 1, base = base * base % q)
        if (e & 1)
          inv = inv * base % q;
      same += (uint64_t) ((unsigned __int128) t.out[0]->c1[k] * inv % q) == ratio[0][k];
    }
  g_assert_cmpuint (same, ==, 0);
  token_free (&t);
}

/* The flooding error of a segment sum has the predicted standard deviation;
 * too much flooding for the modulus is refused. */
static void
test_flooding_precision (void)
{
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token t;
  token_setup (&t, rng);
  static const unsigned lambdas[] = { 12, 20 };
  for (size_t li = 0; li < G_N_ELEMENTS (lambdas); li++)
    {
      double sum_sq = 0.0, u[R];
      int n = 0;
      for (int trial = 0; trial < 8; trial++)
        {
          token_run (&t);
          for (size_t b = 0; b < t.b; b++)
            {
              CkksCiphertext *zero = NULL;
              g_assert_cmpint (ckks_private_zero_new (t.lay, t.pk, lambdas[li], &zero), ==, CKKS_OK);
              g_assert_cmpint (ckks_private_add_zero (t.out[b], zero), ==, CKKS_OK);
              ckks_ciphertext_free (zero);
            }
          token_decrypt (&t, u);
          for (size_t i = 0; i < R; i++, n++)
            sum_sq += pow ((u[i] - t.u_plain[i]) / t.factor, 2);
        }
      double measured = sqrt (sum_sq / n);
      double predicted = ckks_private_flood_stddev (t.lay, lambdas[li],
                                                    ckks_ciphertext_scale (t.out[0]));
      g_test_message ("lambda_s %u: flood 2^%.0f, segment-sum error sd %.3g (predicted %.3g)",
                      lambdas[li], ckks_private_flood_bits (t.lay, lambdas[li]), measured,
                      predicted);
      g_assert_cmpfloat (measured, >, 0.7 * predicted);
      g_assert_cmpfloat (measured, <, 1.3 * predicted);
    }
  CkksCiphertext *zero = NULL;
  g_assert_cmpint (ckks_private_zero_new (t.lay, t.pk, 40, &zero), ==, CKKS_ERR_SCALE);
  g_assert_null (zero);
  token_free (&t);
}

/* Noise added to the segment sums comes out in u (times max|h|). */
static void
test_segment_noise (void)
{
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token t;
  token_setup (&t, rng);
  double noise[R], u[R];
  g_assert_cmpint (ckks_private_gaussian (0.01, noise, R), ==, CKKS_OK);
  token_run (&t);
  g_assert_cmpint (ckks_private_mask (t.lay, t.out, t.b), ==, CKKS_OK);
  g_assert_cmpint (ckks_private_add_segment_noise (t.lay, t.out, t.b, noise), ==, CKKS_OK);
  token_decrypt (&t, u);
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs (u[i] - t.u_plain[i] - noise[i] * t.factor), <,
                       1e-6 * t.factor * 0.05 * D);
  token_free (&t);
}

/* The offline pads plus the online pass: products hidden, u = A·h + noise
 * within the flooding error the model predicts. */
static void
test_pads_apply (void)
{
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token t;
  token_setup (&t, rng);
  double noise[R], u[R];
  g_assert_cmpint (ckks_private_gaussian (0.02, noise, R), ==, CKKS_OK);
  g_autofree CkksCiphertext **pads = g_new0 (CkksCiphertext *, t.b);
  for (size_t b = 0; b < t.b; b++)
    g_assert_cmpint (ckks_private_pad_new (t.lay, t.pk, 16, &pads[b]), ==, CKKS_OK);
  token_run (&t);
  g_assert_cmpint (ckks_private_apply (t.lay, t.out, t.b, pads, noise), ==, CKKS_OK);
  g_assert_cmpfloat (fabs (slot_correlation (&t)), <, 5.0 / sqrt ((double) ckks_context_slots (t.ctx) * t.b));
  token_decrypt (&t, u);
  double sd = ckks_private_flood_stddev (t.lay, 16, ckks_ciphertext_scale (t.out[0]));
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs ((u[i] - t.u_plain[i]) / t.factor - noise[i]), <, 6.0 * sd);
  g_assert_cmpint (ckks_private_apply (t.lay, t.out, t.b - 1, pads, noise), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  for (size_t b = 0; b < t.b; b++)
    ckks_ciphertext_free (pads[b]);
  token_free (&t);
}

/* The sampler: mean 0, standard deviation sigma. */
static void
test_gaussian (void)
{
  enum { N = 40000 };
  g_autofree double *x = g_new (double, N);
  g_assert_cmpint (ckks_private_gaussian (2.5, x, N), ==, CKKS_OK);
  double s = 0, ss = 0;
  for (size_t i = 0; i < N; i++)
    s += x[i], ss += x[i] * x[i];
  double mean = s / N, sd = sqrt (ss / N - mean * mean);
  g_assert_cmpfloat (fabs (mean), <, 5 * 2.5 / sqrt (N));
  g_assert_cmpfloat (fabs (sd - 2.5), <, 0.05);
  g_assert_cmpint (ckks_private_gaussian (-1.0, x, 1), ==, CKKS_ERR_INVALID_ARGUMENT);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he-private/masks-hide-products", test_masks_hide_products);
  g_test_add_func ("/he-private/rerandomisation-hides-c1", test_rerandomisation_hides_c1);
  g_test_add_func ("/he-private/flooding-precision", test_flooding_precision);
  g_test_add_func ("/he-private/segment-noise", test_segment_noise);
  g_test_add_func ("/he-private/pads-apply", test_pads_apply);
  g_test_add_func ("/he-private/gaussian", test_gaussian);
  return g_test_run ();
}
