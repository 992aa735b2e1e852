/* ts-helora-error.c: max |Δ_he − Δ_plain| of one module, in wide vectors.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The measurement runs after every HE row of the chat. Written as scalar
 * double loops (eight independent sums per dot product, one pass over B
 * for the error and another for Δ_plain) it took about 5 ms a token on the
 * real model with q, k, v and o adapted: a third of the HE work it
 * measures. Here h is widened to double once, B is read once for both
 * sums, and with AVX2 four rows of A share the loads of h, four products a
 * step. */
#include <math.h>
#include <string.h>

#include "ts-helora-error.h"

/* u_ref = A·h, h already in double: each product of two floats is exact in
 * double. The portable form; x86-64 with AVX2 takes the one below. */
static void
a_times_h_scalar (const float *a, const double *h, guint rank, guint d, double *u_ref)
{
  for (guint i = 0; i < rank; i++)
    {
      const float *row = a + (gsize) i * d;
      double sum[4] = { 0 };
      guint j = 0;

      for (; j + 4 <= d; j += 4)
        for (guint k = 0; k < 4; k++)
          sum[k] += (double) row[j + k] * h[j + k];
      for (; j < d; j++)
        sum[0] += (double) row[j] * h[j];
      u_ref[i] = (sum[0] + sum[1]) + (sum[2] + sum[3]);
    }
}

/* max |B·u_diff| and max |B·u_ref| over the rows of B, in one pass. */
static void
b_row_maxima_scalar (const float *b, guint d_out, guint rank, const double *u_diff,
                     const double *u_ref, double *max_error, double *max_plain)
{
  double worst_error = 0, worst_plain = 0;

  for (guint o = 0; o < d_out; o++)
    {
      const float *row = b + (gsize) o * rank;
      double e = 0, p = 0;

      for (guint j = 0; j < rank; j++)
        {
          e += (double) row[j] * u_diff[j];
          p += (double) row[j] * u_ref[j];
        }
      worst_error = fmax (worst_error, fabs (e));
      worst_plain = fmax (worst_plain, fabs (p));
    }
  *max_error = worst_error;
  *max_plain = worst_plain;
}

#if defined(__x86_64__)
#include <immintrin.h>

#define AVX2 __attribute__ ((target ("avx2,fma")))

AVX2 static inline double
hsum_pd (__m256d v)
{
  __m128d s = _mm_add_pd (_mm256_castpd256_pd128 (v), _mm256_extractf128_pd (v, 1));
  return _mm_cvtsd_f64 (_mm_add_sd (s, _mm_unpackhi_pd (s, s)));
}

/* Four rows of A at a time share the loads of h. */
AVX2 static void
a_times_h_avx2 (const float *a, const double *h, guint rank, guint d, double *u_ref)
{
  guint i = 0;

  for (; i + 4 <= rank; i += 4)
    {
      const float *r0 = a + (gsize) i * d, *r1 = r0 + d, *r2 = r1 + d, *r3 = r2 + d;
      __m256d s0 = _mm256_setzero_pd (), s1 = s0, s2 = s0, s3 = s0;
      guint j = 0;

      for (; j + 4 <= d; j += 4)
        {
          __m256d hv = _mm256_loadu_pd (h + j);
          s0 = _mm256_fmadd_pd (_mm256_cvtps_pd (_mm_loadu_ps (r0 + j)), hv, s0);
          s1 = _mm256_fmadd_pd (_mm256_cvtps_pd (_mm_loadu_ps (r1 + j)), hv, s1);
          s2 = _mm256_fmadd_pd (_mm256_cvtps_pd (_mm_loadu_ps (r2 + j)), hv, s2);
          s3 = _mm256_fmadd_pd (_mm256_cvtps_pd (_mm_loadu_ps (r3 + j)), hv, s3);
        }
      double t[4] = { hsum_pd (s0), hsum_pd (s1), hsum_pd (s2), hsum_pd (s3) };
      for (; j < d; j++)
        for (guint k = 0; k < 4; k++)
          t[k] += (double) a[(gsize) (i + k) * d + j] * h[j];
      memcpy (u_ref + i, t, sizeof t);
    }
  if (i < rank)
    a_times_h_scalar (a + (gsize) i * d, h, rank - i, d, u_ref + i);
}

AVX2 static void
b_row_maxima_avx2 (const float *b, guint d_out, guint rank, const double *u_diff,
                   const double *u_ref, double *max_error, double *max_plain)
{
  double worst_error = 0, worst_plain = 0;

  for (guint o = 0; o < d_out; o++)
    {
      const float *row = b + (gsize) o * rank;
      __m256d error = _mm256_setzero_pd (), plain = error;
      guint j = 0;

      for (; j + 4 <= rank; j += 4)
        {
          __m256d bv = _mm256_cvtps_pd (_mm_loadu_ps (row + j));
          error = _mm256_fmadd_pd (bv, _mm256_loadu_pd (u_diff + j), error);
          plain = _mm256_fmadd_pd (bv, _mm256_loadu_pd (u_ref + j), plain);
        }
      double e = hsum_pd (error), p = hsum_pd (plain);
      for (; j < rank; j++)
        {
          e += (double) row[j] * u_diff[j];
          p += (double) row[j] * u_ref[j];
        }
      worst_error = fmax (worst_error, fabs (e));
      worst_plain = fmax (worst_plain, fabs (p));
    }
  *max_error = worst_error;
  *max_plain = worst_plain;
}

static gboolean
have_avx2 (void)
{
  return __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma");
}
#else
#define a_times_h_avx2 a_times_h_scalar
#define b_row_maxima_avx2 b_row_maxima_scalar
static gboolean
have_avx2 (void)
{
  return FALSE;
}
#endif

static void
delta_error (const LmLoraModule *module, const float *h, const float *u, gboolean avx2,
             TsHeloraDeltaError *out)
{
  guint rank = module->rank, d = module->d_in;
  g_autofree double *h64 = g_new (double, d + 2 * (gsize) rank);
  double *u_ref = h64 + d, *u_diff = u_ref + rank;
  double max_error, max_plain;

  for (guint j = 0; j < d; j++)
    h64[j] = h[j];
  (avx2 ? a_times_h_avx2 : a_times_h_scalar) (module->a, h64, rank, d, u_ref);
  for (guint i = 0; i < rank; i++)
    u_diff[i] = (double) u[i] - u_ref[i];
  (avx2 ? b_row_maxima_avx2 : b_row_maxima_scalar) (module->b, module->d_out, rank, u_diff,
                                                    u_ref, &max_error, &max_plain);
  out->max_abs_error = fabs (module->scale) * max_error;
  out->max_abs_plain = fabs (module->scale) * max_plain;
}

void
ts_helora_delta_error (const LmLoraModule *module, const float *h, const float *u,
                       TsHeloraDeltaError *out)
{
  delta_error (module, h, u, have_avx2 (), out);
}

void
ts_helora_delta_error_portable (const LmLoraModule *module, const float *h, const float *u,
                                TsHeloraDeltaError *out)
{
  delta_error (module, h, u, FALSE, out);
}
