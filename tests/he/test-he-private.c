/* test-he-private.c: adapter-private HE-LoRA results -- masks hide every
 * product while segment sums survive, flooding costs what the model says,
 * DP noise lands on the segment sums, c1 no longer reveals A.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ckks-objects.h"
#include "ckks-privacy-pad.h"
#include "ckks-privacy.h"
#include "ckks.h"
#include "he-private-token.h"
#include "he-test-common.h"

/* the mode's default statistical security, on the private layout */
#define LAMBDA CKKS_PRIVACY_DEFAULT_LAMBDA

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
      g_assert_cmpint (ckks_privacy_zero_new (t.lay, t.pk, 0, &zero), ==, CKKS_OK);
      for (size_t b = 0; b < t.b; b++)
        g_assert_cmpint (ckks_privacy_add_zero (t.out[b], zero), ==, CKKS_OK);
      ckks_ciphertext_free (zero);
      g_assert_cmpint (ckks_privacy_mask (t.lay, t.out, t.b), ==, CKKS_OK);
      double corr = slot_correlation (&t);
      g_test_message ("trial %d: |corr| masked %.4f; u error plain %.3g", trial, fabs (corr),
                      plain_err);
      g_assert_cmpfloat (fabs (corr), <, 5.0 / sqrt ((double) ckks_context_slots (t.ctx) * t.b));
      token_decrypt (&t, u);
      g_assert_cmpfloat (u_error (&t, u), <, bound);
    }
  g_assert_cmpint (ckks_privacy_mask (t.lay, t.out, t.b + 1), ==, CKKS_ERR_INVALID_ARGUMENT);
  token_free (&t);
}

/* out.c1[k] / in.c1[k] mod q (Fermat's little theorem for the inverse). */
static uint64_t
c1_ratio (const Token *t, size_t k, uint64_t q)
{
  unsigned __int128 inv = 1, base = t->in[0]->c1[k];
  for (uint64_t e = q - 2; e; e >>= 1, base = base * base % q)
    if (e & 1)
      inv = inv * base % q;
  return (uint64_t) ((unsigned __int128) t->out[0]->c1[k] * inv % q);
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
        ratio[run][k] = c1_ratio (&t, k, q);
    }
  g_assert_cmpmem (ratio[0], sizeof ratio[0], ratio[1], sizeof ratio[1]);   /* the leak */
  CkksCiphertext *zero = NULL;
  g_assert_cmpint (ckks_privacy_zero_new (t.lay, t.pk, 0, &zero), ==, CKKS_OK);
  g_assert_cmpint (ckks_privacy_add_zero (t.out[0], zero), ==, CKKS_OK);
  ckks_ciphertext_free (zero);
  unsigned same = 0;
  for (size_t k = 0; k < 4; k++)
    same += c1_ratio (&t, k, q) == ratio[0][k];
  g_assert_cmpuint (same, ==, 0);
  token_free (&t);
}

/* Root mean square of (u - A·h) / max|h| over @trials tokens, each result
 * flooded for @lambda_s. */
static double
flood_rms (Token *t, unsigned lambda_s, int trials)
{
  double sum_sq = 0.0, u[R];
  int n = 0;
  for (int trial = 0; trial < trials; trial++)
    {
      token_run (t);
      for (size_t b = 0; b < t->b; b++)
        {
          CkksCiphertext *zero = NULL;
          g_assert_cmpint (ckks_privacy_zero_new (t->lay, t->pk, lambda_s, &zero), ==, CKKS_OK);
          g_assert_cmpint (ckks_privacy_add_zero (t->out[b], zero), ==, CKKS_OK);
          ckks_ciphertext_free (zero);
        }
      token_decrypt (t, u);
      for (size_t i = 0; i < R; i++, n++)
        sum_sq += pow ((u[i] - t->u_plain[i]) / t->factor, 2);
    }
  return sqrt (sum_sq / n);
}

/* The flooding error of a segment sum has the predicted standard deviation
 * (docs/security.md §3.1): on the private layout lambda_s = 40 and 48, on
 * the plain one 16 -- the same flood relative to the result as 40 on the
 * private layout, so the same precision. Past the layout's limit, refused. */
static void
test_flooding_precision (void)
{
  static const struct { CkksHeloraScales scales; unsigned lambda; } cases[] = {
    { CKKS_HELORA_SCALES_PRIVACY, 40 }, { CKKS_HELORA_SCALES_PRIVACY, 48 },
    { CKKS_HELORA_SCALES_PLAIN, 16 },
  };
  double predicted_sd[G_N_ELEMENTS (cases)];   /* at scale 1: independent of A */
  for (size_t ci = 0; ci < G_N_ELEMENTS (cases); ci++)
    {
      g_autoptr (GRand) rng = he_test_rng_new ();
      Token t;
      token_setup_scaled (&t, rng, CKKS_BACKEND_AUTO, cases[ci].scales);
      double measured = flood_rms (&t, cases[ci].lambda, 8);
      double predicted = ckks_privacy_flood_stddev (t.lay, cases[ci].lambda,
                                                    ckks_ciphertext_scale (t.out[0]));
      predicted_sd[ci] = ckks_privacy_flood_stddev (t.lay, cases[ci].lambda, 1.0);
      g_test_message ("%s layout, lambda_s %u: flood 2^%.0f, segment-sum error sd %.3g "
                      "(predicted %.3g)", cases[ci].scales ? "private" : "plain",
                      cases[ci].lambda, ckks_privacy_flood_bits (t.lay, cases[ci].lambda),
                      measured, predicted);
      g_assert_cmpfloat (measured, >, 0.7 * predicted);
      g_assert_cmpfloat (measured, <, 1.3 * predicted);
      /* the largest lambda_s the layout holds is accepted, one more is not */
      unsigned max = ckks_privacy_max_lambda (t.lay);
      CkksCiphertext *zero = NULL;
      g_assert_cmpint (ckks_privacy_zero_new (t.lay, t.pk, max, &zero), ==, CKKS_OK);
      ckks_ciphertext_free (zero);
      zero = NULL;
      g_assert_cmpint (ckks_privacy_zero_new (t.lay, t.pk, max + 1, &zero), ==, CKKS_ERR_SCALE);
      g_assert_null (zero);
      if (cases[ci].scales == CKKS_HELORA_SCALES_PLAIN)
        g_assert_cmpuint (max, <, LAMBDA);       /* the plain split cannot hold 40 */
      else
        g_assert_cmpuint (max, >=, 48);
      token_free (&t);
    }
  g_assert_cmpfloat (fabs (predicted_sd[0] - predicted_sd[2]), <, 1e-9 * predicted_sd[0]);
}

/* Noise added to the segment sums comes out in u (times max|h|). */
static void
test_segment_noise (void)
{
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token t;
  token_setup (&t, rng);
  double noise[R], u[R];
  g_assert_cmpint (ckks_privacy_gaussian (0.01, noise, R), ==, CKKS_OK);
  token_run (&t);
  g_assert_cmpint (ckks_privacy_mask (t.lay, t.out, t.b), ==, CKKS_OK);
  g_assert_cmpint (ckks_privacy_add_segment_noise (t.lay, t.out, t.b, noise), ==, CKKS_OK);
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
  g_assert_cmpint (ckks_privacy_gaussian (0.02, noise, R), ==, CKKS_OK);
  g_autofree CkksCiphertext **pads = g_new0 (CkksCiphertext *, t.b);
  for (size_t b = 0; b < t.b; b++)
    g_assert_cmpint (ckks_privacy_pad_new (t.lay, t.pk, LAMBDA, &pads[b]), ==, CKKS_OK);
  token_run (&t);
  g_assert_cmpint (ckks_privacy_apply (t.lay, t.out, t.b, pads, noise), ==, CKKS_OK);
  g_assert_cmpfloat (fabs (slot_correlation (&t)), <, 5.0 / sqrt ((double) ckks_context_slots (t.ctx) * t.b));
  token_decrypt (&t, u);
  double sd = ckks_privacy_flood_stddev (t.lay, LAMBDA, ckks_ciphertext_scale (t.out[0]));
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs ((u[i] - t.u_plain[i]) / t.factor - noise[i]), <, 6.0 * sd);
  g_assert_cmpint (ckks_privacy_apply (t.lay, t.out, t.b - 1, pads, noise), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  for (size_t b = 0; b < t.b; b++)
    ckks_ciphertext_free (pads[b]);
  token_free (&t);
}

/* Compact results (c0 as block sums, as the evaluator sends them) take the
 * same pads: u = A·h + noise within the flooding error. */
static void
test_compact_results (void)
{
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token t;
  token_setup (&t, rng);
  double noise[R], u[R];
  g_assert_cmpint (ckks_privacy_gaussian (0.02, noise, R), ==, CKKS_OK);
  token_run (&t);
  size_t len = ckks_helora_result_serialized_size (t.lay);
  g_assert_cmpuint (len, >, 0);
  g_autofree uint8_t *buf = g_malloc (len);
  g_autofree CkksCiphertext **pads = g_new0 (CkksCiphertext *, t.b);
  for (size_t b = 0; b < t.b; b++)
    {
      g_assert_cmpint (ckks_helora_result_serialize (t.lay, t.out[b], buf, len), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_result_deserialize_into (t.lay, t.out[b], buf, len), ==, CKKS_OK);
      g_assert_cmpint (ckks_privacy_pad_new (t.lay, t.pk, LAMBDA, &pads[b]), ==, CKKS_OK);
    }
  g_assert_cmpint (ckks_privacy_mask (t.lay, t.out, t.b), ==, CKKS_ERR_MISMATCH);
  g_assert_cmpint (ckks_privacy_apply (t.lay, t.out, t.b, pads, noise), ==, CKKS_OK);
  token_decrypt (&t, u);
  double sd = ckks_privacy_flood_stddev (t.lay, LAMBDA, ckks_ciphertext_scale (t.out[0]));
  for (size_t i = 0; i < R; i++)
    g_assert_cmpfloat (fabs ((u[i] - t.u_plain[i]) / t.factor - noise[i]), <, 6.0 * sd);
  for (size_t b = 0; b < t.b; b++)
    ckks_ciphertext_free (pads[b]);
  token_free (&t);
}

static void
assert_same_ciphertext (const Token *t, const CkksCiphertext *x, const CkksCiphertext *y,
                        gboolean compact)
{
  size_t n = ckks_context_ring_degree (t->ctx), g = 2 * ckks_helora_layout_copies (t->lay);
  size_t words = (size_t) ckks_helora_layout_limbs (t->lay) * n;
  g_assert_cmpmem (x->c1, words * 8, y->c1, words * 8);
  if (!compact)
    g_assert_cmpmem (x->c0, words * 8, y->c0, words * 8);
  for (size_t i = 0; compact && i < words / n; i++)
    for (size_t beta = 0; beta < g; beta++)     /* the block sums, all a compact c0 holds */
      g_assert_cmpuint (x->c0[i * n + beta * (n / g)], ==, y->c0[i * n + beta * (n / g)]);
  g_assert_true (ckks_same_scale (x->scale, y->scale));
}

/* Pads fused into the evaluation's output write give, bit for bit, the
 * evaluation followed by ckks_privacy_apply (full and compact, on the
 * scalar reference and the default backend), and the DP noise on block
 * sums only decrypts to the same u as the noise spread over c0. */
static void
test_fused_pads (void)
{
  const CkksBackend backends[] = { CKKS_BACKEND_SCALAR, CKKS_BACKEND_AUTO };
  for (size_t bk = 0; bk < G_N_ELEMENTS (backends); bk++)
    for (int compact = 0; compact <= 1; compact++)
      {
        g_autoptr (GRand) rng = he_test_rng_new ();
        Token t;
        token_setup_backend (&t, rng, backends[bk]);
        double noise[R], u_sep[R], u_fused[R];
        g_assert_cmpint (ckks_privacy_gaussian (0.02, noise, R), ==, CKKS_OK);
        g_autofree CkksCiphertext **pads = g_new0 (CkksCiphertext *, t.b);
        CkksCiphertext **fused;
        for (size_t b = 0; b < t.b; b++)
          g_assert_cmpint (ckks_privacy_pad_new (t.lay, t.pk, LAMBDA, &pads[b]), ==, CKKS_OK);
        g_assert_cmpint (ckks_helora_ciphertexts_new (t.lay, t.b, &fused), ==, CKKS_OK);
        g_assert_cmpint (ckks_helora_encrypt_sk (t.lay, t.sk, t.h, t.in, t.k, &t.factor), ==,
                         CKKS_OK);
        g_assert_cmpint ((compact ? ckks_helora_evaluate_compact : ckks_helora_evaluate)
                         (t.plan, t.in, t.k, t.out, t.b), ==, CKKS_OK);
        g_assert_cmpint ((compact ? ckks_helora_evaluate_compact_padded
                                  : ckks_helora_evaluate_padded)
                         (t.plan, t.in, t.k, fused, t.b, pads), ==, CKKS_OK);
        g_assert_cmpint (ckks_privacy_apply (t.lay, t.out, t.b, pads, NULL), ==, CKKS_OK);
        for (size_t b = 0; b < t.b; b++)
          assert_same_ciphertext (&t, t.out[b], fused[b], compact);
        if (compact)      /* compact pads (c0 as block sums) give the same results */
          {
            for (size_t b = 0; b < t.b; b++)
              g_assert_cmpint (ckks_privacy_pad_compact (t.lay, pads[b]), ==, CKKS_OK);
            g_assert_cmpint (ckks_helora_evaluate_padded (t.plan, t.in, t.k, fused, t.b, pads),
                             ==, CKKS_ERR_MISMATCH);
            g_assert_cmpint (ckks_helora_evaluate_compact_padded (t.plan, t.in, t.k, fused, t.b,
                                                                  pads), ==, CKKS_OK);
            for (size_t b = 0; b < t.b; b++)
              assert_same_ciphertext (&t, t.out[b], fused[b], compact);
          }
        g_assert_cmpint (ckks_privacy_apply (t.lay, t.out, t.b, NULL, noise), ==, CKKS_OK);
        g_assert_cmpint (ckks_privacy_add_noise_masked (t.lay, fused, t.b, noise), ==, CKKS_OK);
        token_decrypt (&t, u_sep);
        g_assert_cmpint (ckks_helora_decrypt (t.lay, t.sk, fused, t.b, t.factor, u_fused), ==,
                         CKKS_OK);
        g_assert_cmpmem (u_sep, sizeof u_sep, u_fused, sizeof u_fused);
        double sd = ckks_privacy_flood_stddev (t.lay, LAMBDA, ckks_ciphertext_scale (fused[0]));
        for (size_t i = 0; i < R; i++)
          g_assert_cmpfloat (fabs ((u_fused[i] - t.u_plain[i]) / t.factor - noise[i]), <,
                             6.0 * sd);
        if (!compact)     /* masked: no slot shows its product */
          {
            CkksCiphertext **keep = t.out;
            t.out = fused;
            g_assert_cmpfloat (fabs (slot_correlation (&t)), <,
                               5.0 / sqrt ((double) ckks_context_slots (t.ctx) * t.b));
            t.out = keep;
          }
        g_assert_cmpint (ckks_helora_evaluate_padded (t.plan, t.in, t.k, fused, t.b, NULL), ==,
                         CKKS_ERR_INVALID_ARGUMENT);
        for (size_t b = 0; b < t.b; b++)
          ckks_ciphertext_free (pads[b]);
        ckks_helora_ciphertexts_free (fused, t.b);
        token_free (&t);
      }
}

/* max |u - A·h| / max|u| of one token whose h is encrypted with sk or pk. */
static double
token_rel_error (Token *t, gboolean public_key)
{
  double u[R], umax = 0.0;
  g_assert_cmpint (public_key
                   ? ckks_helora_encrypt_pk (t->lay, t->pk, t->h, t->in, t->k, &t->factor)
                   : ckks_helora_encrypt_sk (t->lay, t->sk, t->h, t->in, t->k, &t->factor),
                   ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_evaluate (t->plan, t->in, t->k, t->out, t->b), ==, CKKS_OK);
  token_decrypt (t, u);
  for (size_t i = 0; i < R; i++)
    umax = fmax (umax, fabs (t->u_plain[i]));
  return he_test_max_abs_diff (u, t->u_plain, R) / umax;
}

/* The scale split: plain layouts put 48 bits on h and on A, private ones 72
 * on h (rounded at 2^48, lifted by 2^24 before the error) and 24 on A. Both
 * decrypt to A·h (private: A's 2^-24 quantisation, ~1e-6), sk and pk
 * encryption alike, and an evaluator refuses inputs made for the other
 * split (their product would pass the modulus). */
static void
test_scale_split (void)
{
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token plain, priv;
  token_setup_scaled (&plain, rng, CKKS_BACKEND_AUTO, CKKS_HELORA_SCALES_PLAIN);
  token_setup_scaled (&priv, rng, CKKS_BACKEND_AUTO, CKKS_HELORA_SCALES_PRIVACY);
  g_assert_cmpuint (ckks_helora_layout_input_bits (plain.lay), ==, 48);
  g_assert_cmpuint (ckks_helora_layout_plain_bits (plain.lay), ==, 48);
  g_assert_cmpuint (ckks_helora_layout_input_bits (priv.lay), ==, 72);
  g_assert_cmpuint (ckks_helora_layout_plain_bits (priv.lay), ==, 24);
  g_assert_cmpint (ckks_helora_layout_scales (priv.lay), ==, CKKS_HELORA_SCALES_PRIVACY);
  for (int pk = 0; pk <= 1; pk++)
    {
      double e_plain = token_rel_error (&plain, pk), e_priv = token_rel_error (&priv, pk);
      g_test_message ("%s encryption: max rel error of u, plain split %.3g, private split %.3g",
                      pk ? "public-key" : "secret-key", e_plain, e_priv);
      g_assert_cmpfloat (e_plain, <, 1e-9);
      g_assert_cmpfloat (e_priv, <, 2e-5);
      g_assert_true (ckks_same_scale (ckks_ciphertext_scale (priv.in[0]), 0x1p72));
    }
  /* inputs of one split into the other's plan (same context and key) */
  CkksHeloraPlan *plain_plan = NULL;
  g_assert_cmpint (ckks_helora_plan_new (priv.ctx, D, R, priv.a, &plain_plan), ==, CKKS_OK);
  const CkksHeloraLayout *pl = ckks_helora_plan_layout (plain_plan);
  CkksCiphertext **plain_in;
  g_assert_cmpint (ckks_helora_ciphertexts_new (pl, priv.k, &plain_in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_encrypt_sk (pl, priv.sk, priv.h, plain_in, priv.k, &priv.factor),
                   ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_evaluate (priv.plan, plain_in, priv.k, priv.out, priv.b), ==,
                   CKKS_ERR_SCALE);
  g_assert_cmpint (ckks_helora_evaluate (plain_plan, priv.in, priv.k, priv.out, priv.b), ==,
                   CKKS_ERR_SCALE);
  g_assert_cmpint (ckks_helora_evaluate (plain_plan, plain_in, priv.k, priv.out, priv.b), ==,
                   CKKS_OK);
  ckks_helora_ciphertexts_free (plain_in, priv.k);
  ckks_helora_plan_free (plain_plan);
  CkksHeloraLayout *bad = NULL;
  g_assert_cmpint (ckks_helora_layout_new_scaled (plain.ctx, D, R, (CkksHeloraScales) 7, &bad),
                   ==, CKKS_ERR_INVALID_ARGUMENT);
  token_free (&plain);
  token_free (&priv);
}

/* The reference a direct compact pad must equal: the full pad of the same
 * draws (b u + NTT(e0), a u + NTT(e1); e0 with coefficients everywhere, as
 * the full path draws it) made compact by ckks_privacy_pad_compact. */
static CkksCiphertext *
reference_pad (const Token *t, const int8_t *u, const int8_t *e1, const int64_t *e0)
{
  const CkksContext *ctx = t->ctx;
  size_t n = ctx->n;
  uint32_t limbs = ckks_helora_layout_limbs (t->lay);
  CkksCiphertext *ref = NULL;
  g_assert_cmpint (ckks_ciphertext_new (ctx, limbs, &ref), ==, CKKS_OK);
  g_autofree uint64_t *u_ntt = g_new (uint64_t, (size_t) limbs * n);
  g_autofree uint64_t *e1_ntt = g_new (uint64_t, (size_t) limbs * n);
  ckks_small_to_ntt (ctx, u, limbs, u_ntt);
  ckks_small_to_ntt (ctx, e1, limbs, e1_ntt);
  ckks_coeffs_to_ntt (ctx, e0, limbs, ref->c0);
  for (uint32_t i = 0; i < limbs; i++)
    {
      uint64_t q = ctx->ntt[i].mod.q;
      ctx->k.mul_fixed_add (ref->c0 + i * n, ref->c0 + i * n, u_ntt + i * n,
                            CKKS_FIXED_W (&t->pk->b_fixed, i, n),
                            CKKS_FIXED_C (&t->pk->b_fixed, i, n), q, n);
      ctx->k.mul_fixed_add (ref->c1 + i * n, e1_ntt + i * n, u_ntt + i * n,
                            CKKS_FIXED_W (&t->pk->a_fixed, i, n),
                            CKKS_FIXED_C (&t->pk->a_fixed, i, n), q, n);
    }
  g_assert_cmpint (ckks_privacy_pad_compact (t->lay, ref), ==, CKKS_OK);
  return ref;
}

/* Compact pads made directly: bit for bit the compact form of the full pad
 * of the same draws (the coefficients of e0 off the trace do not matter),
 * on the scalar reference and the default backend; then, drawn for real,
 * a compact result padded with them decrypts to A·h within the flooding
 * error the model predicts, c1 is fresh (the plaintext of A no longer
 * shows), and they are refused where they do not belong. */
static void
test_compact_pad_direct (void)
{
  const CkksBackend backends[] = { CKKS_BACKEND_SCALAR, CKKS_BACKEND_AUTO };
  for (size_t bk = 0; bk < G_N_ELEMENTS (backends); bk++)
    {
      g_autoptr (GRand) rng = he_test_rng_new ();
      Token t;
      token_setup_backend (&t, rng, backends[bk]);
      size_t n = t.ctx->n, g = 2 * ckks_helora_layout_copies (t.lay), span = n / g;
      g_autofree int8_t *u = g_new (int8_t, n), *e1 = g_new (int8_t, n);
      g_autofree int64_t *e0 = g_new (int64_t, n);
      ckks_i128 trace[2 * 64];
      for (size_t k = 0; k < n; k++)
        {
          u[k] = (int8_t) g_rand_int_range (rng, -1, 2);
          e1[k] = (int8_t) g_rand_int_range (rng, -21, 22);
          /* floods of up to 2^60 on the trace (int64 for the reference) */
          e0[k] = k % span ? g_rand_int_range (rng, -21, 22)
                           : (int64_t) g_rand_int_range (rng, -21, 22)
                             + (int64_t) ((g_rand_double (rng) * 2 - 1) * 0x1p60);
          if (k % span == 0)
            trace[k / span] = e0[k];
        }
      CkksCiphertext *ref = reference_pad (&t, u, e1, e0), *pad = NULL;
      g_autofree uint64_t *scratch = g_new (uint64_t, 2 * n);
      g_assert_cmpint (ckks_ciphertext_new (t.ctx, ckks_helora_layout_limbs (t.lay), &pad), ==,
                       CKKS_OK);
      CkksPadDraws draws = { .u = u, .e1 = e1, .trace = trace };
      ckks_privacy_compact_pad_from (t.lay, t.pk, &draws, pad, scratch);
      g_assert_true (pad->trace_only);
      assert_same_ciphertext (&t, ref, pad, TRUE);
      ckks_ciphertext_free (ref);
      ckks_ciphertext_free (pad);
      token_free (&t);
    }
  g_autoptr (GRand) rng = he_test_rng_new ();
  Token t;
  token_setup (&t, rng);
  uint64_t q = t.ctx->ntt[0].mod.q, plain_ratio = 0;
  g_autofree CkksCiphertext **pads = g_new0 (CkksCiphertext *, t.b);
  double sum_sq = 0.0, u[R];
  int count = 0;
  for (int trial = 0; trial < 8; trial++)
    {
      for (size_t b = 0; b < t.b; b++)
        {
          ckks_ciphertext_free (pads[b]);
          g_assert_cmpint (ckks_privacy_compact_pad_new (t.lay, t.pk, LAMBDA, &pads[b]), ==,
                           CKKS_OK);
        }
      g_assert_cmpint (ckks_helora_encrypt_sk (t.lay, t.sk, t.h, t.in, t.k, &t.factor), ==,
                       CKKS_OK);
      g_assert_cmpint (ckks_helora_evaluate_compact (t.plan, t.in, t.k, t.out, t.b), ==, CKKS_OK);
      if (trial == 0)
        plain_ratio = c1_ratio (&t, 0, q);
      g_assert_cmpint (ckks_helora_evaluate_compact_padded (t.plan, t.in, t.k, t.out, t.b, pads),
                       ==, CKKS_OK);
      g_assert_cmpuint (c1_ratio (&t, 0, q), !=, plain_ratio);
      token_decrypt (&t, u);
      for (size_t i = 0; i < R; i++, count++)
        sum_sq += pow ((u[i] - t.u_plain[i]) / t.factor, 2);
    }
  double measured = sqrt (sum_sq / count);
  double predicted = ckks_privacy_flood_stddev (t.lay, LAMBDA, ckks_ciphertext_scale (t.out[0]));
  g_test_message ("direct compact pads, lambda_s %u: segment-sum error sd %.3g (predicted %.3g)",
                  LAMBDA, measured, predicted);
  g_assert_cmpfloat (measured, >, 0.7 * predicted);
  g_assert_cmpfloat (measured, <, 1.3 * predicted);
  /* no mask: refused on full results */
  g_assert_cmpint (ckks_helora_evaluate_padded (t.plan, t.in, t.k, t.out, t.b, pads), ==,
                   CKKS_ERR_MISMATCH);
  g_assert_cmpint (ckks_helora_evaluate (t.plan, t.in, t.k, t.out, t.b), ==, CKKS_OK);
  g_assert_cmpint (ckks_privacy_apply (t.lay, t.out, t.b, pads, NULL), ==, CKKS_ERR_MISMATCH);
  CkksCiphertext *none = NULL;
  g_assert_cmpint (ckks_privacy_compact_pad_new (t.lay, t.pk, ckks_privacy_max_lambda (t.lay) + 1,
                                                 &none), ==, CKKS_ERR_SCALE);
  g_assert_null (none);
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
  g_assert_cmpint (ckks_privacy_gaussian (2.5, x, N), ==, CKKS_OK);
  double s = 0, ss = 0;
  for (size_t i = 0; i < N; i++)
    s += x[i], ss += x[i] * x[i];
  double mean = s / N, sd = sqrt (ss / N - mean * mean);
  g_assert_cmpfloat (fabs (mean), <, 5 * 2.5 / sqrt (N));
  g_assert_cmpfloat (fabs (sd - 2.5), <, 0.05);
  g_assert_cmpint (ckks_privacy_gaussian (-1.0, x, 1), ==, CKKS_ERR_INVALID_ARGUMENT);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/he-private/masks-hide-products", test_masks_hide_products);
  g_test_add_func ("/he-private/rerandomisation-hides-c1", test_rerandomisation_hides_c1);
  g_test_add_func ("/he-private/scale-split", test_scale_split);
  g_test_add_func ("/he-private/flooding-precision", test_flooding_precision);
  g_test_add_func ("/he-private/segment-noise", test_segment_noise);
  g_test_add_func ("/he-private/pads-apply", test_pads_apply);
  g_test_add_func ("/he-private/compact-results", test_compact_results);
  g_test_add_func ("/he-private/gaussian", test_gaussian);
  g_test_add_func ("/he-private/fused-pads", test_fused_pads);
  g_test_add_func ("/he-private/compact-pad-direct", test_compact_pad_direct);
  return g_test_run ();
}
