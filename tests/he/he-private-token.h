/* he-private-token.h: one HE-LoRA token (keys, plan, encrypt, evaluate,
 * decrypt) for the adapter-private tests of the he and core suites.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "ckks-helora.h"
#include "ckks-keys.h"
#include "ckks.h"

#define D 512
#define R 32

typedef struct {
  CkksContext *ctx;
  CkksSecretKey *sk;
  CkksPublicKey *pk;
  CkksHeloraLayout *lay;
  CkksHeloraPlan *plan;
  CkksCiphertext **in, **out;
  size_t k, b;
  float a[R * D], h[D];
  double factor;
  double u_plain[R];     /* A·h in double */
} Token;

/* A token on the layout with the scale split @scales (the adapter-private
 * mode uses CKKS_HELORA_SCALES_PRIVACY). */
static inline void
token_setup_scaled (Token *t, GRand *rng, CkksBackend backend, CkksHeloraScales scales)
{
  CkksParams p;
  g_assert_cmpint (ckks_params_preset ("fast", &p), ==, CKKS_OK);
  g_assert_cmpint (ckks_context_new_with_backend (&p, backend, &t->ctx), ==, CKKS_OK);
  g_assert_cmpint (ckks_secret_key_new (t->ctx, &t->sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_public_key_new (t->sk, &t->pk), ==, CKKS_OK);
  for (size_t i = 0; i < R * D; i++)
    t->a[i] = (float) g_rand_double_range (rng, -0.05, 0.05);
  for (size_t j = 0; j < D; j++)
    t->h[j] = (float) g_rand_double_range (rng, -3.0, 3.0);
  for (size_t i = 0; i < R; i++)
    {
      t->u_plain[i] = 0.0;
      for (size_t j = 0; j < D; j++)
        t->u_plain[i] += (double) t->a[i * D + j] * t->h[j];
    }
  g_assert_cmpint (ckks_helora_layout_new_scaled (t->ctx, D, R, scales, &t->lay), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new_scaled (t->ctx, D, R, t->a, scales, &t->plan), ==,
                   CKKS_OK);
  t->k = ckks_helora_layout_n_inputs (t->lay);
  t->b = ckks_helora_layout_n_outputs (t->lay);
  g_assert_cmpint (ckks_helora_ciphertexts_new (t->lay, t->k, &t->in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (t->lay, t->b, &t->out), ==, CKKS_OK);
}

static inline void
token_setup_backend (Token *t, GRand *rng, CkksBackend backend)
{
  token_setup_scaled (t, rng, backend, CKKS_HELORA_SCALES_PRIVACY);
}

/* The private mode's layout on the fastest backend. */
static inline void
token_setup (Token *t, GRand *rng)
{
  token_setup_backend (t, rng, CKKS_BACKEND_AUTO);
}

/* A fresh encryption of h and its evaluation into t->out. */
static inline void
token_run (Token *t)
{
  g_assert_cmpint (ckks_helora_encrypt_sk (t->lay, t->sk, t->h, t->in, t->k, &t->factor), ==,
                   CKKS_OK);
  g_assert_cmpint (ckks_helora_evaluate (t->plan, t->in, t->k, t->out, t->b), ==, CKKS_OK);
}

static inline void
token_decrypt (Token *t, double *u)
{
  g_assert_cmpint (ckks_helora_decrypt (t->lay, t->sk, t->out, t->b, t->factor, u), ==, CKKS_OK);
}

static inline void
token_free (Token *t)
{
  ckks_helora_ciphertexts_free (t->in, t->k);
  ckks_helora_ciphertexts_free (t->out, t->b);
  ckks_helora_plan_free (t->plan);
  ckks_helora_layout_free (t->lay);
  ckks_public_key_free (t->pk);
  ckks_secret_key_free (t->sk);
  ckks_context_free (t->ctx);
}

