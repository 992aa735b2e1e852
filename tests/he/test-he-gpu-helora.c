/* test-he-gpu-helora.c: the GPU HE-LoRA session against the CPU pipeline
 * and plain A * h (skipped without a GPU, except the refusal itself).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ckks-gpu-helora-private.h"
#include "ckks-gpu-helora.h"
#include "ckks-gpu.h"
#include "ckks.h"
#include "he-test-common.h"

static GRand *rng;

static gboolean
need_gpu (void)
{
  char why[200];
  if (ckks_gpu_available (why, sizeof why))
    return TRUE;
  g_test_skip (why);
  return FALSE;
}

/* CKKS error of u for |h| <= 1, |A| <= 0.1 (as the CPU tests). */
static double
tolerance (size_t d)
{
  return 1e-6 * fmax (1.0, (double) d / 2048);
}

/* Modules of random A (|A| <= 0.1) under one fresh key, and their GPU
 * session once modules_session is called. */
enum { MAX_MODULES = 8 };

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  int m;
  float *a[MAX_MODULES];
  CkksHeloraPlan *plans[MAX_MODULES];
  CkksGpuHeloraSession *s;
} Modules;

/* @sc NULL: every plan at CKKS_HELORA_SCALES_PLAIN */
static void
modules_init (Modules *f, const char *preset, int m, const size_t *d, const size_t *r,
              const CkksHeloraScales *sc)
{
  g_assert_cmpint (m, <=, MAX_MODULES);
  memset (f, 0, sizeof *f);
  f->ctx = he_test_context (preset, CKKS_BACKEND_AUTO);
  f->m = m;
  g_assert_cmpint (ckks_secret_key_new (f->ctx, &f->sk), ==, CKKS_OK);
  for (int i = 0; i < m; i++)
    {
      f->a[i] = he_test_random_floats (rng, d[i] * r[i], 0.1);
      g_assert_cmpint (ckks_helora_plan_new_scaled (f->ctx, d[i], r[i], f->a[i],
                                                    sc ? sc[i] : CKKS_HELORA_SCALES_PLAIN,
                                                    &f->plans[i]), ==, CKKS_OK);
    }
}

static void
modules_session (Modules *f)
{
  g_assert_cmpint (ckks_gpu_helora_session_new (f->sk, (const CkksHeloraPlan *const *) f->plans,
                                                (size_t) f->m, &f->s, NULL, 0), ==, CKKS_OK);
}

static void
modules_clear (Modules *f)
{
  ckks_gpu_helora_session_free (f->s);
  for (int i = 0; i < f->m; i++)
    {
      ckks_helora_plan_free (f->plans[i]);
      g_free (f->a[i]);
    }
  ckks_secret_key_free (f->sk);
  ckks_context_free (f->ctx);
}

/* Without a GPU (or without CUDA) the session is refused with a reason. */
static void
test_refused_without_gpu (void)
{
  if (ckks_gpu_available (NULL, 0))
    {
      g_test_skip ("a GPU is present");
      return;
    }
  CkksContext *ctx = he_test_context ("fast", CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  CkksHeloraPlan *plan;
  float *a = he_test_random_floats (rng, 64 * 4, 0.1);
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (ctx, 64, 4, a, &plan), ==, CKKS_OK);
  CkksGpuHeloraSession *s = NULL;
  char why[200] = "";
  const CkksHeloraPlan *plans[] = { plan };
  g_assert_cmpint (ckks_gpu_helora_session_new (sk, plans, 1, &s, why, sizeof why), ==,
                   CKKS_ERR_UNSUPPORTED);
  g_assert_null (s);
  g_assert_cmpuint (strlen (why), >, 10);
  g_assert_nonnull (strstr (why, ckks_gpu_built () ? "no usable NVIDIA GPU" : "no CUDA kernels"));
  g_assert_cmpint (ckks_gpu_helora_session_new (sk, plans, 0, &s, NULL, 0), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  ckks_gpu_helora_session_free (NULL);
  /* the device-pointer calls refuse what they cannot have been given */
  const float *none[] = { NULL };
  size_t row0[] = { 0 };
  CkksGpuHeloraTimings tm;
  g_assert_cmpint (ckks_gpu_helora_session_run_device (NULL, none, 1, 0, NULL), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_gpu_helora_session_reserve_rows (NULL, 1), ==, CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_gpu_helora_session_copy_u (NULL, 0, 0, 1, NULL, NULL), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_gpu_helora_session_device_timings (NULL, &tm), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (ckks_gpu_helora_sessions_run_device (NULL, 1, NULL, row0, NULL), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  ckks_helora_plan_free (plan);
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
  g_free (a);
}

/* One module, every preset, d in {64, 2048, 4096}, r in {1, 8, 32, 64}. */
static void
test_single_module (void)
{
  if (!need_gpu ())
    return;
  const char *const *names = ckks_params_preset_names ();
  size_t ds[] = { 64, 2048, 4096 }, rs[] = { 1, 8, 32, 64 };
  for (size_t p = 0; names[p]; p++)
    {
      CkksContext *ctx = he_test_context (names[p], CKKS_BACKEND_AUTO);
      CkksSecretKey *sk;
      g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
      for (size_t di = 0; di < G_N_ELEMENTS (ds); di++)
        for (size_t ri = 0; ri < G_N_ELEMENTS (rs); ri++)
          {
            size_t d = ds[di], r = rs[ri];
            float *a = he_test_random_floats (rng, d * r, 0.1);
            float *h = he_test_random_floats (rng, d, 1.0);
            CkksHeloraPlan *plan;
            g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
            const CkksHeloraPlan *plans[] = { plan };
            CkksGpuHeloraSession *s;
            char why[200];
            CkksStatus st = ckks_gpu_helora_session_new (sk, plans, 1, &s, why, sizeof why);
            if (st != CKKS_OK)
              g_error ("%s d=%zu r=%zu: %s (%s)", names[p], d, r, ckks_status_message (st), why);
            g_assert_cmpuint (ckks_gpu_helora_session_n_groups (s), ==, 1);
            g_assert_cmpuint (ckks_gpu_helora_session_group_d (s, 0), ==, d);
            double *gpu = g_new (double, r), *cpu = g_new (double, r), *ref = g_new (double, r);
            const float *hs[] = { h };
            double *us[] = { gpu };
            CkksGpuHeloraTimings tm;
            g_assert_cmpint (ckks_gpu_helora_session_run (s, hs, 1, us, 1, &tm), ==, CKKS_OK);
            he_test_helora_token (plan, sk, h, cpu);
            he_test_plain_product (a, h, d, r, ref);
            g_assert_cmpfloat (he_test_max_abs_diff (gpu, ref, r), <=, tolerance (d));
            g_assert_cmpfloat (he_test_max_abs_diff (gpu, cpu, r), <=, 2 * tolerance (d));
            g_assert_cmpfloat (tm.device_us, >, 0);
            g_test_message ("%s d=%zu r=%zu: device %.1f us, |u - Ah| %.2g", names[p], d, r,
                            tm.device_us, he_test_max_abs_diff (gpu, ref, r));
            ckks_gpu_helora_session_free (s);
            ckks_helora_plan_free (plan);
            g_free (gpu);
            g_free (cpu);
            g_free (ref);
            g_free (a);
            g_free (h);
          }
      ckks_secret_key_free (sk);
      ckks_context_free (ctx);
    }
}

/* q, k, v of one layer (one h), a projection of another width and one at
 * the private scale split (two more groups), in one session. */
static void
test_several_modules (void)
{
  if (!need_gpu ())
    return;
  enum { M = 5 };
  size_t d[M] = { 2048, 2048, 2048, 4096, 2048 }, r[M] = { 32, 8, 64, 16, 32 };
  CkksHeloraScales sc[M] = { 0, 0, 0, 0, CKKS_HELORA_SCALES_PRIVACY };
  Modules f;
  modules_init (&f, ckks_params_default_preset_name (), M, d, r, sc);
  modules_session (&f);
  CkksGpuHeloraSession *s = f.s;
  float *const *a = f.a;
  size_t groups = ckks_gpu_helora_session_n_groups (s);
  g_assert_cmpuint (groups, ==, 3);
  g_assert_cmpuint (ckks_gpu_helora_session_group (s, 0), ==, ckks_gpu_helora_session_group (s, 2));
  g_assert_cmpuint (ckks_gpu_helora_session_group (s, 0), !=, ckks_gpu_helora_session_group (s, 4));
  float *h[3];
  for (size_t g = 0; g < groups; g++)
    h[g] = he_test_random_floats (rng, ckks_gpu_helora_session_group_d (s, g), 1.0);
  double *u[M];
  for (int m = 0; m < M; m++)
    u[m] = g_new (double, r[m]);
  for (int token = 0; token < 3; token++)
    {
      g_assert_cmpint (ckks_gpu_helora_session_run (s, (const float *const *) h, groups, u, M,
                                                    NULL), ==, CKKS_OK);
      for (int m = 0; m < M; m++)
        {
          const float *hm = h[ckks_gpu_helora_session_group (s, m)];
          double *ref = g_new (double, r[m]);
          he_test_plain_product (a[m], hm, d[m], r[m], ref);
          /* the private split quantises A at 2^-24 */
          double tol = sc[m] == CKKS_HELORA_SCALES_PRIVACY ? 1e-4 : tolerance (d[m]);
          g_assert_cmpfloat (he_test_max_abs_diff (u[m], ref, r[m]), <=, tol);
          g_free (ref);
        }
    }
  /* wrong counts are refused */
  g_assert_cmpint (ckks_gpu_helora_session_run (s, (const float *const *) h, 1, u, M, NULL), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  for (int m = 0; m < M; m++)
    g_free (u[m]);
  for (size_t g = 0; g < groups; g++)
    g_free (h[g]);
  modules_clear (&f);
}

/* h and u in device memory (the engine's path): q, k, v of one layer and a
 * module of another width, 3 rows, against the host variant and A h; a
 * non-finite h gives NaN u instead of an error; stages from the events. */
static void
test_device_pointers (void)
{
  if (!need_gpu ())
    return;
  enum { M = 4, ROWS = 3 };
  size_t d[M] = { 2048, 2048, 2048, 1024 }, r[M] = { 32, 8, 64, 16 };
  Modules f;
  modules_init (&f, ckks_params_default_preset_name (), M, d, r, NULL);
  modules_session (&f);
  CkksGpuHeloraSession *s = f.s;
  float *const *a = f.a;
  size_t groups = ckks_gpu_helora_session_n_groups (s);
  g_assert_cmpuint (groups, ==, 2);
  float *h[2], *u[M];
  for (size_t g = 0; g < groups; g++)
    h[g] = he_test_random_floats (rng, ROWS * ckks_gpu_helora_session_group_d (s, g), 1.0);
  for (int m = 0; m < M; m++)
    u[m] = g_new (float, ROWS * r[m]);
  g_assert_cmpint (ckks_gpu_helora_session_check_device_run (s, (const float *const *) h, groups,
                                                             ROWS, u, M), ==, CKKS_OK);
  CkksGpuHeloraTimings tm;
  g_assert_cmpint (ckks_gpu_helora_session_device_timings (s, &tm), ==, CKKS_OK);
  g_assert_cmpfloat (tm.device_us, >, 0);
  g_assert_cmpfloat (tm.encrypt_us, >, 0);
  double worst = 0;
  for (size_t row = 0; row < ROWS; row++)
    {
      const float *hr[2];
      double *host[M];
      for (size_t g = 0; g < groups; g++)
        hr[g] = h[g] + row * ckks_gpu_helora_session_group_d (s, g);
      for (int m = 0; m < M; m++)
        host[m] = g_new (double, r[m]);
      g_assert_cmpint (ckks_gpu_helora_session_run (s, hr, groups, host, M, NULL), ==, CKKS_OK);
      for (int m = 0; m < M; m++)
        {
          double *ref = g_new (double, r[m]), *got = g_new (double, r[m]);
          he_test_plain_product (a[m], hr[ckks_gpu_helora_session_group (s, m)], d[m], r[m], ref);
          for (size_t k = 0; k < r[m]; k++)
            got[k] = u[m][row * r[m] + k];
          /* CKKS error plus the rounding to f32 */
          double tol = tolerance (d[m]) + 1e-6 * fmax (1.0, fabs (ref[0]));
          g_assert_cmpfloat (he_test_max_abs_diff (got, ref, r[m]), <=, 2 * tol);
          g_assert_cmpfloat (he_test_max_abs_diff (got, host[m], r[m]), <=, 3 * tol);
          worst = fmax (worst, he_test_max_abs_diff (got, ref, r[m]));
          g_free (ref);
          g_free (got);
          g_free (host[m]);
        }
    }
  g_test_message ("device pointers: |u - Ah| %.2g, device %.1f us", worst, tm.device_us);
  /* a non-finite h: NaN u for its group's plans, the other group's fine */
  h[0][5] = NAN;
  g_assert_cmpint (ckks_gpu_helora_session_check_device_run (s, (const float *const *) h, groups,
                                                             1, u, M), ==, CKKS_OK);
  for (int m = 0; m < M; m++)
    g_assert_true (isnan (u[m][0]) == (ckks_gpu_helora_session_group (s, m) == 0));
  for (int m = 0; m < M; m++)
    g_free (u[m]);
  for (size_t g = 0; g < groups; g++)
    g_free (h[g]);
  modules_clear (&f);
}

/* Three sessions (own keys, one of them two groups) in one launch sequence
 * (ckks_gpu_helora_sessions_run_device): each one's u as A h. */
static void
test_sessions_batch (void)
{
  if (!need_gpu ())
    return;
  CkksContext *ctx = he_test_context (ckks_params_default_preset_name (), CKKS_BACKEND_AUTO);
  enum { S = 3 };
  size_t d[S][2] = { { 2048, 0 }, { 1024, 4096 }, { 2048, 0 } }, r[S] = { 16, 32, 8 };
  size_t n_plans[S] = { 1, 2, 1 };
  CkksSecretKey *sk[S];
  CkksGpuHeloraSession *sessions[S];
  float *a[S][2], *h[S][2], *u[S][2];
  CkksHeloraPlan *plans[S][2];
  for (int i = 0; i < S; i++)
    {
      g_assert_cmpint (ckks_secret_key_new (ctx, &sk[i]), ==, CKKS_OK);
      for (size_t p = 0; p < n_plans[i]; p++)
        {
          a[i][p] = he_test_random_floats (rng, d[i][p] * r[i], 0.1);
          h[i][p] = he_test_random_floats (rng, d[i][p], 1.0);
          u[i][p] = g_new (float, r[i]);
          g_assert_cmpint (ckks_helora_plan_new (ctx, d[i][p], r[i], a[i][p], &plans[i][p]), ==,
                           CKKS_OK);
        }
      g_assert_cmpint (ckks_gpu_helora_session_new (sk[i], (const CkksHeloraPlan *const *) plans[i],
                                                    n_plans[i], &sessions[i], NULL, 0), ==,
                       CKKS_OK);
      /* one group per plan here (different d): group g is plan g's */
      g_assert_cmpuint (ckks_gpu_helora_session_n_groups (sessions[i]), ==, n_plans[i]);
    }
  float *hs[S][2];
  const float *const *hp[S];
  float *const *up[S];
  for (int i = 0; i < S; i++)
    {
      for (size_t p = 0; p < n_plans[i]; p++)
        hs[i][ckks_gpu_helora_session_group (sessions[i], p)] = h[i][p];
      hp[i] = (const float *const *) hs[i];
      up[i] = u[i];
    }
  g_assert_cmpint (ckks_gpu_helora_sessions_check_device_run (sessions, S, hp, up), ==, CKKS_OK);
  for (int i = 0; i < S; i++)
    for (size_t p = 0; p < n_plans[i]; p++)
      {
        double *ref = g_new (double, r[i]), *got = g_new (double, r[i]);
        he_test_plain_product (a[i][p], h[i][p], d[i][p], r[i], ref);
        for (size_t k = 0; k < r[i]; k++)
          got[k] = u[i][p][k];
        g_assert_cmpfloat (he_test_max_abs_diff (got, ref, r[i]), <=,
                           2 * (tolerance (d[i][p]) + 1e-6 * fmax (1.0, fabs (ref[0]))));
        g_free (ref);
        g_free (got);
      }
  /* the same session twice is refused */
  CkksGpuHeloraSession *twice[] = { sessions[0], sessions[0] };
  const float *const *h_twice[] = { hp[0], hp[0] };
  size_t rows[] = { 0, 0 };
  g_assert_cmpint (ckks_gpu_helora_sessions_run_device (twice, 2, h_twice, rows, NULL), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  for (int i = 0; i < S; i++)
    {
      ckks_gpu_helora_session_free (sessions[i]);
      for (size_t p = 0; p < n_plans[i]; p++)
        {
          ckks_helora_plan_free (plans[i][p]);
          g_free (a[i][p]);
          g_free (h[i][p]);
          g_free (u[i][p]);
        }
      ckks_secret_key_free (sk[i]);
    }
  ckks_context_free (ctx);
}

typedef struct {
  const CkksSecretKey *sk;
  const CkksHeloraPlan *plan;
  const float *a;
  size_t d, r;
  double err;
  CkksStatus st;
} SessionJob;

static gpointer
session_thread (gpointer data)
{
  SessionJob *job = data;
  CkksGpuHeloraSession *s;
  job->st = ckks_gpu_helora_session_new (job->sk, &job->plan, 1, &s, NULL, 0);
  if (job->st != CKKS_OK)
    return NULL;
  GRand *local = g_rand_new_with_seed ((guint32) (uintptr_t) job);
  float *h = g_new (float, job->d);
  double *u = g_new (double, job->r), *ref = g_new (double, job->r);
  for (int token = 0; token < 30 && job->st == CKKS_OK; token++)
    {
      for (size_t i = 0; i < job->d; i++)
        h[i] = (float) g_rand_double_range (local, -1, 1);
      const float *hs[] = { h };
      double *us[] = { u };
      job->st = ckks_gpu_helora_session_run (s, hs, 1, us, 1, NULL);
      he_test_plain_product (job->a, h, job->d, job->r, ref);
      job->err = fmax (job->err, he_test_max_abs_diff (u, ref, job->r));
    }
  ckks_gpu_helora_session_free (s);
  g_rand_free (local);
  g_free (h);
  g_free (u);
  g_free (ref);
  return NULL;
}

/* Two sessions (two keys, two plans) on one GPU from two threads at once. */
static void
test_two_sessions (void)
{
  if (!need_gpu ())
    return;
  CkksContext *ctx = he_test_context (ckks_params_default_preset_name (), CKKS_BACKEND_AUTO);
  SessionJob jobs[2];
  CkksSecretKey *sks[2];
  CkksHeloraPlan *plans[2];
  float *as[2];
  GThread *threads[2];
  for (int i = 0; i < 2; i++)
    {
      size_t d = 2048, r = i ? 64 : 32;
      as[i] = he_test_random_floats (rng, d * r, 0.1);
      g_assert_cmpint (ckks_secret_key_new (ctx, &sks[i]), ==, CKKS_OK);
      g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, as[i], &plans[i]), ==, CKKS_OK);
      jobs[i] = (SessionJob) { sks[i], plans[i], as[i], d, r, 0, CKKS_OK };
    }
  for (int i = 0; i < 2; i++)
    threads[i] = g_thread_new ("gpu-session", session_thread, &jobs[i]);
  for (int i = 0; i < 2; i++)
    {
      g_thread_join (threads[i]);
      g_assert_cmpint (jobs[i].st, ==, CKKS_OK);
      g_assert_cmpfloat (jobs[i].err, <=, tolerance (jobs[i].d));
      ckks_helora_plan_free (plans[i]);
      ckks_secret_key_free (sks[i]);
      g_free (as[i]);
    }
  ckks_context_free (ctx);
}

/* 100 replays of the graph with the same h: every u correct, and each
 * token's encryption noise differs (a fresh seed per token: a replayed
 * seed would give the same u bit for bit). */
static void
test_replay_fresh (void)
{
  if (!need_gpu ())
    return;
  CkksContext *ctx = he_test_context (ckks_params_default_preset_name (), CKKS_BACKEND_AUTO);
  CkksSecretKey *sk;
  CkksHeloraPlan *plan;
  size_t d = 2048, r = 32;
  float *a = he_test_random_floats (rng, d * r, 0.1), *h = he_test_random_floats (rng, d, 1.0);
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (ctx, d, r, a, &plan), ==, CKKS_OK);
  const CkksHeloraPlan *plans[] = { plan };
  CkksGpuHeloraSession *s;
  g_assert_cmpint (ckks_gpu_helora_session_new (sk, plans, 1, &s, NULL, 0), ==, CKKS_OK);
  enum { TOKENS = 100 };
  double *u = g_new (double, TOKENS * r), ref[32];
  he_test_plain_product (a, h, d, r, ref);
  for (int t = 0; t < TOKENS; t++)
    {
      const float *hs[] = { h };
      double *us[] = { u + t * r };
      g_assert_cmpint (ckks_gpu_helora_session_run (s, hs, 1, us, 1, NULL), ==, CKKS_OK);
      g_assert_cmpfloat (he_test_max_abs_diff (u + t * r, ref, r), <=, tolerance (d));
    }
  int same = 0;
  for (int t = 0; t < TOKENS; t++)
    for (int v = t + 1; v < TOKENS; v++)
      same += memcmp (u + t * r, u + v * r, r * sizeof (double)) == 0;
  g_assert_cmpint (same, ==, 0);
  /* bad input: a NaN */
  h[5] = NAN;
  const float *hs[] = { h };
  double *us[] = { u };
  g_assert_cmpint (ckks_gpu_helora_session_run (s, hs, 1, us, 1, NULL), ==,
                   CKKS_ERR_INVALID_ARGUMENT);
  ckks_gpu_helora_session_free (s);
  ckks_helora_plan_free (plan);
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
  g_free (a);
  g_free (h);
  g_free (u);
}

/* The device's input ciphertexts, results and u equal, bit for bit, those
 * of the host emulation of the same token with the same seed (the one
 * emulation he-gpu-helora-host checks against A h without a GPU): on a
 * mismatch the message names the first stage that differs. Every preset;
 * one, and several, modules. */
static void
test_bit_exact_vs_host (void)
{
  if (!need_gpu ())
    return;
  const char *const *names = ckks_params_preset_names ();
  for (size_t p = 0; names[p]; p++)
    {
      enum { M = 4 };
      size_t d[M] = { 2048, 2048, 4096, 64 }, r[M] = { 32, 64, 8, 8 };
      CkksHeloraScales sc[M] = { 0, CKKS_HELORA_SCALES_PRIVACY, 0, 0 };
      Modules f;
      modules_init (&f, names[p], M, d, r, sc);
      CkksSecretKey *sk = f.sk;
      CkksHeloraPlan *const *plans = f.plans;
      float *h[M];
      for (int m = 0; m < M; m++)
        h[m] = he_test_random_floats (rng, d[m], 1.0);
      /* each module alone, then all four (four groups) in one session */
      for (int m = 0; m <= M; m++)
        {
          const char *stage = NULL;
          const CkksHeloraPlan *const *ps = (const CkksHeloraPlan *const *) plans + (m < M ? m : 0);
          const float *const *hs = (const float *const *) h + (m < M ? m : 0);
          size_t count = m < M ? 1 : M;
          CkksStatus st = ckks_gpu_helora_compare_host (sk, ps, count, hs, count, &stage);
          if (st != CKKS_OK)
            g_error ("%s, %s: the GPU differs from the host emulation: %s (%s)", names[p],
                     m < M ? "one module" : "four modules", stage ? stage : "-",
                     ckks_status_message (st));
        }
      for (int m = 0; m < M; m++)
        g_free (h[m]);
      modules_clear (&f);
    }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  rng = he_test_rng_new ();
  g_test_add_func ("/he/gpu-helora/refused-without-gpu", test_refused_without_gpu);
  g_test_add_func ("/he/gpu-helora/bit-exact-vs-host", test_bit_exact_vs_host);
  g_test_add_func ("/he/gpu-helora/single-module", test_single_module);
  g_test_add_func ("/he/gpu-helora/several-modules", test_several_modules);
  g_test_add_func ("/he/gpu-helora/two-sessions", test_two_sessions);
  g_test_add_func ("/he/gpu-helora/replay-fresh", test_replay_fresh);
  g_test_add_func ("/he/gpu-helora/device-pointers", test_device_pointers);
  g_test_add_func ("/he/gpu-helora/sessions-batch", test_sessions_batch);
  int rc = g_test_run ();
  g_rand_free (rng);
  return rc;
}
