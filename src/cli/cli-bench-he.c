/* cli-bench-he.c: tensafe-cli bench he: the HE-LoRA token pipeline per stage.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Single thread, d = 2048, r = 32, |h| <= 1, |A| <= 0.1; for each preset and
 * encryption kind, after warm-up runs, the median and min over --runs tokens
 * of: encrypt (encode + encrypt h), evaluate (every ct x pt, compact
 * results: what a client needs and what the evaluator sends back), decrypt
 * (decrypt + segment sums -> u) and their total; plus one forward NTT of one
 * limb at N = 16384. --cpu-backend runs all that on each CPU backend named
 * (scalar, avx2, ifma, auto: the one the context picks), in one run.
 * --packing: the results' packing, by default the complex one, as the
 * desktop's local evaluator runs it (real h: rows in the real and the
 * imaginary parts of the slots, half the results of the real packing);
 * "real" for the packing of the remote protocol.
 *
 * --backend cuda: the whole token on the GPU (ckks-gpu-helora.h), one
 * preset (the default unless --preset), sk encryption: per-stage median µs
 * from CUDA events (H2D, encode + encrypt, evaluate, decrypt + sums, D2H),
 * the token's median wall time from h on the host to u on the host, and the
 * single-thread CPU pipeline's median of the same run for the ratio.
 *
 * --seal PROGRAM: after each CPU configuration, the same token on Microsoft
 * SEAL (tools/seal-bench, built by the user against their SEAL) at the
 * same ring degree, encryption, runs and clock, and the ratio of the medians.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "cli-bench-he-seal.h"
#include "ckks-gpu-helora.h"
#include "ckks-gpu.h"
#include "ckks.h"
#include "cli.h"
#include "ts-timings.h"

#define BENCH_D 2048
#define BENCH_R 32
#define WARMUP 5

enum { STAGE_ENCRYPT, STAGE_EVALUATE, STAGE_DECRYPT, STAGE_TOTAL, N_STAGES };
static const char *const stage_names[N_STAGES] = { "encrypt", "evaluate", "decrypt", "total" };

typedef struct {
  const char *preset;
  size_t ring_degree;
  double log_q;
  const char *backend;
  const char *packing;                   /* "complex" or "real": as run */
  gboolean pk;
  double median[N_STAGES], min[N_STAGES];
  double max_abs_error;
  size_t upload_bytes, download_bytes;   /* per token, serialised */
  double ntt_median, ntt_min;            /* forward NTT, same backend */
  gboolean has_seal;
  CliSealResult seal;                    /* the same token on SEAL (--seal) */
} BenchResult;

typedef struct {
  const char *name;
  CkksBackend backend;
} CpuBackend;

static const CpuBackend cpu_backends[] = {
  { "auto", CKKS_BACKEND_AUTO },
  { "scalar", CKKS_BACKEND_SCALAR },
  { "avx2", CKKS_BACKEND_AVX2 },
  { "ifma", CKKS_BACKEND_IFMA },
};

/* CLOCK_MONOTONIC (wall time, the default) or CLOCK_THREAD_CPUTIME_ID (this
 * thread's CPU time: on a machine shared with other work it leaves out the
 * time the thread was not running). */
static clockid_t bench_clock = CLOCK_MONOTONIC;

/* The CPU token's packing (--packing); layouts without it get the real one. */
static CkksHeloraPacking bench_packing = CKKS_HELORA_PACKING_COMPLEX;

static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (bench_clock, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
median_min (double *v, int n, double *median, double *min)
{
  *median = ts_median (v, (guint) n);   /* sorts v */
  *min = v[0];
}

static float *
random_floats (GRand *rng, size_t n, double bound)
{
  float *v = g_new (float, n);
  for (size_t i = 0; i < n; i++)
    v[i] = (float) g_rand_double_range (rng, -bound, bound);
  return v;
}

static gboolean
check (CkksStatus st, const char *what)
{
  if (st == CKKS_OK)
    return TRUE;
  fprintf (stderr, "tensafe-cli bench he: %s: %s\n", what, ckks_status_message (st));
  return FALSE;
}

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  CkksPublicKey *pk;
  CkksHeloraPlan *plan;
  CkksCiphertext **in, **out;
  float *a;
} BenchSetup;

static void
setup_clear (BenchSetup *s)
{
  if (s->plan)
    {
      const CkksHeloraLayout *l = ckks_helora_plan_layout (s->plan);
      ckks_helora_ciphertexts_free (s->in, ckks_helora_layout_n_inputs (l));
      ckks_helora_ciphertexts_free (s->out, ckks_helora_layout_n_outputs (l));
    }
  ckks_helora_plan_free (s->plan);
  ckks_public_key_free (s->pk);
  ckks_secret_key_free (s->sk);
  ckks_context_free (s->ctx);
  g_free (s->a);
}

/* The adapter's plan with @packing, or the real packing where the layout
 * has no other (as the local evaluator falls back). */
static CkksStatus
plan_new (BenchSetup *s, CkksHeloraPacking packing)
{
  CkksStatus st = ckks_helora_plan_new_packed (s->ctx, BENCH_D, BENCH_R, s->a,
                                               CKKS_HELORA_SCALES_PLAIN, packing, &s->plan);
  if (st == CKKS_ERR_UNSUPPORTED && packing != CKKS_HELORA_PACKING_REAL)
    st = ckks_helora_plan_new (s->ctx, BENCH_D, BENCH_R, s->a, &s->plan);
  return st;
}

static gboolean
setup_init (BenchSetup *s, const char *preset, CkksBackend backend, CkksHeloraPacking packing,
            GRand *rng)
{
  CkksParams params;
  memset (s, 0, sizeof *s);
  s->a = random_floats (rng, (size_t) BENCH_D * BENCH_R, 0.1);
  if (!check (ckks_params_preset (preset, &params), preset)
      || !check (ckks_context_new_with_backend (&params, backend, &s->ctx), "context")
      || !check (ckks_secret_key_new (s->ctx, &s->sk), "secret key")
      || !check (ckks_public_key_new (s->sk, &s->pk), "public key")
      || !check (plan_new (s, packing), "plan"))
    return FALSE;
  const CkksHeloraLayout *l = ckks_helora_plan_layout (s->plan);
  return check (ckks_helora_ciphertexts_new (l, ckks_helora_layout_n_inputs (l), &s->in), "inputs")
         && check (ckks_helora_ciphertexts_new (l, ckks_helora_layout_n_outputs (l), &s->out), "outputs");
}

/* One token; stage times added to @t. Returns the max abs error of u. */
static gboolean
run_token (BenchSetup *s, gboolean pk, GRand *rng, double t[N_STAGES], double *err)
{
  const CkksHeloraLayout *l = ckks_helora_plan_layout (s->plan);
  float *h = random_floats (rng, BENCH_D, 1.0);
  double u[BENCH_R], factor;
  double t0 = now_ms ();
  CkksStatus st = pk ? ckks_helora_encrypt_pk (l, s->pk, h, s->in, ckks_helora_layout_n_inputs (l), &factor)
                     : ckks_helora_encrypt_sk (l, s->sk, h, s->in, ckks_helora_layout_n_inputs (l), &factor);
  double t1 = now_ms ();
  if (st == CKKS_OK)
    st = ckks_helora_evaluate_compact (s->plan, s->in, ckks_helora_layout_n_inputs (l),
                                         s->out, ckks_helora_layout_n_outputs (l));
  double t2 = now_ms ();
  if (st == CKKS_OK)
    st = ckks_helora_decrypt (l, s->sk, s->out, ckks_helora_layout_n_outputs (l), factor, u);
  double t3 = now_ms ();
  t[STAGE_ENCRYPT] = t1 - t0;
  t[STAGE_EVALUATE] = t2 - t1;
  t[STAGE_DECRYPT] = t3 - t2;
  t[STAGE_TOTAL] = t3 - t0;
  *err = 0;
  for (int i = 0; i < BENCH_R; i++)
    {
      double ref = 0;
      for (int j = 0; j < BENCH_D; j++)
        ref += (double) s->a[i * BENCH_D + j] * h[j];
      *err = fmax (*err, fabs (u[i] - ref));
    }
  g_free (h);
  return check (st, "token");
}

static gboolean
bench_one (const char *preset, CkksBackend backend, gboolean pk, int runs, GRand *rng,
           BenchResult *res)
{
  BenchSetup s;
  gboolean ok = setup_init (&s, preset, backend, bench_packing, rng);
  double *samples = g_new (double, (size_t) N_STAGES * runs), t[N_STAGES], err;
  res->preset = preset;
  res->pk = pk;
  res->max_abs_error = 0;
  for (int i = 0; ok && i < WARMUP; i++)
    ok = run_token (&s, pk, rng, t, &err);
  for (int i = 0; ok && i < runs; i++)
    {
      ok = run_token (&s, pk, rng, t, &err);
      res->max_abs_error = fmax (res->max_abs_error, err);
      for (int k = 0; k < N_STAGES; k++)
        samples[k * runs + i] = t[k];
    }
  if (ok)
    {
      res->ring_degree = ckks_context_ring_degree (s.ctx);
      res->log_q = ckks_params_log2_q (ckks_context_params (s.ctx));
      res->backend = ckks_context_backend_name (s.ctx);
      const CkksHeloraLayout *l = ckks_helora_plan_layout (s.plan);
      size_t n_in = ckks_helora_layout_n_inputs (l), n_out = ckks_helora_layout_n_outputs (l);
      res->packing = ckks_helora_layout_packing (l) == CKKS_HELORA_PACKING_COMPLEX ? "complex"
                                                                                  : "real";
      size_t compact = ckks_helora_result_serialized_size (l);
      res->upload_bytes = n_in * ckks_ciphertext_serialized_size (s.in[0]);
      res->download_bytes = n_out * (compact ? compact : ckks_ciphertext_serialized_size (s.out[0]));
      for (int k = 0; k < N_STAGES; k++)
        median_min (samples + k * runs, runs, &res->median[k], &res->min[k]);
    }
  g_free (samples);
  setup_clear (&s);
  return ok;
}

/* One forward NTT of one limb at N = 16384 (default preset's first prime). */
static gboolean
bench_ntt (CkksBackend backend, int runs, double *median, double *min)
{
  CkksParams params;
  CkksContext *ctx = NULL;
  if (!check (ckks_params_preset ("default", &params), "default")
      || !check (ckks_context_new_with_backend (&params, backend, &ctx), "context"))
    return FALSE;
  size_t n = ckks_context_ring_degree (ctx);
  uint64_t *v = aligned_alloc (64, n * sizeof (uint64_t));   /* like the engine's */
  if (!v)
    return FALSE;
  for (size_t i = 0; i < n; i++)
    v[i] = (i * 0x9E3779B97F4A7C15ull) % params.moduli[0];
  int reps = runs * 10;
  double *t = g_new (double, (size_t) reps);
  for (int i = 0; i < reps + WARMUP; i++)
    {
      double t0 = now_ms ();
      ckks_ntt_forward_limb (ctx, 0, v);
      if (i >= WARMUP)
        t[i - WARMUP] = now_ms () - t0;
    }
  median_min (t, reps, median, min);
  g_free (t);
  free (v);
  ckks_context_free (ctx);
  return TRUE;
}

static void
print_json (const BenchResult *res, int count)
{
  printf ("[");
  for (int i = 0; i < count; i++)
    {
      const BenchResult *r = &res[i];
      printf ("%s\n  {\"preset\": \"%s\", \"ring_degree\": %zu, \"log_q\": %.0f, "
              "\"encrypt\": \"%s\", \"d\": %d, \"r\": %d, \"backend\": \"%s\", "
              "\"packing\": \"%s\", ",
              i ? "," : "", r->preset, r->ring_degree, floor (r->log_q + 0.5),
              r->pk ? "pk" : "sk", BENCH_D, BENCH_R, r->backend, r->packing);
      for (int m = 0; m < 2; m++)
        {
          const double *v = m ? r->min : r->median;
          printf ("\"%s\": {", m ? "min_ms" : "median_ms");
          for (int k = 0; k < N_STAGES; k++)
            printf ("\"%s\": %.4f%s", stage_names[k], v[k], k + 1 < N_STAGES ? ", " : "");
          printf ("}, ");
        }
      printf ("\"max_abs_error\": %.3g, \"ntt_n16384_ms\": {\"median\": %.4f, \"min\": %.4f}",
              r->max_abs_error, r->ntt_median, r->ntt_min);
      if (r->has_seal)
        printf (", \"seal\": {\"library\": \"%s\", \"hexl\": %s, \"median_ms\": %.4f, "
                "\"min_ms\": %.4f, \"max_abs_error\": %.3g, \"speedup\": %.2f}",
                r->seal.library, r->seal.hexl ? "true" : "false", r->seal.median_ms,
                r->seal.min_ms, r->seal.max_abs_error, r->seal.median_ms / r->median[STAGE_TOTAL]);
      printf ("}");
    }
  printf ("\n]\n");
}

/* The same token on SEAL beside ours, interleaved configuration by
 * configuration in this run. */
static void
print_seal_text (const BenchResult *res, int count)
{
  for (int i = 0; i < count; i++)
    {
      const BenchResult *r = &res[i];
      if (!r->has_seal)
        continue;
      if (i == 0 || !res[i - 1].has_seal)
        printf ("\nThe same token on %s%s (median / min ms, max err), interleaved:\n",
                r->seal.library, r->seal.hexl ? " + Intel HEXL" : "");
      printf ("%-8s %6zu %-4s %-10s SEAL %7.3f / %7.3f %8.2g   ours %6.3f / %6.3f %8.2g   "
              "%5.1fx\n", r->preset, r->ring_degree, r->pk ? "pk" : "sk", r->backend,
              r->seal.median_ms, r->seal.min_ms, r->seal.max_abs_error, r->median[STAGE_TOTAL],
              r->min[STAGE_TOTAL], r->max_abs_error, r->seal.median_ms / r->median[STAGE_TOTAL]);
    }
}

static void
print_text (const BenchResult *res, int count, int runs)
{
  printf ("HE-LoRA token, d = %d, r = %d, single thread, %d runs (median / min, ms)\n\n",
          BENCH_D, BENCH_R, runs);
  printf ("%-8s %6s %5s %-4s %-10s %-7s %17s %17s %17s %17s %10s %9s %9s\n", "preset", "N",
          "logQ", "enc", "backend", "packing", "encrypt", "evaluate", "decrypt", "total",
          "max err", "up KiB", "down KiB");
  for (int i = 0; i < count; i++)
    {
      const BenchResult *r = &res[i];
      printf ("%-8s %6zu %5.0f %-4s %-10s %-7s", r->preset, r->ring_degree, r->log_q,
              r->pk ? "pk" : "sk", r->backend, r->packing);
      for (int k = 0; k < N_STAGES; k++)
        printf ("   %6.3f / %6.3f", r->median[k], r->min[k]);
      printf (" %10.2g %9zu %9zu\n", r->max_abs_error, r->upload_bytes / 1024,
              r->download_bytes / 1024);
    }
  printf ("\n");
  for (int i = 0; i < count; i++)
    if (i == 0 || strcmp (res[i].backend, res[i - 1].backend) != 0)
      printf ("forward NTT, one limb, N = 16384, %s: %.4f / %.4f ms\n", res[i].backend,
              res[i].ntt_median, res[i].ntt_min);
  printf ("up: the encrypted h as sent (seeded for sk); down: the results in the "
          "compact HE-LoRA format\n");
  print_seal_text (res, count);
}

/* ---- --backend cuda ---- */

enum { GPU_H2D, GPU_ENCRYPT, GPU_EVALUATE, GPU_DECRYPT, GPU_D2H, GPU_DEVICE, GPU_TOKEN,
       N_GPU_STAGES };
static const char *const gpu_stage_names[N_GPU_STAGES] = {
  "h2d", "encrypt", "evaluate", "decrypt", "d2h", "device", "token"
};
static const char *const gpu_stage_notes[N_GPU_STAGES] = {
  "h host -> device", "encode + encrypt", "ct x pt", "decrypt + segment sums",
  "u device -> host", "first to last CUDA event", "h on the host in, u on the host out (wall)"
};

typedef struct {
  const char *preset;
  size_t ring_degree;
  double median_us[N_GPU_STAGES];
  double max_abs_error;
  double cpu_token_us;          /* single-thread CPU pipeline, same run */
  double cpu_max_abs_error;
} GpuBenchResult;

static double
wall_us (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double
max_error (const float *a, const float *h, const double *u)
{
  double err = 0;
  for (int i = 0; i < BENCH_R; i++)
    {
      double ref = 0;
      for (int j = 0; j < BENCH_D; j++)
        ref += (double) a[i * BENCH_D + j] * h[j];
      err = fmax (err, fabs (u[i] - ref));
    }
  return err;
}

/* GPU tokens with the setup's key and plan; medians into @res. */
static gboolean
bench_gpu_tokens (BenchSetup *s, int runs, GRand *rng, GpuBenchResult *res)
{
  CkksGpuHeloraSession *session = NULL;
  char why[200] = "";
  const CkksHeloraPlan *plans[] = { s->plan };
  CkksStatus st = ckks_gpu_helora_session_new (s->sk, plans, 1, &session, why, sizeof why);
  if (st != CKKS_OK)
    {
      fprintf (stderr, "tensafe-cli bench he: --backend cuda: %s%s%s\n",
               ckks_status_message (st), why[0] ? ": " : "", why);
      return FALSE;
    }
  double *samples = g_new (double, (size_t) N_GPU_STAGES * runs);
  double u[BENCH_R];
  for (int i = -WARMUP; st == CKKS_OK && i < runs; i++)
    {
      float *h = random_floats (rng, BENCH_D, 1.0);
      const float *hs[] = { h };
      double *us[] = { u };
      CkksGpuHeloraTimings t;
      double t0 = wall_us ();
      st = ckks_gpu_helora_session_run (session, hs, 1, us, 1, &t);
      double t1 = wall_us ();
      if (st == CKKS_OK && i >= 0)
        {
          double v[N_GPU_STAGES] = { t.h2d_us, t.encrypt_us, t.evaluate_us, t.decrypt_us,
                                     t.d2h_us, t.device_us, t1 - t0 };
          for (int k = 0; k < N_GPU_STAGES; k++)
            samples[k * runs + i] = v[k];
          res->max_abs_error = fmax (res->max_abs_error, max_error (s->a, h, u));
        }
      g_free (h);
    }
  double min;
  for (int k = 0; st == CKKS_OK && k < N_GPU_STAGES; k++)
    median_min (samples + k * runs, runs, &res->median_us[k], &min);
  g_free (samples);
  ckks_gpu_helora_session_free (session);
  return check (st, "GPU token");
}

static gboolean
bench_gpu (const char *preset, int runs, GRand *rng, GpuBenchResult *res)
{
  BenchSetup s;
  memset (res, 0, sizeof *res);
  res->preset = preset;
  /* the GPU pipeline packs the results as the remote protocol does */
  gboolean ok = setup_init (&s, preset, CKKS_BACKEND_AUTO, CKKS_HELORA_PACKING_REAL, rng);
  double *cpu = g_new (double, (size_t) runs), t[N_STAGES], err, min;
  for (int i = -WARMUP; ok && i < runs; i++)
    {
      ok = run_token (&s, FALSE, rng, t, &err);
      if (ok && i >= 0)
        {
          cpu[i] = t[STAGE_TOTAL] * 1e3;
          res->cpu_max_abs_error = fmax (res->cpu_max_abs_error, err);
        }
    }
  if (ok)
    {
      median_min (cpu, runs, &res->cpu_token_us, &min);
      res->ring_degree = ckks_context_ring_degree (s.ctx);
      ok = bench_gpu_tokens (&s, runs, rng, res);
    }
  g_free (cpu);
  setup_clear (&s);
  return ok;
}

static void
print_gpu (const GpuBenchResult *r, int runs, gboolean json)
{
  double ratio = r->cpu_token_us / r->median_us[GPU_TOKEN];
  if (json)
    {
      printf ("{\"backend\": \"cuda\", \"preset\": \"%s\", \"ring_degree\": %zu, "
              "\"encrypt\": \"sk\", \"d\": %d, \"r\": %d, \"runs\": %d, \"median_us\": {",
              r->preset, r->ring_degree, BENCH_D, BENCH_R, runs);
      for (int k = 0; k < N_GPU_STAGES; k++)
        printf ("\"%s\": %.2f%s", gpu_stage_names[k], r->median_us[k],
                k + 1 < N_GPU_STAGES ? ", " : "");
      printf ("}, \"cpu_token_median_us\": %.2f, \"speedup\": %.2f, \"max_abs_error\": %.3g, "
              "\"cpu_max_abs_error\": %.3g}\n", r->cpu_token_us, ratio, r->max_abs_error,
              r->cpu_max_abs_error);
      return;
    }
  printf ("HE-LoRA token on the GPU, d = %d, r = %d, preset %s (N = %zu), sk, %d runs "
          "(median, us)\n\n", BENCH_D, BENCH_R, r->preset, r->ring_degree, runs);
  for (int k = 0; k < N_GPU_STAGES; k++)
    printf ("%-10s %10.1f   %s\n", gpu_stage_names[k], r->median_us[k], gpu_stage_notes[k]);
  printf ("\nCPU single thread, same run: %.1f us per token; GPU speed-up %.1fx\n",
          r->cpu_token_us, ratio);
  printf ("max |u - A h|: GPU %.2g, CPU %.2g\n", r->max_abs_error, r->cpu_max_abs_error);
}

static int
run_gpu_bench (const char *preset, const char *encrypt, int runs, gboolean json, GRand *rng)
{
  char why[200];
  if (!ckks_gpu_available (why, sizeof why))
    {
      fprintf (stderr, "tensafe-cli bench he: --backend cuda: %s\n", why);
      return 3;
    }
  if (encrypt && strcmp (encrypt, "sk") != 0)
    {
      fprintf (stderr, "tensafe-cli bench he: --backend cuda runs secret-key encryption only\n");
      return 2;
    }
  const char *name = preset ? preset : ckks_params_default_preset_name ();
  CkksParams params;
  if (ckks_params_preset (name, &params) != CKKS_OK)
    {
      fprintf (stderr, "tensafe-cli bench he: unknown preset '%s'\n", name);
      return 2;
    }
  GpuBenchResult res;
  if (!bench_gpu (name, runs, rng, &res))
    return 1;
  print_gpu (&res, runs, json);
  return 0;
}

/* The same configuration as @r on the SEAL program at @program. */
static gboolean
bench_seal (const char *program, int runs, BenchResult *r)
{
  g_autoptr (GError) error = NULL;

  r->has_seal = cli_seal_bench_run (program, r->ring_degree, r->pk, runs,
                                    bench_clock == CLOCK_THREAD_CPUTIME_ID, &r->seal, &error);
  if (!r->has_seal)
    fprintf (stderr, "tensafe-cli bench he: %s\n", error->message);
  return r->has_seal;
}

/* Frees what the first @count results hold and returns @status. */
static int
finish (BenchResult *res, int count, int status)
{
  for (int i = 0; i < count; i++)
    cli_seal_result_clear (&res[i].seal);
  return status;
}

/* Parses "scalar,avx2" into @out (at most G_N_ELEMENTS (cpu_backends));
 * returns the count, 0 on an unknown or repeated name. */
static int
parse_cpu_backends (const char *list, const CpuBackend **out)
{
  g_auto (GStrv) names = g_strsplit (list ? list : "auto", ",", -1);
  int count = 0;
  for (size_t i = 0; names[i]; i++)
    {
      const CpuBackend *found = NULL;
      for (size_t b = 0; b < G_N_ELEMENTS (cpu_backends); b++)
        if (strcmp (names[i], cpu_backends[b].name) == 0)
          found = &cpu_backends[b];
      for (int j = 0; found && j < count; j++)
        if (out[j] == found)
          found = NULL;
      if (!found || count == (int) G_N_ELEMENTS (cpu_backends))
        return 0;
      out[count++] = found;
    }
  return count;
}

/* TRUE if the CPU and the presets' primes allow @b, else prints why. */
static gboolean
cpu_backend_available (const CpuBackend *b)
{
  CkksParams params;
  CkksContext *ctx = NULL;
  CkksStatus st = ckks_params_preset ("fast", &params);
  if (st == CKKS_OK)
    st = ckks_context_new_with_backend (&params, b->backend, &ctx);
  ckks_context_free (ctx);
  if (st == CKKS_OK)
    return TRUE;
  fprintf (stderr, "tensafe-cli bench he: --cpu-backend %s: %s\n", b->name,
           st == CKKS_ERR_UNSUPPORTED ? "this CPU does not support it"
                                      : ckks_status_message (st));
  return FALSE;
}

int
cli_bench_he (int argc, char **argv)
{
  g_autofree char *preset = NULL, *encrypt = NULL, *backend = NULL, *clock_name = NULL;
  g_autofree char *cpu_backend = NULL, *seal = NULL, *packing = NULL;
  int runs = 50;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "preset", 0, 0, G_OPTION_ARG_STRING, &preset, "Only this preset (fast, default, wide)", "P" },
    { "encrypt", 0, 0, G_OPTION_ARG_STRING, &encrypt, "Only this encryption (sk or pk)", "KIND" },
    { "runs", 0, 0, G_OPTION_ARG_INT, &runs, "Timed tokens per configuration (>= 30)", "N" },
    { "backend", 0, 0, G_OPTION_ARG_STRING, &backend, "cpu (default) or cuda", "B" },
    { "cpu-backend", 0, 0, G_OPTION_ARG_STRING, &cpu_backend,
      "CPU arithmetic, comma-separated list of auto (default), scalar, avx2, ifma", "LIST" },
    { "packing", 0, 0, G_OPTION_ARG_STRING, &packing,
      "complex (default, as the local evaluator) or real (as the remote protocol)", "P" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON array", NULL },
    { "clock", 0, 0, G_OPTION_ARG_STRING, &clock_name,
      "wall (default) or thread (CPU time of the benchmark thread)", "C" },
    { "seal", 0, 0, G_OPTION_ARG_FILENAME, &seal,
      "Also time the token on SEAL: tools/seal-bench's program, built against your SEAL", "PROGRAM" },
    { NULL }
  };
  g_autoptr (GOptionContext) octx = g_option_context_new ("- benchmark the CKKS engine");
  g_autoptr (GError) error = NULL;
  g_option_context_add_main_entries (octx, entries, NULL);
  if (!g_option_context_parse (octx, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-cli bench he: %s\n", error->message);
      return 2;
    }
  if (runs < 30)
    {
      fprintf (stderr, "tensafe-cli bench he: --runs must be at least 30\n");
      return 2;
    }
  if (encrypt && strcmp (encrypt, "sk") != 0 && strcmp (encrypt, "pk") != 0)
    {
      fprintf (stderr, "tensafe-cli bench he: --encrypt must be sk or pk\n");
      return 2;
    }
  if (backend && strcmp (backend, "cpu") != 0 && strcmp (backend, "cuda") != 0)
    {
      fprintf (stderr, "tensafe-cli bench he: --backend must be cpu or cuda\n");
      return 2;
    }
  if (packing && strcmp (packing, "real") == 0)
    bench_packing = CKKS_HELORA_PACKING_REAL;
  else if (packing && strcmp (packing, "complex") != 0)
    {
      fprintf (stderr, "tensafe-cli bench he: --packing must be complex or real\n");
      return 2;
    }
  if (clock_name && strcmp (clock_name, "thread") == 0)
    bench_clock = CLOCK_THREAD_CPUTIME_ID;
  else if (clock_name && strcmp (clock_name, "wall") != 0)
    {
      fprintf (stderr, "tensafe-cli bench he: --clock must be wall or thread\n");
      return 2;
    }
  const CpuBackend *cpus[G_N_ELEMENTS (cpu_backends)];
  int n_cpus = parse_cpu_backends (cpu_backend, cpus);
  if (n_cpus == 0)
    {
      fprintf (stderr, "tensafe-cli bench he: --cpu-backend takes distinct names out of "
               "auto, scalar, avx2, ifma\n");
      return 2;
    }
  g_autoptr (GRand) rng = g_rand_new ();
  if (backend && strcmp (backend, "cuda") == 0 && seal != NULL)
    {
      fprintf (stderr, "tensafe-cli bench he: --seal compares the CPU path; leave out "
               "--backend cuda\n");
      return 2;
    }
  if (backend && strcmp (backend, "cuda") == 0)
    return run_gpu_bench (preset, encrypt, runs, json, rng);
  for (int c = 0; c < n_cpus; c++)
    if (!cpu_backend_available (cpus[c]))
      return 3;
  const char *const *names = ckks_params_preset_names ();
  BenchResult res[2 * 3 * G_N_ELEMENTS (cpu_backends)] = { 0 };
  int count = 0;
  for (int c = 0; c < n_cpus; c++)
    {
      int first = count;
      for (size_t p = 0; names[p] && count + 2 <= (int) G_N_ELEMENTS (res); p++)
        {
          if (preset && strcmp (preset, names[p]) != 0)
            continue;
          for (int kind = 0; kind < 2; kind++)
            {
              if (encrypt && strcmp (encrypt, kind ? "pk" : "sk") != 0)
                continue;
              if (!bench_one (names[p], cpus[c]->backend, kind, runs, rng, &res[count]))
                return 1;
              if (seal != NULL && !bench_seal (seal, runs, &res[count]))
                return finish (res, count, 1);
              count++;
            }
        }
      if (count == first)
        {
          fprintf (stderr, "tensafe-cli bench he: unknown preset '%s'\n", preset);
          return 2;
        }
      double ntt_med, ntt_min;
      if (!bench_ntt (cpus[c]->backend, runs, &ntt_med, &ntt_min))
        return 1;
      for (int i = first; i < count; i++)
        {
          res[i].ntt_median = ntt_med;
          res[i].ntt_min = ntt_min;
        }
    }
  if (json)
    print_json (res, count);
  else
    print_text (res, count, runs);
  return finish (res, count, 0);
}
