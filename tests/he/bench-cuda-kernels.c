/* bench-cuda-kernels.c: median times of the CUDA kernels next to the CPU
 * scalar backend on the same inputs, for a GPU machine.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 *   build/tests/he/bench-cuda-kernels [repetitions]
 *
 * GPU: median of the repetitions of one launch sequence, timed with CUDA
 * events on the default stream (device time, data already on the GPU).
 * CPU: median thread CPU time of the scalar backend doing the same work on
 * one thread. Exits 77 (skipped) without a GPU.
 */
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckks-cuda-kernels.h"
#include "ckks-cuda-testutil.h"
#include "ckks-gpu.h"
#include "ckks-helora.h"
#include "ckks-objects.h"

static int reps = 50;

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

static double
median (double *v, int n)
{
  qsort (v, (size_t) n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double
thread_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static uint64_t *
random_words (const CkksContext *ctx, uint32_t limbs, size_t count, GRand *rng)
{
  size_t n = ctx->n, words = count * limbs * n;
  uint64_t *h = g_new (uint64_t, words);
  for (size_t e = 0; e < words; e++)
    {
      uint64_t x = ((uint64_t) g_rand_int (rng) << 32) | g_rand_int (rng);
      h[e] = x % ctx->params.moduli[(e / n) % limbs];
    }
  return h;
}

static void
die (const char *what)
{
  fprintf (stderr, "bench-cuda-kernels: %s failed: %s\n", what, ckks_cuda_test_error ());
  exit (1);
}

typedef enum { OP_FORWARD, OP_INVERSE } NttOp;

static void
bench_ntt (const CkksContext *ctx, const CkksCudaTables *t, NttOp op, uint32_t limbs,
           uint32_t count, GRand *rng, CkksCudaTestTimer *timer)
{
  size_t n = ctx->n, words = (size_t) count * limbs * n;
  uint64_t *h = random_words (ctx, limbs, count, rng);
  uint64_t *d = ckks_cuda_test_alloc (words);
  if (!d || ckks_cuda_test_upload (d, h, words) != CKKS_OK)
    die ("upload");
  double *gpu = g_new (double, reps), *ref = g_new (double, reps), *cpu = g_new (double, reps);
  for (int reference = 0; reference < 2; reference++)
    for (int r = -3; r < reps; r++)      /* three warm-up runs */
      {
        ckks_cuda_test_timer_start (timer);
        CkksStatus st;
        if (op == OP_FORWARD)
          st = reference ? ckks_cuda_ntt_forward_reference (NULL, t, d, limbs, count, limbs * n)
                         : ckks_cuda_ntt_forward (NULL, t, d, limbs, count, limbs * n);
        else
          st = reference ? ckks_cuda_ntt_inverse_reference (NULL, t, d, limbs, count, limbs * n)
                         : ckks_cuda_ntt_inverse (NULL, t, d, limbs, count, limbs * n);
        double us = ckks_cuda_test_timer_stop_us (timer);
        if (st != CKKS_OK || us < 0)
          die ("NTT");
        if (r >= 0)
          (reference ? ref : gpu)[r] = us;
      }
  for (int r = 0; r < reps; r++)
    {
      double t0 = thread_us ();
      for (uint32_t p = 0; p < count; p++)
        for (uint32_t i = 0; i < limbs; i++)
          {
            uint64_t *a = h + ((size_t) p * limbs + i) * n;
            if (op == OP_FORWARD)
              ckks_ntt_forward_limb (ctx, i, a);
            else
              ckks_ntt_inverse_limb (ctx, i, a);
          }
      cpu[r] = thread_us () - t0;
    }
  double g = median (gpu, reps), gr = median (ref, reps), c = median (cpu, reps);
  printf ("%-8s N=%-6zu limbs=%u polys=%-3u  gpu %9.1f us (per-stage %8.1f)  cpu %10.1f us"
          "  x%.0f\n", op == OP_FORWARD ? "ntt-fwd" : "ntt-inv", n, limbs, count, g, gr, c,
          c / g);
  ckks_cuda_test_free (d);
  g_free (h);
  g_free (gpu);
  g_free (ref);
  g_free (cpu);
}

/* The HE-LoRA evaluator's shapes for d x r at this context. */
static void
bench_mul_plain_accumulate (const CkksContext *ctx, const CkksCudaTables *t, size_t d_model,
                            size_t r_rank, GRand *rng, CkksCudaTestTimer *timer)
{
  CkksHeloraLayout *l = NULL;
  if (ckks_helora_layout_new (ctx, d_model, r_rank, &l) != CKKS_OK)
    die ("layout");
  uint32_t n_in = (uint32_t) ckks_helora_layout_n_inputs (l);
  uint32_t n_out = (uint32_t) ckks_helora_layout_n_outputs (l);
  uint32_t limbs = ckks_helora_layout_limbs (l);
  ckks_helora_layout_free (l);
  size_t n = ctx->n, words = limbs * n;
  uint64_t *ha = random_words (ctx, limbs, 2 * n_in, rng);
  uint64_t *hw = random_words (ctx, limbs, (size_t) n_in * n_out, rng);
  uint64_t *hws = g_new (uint64_t, (size_t) n_in * n_out * words);
  for (size_t e = 0; e < (size_t) n_in * n_out * words; e++)
    hws[e] = ckks_shoup_precompute (hw[e], ctx->params.moduli[(e / n) % limbs]);
  uint64_t *hout = g_new (uint64_t, 2 * (size_t) n_out * words);
  uint64_t *da = ckks_cuda_test_alloc (2 * n_in * words);
  uint64_t *dw = ckks_cuda_test_alloc ((size_t) n_in * n_out * words);
  uint64_t *dws = ckks_cuda_test_alloc ((size_t) n_in * n_out * words);
  uint64_t *dout = ckks_cuda_test_alloc (2 * (size_t) n_out * words);
  if (!da || !dw || !dws || !dout
      || ckks_cuda_test_upload (da, ha, 2 * n_in * words) != CKKS_OK
      || ckks_cuda_test_upload (dw, hw, (size_t) n_in * n_out * words) != CKKS_OK
      || ckks_cuda_test_upload (dws, hws, (size_t) n_in * n_out * words) != CKKS_OK)
    die ("upload");
  double *gpu = g_new (double, reps), *cpu = g_new (double, reps);
  for (int r = -3; r < reps; r++)
    {
      ckks_cuda_test_timer_start (timer);
      CkksStatus st = ckks_cuda_mul_plain_accumulate (
        NULL, t, limbs, da, da + n_in * words, words, n_in, dw, dws, words, n_out, NULL, NULL,
        dout, dout + n_out * words, words);
      double us = ckks_cuda_test_timer_stop_us (timer);
      if (st != CKKS_OK || us < 0)
        die ("mul_plain_accumulate");
      if (r >= 0)
        gpu[r] = us;
    }
  const uint64_t *a1 = ha + n_in * words;
  uint64_t *out1 = hout + n_out * words;
  for (int r = 0; r < reps; r++)
    {
      double t0 = thread_us ();
      for (uint32_t b = 0; b < n_out; b++)
        for (uint32_t i = 0; i < limbs; i++)
          for (uint32_t k = 0; k < n_in; k++)
            {
              size_t o = b * words + i * n, in = k * words + i * n;
              size_t pt = ((size_t) b * n_in + k) * words + i * n;
              ctx->k.mul_fixed_pair (hout + o, out1 + o, k ? hout + o : NULL,
                                     k ? out1 + o : NULL, ha + in, a1 + in, hw + pt,
                                     hws + pt, ctx->params.moduli[i], n);
            }
      cpu[r] = thread_us () - t0;
    }
  double g = median (gpu, reps), c = median (cpu, reps);
  printf ("ct-x-pt  N=%-6zu limbs=%u d=%zu r=%zu (%u in, %u out)  gpu %9.1f us  cpu %10.1f us"
          "  x%.0f\n", n, limbs, d_model, r_rank, n_in, n_out, g, c, c / g);
  ckks_cuda_test_free (da);
  ckks_cuda_test_free (dw);
  ckks_cuda_test_free (dws);
  ckks_cuda_test_free (dout);
  g_free (ha);
  g_free (hw);
  g_free (hws);
  g_free (hout);
  g_free (gpu);
  g_free (cpu);
}

/* One ciphertext (c0, c1) of 2 limbs rescaled to 1. */
static void
bench_rescale (const CkksContext *ctx, const CkksCudaTables *t, GRand *rng,
               CkksCudaTestTimer *timer)
{
  const uint32_t limbs = 2;
  size_t n = ctx->n, words = limbs * n;
  uint64_t *h = random_words (ctx, limbs, 2, rng);
  uint64_t *d = ckks_cuda_test_alloc (2 * words), *scratch = ckks_cuda_test_alloc (2 * n);
  if (!d || !scratch)
    die ("alloc");
  double *gpu = g_new (double, reps), *cpu = g_new (double, reps);
  for (int r = -3; r < reps; r++)
    {
      if (ckks_cuda_test_upload (d, h, 2 * words) != CKKS_OK)
        die ("upload");
      ckks_cuda_test_timer_start (timer);
      CkksStatus st = ckks_cuda_rescale (NULL, t, d, limbs, 2, words, scratch);
      double us = ckks_cuda_test_timer_stop_us (timer);
      if (st != CKKS_OK || us < 0)
        die ("rescale");
      if (r >= 0)
        gpu[r] = us;
    }
  CkksCiphertext *ct = NULL;
  if (ckks_ciphertext_new (ctx, limbs, &ct) != CKKS_OK)
    die ("ciphertext");
  for (int r = 0; r < reps; r++)
    {
      memcpy (ct->c0, h, words * sizeof (uint64_t));
      memcpy (ct->c1, h + words, words * sizeof (uint64_t));
      ct->n_limbs = limbs;
      double t0 = thread_us ();
      if (ckks_rescale (ct) != CKKS_OK)
        die ("CPU rescale");
      cpu[r] = thread_us () - t0;
    }
  double g = median (gpu, reps), c = median (cpu, reps);
  printf ("rescale  N=%-6zu limbs=2->1 one ciphertext  gpu %9.1f us  cpu %10.1f us  x%.0f\n",
          n, g, c, c / g);
  ckks_ciphertext_free (ct);
  ckks_cuda_test_free (d);
  ckks_cuda_test_free (scratch);
  g_free (h);
  g_free (gpu);
  g_free (cpu);
}

int
main (int argc, char **argv)
{
  if (argc > 1)
    reps = MAX (1, atoi (argv[1]));
  char why[200] = "";
  if (!ckks_gpu_available (why, sizeof why))
    {
      printf ("skipped: %s\n", why);
      return 77;
    }
  printf ("device: %s; medians of %d runs; CPU: scalar backend, one thread\n",
          ckks_cuda_test_device_name (), reps);
  GRand *rng = g_rand_new_with_seed (1);
  CkksCudaTestTimer *timer = ckks_cuda_test_timer_new ();
  if (!timer)
    die ("timer");
  static const char *const presets[] = { "fast", "default" };   /* N = 8192, 16384 */
  static const uint32_t counts[] = { 1, 2, 4, 8, 16, 32 };
  for (size_t p = 0; p < G_N_ELEMENTS (presets); p++)
    {
      CkksParams params;
      CkksContext *ctx = NULL;
      CkksCudaTables *t = NULL;
      if (ckks_params_preset (presets[p], &params) != CKKS_OK
          || ckks_context_new_with_backend (&params, CKKS_BACKEND_SCALAR, &ctx) != CKKS_OK)
        die ("context");
      if (ckks_cuda_tables_new (ctx, &t) != CKKS_OK)
        die ("tables");
      for (int op = OP_FORWARD; op <= OP_INVERSE; op++)
        for (size_t c = 0; c < G_N_ELEMENTS (counts); c++)
          bench_ntt (ctx, t, (NttOp) op, 2, counts[c], rng, timer);
      bench_mul_plain_accumulate (ctx, t, 2048, 32, rng, timer);
      bench_rescale (ctx, t, rng, timer);
      ckks_cuda_tables_free (t);
      ckks_context_free (ctx);
    }
  ckks_cuda_test_timer_free (timer);
  g_rand_free (rng);
  return 0;
}
