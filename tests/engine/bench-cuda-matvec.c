/* bench-cuda-matvec.c: GPU time and bandwidth of the product kernels for the
 * Qwen3.5-35B-A3B shapes, per weight type (not a test; needs a GPU).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * usage: bench-cuda-matvec [--reps N] [--peak GBS]
 * Decode products run with f32 activations and, for the quantised types,
 * with 8-bit ones (q8: LM_CUDA_ACT_Q8).
 * environment: BENCH_TYPES=q4_K,q6_K (default: every type)
 * Times are GPU time from CUDA events over N back-to-back launches, divided
 * by N; each launch reads another copy of the weights (at least 256 MiB in
 * all, beyond the L2 cache), as decode streams them from memory. GB/s counts
 * the weight bytes read (for the experts: the k selected matrices). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench-util.h"
#include "lm-cuda-buffer.h"
#include "lm-cuda-matvec.h"
#include "lm-gpu.h"
#include "quant.h"

/* Random weights with small finite scales (bench_random_weights), on the device. */
static void *
device_weights (LmTensorType type, size_t bytes)
{
  uint8_t *w = bench_random_weights (type, bytes);
  if (w == NULL)
    return NULL;
  void *d = lm_cuda_buffer_new (bytes, w);
  free (w);
  return d;
}

static void *
device_floats (size_t n)
{
  float *x = malloc (n * sizeof (float));
  if (x == NULL)
    return NULL;
  for (size_t i = 0; i < n; i++)
    x[i] = (float) ((int64_t) (bench_next_random () % 2001) - 1000) * 1e-3f;
  void *d = lm_cuda_buffer_new (n * sizeof (float), x);
  free (x);
  return d;
}

typedef enum { CASE_MATVEC, CASE_EXPERTS, CASE_MATMUL } CaseKind;

typedef struct {
  const char *name;
  CaseKind kind;
  uint32_t n_in, n_out;
  uint32_t n_expert, k;   /* experts */
  uint32_t n_tok;         /* matmul */
} Case;

static const Case cases[] = {
  { "expert gate/up (8 of 256)", CASE_EXPERTS, 2048, 512, 256, 8, 0 },
  { "expert down (8 of 256)", CASE_EXPERTS, 512, 2048, 256, 8, 0 },
  { "shared expert gate/up", CASE_MATVEC, 2048, 512, 0, 0, 0 },
  { "shared expert down", CASE_MATVEC, 512, 2048, 0, 0, 0 },
  { "attention q+gate", CASE_MATVEC, 2048, 8192, 0, 0, 0 },
  { "attention k, v", CASE_MATVEC, 2048, 512, 0, 0, 0 },
  { "attention output", CASE_MATVEC, 4096, 2048, 0, 0, 0 },
  { "DeltaNet qkv", CASE_MATVEC, 2048, 8192, 0, 0, 0 },
  { "DeltaNet z", CASE_MATVEC, 2048, 4096, 0, 0, 0 },
  { "DeltaNet alpha, beta", CASE_MATVEC, 2048, 32, 0, 0, 0 },
  { "DeltaNet output", CASE_MATVEC, 4096, 2048, 0, 0, 0 },
  { "LM head", CASE_MATVEC, 2048, 248320, 0, 0, 0 },
  { "prefill expert gate/up", CASE_MATMUL, 2048, 512, 0, 0, 512 },
  { "prefill attention output", CASE_MATMUL, 4096, 2048, 0, 0, 512 },
  { "prefill DeltaNet qkv", CASE_MATMUL, 2048, 8192, 0, 0, 512 },
};

static int
bench_case (const Case *c, LmTensorType type, LmCudaActMode mode, int reps, double peak_gbs)
{
  size_t row_bytes = lm_row_bytes (type, c->n_in);
  size_t mat = row_bytes * c->n_out;
  size_t one = c->kind == CASE_EXPERTS ? mat * c->n_expert : mat;
  size_t copies = c->kind == CASE_MATMUL ? 1 : (((size_t) 256 << 20) + one - 1) / one;
  size_t read = c->kind == CASE_EXPERTS ? mat * c->k : mat;
  uint32_t n_x = c->kind == CASE_MATMUL ? c->n_tok : c->kind == CASE_EXPERTS ? c->k : 1;
  uint8_t *w = device_weights (type, one * copies);
  float *x = device_floats ((size_t) n_x * c->n_in);
  float *y = lm_cuda_buffer_new ((size_t) n_x * c->n_out * sizeof (float), NULL);
  int32_t sel_host[64];
  for (uint32_t j = 0; j < c->k && j < 64; j++)
    sel_host[j] = (int32_t) ((j * 37 + 11) % (c->n_expert ? c->n_expert : 1));
  int32_t *sel = lm_cuda_buffer_new (sizeof sel_host, sel_host);
  LmCudaTimer *timer = lm_cuda_timer_new ();
  if (!w || !x || !y || !sel || !timer)
    {
      fprintf (stderr, "%s %s: out of device memory\n", c->name, lm_type_name (type));
      return 1;
    }

  LmStatus st = LM_OK;
  for (int pass = 0; pass < 2 && st == LM_OK; pass++)
    {
      int n_reps = pass == 0 ? 3 : reps;   /* pass 0 warms up */
      lm_cuda_timer_start (timer);
      for (int r = 0; r < n_reps && st == LM_OK; r++)
        {
          const uint8_t *m = w + one * (size_t) (r % (int) copies);
          switch (c->kind)
            {
            case CASE_MATVEC:
              st = lm_cuda_matvec_ex (NULL, mode, type, m, c->n_in, c->n_out, x, y, false);
              break;
            case CASE_EXPERTS:
              st = lm_cuda_matvec_experts_ex (NULL, mode, type, m, mat, c->n_in, c->n_out, sel,
                                              c->k, x, c->n_in, y);
              break;
            case CASE_MATMUL:
              st = lm_cuda_matmul_ex (NULL, mode, type, m, c->n_in, c->n_out, x, c->n_tok, y);
              break;
            }
        }
      double ms = lm_cuda_timer_stop_ms (timer);
      if (st != LM_OK || ms < 0)
        {
          fprintf (stderr, "%s %s: %s\n", c->name, lm_type_name (type), lm_status_message (st));
          return 1;
        }
      if (pass == 1)
        {
          double us = ms * 1e3 / reps;
          if (c->kind == CASE_MATMUL)
            printf ("%-26s %-5s %5ux%-6u %3u tokens: %9.1f us, %6.2f us/token, %7.0f GFLOP/s\n",
                    c->name, lm_type_name (type), c->n_in, c->n_out, c->n_tok, us,
                    us / c->n_tok, 2.0 * c->n_in * c->n_out * c->n_tok / (us * 1e3));
          else
            {
              double gbs = (double) read / (us * 1e3);
              printf ("%-26s %-5s %-3s %5ux%-6u %8.1f us %7.0f GB/s (%3.0f%% of %.0f)\n", c->name,
                      lm_type_name (type), mode == LM_CUDA_ACT_Q8 ? "q8" : "f32", c->n_in,
                      c->n_out, us, gbs, 100.0 * gbs / peak_gbs, peak_gbs);
            }
          fflush (stdout);
        }
    }
  lm_cuda_timer_free (timer);
  lm_cuda_buffer_free (sel);
  lm_cuda_buffer_free (y);
  lm_cuda_buffer_free (x);
  lm_cuda_buffer_free (w);
  return 0;
}

int
main (int argc, char **argv)
{
  int reps = 200;
  double peak = 3350.0;   /* H100 SXM HBM3 */
  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--reps") == 0 && i + 1 < argc)
        reps = atoi (argv[++i]);
      else if (strcmp (argv[i], "--peak") == 0 && i + 1 < argc)
        peak = atof (argv[++i]);
      else
        {
          fprintf (stderr, "usage: %s [--reps N] [--peak GB/s]\n", argv[0]);
          return 2;
        }
    }
  char why[200];
  if (!lm_gpu_available (why, sizeof why))
    {
      fprintf (stderr, "bench-cuda-matvec: %s\n", why);
      return 77;
    }
  const LmTensorType types[] = { LM_TYPE_Q4_K, LM_TYPE_Q5_K, LM_TYPE_Q6_K, LM_TYPE_Q8_0,
                                 LM_TYPE_F16, LM_TYPE_BF16, LM_TYPE_F32 };
  const char *only = getenv ("BENCH_TYPES");
  int failed = 0;
  for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
    {
      if (only && !strstr (only, lm_type_name (types[t])))
        continue;
      for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int mode = LM_CUDA_ACT_F32; mode <= LM_CUDA_ACT_Q8; mode++)
          {
            /* the integer path exists for the quantised types */
            if (mode == LM_CUDA_ACT_Q8 && lm_type_block_size (types[t]) == 1)
              continue;
            failed |= bench_case (&cases[c], types[t], (LmCudaActMode) mode,
                                  cases[c].kind == CASE_MATMUL ? reps / 10 + 1 : reps, peak);
          }
    }
  return failed;
}
