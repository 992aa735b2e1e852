/* ckks-gpu-helora.c: the host side of the GPU HE-LoRA session: checks,
 * input groups, the tables and key material the device needs (in the 64-bit
 * Shoup form the kernels use), per-token h scaling and the seed.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "ckks-gpu-helora-private.h"
#include "ckks-gpu-helora.h"
#include "ckks-gpu.h"
#include "ckks-helora-private.h"
#include "ckks-secret.h"
#include "ts-config.h"

#if TS_HAVE_CUDA
#include "ckks-cuda-helora.h"
#endif

#define MAX_GROUPS 64
/* as CKKS_CUDA_HELORA_MAX_COPIES (the trace matrices on the device) */
#define MAX_COPIES 256

struct CkksGpuHeloraSession {
  size_t n_groups, n_plans;
  size_t group_d[MAX_GROUPS];
  size_t *plan_group;          /* n_plans */
  size_t *plan_r;              /* n_plans */
#if TS_HAVE_CUDA
  CkksCudaHelora *dev;
#endif
};

static void
say (char *why, size_t why_len, const char *msg)
{
  if (why && why_len > 0)
    snprintf (why, why_len, "%s", msg);
}

#if TS_HAVE_CUDA
/* Plans with the same d and input scale share one encrypted h. */
static CkksStatus
assign_groups (CkksGpuHeloraSession *s, const CkksSecretKey *sk,
               const CkksHeloraPlan *const *plans, unsigned *group_bits, char *why,
               size_t why_len)
{
  for (size_t p = 0; p < s->n_plans; p++)
    {
      const CkksHeloraLayout *l = plans[p] ? ckks_helora_plan_layout (plans[p]) : NULL;
      if (!l)
        return CKKS_ERR_INVALID_ARGUMENT;
      if (l->ctx != sk->ctx)
        {
          say (why, why_len, "a plan was made for another context than the secret key's");
          return CKKS_ERR_MISMATCH;
        }
      if (l->limbs != 2 || l->copies > MAX_COPIES)
        {
          say (why, why_len, "the GPU pipeline supports two-limb layouts with at most 256 "
               "copies per result (d too small for this ring degree)");
          return CKKS_ERR_UNSUPPORTED;
        }
      size_t g = 0;
      while (g < s->n_groups && !(s->group_d[g] == l->d && group_bits[g] == l->in_bits))
        g++;
      if (g == s->n_groups)
        {
          if (g == MAX_GROUPS)
            return CKKS_ERR_INVALID_ARGUMENT;
          s->group_d[g] = l->d;
          group_bits[g] = l->in_bits;
          s->n_groups++;
        }
      s->plan_group[p] = g;
      s->plan_r[p] = l->r;
    }
  return CKKS_OK;
}

#endif

size_t
ckks_gpu_helora_session_n_groups (const CkksGpuHeloraSession *s)
{
  return s->n_groups;
}

size_t
ckks_gpu_helora_session_group (const CkksGpuHeloraSession *s, size_t plan)
{
  return plan < s->n_plans ? s->plan_group[plan] : (size_t) -1;
}

size_t
ckks_gpu_helora_session_group_d (const CkksGpuHeloraSession *s, size_t group)
{
  return group < s->n_groups ? s->group_d[group] : 0;
}

static void
session_free_host (CkksGpuHeloraSession *s)
{
  ckks_free (s->plan_group);
  ckks_free (s->plan_r);
  ckks_free (s);
}

#if TS_HAVE_CUDA

/* Host copies handed to the device, freed (and the key's wiped) after the
 * upload. */
typedef struct {
  CkksCudaHeloraSpec spec;
  CkksCudaHeloraGroup groups[MAX_GROUPS];
  CkksCudaHeloraModule *modules;
  uint64_t *psi, *psi_shoup, *key;   /* key: s, s', -s, -s' (4 L N) */
  size_t key_words;
} SpecBuild;

static void
spec_clear (SpecBuild *b, size_t n_plans)
{
  if (b->key)
    OPENSSL_cleanse (b->key, b->key_words * sizeof (uint64_t));
  ckks_free (b->key);
  ckks_free (b->psi);
  ckks_free (b->psi_shoup);
  for (size_t p = 0; b->modules && p < n_plans; p++)
    {
      ckks_free ((void *) b->modules[p].pt);
      ckks_free ((void *) b->modules[p].pt_shoup);
      ckks_free ((void *) b->modules[p].trace_w);
      ckks_free ((void *) b->modules[p].trace_re);
    }
  ckks_free (b->modules);
}

static void
shoup_all (const uint64_t *w, uint64_t *out, uint64_t q, size_t n)
{
  for (size_t i = 0; i < n; i++)
    out[i] = ckks_shoup_precompute (w[i], q);
}

static CkksStatus
build_context_part (SpecBuild *b, const CkksSecretKey *sk)
{
  const CkksContext *ctx = sk->ctx;
  size_t n = ctx->n, L = 2;
  CkksCudaHeloraSpec *sp = &b->spec;
  sp->ctx = ctx;
  sp->n = (uint32_t) n;
  sp->limbs = (uint32_t) L;
  b->psi = ckks_alloc (L * n * sizeof (uint64_t));
  b->psi_shoup = ckks_alloc (L * n * sizeof (uint64_t));
  b->key_words = 4 * L * n;
  b->key = ckks_alloc (b->key_words * sizeof (uint64_t));
  if (!b->psi || !b->psi_shoup || !b->key)
    return CKKS_ERR_NO_MEMORY;
  uint64_t *s = b->key, *s_sh = s + L * n, *neg = s_sh + L * n, *neg_sh = neg + L * n;
  for (size_t i = 0; i < L; i++)
    {
      const CkksNttTables *t = &ctx->ntt[i];
      uint64_t q = t->mod.q;
      sp->limb[i] = (CkksCudaLimb) { q, t->mod.ratio_lo, t->mod.ratio_hi, t->mod.ratio64 };
      memcpy (b->psi + i * n, t->psi_rev, n * sizeof (uint64_t));
      shoup_all (t->psi_rev, b->psi_shoup + i * n, q, n);
      memcpy (s + i * n, sk->s + i * n, n * sizeof (uint64_t));
      for (size_t k = 0; k < n; k++)
        neg[i * n + k] = ckks_neg_mod (s[i * n + k], q);
      shoup_all (s + i * n, s_sh + i * n, q, n);
      shoup_all (neg + i * n, neg_sh + i * n, q, n);
    }
  sp->psi_rev = b->psi;
  sp->psi_rev_shoup = b->psi_shoup;
  sp->s = s;
  sp->s_shoup = s_sh;
  sp->neg_s = neg;
  sp->neg_s_shoup = neg_sh;
  sp->crt_inv = ctx->crt2.inv;
  sp->crt_inv_shoup = ctx->crt2.inv_shoup;
  sp->crt_half_t = ctx->crt2.half_t;
  sp->crt_half_a = ctx->crt2.half_a;
  sp->fft_re = ctx->fft_re;
  sp->fft_im = ctx->fft_im;
  sp->slot_bitrev = ctx->slot_bitrev;
  return CKKS_OK;
}

/* The group's packing and lift, from the layout of its first plan. */
static void
build_group (CkksCudaHeloraGroup *g, const CkksHeloraLayout *l)
{
  const CkksContext *ctx = l->ctx;
  unsigned encode_bits = l->in_bits < CKKS_HELORA_ENCODE_BITS ? l->in_bits
                                                              : CKKS_HELORA_ENCODE_BITS;
  g->d = (uint32_t) l->d;
  g->chunks = (uint32_t) l->chunks;
  g->chunk_len = (uint32_t) l->chunk_len;
  g->copies = (uint32_t) l->copies;
  /* ckks_encode_coeffs rounds v * (scale / (N/2)) */
  g->encode_scale = ldexp (1.0, (int) encode_bits) / (double) ctx->slots;
  for (uint32_t i = 0; i < 2; i++)
    {
      const CkksModulus *m = &ctx->ntt[i].mod;
      g->lift_w[i] = ckks_barrett_reduce_128 ((ckks_u128) 1 << (l->in_bits - encode_bits), m);
      g->lift_shoup[i] = ckks_shoup_precompute (g->lift_w[i], m->q);
    }
}

static CkksStatus
build_module (CkksCudaHeloraModule *m, const CkksHeloraPlan *plan, uint32_t group)
{
  const CkksHeloraLayout *l = ckks_helora_plan_layout (plan);
  size_t n = l->ctx->n, g2 = 2 * l->copies, count = l->n_outputs * l->chunks;
  uint64_t *pt = ckks_alloc (count * 2 * n * sizeof (uint64_t));
  uint64_t *pt_shoup = ckks_alloc (count * 2 * n * sizeof (uint64_t));
  uint64_t *w = ckks_alloc (2 * g2 * g2 * sizeof (uint64_t));
  double *re = ckks_alloc (l->copies * g2 * sizeof (double));
  m->pt = pt;
  m->pt_shoup = pt_shoup;
  m->trace_w = w;
  m->trace_re = re;
  if (!pt || !pt_shoup || !w || !re)
    return CKKS_ERR_NO_MEMORY;
  for (size_t b = 0; b < l->n_outputs; b++)
    for (size_t k = 0; k < l->chunks; k++)
      for (uint32_t i = 0; i < 2; i++)
        {
          size_t off = ((b * l->chunks + k) * 2 + i) * n;
          ckks_helora_plan_pt_values (plan, b, k, i, pt + off);
          shoup_all (pt + off, pt_shoup + off, l->ctx->params.moduli[i], n);
        }
  ckks_helora_trace_tables_fill (l, w, re, NULL);
  m->group = group;
  m->r = (uint32_t) l->r;
  m->n_outputs = (uint32_t) l->n_outputs;
  m->copies = (uint32_t) l->copies;
  m->span = (uint32_t) l->span;
  /* the result's scale, as ckks_helora_evaluate sets it */
  m->span_over_scale = (double) l->span / (ldexp (1.0, (int) l->in_bits)
                                           * ckks_helora_plan_scale (plan));
  return CKKS_OK;
}

static CkksStatus
build_spec (SpecBuild *b, const CkksGpuHeloraSession *s, const CkksSecretKey *sk,
            const CkksHeloraPlan *const *plans)
{
  CkksStatus st = build_context_part (b, sk);
  b->modules = ckks_alloc0 (s->n_plans * sizeof *b->modules);
  if (st == CKKS_OK && !b->modules)
    st = CKKS_ERR_NO_MEMORY;
  bool seen[MAX_GROUPS] = { false };
  for (size_t p = 0; st == CKKS_OK && p < s->n_plans; p++)
    {
      size_t g = s->plan_group[p];
      if (!seen[g])
        build_group (&b->groups[g], ckks_helora_plan_layout (plans[p]));
      seen[g] = true;
      st = build_module (&b->modules[p], plans[p], (uint32_t) g);
    }
  b->spec.groups = b->groups;
  b->spec.n_groups = (uint32_t) s->n_groups;
  b->spec.modules = b->modules;
  b->spec.n_modules = (uint32_t) s->n_plans;
  return st;
}

#endif /* TS_HAVE_CUDA */

#if TS_HAVE_CUDA
/* The host half of a session: groups and the device's spec in @b. */
static CkksStatus
session_prepare (const CkksSecretKey *sk, const CkksHeloraPlan *const *plans, size_t n_plans,
                 CkksGpuHeloraSession **out, SpecBuild *spec_build, char *why, size_t why_len)
{
  CkksGpuHeloraSession *s = ckks_alloc0 (sizeof *s);
  if (!s)
    return CKKS_ERR_NO_MEMORY;
  s->n_plans = n_plans;
  s->plan_group = ckks_alloc (n_plans * sizeof (size_t));
  s->plan_r = ckks_alloc (n_plans * sizeof (size_t));
  unsigned group_bits[MAX_GROUPS];
  CkksStatus st = s->plan_group && s->plan_r ? CKKS_OK : CKKS_ERR_NO_MEMORY;
  if (st == CKKS_OK)
    st = assign_groups (s, sk, plans, group_bits, why, why_len);
  if (st == CKKS_OK)
    st = build_spec (spec_build, s, sk, plans);
  if (st != CKKS_OK)
    {
      ckks_gpu_helora_session_free (s);
      return st;
    }
  *out = s;
  return CKKS_OK;
}
#endif

CkksStatus
ckks_gpu_helora_session_new (const CkksSecretKey *sk, const CkksHeloraPlan *const *plans,
                             size_t n_plans, CkksGpuHeloraSession **out, char *why,
                             size_t why_len)
{
  say (why, why_len, "");
  if (!sk || !plans || n_plans == 0 || !out)
    return CKKS_ERR_INVALID_ARGUMENT;
  *out = NULL;
  char reason[200];
  if (!ckks_gpu_available (reason, sizeof reason))
    {
      say (why, why_len, reason);
      return CKKS_ERR_UNSUPPORTED;
    }
#if TS_HAVE_CUDA
  CkksGpuHeloraSession *s = NULL;
  SpecBuild b;
  memset (&b, 0, sizeof b);
  CkksStatus st = session_prepare (sk, plans, n_plans, &s, &b, why, why_len);
  if (st == CKKS_OK)
    st = ckks_cuda_helora_new (&b.spec, &s->dev, why, why_len);
  spec_clear (&b, n_plans);
  if (st != CKKS_OK)
    {
      ckks_gpu_helora_session_free (s);
      return st;
    }
  *out = s;
  return CKKS_OK;
#else
  return CKKS_ERR_UNSUPPORTED;
#endif
}

void
ckks_gpu_helora_session_free (CkksGpuHeloraSession *s)
{
  if (!s)
    return;
#if TS_HAVE_CUDA
  ckks_cuda_helora_free (s->dev);
#endif
  session_free_host (s);
}

/* max|h| of a group's vector (1 for h = 0); false on a non-finite value. */
static bool
h_max (const float *h, size_t d, double *out)
{
  double m = 0;
  for (size_t i = 0; i < d; i++)
    {
      if (!isfinite (h[i]))
        return false;
      m = fmax (m, fabs ((double) h[i]));
    }
  *out = m > 0 ? m : 1;
  return true;
}

/* Checks the per-token arguments; 1 / max|h| and max|h| per group. */
static CkksStatus
token_inputs (const CkksGpuHeloraSession *s, const float *const *h, size_t n_h,
              double *const *u, size_t n_u, double *inv, double *factor)
{
  if (!s || !h || !u || n_h != s->n_groups || n_u != s->n_plans)
    return CKKS_ERR_INVALID_ARGUMENT;
  for (size_t g = 0; g < s->n_groups; g++)
    {
      if (!h[g] || !h_max (h[g], s->group_d[g], &factor[g]))
        return CKKS_ERR_INVALID_ARGUMENT;
      inv[g] = 1.0 / factor[g];
    }
  for (size_t p = 0; p < s->n_plans; p++)
    if (!u[p])
      return CKKS_ERR_INVALID_ARGUMENT;
  return CKKS_OK;
}

#if TS_HAVE_CUDA
static void
stages_to_timings (const double us[CKKS_CUDA_N_STAGES], CkksGpuHeloraTimings *timings)
{
  timings->h2d_us = us[CKKS_CUDA_STAGE_H2D];
  timings->encrypt_us = us[CKKS_CUDA_STAGE_ENCRYPT];
  timings->evaluate_us = us[CKKS_CUDA_STAGE_EVALUATE];
  timings->decrypt_us = us[CKKS_CUDA_STAGE_DECRYPT];
  timings->d2h_us = us[CKKS_CUDA_STAGE_D2H];
  timings->device_us = 0;
  for (int i = 0; i < CKKS_CUDA_N_STAGES; i++)
    timings->device_us = us[i] < 0 || timings->device_us < 0 ? -1
                         : timings->device_us + us[i];
}
#endif

CkksStatus
ckks_gpu_helora_session_run (CkksGpuHeloraSession *s, const float *const *h, size_t n_h,
                             double *const *u, size_t n_u, CkksGpuHeloraTimings *timings)
{
  double inv[MAX_GROUPS], factor[MAX_GROUPS];
  CkksStatus st = token_inputs (s, h, n_h, u, n_u, inv, factor);
  if (st != CKKS_OK)
    return st;
#if TS_HAVE_CUDA
  /* the seed determines the errors: private randomness */
  uint8_t seed[32];
  if (RAND_priv_bytes (seed, sizeof seed) != 1)
    return CKKS_ERR_RANDOM;
  double us[CKKS_CUDA_N_STAGES];
  st = ckks_cuda_helora_run (s->dev, h, inv, factor, seed, u, us);
  OPENSSL_cleanse (seed, sizeof seed);
  if (st == CKKS_OK && timings)
    stages_to_timings (us, timings);
  return st;
#else
  (void) timings;
  return CKKS_ERR_UNSUPPORTED;
#endif
}


CkksStatus
ckks_gpu_helora_session_reserve_rows (CkksGpuHeloraSession *s, size_t rows)
{
  if (!s || rows == 0)
    return CKKS_ERR_INVALID_ARGUMENT;
#if TS_HAVE_CUDA
  return ckks_cuda_helora_reserve_rows (s->dev, rows);
#else
  return CKKS_ERR_UNSUPPORTED;
#endif
}

CkksStatus
ckks_gpu_helora_session_run_device (CkksGpuHeloraSession *s, const float *const *h_dev,
                                    size_t n_h, size_t row, void *stream)
{
  if (!s || !h_dev || n_h != s->n_groups)
    return CKKS_ERR_INVALID_ARGUMENT;
  for (size_t g = 0; g < n_h; g++)
    if (!h_dev[g])
      return CKKS_ERR_INVALID_ARGUMENT;
#if TS_HAVE_CUDA
  /* the seed determines the errors: private randomness */
  uint8_t seed[32];
  if (RAND_priv_bytes (seed, sizeof seed) != 1)
    return CKKS_ERR_RANDOM;
  CkksStatus st = ckks_cuda_helora_run_device (s->dev, h_dev, row, seed, stream);
  OPENSSL_cleanse (seed, sizeof seed);
  return st;
#else
  (void) row;
  (void) stream;
  return CKKS_ERR_UNSUPPORTED;
#endif
}

#define MAX_BATCH 64

CkksStatus
ckks_gpu_helora_sessions_run_device (CkksGpuHeloraSession *const *sessions, size_t n,
                                     const float *const *const *h_dev, const size_t *rows,
                                     void *stream)
{
  if (!sessions || !h_dev || !rows || n == 0 || n > MAX_BATCH)
    return CKKS_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; i < n; i++)
    {
      if (!sessions[i] || !h_dev[i])
        return CKKS_ERR_INVALID_ARGUMENT;
      for (size_t g = 0; g < sessions[i]->n_groups; g++)
        if (!h_dev[i][g])
          return CKKS_ERR_INVALID_ARGUMENT;
      for (size_t j = 0; j < i; j++)
        if (sessions[j] == sessions[i])
          return CKKS_ERR_INVALID_ARGUMENT;
    }
#if TS_HAVE_CUDA
  uint8_t seeds[MAX_BATCH * 32];
  CkksCudaHelora *devs[MAX_BATCH];
  for (size_t i = 0; i < n; i++)
    devs[i] = sessions[i]->dev;
  if (RAND_priv_bytes (seeds, (int) (32 * n)) != 1)
    return CKKS_ERR_RANDOM;
  CkksStatus st = ckks_cuda_helora_run_device_batch (devs, n, h_dev, rows, seeds, stream);
  OPENSSL_cleanse (seeds, sizeof seeds);
  return st;
#else
  (void) stream;
  return CKKS_ERR_UNSUPPORTED;
#endif
}

CkksStatus
ckks_gpu_helora_sessions_check_device_run (CkksGpuHeloraSession *const *sessions, size_t n,
                                           const float *const *const *h,
                                           float *const *const *u)
{
  if (!sessions || !h || !u || n == 0 || n > MAX_BATCH)
    return CKKS_ERR_INVALID_ARGUMENT;
#if TS_HAVE_CUDA
  CkksCudaHelora *devs[MAX_BATCH];
  uint8_t seeds[MAX_BATCH * 32];
  for (size_t i = 0; i < n; i++)
    devs[i] = sessions[i]->dev;
  if (RAND_priv_bytes (seeds, (int) (n * 32)) != 1)
    return CKKS_ERR_RANDOM;
  CkksStatus st = ckks_cuda_helora_check_device_batch (devs, n, h, seeds, u);
  OPENSSL_cleanse (seeds, sizeof seeds);
  return st;
#else
  return CKKS_ERR_UNSUPPORTED;
#endif
}

CkksStatus
ckks_gpu_helora_session_copy_u (CkksGpuHeloraSession *s, size_t plan, size_t first_row,
                                size_t n_rows, float *u_dev, void *stream)
{
  if (!s || plan >= s->n_plans || !u_dev)
    return CKKS_ERR_INVALID_ARGUMENT;
#if TS_HAVE_CUDA
  return ckks_cuda_helora_copy_u (s->dev, (uint32_t) plan, first_row, n_rows, u_dev, stream);
#else
  (void) first_row;
  (void) n_rows;
  (void) stream;
  return CKKS_ERR_UNSUPPORTED;
#endif
}

CkksStatus
ckks_gpu_helora_session_device_timings (CkksGpuHeloraSession *s, CkksGpuHeloraTimings *timings)
{
  if (!s || !timings)
    return CKKS_ERR_INVALID_ARGUMENT;
#if TS_HAVE_CUDA
  double us[CKKS_CUDA_N_STAGES];
  ckks_cuda_helora_device_timings (s->dev, us);
  stages_to_timings (us, timings);
  return CKKS_OK;
#else
  return CKKS_ERR_UNSUPPORTED;
#endif
}

CkksStatus
ckks_gpu_helora_session_check_device_run (CkksGpuHeloraSession *s, const float *const *h,
                                          size_t n_h, size_t rows, float *const *u, size_t n_u)
{
  if (!s || !h || !u || n_h != s->n_groups || n_u != s->n_plans || rows == 0)
    return CKKS_ERR_INVALID_ARGUMENT;
#if TS_HAVE_CUDA
  uint8_t *seeds = malloc (rows * 32);
  if (!seeds)
    return CKKS_ERR_NO_MEMORY;
  CkksStatus st = RAND_priv_bytes (seeds, (int) (rows * 32)) == 1
                    ? ckks_cuda_helora_check_device_run (s->dev, h, rows, seeds, u)
                    : CKKS_ERR_RANDOM;
  OPENSSL_cleanse (seeds, rows * 32);
  free (seeds);
  return st;
#else
  return CKKS_ERR_UNSUPPORTED;
#endif
}

CkksStatus
ckks_gpu_helora_host_token (const CkksSecretKey *sk, const CkksHeloraPlan *const *plans,
                            size_t n_plans, const float *const *h, size_t n_h,
                            double *const *u, size_t n_u)
{
  if (!sk || !plans || n_plans == 0)
    return CKKS_ERR_INVALID_ARGUMENT;
#if TS_HAVE_CUDA
  CkksGpuHeloraSession *s = NULL;
  SpecBuild b;
  memset (&b, 0, sizeof b);
  double inv[MAX_GROUPS], factor[MAX_GROUPS];
  uint8_t seed[32];
  CkksStatus st = session_prepare (sk, plans, n_plans, &s, &b, NULL, 0);
  if (st == CKKS_OK)
    st = token_inputs (s, h, n_h, u, n_u, inv, factor);
  if (st == CKKS_OK && RAND_priv_bytes (seed, sizeof seed) != 1)
    st = CKKS_ERR_RANDOM;
  if (st == CKKS_OK)
    st = ckks_cuda_check_token (&b.spec, h, inv, factor, seed, u, NULL, NULL);
  OPENSSL_cleanse (seed, sizeof seed);
  spec_clear (&b, n_plans);
  ckks_gpu_helora_session_free (s);
  return st;
#else
  (void) h, (void) n_h, (void) u, (void) n_u;
  return CKKS_ERR_UNSUPPORTED;
#endif
}

#if TS_HAVE_CUDA
/* Buffers of the comparison: per group K * 2 L N words, per plan B * 2 L N
 * words and r doubles, twice (device, host). */
typedef struct {
  uint64_t *cts[2][MAX_GROUPS];
  uint64_t **outs[2];
  double **u[2];
} CompareBuffers;

static bool
compare_alloc (CompareBuffers *cb, const CkksGpuHeloraSession *s,
               const CkksHeloraPlan *const *plans)
{
  bool ok = true;
  for (int side = 0; side < 2; side++)
    {
      cb->outs[side] = ckks_alloc0 (s->n_plans * sizeof (uint64_t *));
      cb->u[side] = ckks_alloc0 (s->n_plans * sizeof (double *));
      ok = ok && cb->outs[side] && cb->u[side];
      for (size_t p = 0; ok && p < s->n_plans; p++)
        {
          const CkksHeloraLayout *l = ckks_helora_plan_layout (plans[p]);
          size_t words = 2 * (size_t) l->limbs * l->ctx->n;
          size_t g = s->plan_group[p];
          if (!cb->cts[side][g])
            ok = ok && (cb->cts[side][g] = ckks_alloc (l->chunks * words * 8)) != NULL;
          cb->outs[side][p] = ckks_alloc (l->n_outputs * words * 8);
          cb->u[side][p] = ckks_alloc (l->r * sizeof (double));
          ok = ok && cb->outs[side][p] && cb->u[side][p];
        }
    }
  return ok;
}

static void
compare_free (CompareBuffers *cb, size_t n_plans)
{
  for (int side = 0; side < 2; side++)
    {
      for (size_t g = 0; g < MAX_GROUPS; g++)
        ckks_free (cb->cts[side][g]);
      for (size_t p = 0; p < n_plans; p++)
        {
          ckks_free (cb->outs[side] ? cb->outs[side][p] : NULL);
          ckks_free (cb->u[side] ? cb->u[side][p] : NULL);
        }
      ckks_free (cb->outs[side]);
      ckks_free (cb->u[side]);
    }
}

/* The first stage whose results differ, or NULL. */
static const char *
compare_stages (const CompareBuffers *cb, const CkksGpuHeloraSession *s,
                const CkksHeloraPlan *const *plans)
{
  for (size_t p = 0; p < s->n_plans; p++)
    {
      const CkksHeloraLayout *l = ckks_helora_plan_layout (plans[p]);
      size_t words = 2 * (size_t) l->limbs * l->ctx->n, g = s->plan_group[p];
      if (memcmp (cb->cts[0][g], cb->cts[1][g], l->chunks * words * 8) != 0)
        return "encode + encrypt (the input ciphertexts)";
    }
  for (size_t p = 0; p < s->n_plans; p++)
    {
      const CkksHeloraLayout *l = ckks_helora_plan_layout (plans[p]);
      size_t words = 2 * (size_t) l->limbs * l->ctx->n;
      if (memcmp (cb->outs[0][p], cb->outs[1][p], l->n_outputs * words * 8) != 0)
        return "evaluate (the results)";
    }
  for (size_t p = 0; p < s->n_plans; p++)
    if (memcmp (cb->u[0][p], cb->u[1][p], s->plan_r[p] * sizeof (double)) != 0)
      return "decrypt + segment sums (u)";
  return NULL;
}
#endif

CkksStatus
ckks_gpu_helora_compare_host (const CkksSecretKey *sk, const CkksHeloraPlan *const *plans,
                              size_t n_plans, const float *const *h, size_t n_h,
                              const char **stage)
{
  *stage = NULL;
#if TS_HAVE_CUDA
  CkksGpuHeloraSession *s = NULL, *host = NULL;
  CompareBuffers cb;
  SpecBuild b;
  double inv[MAX_GROUPS], factor[MAX_GROUPS];
  uint8_t seed[32];
  memset (&cb, 0, sizeof cb);
  memset (&b, 0, sizeof b);
  CkksStatus st = ckks_gpu_helora_session_new (sk, plans, n_plans, &s, NULL, 0);
  if (st == CKKS_OK)
    st = session_prepare (sk, plans, n_plans, &host, &b, NULL, 0);
  if (st == CKKS_OK && !compare_alloc (&cb, s, plans))
    st = CKKS_ERR_NO_MEMORY;
  if (st == CKKS_OK)
    st = token_inputs (s, h, n_h, cb.u[0], n_plans, inv, factor);
  if (st == CKKS_OK && RAND_priv_bytes (seed, sizeof seed) != 1)
    st = CKKS_ERR_RANDOM;
  if (st == CKKS_OK)
    st = ckks_cuda_helora_run (s->dev, h, inv, factor, seed, cb.u[0], NULL);
  if (st == CKKS_OK)
    st = ckks_cuda_helora_read (s->dev, cb.cts[0], cb.outs[0]);
  if (st == CKKS_OK)
    st = ckks_cuda_check_token (&b.spec, h, inv, factor, seed, cb.u[1], cb.cts[1], cb.outs[1]);
  if (st == CKKS_OK && (*stage = compare_stages (&cb, s, plans)) != NULL)
    st = CKKS_ERR_MISMATCH;
  OPENSSL_cleanse (seed, sizeof seed);
  compare_free (&cb, n_plans);
  spec_clear (&b, n_plans);
  ckks_gpu_helora_session_free (host);
  ckks_gpu_helora_session_free (s);
  return st;
#else
  (void) sk, (void) plans, (void) n_plans, (void) h, (void) n_h;
  return CKKS_ERR_UNSUPPORTED;
#endif
}
