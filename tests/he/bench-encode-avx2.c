/* bench-encode-avx2.c: the AVX2 encode/decode kernels next to the scalar
 * ones at every preset's sizes (not a test).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 *   build/tests/he/bench-encode-avx2 [repetitions]
 *
 * Median thread CPU time of one call (microseconds) on the same inputs,
 * each kernel run repeatedly in a loop of its own, so the data stay in
 * cache as they do inside an encode. Exits 77 (skipped) without AVX2 + FMA.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckks-internal.h"
#include "ckks-objects.h"

static int reps = 200;

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static double
thread_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

typedef enum { K_FFT_FWD, K_FFT_INV, K_ROUND, K_REDUCE, K_CRT2, K_DOT, K_ENCODE, K_DECODE, K_COUNT } Kernel;

static const char *const kernel_names[K_COUNT] = {
  "fft_stages_forward", "fft_stages_inverse", "round_scaled", "reduce_signed", "crt2", "dot",
  "encode (coeffs)", "decode (coeffs)",
};

typedef struct {
  CkksContext *ctx;
  double *re, *im, *fre, *fim, *coeffs, *out;
  int64_t *ints;
  int8_t *err;
  uint64_t *words, *a0, *a1;
  volatile double sink;
} Inputs;

static void
run_once (Inputs *in, const CkksKernels *k, Kernel which)
{
  CkksContext *ctx = in->ctx;
  size_t n = ctx->n, slots = ctx->slots;
  CkksModulus m;
  switch (which)
    {
    case K_FFT_FWD:
      k->fft_stages_forward (in->fre, in->fim, ctx->fft_re, ctx->fft_im, slots);
      break;
    case K_FFT_INV:
      k->fft_stages_inverse (in->fre, in->fim, ctx->fft_re, ctx->fft_im, slots);
      break;
    case K_ROUND:
      k->round_scaled (in->ints, in->re, ctx->slot_bitrev, 1e6, slots);
      break;
    case K_REDUCE:
      m = ctx->ntt[0].mod;
      k->reduce_signed (in->words, in->ints, in->err, &m, n);
      break;
    case K_CRT2:
      k->crt2 (in->a0, in->a1, in->out, &ctx->crt2, n);
      break;
    case K_DOT:
      in->sink = k->dot (in->coeffs, in->out, n);
      break;
    case K_ENCODE:
      ctx->k = *k;
      ckks_encode_coeffs (ctx, in->re, in->im, slots, 0x1p30, in->ints);
      break;
    case K_DECODE:
      ctx->k = *k;
      ckks_real_coeffs_decode (ctx, in->coeffs, 0x1p30, in->fre, in->fim, slots);
      break;
    default:
      break;
    }
}

static double
median_us (Inputs *in, const CkksKernels *k, Kernel which)
{
  double *t = g_new (double, reps);
  for (int w = 0; w < 3; w++)
    run_once (in, k, which);
  for (int r = 0; r < reps; r++)
    {
      /* the FFTs grow their data: restart from bounded values */
      if (which == K_FFT_FWD || which == K_FFT_INV)
        {
          memcpy (in->fre, in->re, in->ctx->slots * sizeof (double));
          memcpy (in->fim, in->im, in->ctx->slots * sizeof (double));
        }
      double t0 = thread_us ();
      run_once (in, k, which);
      t[r] = thread_us () - t0;
    }
  qsort (t, (size_t) reps, sizeof *t, cmp_double);
  double med = t[reps / 2];
  g_free (t);
  return med;
}

static void
inputs_init (Inputs *in, CkksContext *ctx, GRand *rng)
{
  size_t n = ctx->n, slots = ctx->slots;
  in->ctx = ctx;
  in->re = g_new (double, slots);
  in->im = g_new (double, slots);
  in->fre = g_new (double, slots);
  in->fim = g_new (double, slots);
  in->coeffs = g_new (double, n);
  in->out = g_new (double, n);
  in->ints = g_new (int64_t, n);
  in->err = g_new (int8_t, n);
  in->words = g_new (uint64_t, n);
  in->a0 = g_new (uint64_t, n);
  in->a1 = g_new (uint64_t, n);
  for (size_t i = 0; i < slots; i++)
    {
      in->re[i] = g_rand_double_range (rng, -1, 1);
      in->im[i] = g_rand_double_range (rng, -1, 1);
    }
  for (size_t i = 0; i < n; i++)
    {
      in->coeffs[i] = g_rand_double_range (rng, -1e9, 1e9);
      in->out[i] = g_rand_double_range (rng, -1, 1);
      in->ints[i] = (int64_t) (((uint64_t) g_rand_int (rng) << 29) ^ g_rand_int (rng))
                    * (i & 1 ? -1 : 1);
      in->err[i] = (int8_t) g_rand_int_range (rng, -20, 21);
      in->a0[i] = (((uint64_t) g_rand_int (rng) << 32) | g_rand_int (rng)) % ctx->crt2.q0;
      in->a1[i] = (((uint64_t) g_rand_int (rng) << 32) | g_rand_int (rng)) % ctx->crt2.q1;
    }
}

static void
inputs_clear (Inputs *in)
{
  g_free (in->re); g_free (in->im); g_free (in->fre); g_free (in->fim);
  g_free (in->coeffs); g_free (in->out); g_free (in->ints); g_free (in->err);
  g_free (in->words); g_free (in->a0); g_free (in->a1);
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    reps = atoi (argv[1]) > 0 ? atoi (argv[1]) : reps;
  CkksKernels scalar, avx2;
  ckks_kernels_scalar (&scalar);
  ckks_kernels_scalar (&avx2);
  if (!ckks_kernels_avx2_encode (&avx2))
    {
      fprintf (stderr, "bench-encode-avx2: this CPU lacks AVX2 + FMA\n");
      return 77;
    }
  GRand *rng = g_rand_new_with_seed (7);
  printf ("%-8s %6s  %-20s %12s %12s %8s\n", "preset", "N", "kernel", "scalar us",
          "avx2 us", "speedup");
  for (const char *const *name = ckks_params_preset_names (); *name; name++)
    {
      CkksParams p;
      CkksContext *ctx = NULL;
      if (ckks_params_preset (*name, &p) != CKKS_OK
          || ckks_context_new_with_backend (&p, CKKS_BACKEND_SCALAR, &ctx) != CKKS_OK)
        return 1;
      Inputs in;
      inputs_init (&in, ctx, rng);
      for (Kernel k = 0; k < K_COUNT; k++)
        {
          double ts = median_us (&in, &scalar, k), tv = median_us (&in, &avx2, k);
          printf ("%-8s %6zu  %-20s %12.1f %12.1f %7.2fx\n", *name, ctx->n, kernel_names[k],
                  ts, tv, ts / tv);
        }
      inputs_clear (&in);
      ckks_context_free (ctx);
    }
  g_rand_free (rng);
  return 0;
}
