/* he-test-common.h: random inputs for the he suite, seeded by ts_test_seed().
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>
#include <math.h>

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
