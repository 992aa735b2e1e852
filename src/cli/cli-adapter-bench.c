/* cli-adapter-bench.c: tensafe-cli adapter bench: HE-LoRA evaluate time per
 * module by rank, and the cost of the adapter-private mode, online and
 * offline.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckks-helora.h"
#include "ckks-keys.h"
#include "ckks-privacy.h"
#include "ckks.h"
#include "cli.h"

typedef enum {
  ST_ENCRYPT, ST_EVALUATE, ST_DECRYPT,      /* the plain HE module (plain split) */
  ST_ENCRYPT_PRIVATE,                       /* encrypt on the private split (2^72) */
  ST_PADS,                                  /* B full pads: flooded zero + mask (offline) */
  ST_PADS_COMPACT_OLD,                      /* B compact pads, made full then reduced */
  ST_PADS_COMPACT,                          /* B compact pads, made directly */
  ST_APPLY,                                 /* online, separate pass: pads + DP noise */
  ST_EVAL_COLD,                             /* plain evaluation, cold cache */
  ST_FUSED,                                 /* evaluate with the pads fused + DP noise */
  ST_EVAL_COMPACT,                          /* plain compact evaluation, cold cache */
  ST_FUSED_COMPACT,                         /* compact evaluation, compact pads fused + DP noise */
  N_ST
} Stage;

static const char *const stage_names[N_ST] = {
  "encrypt", "evaluate", "decrypt", "encrypt_private", "pads_offline",
  "pads_compact_offline_old", "pads_compact_offline", "private_online", "evaluate_cold",
  "evaluate_fused", "evaluate_compact", "evaluate_compact_fused",
};

/* One side of the comparison: a plan and its ciphertexts. */
typedef struct {
  CkksHeloraPlan *plan;
  const CkksHeloraLayout *lay;
  CkksCiphertext **in, **out;
} Side;

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  CkksPublicKey *pk;
  Side plain, priv;            /* plain split; private split (72/24) */
  CkksCiphertext **pads;
  size_t k, b;
  guint d, r, lambda_s;
  float *a;
} Module;

static gboolean
ok (CkksStatus st, const char *what)
{
  if (st != CKKS_OK)
    fprintf (stderr, "tensafe-cli adapter bench: %s: %s\n", what, ckks_status_message (st));
  return st == CKKS_OK;
}

/* CPU time of this thread: the machine is shared, wall time would time
 * the other jobs too. */
static double
now_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

typedef enum { PADS_FULL, PADS_COMPACT_OLD, PADS_COMPACT } PadKind;

/* Fresh pads for every result, of @kind; returns the CPU ms they took. */
static double
fresh_pads (Module *m, PadKind kind, gboolean *good)
{
  double t0 = now_ms ();
  for (size_t i = 0; *good && i < m->b; i++)
    {
      ckks_ciphertext_free (m->pads[i]);
      m->pads[i] = NULL;
      if (kind == PADS_COMPACT)
        *good = ok (ckks_privacy_compact_pad_new (m->priv.lay, m->pk, m->lambda_s, &m->pads[i]),
                    "compact pad");
      else
        *good = ok (ckks_privacy_pad_new (m->priv.lay, m->pk, m->lambda_s, &m->pads[i]), "pad")
                && (kind == PADS_FULL
                    || ok (ckks_privacy_pad_compact (m->priv.lay, m->pads[i]), "pad"));
    }
  return now_ms () - t0;
}

/* A server fills its pad pool from idle time and serves many modules: the
 * pads and the plan are not in the cache when a token comes. Evict them
 * (64 MiB written) before each timed evaluation, plain and private alike. */
static void
evict_caches (void)
{
  static guint8 *junk;
  const gsize size = 64u << 20;
  if (junk == NULL)
    junk = g_malloc (size);
  for (gsize i = 0; i < size; i += 64)
    junk[i] = (guint8) (junk[i] + 1);
}

typedef CkksStatus (*EvalFunc) (const CkksHeloraPlan *, CkksCiphertext *const *, size_t,
                                CkksCiphertext *const *, size_t);
typedef CkksStatus (*PaddedFunc) (const CkksHeloraPlan *, CkksCiphertext *const *, size_t,
                                  CkksCiphertext *const *, size_t, CkksCiphertext *const *);

/* Plain evaluation (plain split) against the private one (private split,
 * pads fused, DP noise on the block sums), each from a cold cache. */
static gboolean
time_pair (Module *m, EvalFunc plain, PaddedFunc padded, const double *noise, double *t_plain,
           double *t_private)
{
  evict_caches ();
  double t0 = now_ms ();
  gboolean good = ok (plain (m->plain.plan, m->plain.in, m->k, m->plain.out, m->b), "evaluate");
  *t_plain = now_ms () - t0;
  evict_caches ();
  t0 = now_ms ();
  good = good && ok (padded (m->priv.plan, m->priv.in, m->k, m->priv.out, m->b, m->pads),
                     "evaluate_padded")
         && ok (ckks_privacy_add_noise_masked (m->priv.lay, m->priv.out, m->b, noise), "noise");
  *t_private = now_ms () - t0;
  return good;
}

static void
side_clear (Side *s, size_t k, size_t b)
{
  if (s->lay)
    {
      ckks_helora_ciphertexts_free (s->in, k);
      ckks_helora_ciphertexts_free (s->out, b);
    }
  ckks_helora_plan_free (s->plan);
}

static void
module_clear (Module *m)
{
  side_clear (&m->plain, m->k, m->b);
  side_clear (&m->priv, m->k, m->b);
  for (size_t i = 0; m->pads && i < m->b; i++)
    ckks_ciphertext_free (m->pads[i]);
  g_free (m->pads);
  ckks_public_key_free (m->pk);
  ckks_secret_key_free (m->sk);
  ckks_context_free (m->ctx);
  g_free (m->a);
}

static gboolean
side_init (Module *m, Side *s, CkksHeloraScales scales)
{
  if (!ok (ckks_helora_plan_new_scaled (m->ctx, m->d, m->r, m->a, scales, &s->plan), "plan"))
    return FALSE;
  s->lay = ckks_helora_plan_layout (s->plan);
  m->k = ckks_helora_layout_n_inputs (s->lay);
  m->b = ckks_helora_layout_n_outputs (s->lay);
  return ok (ckks_helora_ciphertexts_new (s->lay, m->k, &s->in), "inputs")
         && ok (ckks_helora_ciphertexts_new (s->lay, m->b, &s->out), "outputs");
}

static gboolean
module_init (Module *m, const char *preset, guint d, guint r, guint lambda_s, GRand *rng)
{
  CkksParams p;
  memset (m, 0, sizeof *m);
  m->d = d;
  m->r = r;
  m->lambda_s = lambda_s;
  m->a = g_new (float, (size_t) d * r);
  for (size_t i = 0; i < (size_t) d * r; i++)
    m->a[i] = (float) g_rand_double_range (rng, -0.05, 0.05);
  if (!ok (ckks_params_preset (preset, &p), preset) || !ok (ckks_context_new (&p, &m->ctx), "context")
      || !ok (ckks_secret_key_new (m->ctx, &m->sk), "secret key")
      || !ok (ckks_public_key_new (m->sk, &m->pk), "public key")
      || !side_init (m, &m->plain, CKKS_HELORA_SCALES_PLAIN)
      || !side_init (m, &m->priv, CKKS_HELORA_SCALES_PRIVACY))
    return FALSE;
  m->pads = g_new0 (CkksCiphertext *, m->b);
  return TRUE;
}

/* max |u - A·h| over @r rows, noise[i] * h_factor taken out. */
static double
max_error (const Module *m, const float *h, const double *u, const double *noise, double factor,
           double *max_u)
{
  double worst = 0.0;
  for (guint i = 0; i < m->r; i++)
    {
      double ref = 0.0;
      for (guint j = 0; j < m->d; j++)
        ref += (double) m->a[(size_t) i * m->d + j] * h[j];
      *max_u = fmax (*max_u, fabs (ref));
      worst = fmax (worst, fabs (u[i] - (noise ? noise[i] * factor : 0.0) - ref));
    }
  return worst;
}

/* One token through the plain module and the private mode, each stage
 * timed; err[0]: max |u - A·h| / max|u| plain, err[1] private (fused,
 * compact, the server's path). */
static gboolean
run_token (Module *m, GRand *rng, double t[N_ST], double err[2])
{
  g_autofree float *h = g_new (float, m->d);
  g_autofree double *u = g_new (double, m->r), *noise = g_new0 (double, m->r);
  for (guint j = 0; j < m->d; j++)
    h[j] = (float) g_rand_double_range (rng, -1.0, 1.0);
  double factor, t0 = now_ms ();
  gboolean good = ok (ckks_helora_encrypt_sk (m->plain.lay, m->sk, h, m->plain.in, m->k, &factor),
                      "encrypt");
  double t1 = now_ms ();
  good = good && ok (ckks_helora_evaluate (m->plain.plan, m->plain.in, m->k, m->plain.out, m->b),
                     "evaluate");
  double t2 = now_ms ();
  good = good && ok (ckks_helora_decrypt (m->plain.lay, m->sk, m->plain.out, m->b, factor, u),
                     "decrypt");
  t[ST_ENCRYPT] = t1 - t0;
  t[ST_EVALUATE] = t2 - t1;
  t[ST_DECRYPT] = now_ms () - t2;
  double max_u = 0.0;
  err[0] = max_error (m, h, u, NULL, factor, &max_u);
  t0 = now_ms ();
  good = good && ok (ckks_helora_encrypt_sk (m->priv.lay, m->sk, h, m->priv.in, m->k, &factor),
                     "encrypt (private)");
  t[ST_ENCRYPT_PRIVATE] = now_ms () - t0;
  good = good && ok (ckks_privacy_gaussian (1e-3, noise, m->r), "noise");
  /* before: full pads, a separate pass after the evaluation */
  t[ST_PADS] = fresh_pads (m, PADS_FULL, &good);
  good = good && ok (ckks_helora_evaluate (m->priv.plan, m->priv.in, m->k, m->priv.out, m->b),
                     "evaluate");
  t0 = now_ms ();
  good = good && ok (ckks_privacy_apply (m->priv.lay, m->priv.out, m->b, m->pads, noise), "apply");
  t[ST_APPLY] = now_ms () - t0;
  /* fused, full results: full pads */
  fresh_pads (m, PADS_FULL, &good);
  good = good && time_pair (m, ckks_helora_evaluate, ckks_helora_evaluate_padded, noise,
                            &t[ST_EVAL_COLD], &t[ST_FUSED]);
  /* fused, compact results (the server's path): compact pads */
  if (ckks_helora_result_serialized_size (m->priv.lay) > 0)
    {
      t[ST_PADS_COMPACT_OLD] = fresh_pads (m, PADS_COMPACT_OLD, &good);
      t[ST_PADS_COMPACT] = fresh_pads (m, PADS_COMPACT, &good);
      good = good && time_pair (m, ckks_helora_evaluate_compact,
                                ckks_helora_evaluate_compact_padded, noise,
                                &t[ST_EVAL_COMPACT], &t[ST_FUSED_COMPACT]);
    }
  good = good && ok (ckks_helora_decrypt (m->priv.lay, m->sk, m->priv.out, m->b, factor, u),
                     "decrypt");
  err[1] = max_error (m, h, u, noise, factor, &max_u);
  err[0] /= max_u > 0 ? max_u : 1.0;
  err[1] /= max_u > 0 ? max_u : 1.0;
  return good;
}

static int
cmp_double (const void *x, const void *y)
{
  double a = *(const double *) x, b = *(const double *) y;
  return a < b ? -1 : a > b;
}

static void
print_text (const Module *m, guint tokens, const double med[N_ST], const double worst[2])
{
  double plain = med[ST_ENCRYPT] + med[ST_EVALUATE] + med[ST_DECRYPT];
  printf ("d %u  r %u  B %zu (c %zu)  lambda_s %u  median of %u tokens, CPU ms of this thread:\n",
          m->d, m->r, m->b, ckks_helora_layout_copies (m->priv.lay), m->lambda_s, tokens);
  for (int s = 0; s < N_ST; s++)
    printf ("  %-26s %9.4f\n", stage_names[s], med[s]);
  printf ("  plain module (encrypt+evaluate+decrypt) %.4f; encrypt on the private split %+.1f%%\n",
          plain, 100.0 * (med[ST_ENCRYPT_PRIVATE] - med[ST_ENCRYPT]) / plain);
  printf ("  online, cold cache: full %.4f -> %.4f (module %+.1f%%); compact %.4f -> %.4f "
          "(module %+.1f%%)\n", med[ST_EVAL_COLD], med[ST_FUSED],
          100.0 * (med[ST_FUSED] - med[ST_EVAL_COLD]) / plain, med[ST_EVAL_COMPACT],
          med[ST_FUSED_COMPACT], 100.0 * (med[ST_FUSED_COMPACT] - med[ST_EVAL_COMPACT]) / plain);
  printf ("  pads offline per module: full %.3f, compact (full then reduced) %.3f, compact "
          "direct %.3f (%.1fx less; %.3f per pad, %.0f%% of the plain module)\n", med[ST_PADS],
          med[ST_PADS_COMPACT_OLD], med[ST_PADS_COMPACT],
          med[ST_PADS_COMPACT] > 0 ? med[ST_PADS_COMPACT_OLD] / med[ST_PADS_COMPACT] : 0.0,
          med[ST_PADS_COMPACT] / (double) m->b, 100.0 * med[ST_PADS_COMPACT] / plain);
  printf ("  max rel error of u: plain %.3g, private %.3g\n", worst[0], worst[1]);
}

static void
print_json (const Module *m, const double med[N_ST], const double worst[2], gboolean first)
{
  double plain = med[ST_ENCRYPT] + med[ST_EVALUATE] + med[ST_DECRYPT];
  printf ("%s{\"d\":%u,\"r\":%u,\"B\":%zu,\"copies\":%zu,\"lambda_s\":%u", first ? "" : ",\n ",
          m->d, m->r, m->b, ckks_helora_layout_copies (m->priv.lay), m->lambda_s);
  for (int s = 0; s < N_ST; s++)
    printf (",\"%s_ms\":%.4f", stage_names[s], med[s]);
  printf (",\"plain_module_ms\":%.4f,\"max_rel_error_plain\":%.3g,\"max_rel_error\":%.3g"
          ",\"fused_overhead\":%.4f,\"compact_fused_overhead\":%.4f}", plain, worst[0], worst[1],
          (med[ST_FUSED] - med[ST_EVAL_COLD]) / plain,
          (med[ST_FUSED_COMPACT] - med[ST_EVAL_COMPACT]) / plain);
}

static gboolean
bench_rank (const char *preset, guint d, guint r, guint tokens, guint lambda_s, gboolean json,
            gboolean first)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (r * 7919u + d);
  Module m;
  gboolean good = module_init (&m, preset, d, r, lambda_s, rng);
  if (good && lambda_s > ckks_privacy_max_lambda (m.priv.lay))
    {
      fprintf (stderr, "tensafe-cli adapter bench: --lambda %u does not fit preset %s "
               "(at most %u: the flood would leave u no precision)\n", lambda_s, preset,
               ckks_privacy_max_lambda (m.priv.lay));
      good = FALSE;
    }
  g_autofree double *samples = g_new (double, (size_t) N_ST * (tokens + 1));
  double worst[2] = { 0.0, 0.0 }, med[N_ST];
  for (guint i = 0; good && i <= tokens; i++)   /* token 0 warms up */
    {
      double t[N_ST] = { 0 }, err[2];
      good = run_token (&m, rng, t, err);
      for (int e = 0; i && e < 2; e++)
        worst[e] = fmax (worst[e], err[e]);
      for (int s = 0; i && s < N_ST; s++)
        samples[s * tokens + i - 1] = t[s];
    }
  for (int s = 0; good && s < N_ST; s++)
    {
      qsort (samples + s * tokens, tokens, sizeof (double), cmp_double);
      med[s] = samples[s * tokens + tokens / 2];
    }
  if (good && json)
    print_json (&m, med, worst, first);
  else if (good)
    print_text (&m, tokens, med, worst);
  module_clear (&m);
  return good;
}

int
cli_adapter_bench (int argc, char **argv)
{
  g_autofree char *preset = NULL, *ranks = NULL;
  gint d = 2048, tokens = 30, lambda_s = CKKS_PRIVACY_DEFAULT_LAMBDA;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "preset", 'p', 0, G_OPTION_ARG_STRING, &preset, "CKKS preset (default: fast)", "NAME" },
    { "d", 'd', 0, G_OPTION_ARG_INT, &d, "Module input width (default 2048)", "D" },
    { "ranks", 'r', 0, G_OPTION_ARG_STRING, &ranks, "Comma-separated ranks (default 32,16)", "R,..." },
    { "tokens", 'n', 0, G_OPTION_ARG_INT, &tokens, "Timed tokens per rank (default 30)", "N" },
    { "lambda", 'l', 0, G_OPTION_ARG_INT, &lambda_s, "Flooding security bits (default 40)", "BITS" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print JSON", NULL },
    G_OPTION_ENTRY_NULL
  };
  g_autoptr (GOptionContext) ctx = g_option_context_new (
    "- time one HE-LoRA module per rank, plain and adapter-private");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_autoptr (GError) error = NULL;
  if (!g_option_context_parse (ctx, &argc, &argv, &error))
    {
      fprintf (stderr, "tensafe-cli adapter bench: %s\n", error->message);
      return 2;
    }
  if (d < 1 || tokens < 1 || tokens > 100000 || lambda_s < 0 || lambda_s > 100)
    {
      fprintf (stderr, "tensafe-cli adapter bench: bad --d, --tokens or --lambda\n");
      return 2;
    }
  g_auto (GStrv) list = g_strsplit (ranks ? ranks : "32,16", ",", -1);
  if (json)
    printf ("{\"preset\":\"%s\",\"modules\":[", preset ? preset : "fast");
  gboolean good = TRUE;
  for (guint i = 0; good && list[i]; i++)
    {
      guint64 r = g_ascii_strtoull (list[i], NULL, 10);
      good = r >= 1 && r <= 65536
             && bench_rank (preset ? preset : "fast", (guint) d, (guint) r, (guint) tokens,
                            (guint) lambda_s, json, i == 0);
    }
  if (json)
    printf ("],\"ok\":%s}\n", good ? "true" : "false");
  return good ? 0 : 1;
}
