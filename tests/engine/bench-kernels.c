/* bench-kernels.c: matrix-vector timings per type, ISA, activation mode and
 * thread count, plus the read bandwidth of this machine (not a test).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * usage: bench-kernels [--quick] [--large] [--threads 1,2] [--shape 896x4864]
 * environment: BENCH_TYPES=q4_K,q8_0 BENCH_ISA=avx512 BENCH_LARGE_ONLY=1
 * BENCH_HOT=1 (one copy of the small matrix, so it stays in cache)
 * BENCH_PREFILL=1 (also lm_matmul of 64 tokens per type)
 * Weights are random blocks; the small shape cycles through enough copies to
 * exceed the last-level cache, as decode streams expert weights from DRAM. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench-util.h"
#include "kernels.h"

static double
now_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* CPU time of the whole process: with other jobs on the machine, wall time
 * includes time spent descheduled; for one thread this excludes it. */
static double
cpu_s (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

/* Random weights of @type: random quants, small finite fp16 scales. */
static uint8_t *
make_weights (LmTensorType type, int64_t n_in, int64_t n_rows, size_t *bytes_out)
{
  size_t bytes = lm_row_bytes (type, n_in) * (size_t) n_rows;
  uint8_t *w = bench_random_weights (type, bytes);
  if (!w)
    return NULL;
  *bytes_out = bytes;
  return w;
}

typedef struct {
  const uint8_t *base;
  size_t bytes;
  uint64_t sums[64];
} ReadJob;

static void
read_part (void *ctx, int index, int n)
{
  ReadJob *job = ctx;
  size_t part = job->bytes / (size_t) n / 64 * 64;
  const uint64_t *p = (const uint64_t *) (job->base + part * (size_t) index);
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  for (size_t i = 0; i < part / 8; i += 4)
    {
      s0 += p[i];
      s1 += p[i + 1];
      s2 += p[i + 2];
      s3 += p[i + 3];
    }
  job->sums[index] = s0 + s1 + s2 + s3;
}

static void
bench_bandwidth (LmThreadPool *pool, int threads)
{
  size_t bytes = (size_t) 1 << 30;
  uint8_t *buf = malloc (bytes);
  if (!buf)
    return;
  memset (buf, 1, bytes);
  ReadJob job = { buf, bytes, { 0 } };
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++)
    {
      double t0 = now_s ();
      lm_thread_pool_run (pool, read_part, &job, threads);
      double t = now_s () - t0;
      best = t < best ? t : best;
    }
  printf ("read bandwidth, %d thread(s): %.1f GB/s (best of 5, 1 GiB)\n", threads,
          (double) bytes / best * 1e-9);
  free (buf);
}

static void
nothing (void *ctx, int index, int n)
{
}

/* Round trip of an empty job through the pool (decode issues hundreds per token). */
static void
bench_pool (LmThreadPool *pool, int threads)
{
  const int rounds = 20000;
  double t0 = now_s ();
  for (int i = 0; i < rounds; i++)
    lm_thread_pool_run (pool, nothing, NULL, threads * 4);
  printf ("pool round trip, %d thread(s): %.2f us\n", threads, (now_s () - t0) / rounds * 1e6);
}

static int
compare_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

static void
bench_case (LmThreadPool *pool, int threads, const LmKernels *k, LmActMode mode,
            LmTensorType type, int64_t n_in, int64_t n_out, int reps)
{
  size_t bytes;
  /* enough copies to stream from DRAM: at least 256 MiB in all */
  size_t one = lm_row_bytes (type, n_in) * (size_t) n_out;
  int copies = getenv ("BENCH_HOT") ? 1 : (int) ((((size_t) 256 << 20) + one - 1) / one);
  uint8_t *w = make_weights (type, n_in, n_out * copies, &bytes);
  float *x = malloc ((size_t) n_in * sizeof (float));
  float *y = malloc ((size_t) n_out * sizeof (float));
  double *times = malloc ((size_t) reps * sizeof (double));
  double *cpu = malloc ((size_t) reps * sizeof (double));
  if (!w || !x || !y || !times || !cpu)
    {
      fprintf (stderr, "out of memory for %s %lldx%lld\n", lm_type_name (type),
               (long long) n_in, (long long) n_out);
      exit (1);
    }
  for (int64_t i = 0; i < n_in; i++)
    x[i] = (float) ((int64_t) (bench_next_random () % 2001) - 1000) * 1e-3f;

  lm_matvec_ex (k, mode, pool, type, w, n_in, n_out, x, y);   /* warm-up */
  for (int rep = 0; rep < reps; rep++)
    {
      const uint8_t *m = w + one * (size_t) (rep % copies);
      double t0 = now_s (), c0 = cpu_s ();
      lm_matvec_ex (k, mode, pool, type, m, n_in, n_out, x, y);
      times[rep] = now_s () - t0;
      cpu[rep] = cpu_s () - c0;
    }
  qsort (times, (size_t) reps, sizeof (double), compare_double);
  qsort (cpu, (size_t) reps, sizeof (double), compare_double);
  double median = times[reps / 2], best = times[0], cpu_median = cpu[reps / 2];
  printf ("%-5s %6lldx%-7lld %-7s %-6s threads %d: median %10.1f us %6.1f GB/s | best %10.1f us %6.1f GB/s"
          " | cpu %10.1f us\n",
          lm_type_name (type), (long long) n_in, (long long) n_out, lm_isa_name (lm_kernels_isa (k)),
          mode == LM_ACT_NATIVE ? "native" : "f32", threads, median * 1e6,
          (double) one / median * 1e-9, best * 1e6, (double) one / best * 1e-9, cpu_median * 1e6);
  free (cpu);
  fflush (stdout);
  free (times);
  free (y);
  free (x);
  free (w);
}

/* Prefill: lm_matmul of @n_tok tokens, reported per token. */
static void
bench_prefill (LmThreadPool *pool, int threads, const LmKernels *k, LmTensorType type,
               int64_t n_in, int64_t n_out, int64_t n_tok)
{
  size_t bytes;
  uint8_t *w = make_weights (type, n_in, n_out, &bytes);
  float *X = malloc ((size_t) (n_in * n_tok) * sizeof (float));
  float *Y = malloc ((size_t) (n_out * n_tok) * sizeof (float));
  if (!w || !X || !Y)
    exit (1);
  for (int64_t i = 0; i < n_in * n_tok; i++)
    X[i] = (float) ((int64_t) (bench_next_random () % 2001) - 1000) * 1e-3f;
  double best = 1e9, best_cpu = 1e9;
  for (int rep = 0; rep < 5; rep++)
    {
      double t0 = now_s (), c0 = cpu_s ();
      lm_matmul_ex (k, LM_ACT_NATIVE, pool, type, w, n_in, n_out, X, n_tok, Y);
      double t = now_s () - t0, c = cpu_s () - c0;
      best = t < best ? t : best;
      best_cpu = c < best_cpu ? c : best_cpu;
    }
  printf ("prefill %-5s %lldx%lld %-7s %lld tokens, threads %d: %8.1f us per token, cpu %8.1f us (best of 5)\n",
          lm_type_name (type), (long long) n_in, (long long) n_out, lm_isa_name (lm_kernels_isa (k)),
          (long long) n_tok, threads,
          best / (double) n_tok * 1e6, best_cpu / (double) n_tok * 1e6);
  fflush (stdout);
  free (Y);
  free (X);
  free (w);
}

int
main (int argc, char **argv)
{
  int large = 0, quick = 0;
  int64_t n_in = 2048, n_out = 512;   /* --shape: n_in x n_out of the small matrix */
  int thread_counts[8] = { 1, 2 }, n_counts = 2;
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--large") == 0)
        large = 1;
      else if (strcmp (argv[i], "--quick") == 0)
        quick = 1;
      else if (strcmp (argv[i], "--shape") == 0 && i + 1 < argc
               && sscanf (argv[++i], "%" SCNd64 "x%" SCNd64, &n_in, &n_out) == 2 && n_in > 0
               && n_out > 0)
        ;
      else if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc)
        {
          n_counts = 0;
          for (char *s = strtok (argv[++i], ","); s && n_counts < 8; s = strtok (NULL, ","))
            thread_counts[n_counts++] = atoi (s);
        }
      else
        {
          fprintf (stderr, "usage: %s [--quick] [--large] [--threads 1,2] [--shape NxM]\n", argv[0]);
          return 2;
        }
    }

  const LmTensorType types[] = { LM_TYPE_Q4_K, LM_TYPE_Q5_K, LM_TYPE_Q6_K, LM_TYPE_Q8_0,
                                 LM_TYPE_Q5_0, LM_TYPE_Q4_0, LM_TYPE_Q4_1, LM_TYPE_Q5_1,
                                 LM_TYPE_Q2_K, LM_TYPE_Q3_K, LM_TYPE_F16, LM_TYPE_BF16,
                                 LM_TYPE_F32 };
  for (int c = 0; c < n_counts; c++)
    {
      int threads = thread_counts[c];
      LmThreadPool *pool = lm_thread_pool_new (threads);
      bench_pool (pool, threads);
      if (!getenv ("BENCH_PREFILL"))
        bench_bandwidth (pool, threads);
      for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (int isa = LM_ISA_COUNT - 1; isa >= 0; isa--)
          {
            const LmKernels *k = lm_kernels_for_isa ((LmIsa) isa);
            if (!k || (quick && isa != LM_ISA_COUNT - 1))
              continue;
            if (getenv ("BENCH_ISA") && strcmp (getenv ("BENCH_ISA"), lm_isa_name ((LmIsa) isa)) != 0)
              continue;
            if (getenv ("BENCH_TYPES") && !strstr (getenv ("BENCH_TYPES"), lm_type_name (types[t])))
              continue;
            for (int mode = 0; mode < 2; mode++)
              {
                /* f32 activations against quantised weights: the alternative
                 * measured for the Q4_K and Q8_0 decision only */
                if (mode == LM_ACT_F32 && (quick || (types[t] != LM_TYPE_Q4_K
                                                     && types[t] != LM_TYPE_Q8_0)))
                  continue;
                if (n_in % (int64_t) lm_type_block_size (types[t]) != 0)
                  continue;
                if (!getenv ("BENCH_LARGE_ONLY"))
                  bench_case (pool, threads, k, (LmActMode) mode, types[t], n_in, n_out,
                              isa == LM_ISA_SCALAR ? 5 : 101);
                if (large && isa != LM_ISA_SCALAR && types[t] != LM_TYPE_F32)
                  bench_case (pool, threads, k, (LmActMode) mode, types[t], 2048, 248320, 7);
              }
          }
      if (getenv ("BENCH_PREFILL"))
        for (int isa = LM_ISA_COUNT - 1; isa >= 0; isa--)
          {
            const LmKernels *k = lm_kernels_for_isa ((LmIsa) isa);
            const char *only = getenv ("BENCH_ISA");
            if (!k || isa == LM_ISA_SCALAR || (only && strcmp (only, lm_isa_name ((LmIsa) isa)) != 0))
              continue;
            for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
              if (n_in % (int64_t) lm_type_block_size (types[t]) == 0
                  && (!getenv ("BENCH_TYPES") || strstr (getenv ("BENCH_TYPES"), lm_type_name (types[t]))))
                bench_prefill (pool, threads, k, types[t], n_in, n_out, 64);
          }
      lm_thread_pool_free (pool);
    }
  return 0;
}
