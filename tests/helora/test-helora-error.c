/* test-helora-error.c: the chat's Δ error measurement against schoolbook long double.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <math.h>

#include "ts-helora-error.h"

/* The reference: every sum a plain loop in long double. */
static void
schoolbook (const LmLoraModule *m, const float *h, const float *u, long double *max_error,
            long double *max_plain)
{
  g_autofree long double *u_ref = g_new (long double, m->rank);

  for (guint i = 0; i < m->rank; i++)
    {
      u_ref[i] = 0;
      for (guint j = 0; j < m->d_in; j++)
        u_ref[i] += (long double) m->a[(gsize) i * m->d_in + j] * h[j];
    }
  *max_error = *max_plain = 0;
  for (guint o = 0; o < m->d_out; o++)
    {
      long double e = 0, p = 0;
      for (guint i = 0; i < m->rank; i++)
        {
          e += (long double) m->b[(gsize) o * m->rank + i] * ((long double) u[i] - u_ref[i]);
          p += (long double) m->b[(gsize) o * m->rank + i] * u_ref[i];
        }
      *max_error = fmaxl (*max_error, fabsl (m->scale * e));
      *max_plain = fmaxl (*max_plain, fabsl (m->scale * p));
    }
}

/* Shapes with and without tails after the vectors of 8 and 16, and the
 * real model's (896 wide, rank 16, outputs 896 and 128). */
static void
test_against_schoolbook (void)
{
  static const guint shapes[][3] = {   /* d_in, rank, d_out */
    { 896, 16, 896 }, { 896, 16, 128 }, { 64, 8, 5 }, { 37, 3, 11 }, { 130, 21, 17 },
    { 2048, 32, 64 }, { 7, 1, 1 },
  };
  g_autoptr (GRand) rng = g_rand_new_with_seed (20261128);

  for (gsize s = 0; s < G_N_ELEMENTS (shapes); s++)
    {
      guint d = shapes[s][0], r = shapes[s][1], d_out = shapes[s][2];
      g_autofree float *a = g_new (float, (gsize) r * d);
      g_autofree float *b = g_new (float, (gsize) d_out * r);
      g_autofree float *h = g_new (float, d);
      g_autofree float *u = g_new (float, r);
      LmLoraModule m = { .d_in = d, .d_out = d_out, .rank = r, .scale = -0.75f, .a = a, .b = b };
      TsHeloraDeltaError got;
      long double want_error, want_plain;

      for (gsize k = 0; k < (gsize) r * d; k++)
        a[k] = (float) g_rand_double_range (rng, -0.1, 0.1);
      for (gsize k = 0; k < (gsize) d_out * r; k++)
        b[k] = (float) g_rand_double_range (rng, -1, 1);
      for (guint j = 0; j < d; j++)
        h[j] = (float) g_rand_double_range (rng, -3, 3);
      /* u as a decryption gives it: A·h rounded to float, then off by ~1e-7 */
      for (guint i = 0; i < r; i++)
        {
          double exact = 0;
          for (guint j = 0; j < d; j++)
            exact += (double) a[(gsize) i * d + j] * h[j];
          u[i] = (float) (exact * (1 + g_rand_double_range (rng, -1e-7, 1e-7)));
        }
      schoolbook (&m, h, u, &want_error, &want_plain);
      g_assert_cmpfloat (want_plain, >, 0);
      g_assert_cmpfloat (want_error, >, 0);
      for (int portable = 0; portable < 2; portable++)
        {
          (portable ? ts_helora_delta_error_portable : ts_helora_delta_error) (&m, h, u, &got);
          g_assert_cmpfloat (fabsl (got.max_abs_plain - want_plain), <=, 1e-12L * want_plain);
          /* the error is a difference of nearly equal sums: held to 1e-6 of
           * itself, far below what the chat shows (two digits) */
          g_assert_cmpfloat (fabsl (got.max_abs_error - want_error), <=, 1e-6L * want_error);
        }
    }
}

/* u exactly A·h in double terms gives no error; a single wrong u[i]
 * gives the error of that one term, largest over B's column i. */
static void
test_one_wrong_value (void)
{
  float a[2 * 3] = { 1, 2, 3, -1, 0.5f, 0.25f };
  float b[4 * 2] = { 1, 0, 0, 1, 2, -2, 0.5f, 4 };
  float h[3] = { 1, 1, 2 };
  float u[2] = { 9, -0 };   /* A·h = (9, 0) */
  LmLoraModule m = { .d_in = 3, .d_out = 4, .rank = 2, .scale = 0.5f, .a = a, .b = b };
  TsHeloraDeltaError got;

  for (int portable = 0; portable < 2; portable++)
    {
      void (*measure) (const LmLoraModule *, const float *, const float *, TsHeloraDeltaError *)
        = portable ? ts_helora_delta_error_portable : ts_helora_delta_error;
      u[1] = -0.0f;
      measure (&m, h, u, &got);
      g_assert_cmpfloat (got.max_abs_error, ==, 0);
      g_assert_cmpfloat (got.max_abs_plain, ==, 0.5 * 18);   /* row 2: 2·9 */
      u[1] = 0.125f;
      measure (&m, h, u, &got);
      g_assert_cmpfloat (got.max_abs_error, ==, 0.5 * 4 * 0.125);   /* row 3: 4·u[1] */
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/helora/error/schoolbook", test_against_schoolbook);
  g_test_add_func ("/helora/error/one-wrong-value", test_one_wrong_value);
  return g_test_run ();
}
