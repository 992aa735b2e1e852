/* cli-adapter-bench.c: tensafe-cli adapter bench: HE-LoRA evaluate time per
 * module by rank, and the cost of the adapter-private layers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckks-helora.h"
#include "ckks-keys.h"
#include "ckks-private.h"
#include "ckks.h"
#include "cli.h"

typedef enum {
  ST_ENCRYPT, ST_EVALUATE, ST_DECRYPT,      /* the plain HE module */
  ST_PADS,                                  /* B flooded, masked zero encryptions (offline) */
  ST_APPLY,                                 /* online: pads + DP noise, one pass */
  ST_APPLY_COMPACT,                         /* the same on compact (trace-only) results */
  ST_EVAL_COLD,                             /* plain evaluation, cold cache */
  ST_FUSED,                                 /* evaluate with the pads fused + DP noise */
  ST_EVAL_COMPACT,                          /* plain compact evaluation */
  ST_FUSED_COMPACT,                         /* compact evaluation, pads fused + DP noise */
  N_ST
} Stage;

static const char *const stage_names[N_ST] = {
  "encrypt", "evaluate", "decrypt", "pads_offline", "private_online", "private_online_compact",
  "evaluate_cold", "evaluate_fused", "evaluate_compact", "evaluate_compact_fused",
};

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  CkksPublicKey *pk;
  CkksHeloraPlan *plan;
  const CkksHeloraLayout *lay;
  CkksCiphertext **in, **out, **zeros;
  size_t k, b;
  guint d, r;
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

/* Fresh pads for every result (offline work, not timed); compact ones
 * for the compact evaluation. */
static gboolean
fresh_pads (Module *m, guint lambda_s, gboolean compact)
{
  gboolean good = TRUE;
  for (size_t i = 0; good && i < m->b; i++)
    {
      ckks_ciphertext_free (m->zeros[i]);
      m->zeros[i] = NULL;
      good = ok (ckks_private_pad_new (m->lay, m->pk, lambda_s, &m->zeros[i]), "pad")
             && (!compact || ok (ckks_private_pad_compact (m->lay, m->zeros[i]), "pad"));
    }
  return good;
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

/* The private mode as the evaluator runs it: the pads fused into the
 * evaluation's output write, the DP noise on the block sums; compact then
 * full results, each against the plain evaluation of the same form, all
 * from a cold cache. The full fused results are left in m->out. */
static gboolean
time_fused (Module *m, guint lambda_s, const double *noise, double t[N_ST])
{
  gboolean good = TRUE;
  if (ckks_helora_result_serialized_size (m->lay) > 0)
    {
      good = fresh_pads (m, lambda_s, TRUE);
      evict_caches ();
      double t0 = now_ms ();
      good = good && ok (ckks_helora_evaluate_compact (m->plan, m->in, m->k, m->out, m->b),
                         "evaluate_compact");
      t[ST_EVAL_COMPACT] = now_ms () - t0;
      evict_caches ();
      t0 = now_ms ();
      good = good && ok (ckks_helora_evaluate_compact_padded (m->plan, m->in, m->k, m->out, m->b,
                                                              m->zeros), "evaluate_compact_padded")
             && ok (ckks_private_add_noise_masked (m->lay, m->out, m->b, noise), "noise");
      t[ST_FUSED_COMPACT] = now_ms () - t0;
    }
  good = good && fresh_pads (m, lambda_s, FALSE);
  evict_caches ();
  double t0 = now_ms ();
  good = good && ok (ckks_helora_evaluate (m->plan, m->in, m->k, m->out, m->b), "evaluate");
  t[ST_EVAL_COLD] = now_ms () - t0;
  evict_caches ();
  t0 = now_ms ();
  good = good && ok (ckks_helora_evaluate_padded (m->plan, m->in, m->k, m->out, m->b, m->zeros),
                     "evaluate_padded")
         && ok (ckks_private_add_noise_masked (m->lay, m->out, m->b, noise), "noise");
  t[ST_FUSED] = now_ms () - t0;
  return good;
}

static void
module_clear (Module *m)
{
  if (m->lay)
    {
      ckks_helora_ciphertexts_free (m->in, m->k);
      ckks_helora_ciphertexts_free (m->out, m->b);
    }
  for (size_t i = 0; m->zeros && i < m->b; i++)
    ckks_ciphertext_free (m->zeros[i]);
  g_free (m->zeros);
  ckks_helora_plan_free (m->plan);
  ckks_public_key_free (m->pk);
  ckks_secret_key_free (m->sk);
  ckks_context_free (m->ctx);
  g_free (m->a);
}

static gboolean
module_init (Module *m, const char *preset, guint d, guint r, GRand *rng)
{
  CkksParams p;
  memset (m, 0, sizeof *m);
  m->d = d;
  m->r = r;
  m->a = g_new (float, (size_t) d * r);
  for (size_t i = 0; i < (size_t) d * r; i++)
    m->a[i] = (float) g_rand_double_range (rng, -0.05, 0.05);
  if (!ok (ckks_params_preset (preset, &p), preset) || !ok (ckks_context_new (&p, &m->ctx), "context")
      || !ok (ckks_secret_key_new (m->ctx, &m->sk), "secret key")
      || !ok (ckks_public_key_new (m->sk, &m->pk), "public key")
      || !ok (ckks_helora_plan_new (m->ctx, d, r, m->a, &m->plan), "plan"))
    return FALSE;
  m->lay = ckks_helora_plan_layout (m->plan);
  m->k = ckks_helora_layout_n_inputs (m->lay);
  m->b = ckks_helora_layout_n_outputs (m->lay);
  m->zeros = g_new0 (CkksCiphertext *, m->b);
  return ok (ckks_helora_ciphertexts_new (m->lay, m->k, &m->in), "inputs")
         && ok (ckks_helora_ciphertexts_new (m->lay, m->b, &m->out), "outputs");
}

/* The online step on compact results (c0 as block sums: what a compact
 * evaluation produces); the conversion and the pads are not timed. */
static gboolean
time_compact (Module *m, guint lambda_s, const double *noise, double *ms)
{
  size_t len = ckks_helora_result_serialized_size (m->lay);
  if (len == 0)
    {
      *ms = 0.0;
      return TRUE;
    }
  g_autofree guint8 *buf = g_malloc (len);
  gboolean good = ok (ckks_helora_evaluate (m->plan, m->in, m->k, m->out, m->b), "evaluate");
  for (size_t i = 0; good && i < m->b; i++)
    {
      ckks_ciphertext_free (m->zeros[i]);
      m->zeros[i] = NULL;
      good = ok (ckks_helora_result_serialize (m->lay, m->out[i], buf, len), "compact")
             && ok (ckks_helora_result_deserialize_into (m->lay, m->out[i], buf, len), "compact")
             && ok (ckks_private_pad_new (m->lay, m->pk, lambda_s, &m->zeros[i]), "pad");
    }
  double t0 = now_ms ();
  good = good && ok (ckks_private_apply (m->lay, m->out, m->b, m->zeros, noise), "apply");
  *ms = now_ms () - t0;
  return good;
}

/* One token through the plain module and the private layers, each timed;
 * *err: max |u - A·h| relative to max|u|. */
static gboolean
run_token (Module *m, guint lambda_s, GRand *rng, double t[N_ST], double *err)
{
  g_autofree float *h = g_new (float, m->d);
  g_autofree double *u = g_new (double, m->r), *noise = g_new0 (double, m->r);
  for (guint j = 0; j < m->d; j++)
    h[j] = (float) g_rand_double_range (rng, -1.0, 1.0);
  double factor, t0 = now_ms ();
  gboolean good = ok (ckks_helora_encrypt_sk (m->lay, m->sk, h, m->in, m->k, &factor), "encrypt");
  double t1 = now_ms ();
  good = good && ok (ckks_helora_evaluate (m->plan, m->in, m->k, m->out, m->b), "evaluate");
  double t2 = now_ms ();
  for (size_t i = 0; good && i < m->b; i++)
    {
      ckks_ciphertext_free (m->zeros[i]);
      m->zeros[i] = NULL;
      good = ok (ckks_private_pad_new (m->lay, m->pk, lambda_s, &m->zeros[i]), "pad");
    }
  double t3 = now_ms ();
  good = good && ok (ckks_private_gaussian (1e-3, noise, m->r), "noise")
         && ok (ckks_private_apply (m->lay, m->out, m->b, m->zeros, noise), "apply");
  double t4 = now_ms ();
  good = good && ok (ckks_helora_decrypt (m->lay, m->sk, m->out, m->b, factor, u), "decrypt");
  double t5 = now_ms ();
  double d[N_ST] = { t1 - t0, t2 - t1, t5 - t4, t3 - t2, t4 - t3 };
  memcpy (t, d, sizeof d);
  good = good && time_compact (m, lambda_s, noise, &t[ST_APPLY_COMPACT]);
  /* the fused path last, so u below checks it (full results) */
  g_autofree double *u_fused = g_new (double, m->r);
  good = good && time_fused (m, lambda_s, noise, t)
         && ok (ckks_helora_decrypt (m->lay, m->sk, m->out, m->b, factor, u_fused), "decrypt");
  double max_u = 0.0, max_e = 0.0;
  for (guint i = 0; good && i < m->r; i++)
    {
      double ref = 0.0;
      for (guint j = 0; j < m->d; j++)
        ref += (double) m->a[(size_t) i * m->d + j] * h[j];
      max_u = fmax (max_u, fabs (ref));
      max_e = fmax (max_e, fabs (u[i] - noise[i] * factor - ref));
      max_e = fmax (max_e, fabs (u_fused[i] - noise[i] * factor - ref));
    }
  *err = max_u > 0 ? max_e / max_u : max_e;
  return good;
}

static int
cmp_double (const void *x, const void *y)
{
  double a = *(const double *) x, b = *(const double *) y;
  return a < b ? -1 : a > b;
}

static gboolean
bench_rank (const char *preset, guint d, guint r, guint tokens, guint lambda_s, gboolean json,
            gboolean first)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed (r * 7919u + d);
  Module m;
  gboolean good = module_init (&m, preset, d, r, rng);
  g_autofree double *samples = g_new (double, (size_t) N_ST * (tokens + 1));
  double err = 0.0, worst = 0.0, med[N_ST];
  for (guint i = 0; good && i <= tokens; i++)   /* token 0 warms up */
    {
      double t[N_ST] = { 0 };
      good = run_token (&m, lambda_s, rng, t, &err);
      worst = i ? fmax (worst, err) : worst;
      for (int s = 0; i && s < N_ST; s++)
        samples[s * tokens + i - 1] = t[s];
    }
  for (int s = 0; good && s < N_ST; s++)
    {
      qsort (samples + s * tokens, tokens, sizeof (double), cmp_double);
      med[s] = samples[s * tokens + tokens / 2];
    }
  if (good)
    {
      double plain = med[ST_ENCRYPT] + med[ST_EVALUATE] + med[ST_DECRYPT];
      double online = med[ST_APPLY];
      if (json)
        {
          printf ("%s{\"d\":%u,\"r\":%u,\"B\":%zu,\"copies\":%zu,\"lambda_s\":%u", first ? "" : ",\n ",
                  d, r, m.b, ckks_helora_layout_copies (m.lay), lambda_s);
          for (int s = 0; s < N_ST; s++)
            printf (",\"%s_ms\":%.4f", stage_names[s], med[s]);
          printf (",\"private_online_ms\":%.4f,\"plain_module_ms\":%.4f,\"max_rel_error\":%.3g"
                  ",\"fused_overhead\":%.4f}", online, plain, worst,
                  (med[ST_FUSED] - med[ST_EVAL_COLD]) / plain);
        }
      else
        {
          printf ("d %u  r %u  B %zu (c %zu)  lambda_s %u  median of %u tokens, ms:\n", d, r, m.b,
                  ckks_helora_layout_copies (m.lay), lambda_s, tokens);
          for (int s = 0; s < N_ST; s++)
            printf ("  %-14s %9.4f\n", stage_names[s], med[s]);
          printf ("  plain module (encrypt+evaluate+decrypt) %.4f; private online %.4f (+%.1f%%), "
                  "with pads made inline %.4f (+%.1f%%); max rel error of u %.3g\n",
                  plain, online, 100.0 * online / plain, online + med[ST_PADS],
                  100.0 * (online + med[ST_PADS]) / plain, worst);
          printf ("  fused (cold cache): evaluate %.4f -> %.4f, module +%.1f%%; compact evaluate "
                  "%.4f -> %.4f, module +%.1f%%\n", med[ST_EVAL_COLD], med[ST_FUSED],
                  100.0 * (med[ST_FUSED] - med[ST_EVAL_COLD]) / plain, med[ST_EVAL_COMPACT],
                  med[ST_FUSED_COMPACT],
                  100.0 * (med[ST_FUSED_COMPACT] - med[ST_EVAL_COMPACT]) / plain);
        }
    }
  module_clear (&m);
  return good;
}

int
cli_adapter_bench (int argc, char **argv)
{
  g_autofree char *preset = NULL, *ranks = NULL;
  gint d = 2048, tokens = 30, lambda_s = 16;
  gboolean json = FALSE;
  GOptionEntry entries[] = {
    { "preset", 'p', 0, G_OPTION_ARG_STRING, &preset, "CKKS preset (default: fast)", "NAME" },
    { "d", 'd', 0, G_OPTION_ARG_INT, &d, "Module input width (default 2048)", "D" },
    { "ranks", 'r', 0, G_OPTION_ARG_STRING, &ranks, "Comma-separated ranks (default 32,16)", "R,..." },
    { "tokens", 'n', 0, G_OPTION_ARG_INT, &tokens, "Timed tokens per rank (default 30)", "N" },
    { "lambda", 'l', 0, G_OPTION_ARG_INT, &lambda_s, "Flooding security bits (default 16)", "BITS" },
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
