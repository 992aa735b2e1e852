/* test-attend.c: the attention, SwiGLU and exponential kernels against
 * schoolbook double-precision references, and every ISA against the
 * portable C one bit for bit.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "expf-poly.h"
#include "forward-ops.h"
#include "kernels.h"
#include "ts-test-util.h"

static float
uniform (GRand *rng, double lo, double hi)
{
  return (float) g_rand_double_range (rng, lo, hi);
}

/* ---- the exponential ---- */

static double
ulps (float got, double want)
{
  int e;
  frexp (want, &e);
  return fabs (got - want) / ldexp (1.0, e - 24);
}

static void
test_expf_poly (void)
{
  double worst = 0.0;
  for (float x = -87.0f; x < 88.0f; x += 0.001953125f)
    {
      double u = ulps (lm_expf_poly (x), exp ((double) x));
      worst = u > worst ? u : worst;
    }
  g_test_message ("largest error over [-87, 88): %.3f ulp", worst);
  g_assert_cmpfloat (worst, <, 2.5);
  g_assert_cmpfloat (lm_expf_poly (0.0f), ==, 1.0f);
  g_assert_cmpfloat (lm_expf_poly (-INFINITY), ==, 0.0f);
  g_assert_cmpfloat (lm_expf_poly (-200.0f), ==, 0.0f);
  g_assert_true (isinf (lm_expf_poly (100.0f)));
  g_assert_true (isnan (lm_expf_poly (NAN)));
}

/* ---- SwiGLU ---- */

static void
test_swiglu (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  const size_t n = 1000;   /* 62 vectors of 16 and a tail of 8 */
  g_autofree float *gate = g_new (float, n), *up = g_new (float, n);
  g_autofree float *ref = g_new (float, n), *got = g_new (float, n);
  for (size_t i = 0; i < n; i++)
    {
      gate[i] = uniform (rng, -12, 12);
      up[i] = uniform (rng, -3, 3);
    }
  gate[0] = -100.0f;   /* e^100 is infinite: SiLU is -0 */
  gate[1] = 100.0f;
  memcpy (ref, gate, n * sizeof (float));
  lm_swiglu (lm_kernels_for_isa (LM_ISA_SCALAR), ref, up, n);
  for (size_t i = 0; i < n; i++)
    {
      double g = gate[i], want = g / (1.0 + exp (-g)) * up[i];
      g_assert_cmpfloat (fabs (ref[i] - want), <=, 1e-6 * (fabs (want) + 1e-3));
    }
  for (int isa = 1; isa < LM_ISA_COUNT; isa++)
    {
      const LmKernels *k = lm_kernels_for_isa ((LmIsa) isa);
      if (k == NULL)
        continue;
      memcpy (got, gate, n * sizeof (float));
      lm_swiglu (k, got, up, n);
      g_assert_cmpmem (got, n * sizeof (float), ref, n * sizeof (float));
    }
}

/* ---- attention ---- */

/* softmax(scale q·k) · v in double, for one query. */
static void
attend_double (const float *q, const float *k, const float *v, uint32_t kvd, uint32_t n_pos,
               uint32_t hd, double *out)
{
  double *w = g_new (double, n_pos), max = -INFINITY, sum = 0.0;
  for (uint32_t p = 0; p < n_pos; p++)
    {
      double s = 0.0;
      for (uint32_t d = 0; d < hd; d++)
        s += (double) q[d] * k[(size_t) p * kvd + d];
      w[p] = s / sqrt ((double) hd);
      max = w[p] > max ? w[p] : max;
    }
  for (uint32_t p = 0; p < n_pos; p++)
    sum += w[p] = exp (w[p] - max);
  for (uint32_t d = 0; d < hd; d++)
    {
      out[d] = 0.0;
      for (uint32_t p = 0; p < n_pos; p++)
        out[d] += w[p] / sum * v[(size_t) p * kvd + d];
    }
  g_free (w);
}

/* @n_q queries of one kv head (the second of two: a row stride wider than
 * the head) seeing n_pos[0] - i positions each: every ISA equals the
 * portable C, which is close to the double reference. */
static void
check_attend (GRand *rng, uint32_t hd, uint32_t n_q, uint32_t n_pos)
{
  const uint32_t kvd = 2 * hd;
  g_autofree float *k = g_new (float, (size_t) n_pos * kvd), *v = g_new (float, (size_t) n_pos * kvd);
  g_autofree float *q = g_new (float, (size_t) n_q * hd);
  g_autofree float *ref = g_new (float, (size_t) n_q * hd), *got = g_new (float, (size_t) n_q * hd);
  g_autofree double *want = g_new (double, hd);
  for (size_t i = 0; i < (size_t) n_pos * kvd; i++)
    {
      k[i] = uniform (rng, -1, 1);
      v[i] = uniform (rng, -1, 1);
    }
  for (size_t i = 0; i < (size_t) n_q * hd; i++)
    q[i] = uniform (rng, -3, 3);   /* scores of a few units */
  LmAttnQueries a = { .n_q = n_q, .k = k + hd, .v = v + hd, .kvd = kvd, .hd = hd,
                      .scale = 1.0f / sqrtf ((float) hd) };
  for (uint32_t i = 0; i < n_q; i++)
    {
      a.q[i] = q + (size_t) i * hd;
      a.n_pos[i] = n_pos - i % n_pos;
    }
  g_autofree float *scratch = g_new (float, lm_attend_scratch_floats (n_pos, hd));
  for (int isa = 0; isa < LM_ISA_COUNT; isa++)
    {
      const LmKernels *kern = lm_kernels_for_isa ((LmIsa) isa);
      if (kern == NULL)
        continue;
      for (uint32_t i = 0; i < n_q; i++)
        a.out[i] = (isa == 0 ? ref : got) + (size_t) i * hd;
      lm_attend (kern, &a, scratch);
      if (isa > 0)
        g_assert_cmpmem (got, (size_t) n_q * hd * sizeof (float), ref,
                         (size_t) n_q * hd * sizeof (float));
    }
  for (uint32_t i = 0; i < n_q; i++)
    {
      attend_double (a.q[i], a.k, a.v, kvd, a.n_pos[i], hd, want);
      for (uint32_t d = 0; d < hd; d++)
        g_assert_cmpfloat (fabs (ref[(size_t) i * hd + d] - want[d]), <=, 2e-6);
    }
}

static void
test_attend (void)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  /* head sizes with and without a tail past the 64-value blocks and the
   * 16-value chunks; one query, a GQA group of 7, all 16 lanes; positions
   * below, at and past 16-position blocks */
  const uint32_t hds[] = { 8, 64, 80, 128, 256 };
  const uint32_t n_qs[] = { 1, 7, 16 };
  const uint32_t n_poss[] = { 1, 15, 16, 17, 100, 600 };
  for (gsize h = 0; h < G_N_ELEMENTS (hds); h++)
    for (gsize i = 0; i < G_N_ELEMENTS (n_qs); i++)
      for (gsize p = 0; p < G_N_ELEMENTS (n_poss); p++)
        check_attend (rng, hds[h], n_qs[i], n_poss[p]);
}

/* One position: the output is its value, bit for bit (e^0 = 1, sum 1). */
static void
test_attend_one_position (void)
{
  float q[64], k[64], v[64], out[64];
  for (int d = 0; d < 64; d++)
    {
      q[d] = (float) d - 20.0f;
      k[d] = 0.5f - (float) d / 64.0f;
      v[d] = (float) d * 0.37f - 3.0f;
    }
  for (int isa = 0; isa < LM_ISA_COUNT; isa++)
    if (lm_kernels_for_isa ((LmIsa) isa) != NULL)
      {
        lm_attend_head (lm_kernels_for_isa ((LmIsa) isa), q, NULL, k, v, 64, 1, 64, out);
        g_assert_cmpmem (out, sizeof out, v, sizeof v);
      }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/attend/expf-poly", test_expf_poly);
  g_test_add_func ("/engine/attend/swiglu", test_swiglu);
  g_test_add_func ("/engine/attend/isas-and-double", test_attend);
  g_test_add_func ("/engine/attend/one-position", test_attend_one_position);
  return g_test_run ();
}
