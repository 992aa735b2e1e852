/* he-test-common.h: random inputs for the he suite, seeded by ts_test_seed().
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>
#include <math.h>

#include "ckks.h"
#include "ts-test-util.h"

/* A generator seeded with all 64 bits of ts_test_seed() (printed by it). */
static inline GRand *
he_test_rng_new (void)
{
  guint64 seed = ts_test_seed ();
  guint32 words[2] = { (guint32) seed, (guint32) (seed >> 32) };
  return g_rand_new_with_seed_array (words, 2);
}

/* n values uniform in [-bound, bound]. */
static inline double *
he_test_uniform (GRand *rng, size_t n, double bound)
{
  double *v = g_new (double, n ? n : 1);
  for (size_t i = 0; i < n; i++)
    v[i] = g_rand_double_range (rng, -bound, bound);
  return v;
}

static inline double
he_test_max_abs_diff (const double *a, const double *b, size_t n)
{
  double m = 0;
  for (size_t i = 0; i < n; i++)
    m = fmax (m, fabs (a[i] - b[i]));
  return m;
}

/* n floats uniform in [-bound, bound]. */
static inline float *
he_test_random_floats (GRand *rng, size_t n, double bound)
{
  float *v = g_new (float, n);
  for (size_t i = 0; i < n; i++)
    v[i] = (float) g_rand_double_range (rng, -bound, bound);
  return v;
}

/* u = A h in double, A row-major r x d: the reference of the HE-LoRA tests. */
static inline void
he_test_plain_product (const float *a, const float *h, size_t d, size_t r, double *u)
{
  for (size_t i = 0; i < r; i++)
    {
      double s = 0;
      for (size_t j = 0; j < d; j++)
        s += (double) a[i * d + j] * h[j];
      u[i] = s;
    }
}

/* A context of the named preset on @backend; fails the test on error. */
static inline CkksContext *
he_test_context (const char *preset, CkksBackend backend)
{
  CkksParams p;
  CkksContext *ctx = NULL;
  g_assert_cmpint (ckks_params_preset (preset, &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new_with_backend (&p, backend, &ctx), ==, CKKS_OK);
  return ctx;
}

/* One token through the CPU pipeline (sk encryption): u = decrypt
 * (evaluate (encrypt_sk (h))), with the counts the plan's layout says. */
static inline void
he_test_helora_token (const CkksHeloraPlan *plan, const CkksSecretKey *sk, const float *h,
                      double *u)
{
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  size_t k = ckks_helora_layout_n_inputs (l), b = ckks_helora_layout_n_outputs (l);
  CkksCiphertext **in, **out;
  double factor;
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, k, &in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, b, &out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_encrypt_sk (l, sk, h, in, k, &factor), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_evaluate (plan, in, k, out, b), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_decrypt (l, sk, out, b, factor, u), ==, CKKS_OK);
  ckks_helora_ciphertexts_free (in, k);
  ckks_helora_ciphertexts_free (out, b);
}
