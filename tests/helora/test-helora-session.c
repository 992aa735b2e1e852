/* test-helora-session.c: HE-LoRA in local mode gives the plain adapter's tokens.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * On the tiny golden model with its golden adapter: plain mode must give the
 * golden LoRA tokens (an independent implementation's), and encrypted local
 * mode the same 32 greedy tokens with max |Δ_he − Δ_plain| below 1e-4 of
 * max |Δ_plain|.
 */
#include <stdlib.h>

#include <glib/gstdio.h>

#include "ckks-helora.h"
#include "ckks-keys.h"
#include "helora-golden.h"
#include "ts-helora-adapter.h"
#include "ts-helora-ckks.h"
#include "ts-test-util.h"

static Golden golden;

static void
test_plain_matches_golden (void)
{
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_PLAIN };
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = ts_helora_session_new (golden.lora, &options, &error);
  g_autofree gint32 *tokens = NULL;

  g_assert_no_error (error);
  tokens = golden_greedy (&golden, helora);
  g_assert_cmpmem (tokens, GOLDEN_STEPS * 4, golden.lora_greedy, GOLDEN_STEPS * 4);
}

/* @engine_threads 1: the evaluator's own two threads and the caller; 3 or
 * more: the engine's pool (its LoRA hook's), which then replaces them. */
static void
check_local (gboolean public_key, guint engine_threads)
{
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .public_key = public_key,
                              .track_error = TRUE, .n_threads = 2 };
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = ts_helora_session_new (golden.lora, &options, &error);
  g_autofree gint32 *tokens = NULL;
  TsHeloraStats stats;

  g_assert_no_error (error);
  tokens = golden_greedy_threads (&golden, helora, engine_threads);
  g_assert_cmpmem (tokens, GOLDEN_STEPS * 4, golden.lora_greedy, GOLDEN_STEPS * 4);
  ts_helora_session_get_stats (helora, &stats);
  g_test_message ("max |delta_he - delta_plain| = %.3g, max |delta_plain| = %.3g, %" G_GUINT64_FORMAT
                  " encryptions, %.1f ms in HE", stats.max_abs_delta_error,
                  stats.max_abs_delta_plain, stats.encryptions, stats.he_ms);
  /* Prefill (30 rows) and 31 decode steps, 4 adapted modules each. */
  g_assert_cmpuint (stats.module_evaluations, ==, 4 * (golden.n_prompt + GOLDEN_STEPS - 1));
  /* with more than one engine thread, each decode step's encryptions are
   * made by the begin hooks, overlapping the products */
  g_assert_cmpuint (stats.encryptions_begun, ==,
                    engine_threads > 1 ? stats.encryptions / (golden.n_prompt + GOLDEN_STEPS - 1)
                                         * (GOLDEN_STEPS - 1) : 0);
  g_assert_cmpfloat (stats.max_abs_delta_plain, >, 0.01);
  g_assert_cmpfloat (stats.max_abs_delta_error, <, 1e-4 * stats.max_abs_delta_plain);
  g_assert_cmpuint (stats.bytes_up, ==, 0);    /* local: nothing crosses a wire */
  /* … but what would is counted: every encryption of h has the same
   * serialised size, and each one brings results back. */
  g_assert_cmpuint (stats.ct_bytes_up, >, 0);
  g_assert_cmpuint (stats.ct_bytes_up % stats.encryptions, ==, 0);
  g_assert_cmpuint (stats.ct_bytes_down, >=, stats.encryptions);
}

static void
test_local_sk (void)
{
  check_local (FALSE, 1);
}

static void
test_local_pk (void)
{
  check_local (TRUE, 1);
}

/* four engine threads: wider than the evaluator's three, so its per-thread
 * scratch grows for the call */
static void
test_local_engine_pool (void)
{
  check_local (FALSE, 4);
}

/* "auto" picks the N = 4096 ring for the golden adapter (every module
 * reads at most 1024 values), says so, and still gives the plaintext
 * adapter's tokens with the same precision. */
static void
test_auto_preset (void)
{
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .params_preset = "auto",
                              .track_error = TRUE, .n_threads = 2 };
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = ts_helora_session_new (golden.lora, &options, &error);
  g_autofree gint32 *tokens = NULL;
  TsHeloraStats stats;

  g_assert_no_error (error);
  for (gsize i = 0; i < lm_lora_n_modules (golden.lora); i++)
    g_assert_cmpuint (lm_lora_module (golden.lora, i)->d_in, <=, 1024);
  g_assert_cmpstr (ts_helora_session_preset (helora), ==, CKKS_PRESET_COMPACT);
  tokens = golden_greedy (&golden, helora);
  g_assert_cmpmem (tokens, GOLDEN_STEPS * 4, golden.lora_greedy, GOLDEN_STEPS * 4);
  ts_helora_session_get_stats (helora, &stats);
  g_assert_cmpfloat (stats.max_abs_delta_plain, >, 0.01);
  g_assert_cmpfloat (stats.max_abs_delta_error, <, 1e-6 * stats.max_abs_delta_plain);
}

/* Results decrypted under another client's key are garbage. */
static void
test_swapped_keys (void)
{
  g_autoptr (GError) error = NULL;
  CkksContext *ctx = ts_helora_ckks_context_new ("fast", &error);
  const LmLoraModule *m = lm_lora_module (golden.lora, 3);
  CkksSecretKey *sk1 = NULL, *sk2 = NULL;
  CkksHeloraPlan *plan = NULL;
  CkksHeloraLayout *layout = NULL;
  CkksCiphertext **in = NULL, **out = NULL;
  g_autofree float *h = g_new (float, m->d_in);
  g_autofree double *u_own = g_new (double, m->rank);
  g_autofree double *u_other = g_new (double, m->rank);
  double hf, err_own = 0, err_other = 0;
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());

  g_assert_no_error (error);
  for (guint j = 0; j < m->d_in; j++)
    h[j] = (float) g_rand_double_range (rng, -1, 1);
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk1), ==, CKKS_OK);
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk2), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_plan_new (ctx, m->d_in, m->rank, m->a, &plan), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_layout_new (ctx, m->d_in, m->rank, &layout), ==, CKKS_OK);
  gsize n_in = ckks_helora_layout_n_inputs (layout), n_out = ckks_helora_layout_n_outputs (layout);
  g_assert_cmpint (ckks_helora_ciphertexts_new (layout, n_in, &in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (layout, n_out, &out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_encrypt_sk (layout, sk1, h, in, n_in, &hf), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_evaluate (plan, in, n_in, out, n_out), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_decrypt (layout, sk1, out, n_out, hf, u_own), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_decrypt (layout, sk2, out, n_out, hf, u_other), ==, CKKS_OK);
  for (guint i = 0; i < m->rank; i++)
    {
      double ref = 0;
      for (guint j = 0; j < m->d_in; j++)
        ref += (double) m->a[i * m->d_in + j] * h[j];
      err_own = MAX (err_own, ABS (u_own[i] - ref));
      err_other = MAX (err_other, ABS (u_other[i] - ref));
    }
  g_test_message ("own key error %.3g, other key error %.3g", err_own, err_other);
  g_assert_cmpfloat (err_own, <, 1e-5);
  /* A wrong key decrypts to values spread over the whole modulus range;
   * the true |A·h| here is below 10, so anything past 10 is garbage. */
  g_assert_cmpfloat (err_other, >, 10.0);
  ckks_helora_ciphertexts_free (in, n_in);
  ckks_helora_ciphertexts_free (out, n_out);
  ckks_helora_layout_free (layout);
  ckks_helora_plan_free (plan);
  ckks_secret_key_free (sk1);
  ckks_secret_key_free (sk2);
  ckks_context_free (ctx);
}

/* A key from the vault: sealed under the same preset, unsealed by the session. */
static void
test_sealed_key (void)
{
  g_autoptr (GError) error = NULL;
  CkksContext *ctx = ts_helora_ckks_context_new ("fast", &error);
  CkksSecretKey *sk = NULL;
  guint8 seal_key[32], *sealed = NULL;
  gsize sealed_len = 0;
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .params_preset = "fast",
                              .unseal_key = seal_key };
  g_autoptr (TsHeloraSession) helora = NULL;
  g_autofree gint32 *tokens = NULL;

  for (guint i = 0; i < sizeof seal_key; i++)
    seal_key[i] = (guint8) g_random_int ();
  g_assert_cmpint (ckks_secret_key_new (ctx, &sk), ==, CKKS_OK);
  g_assert_cmpint (ckks_secret_key_seal (sk, seal_key, &sealed, &sealed_len), ==, CKKS_OK);
  options.sealed_key = sealed;
  options.sealed_key_len = sealed_len;
  helora = ts_helora_session_new (golden.lora, &options, &error);
  g_assert_no_error (error);
  tokens = golden_greedy (&golden, helora);
  g_assert_cmpmem (tokens, GOLDEN_STEPS * 4, golden.lora_greedy, GOLDEN_STEPS * 4);
  g_clear_pointer (&helora, ts_helora_session_free);
  /* A wrong sealing key, and a key sealed for another preset, are refused. */
  seal_key[0] ^= 1;
  helora = ts_helora_session_new (golden.lora, &options, &error);
  g_assert_null (helora);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS);
  g_clear_error (&error);
  seal_key[0] ^= 1;
  options.params_preset = "default";
  helora = ts_helora_session_new (golden.lora, &options, &error);
  g_assert_null (helora);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS);
  free (sealed);
  ckks_secret_key_free (sk);
  ckks_context_free (ctx);
}

/* q, k and v read the same h: one encryption serves the three of them. */
static void
test_shared_encryption (void)
{
  const char *const kinds[] = { "attn_q", "attn_k", "attn_v", "attn_output", NULL };
  g_autofree char *dir = g_dir_make_tmp ("helora-qkv-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "qkvo.gguf", NULL);
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .track_error = TRUE,
                              .params_preset = "fast" };
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = NULL;
  Golden qkvo = golden;
  g_autofree gint32 *plain = NULL, *he = NULL;
  char *msg = NULL;
  TsHeloraStats stats;

  g_assert_true (ts_helora_adapter_write_synthetic (golden.model, path, 16, 5, kinds, &error));
  g_assert_no_error (error);
  if (lm_lora_load (golden.model, path, 1.0f, &qkvo.lora, &msg) != LM_OK)
    g_error ("%s: %s", path, msg);
  g_assert_cmpuint (lm_lora_n_modules (qkvo.lora), ==, 4);
  plain = golden_greedy (&qkvo, NULL);
  helora = ts_helora_session_new (qkvo.lora, &options, &error);
  g_assert_no_error (error);
  he = golden_greedy_threads (&qkvo, helora, 2);
  g_assert_cmpmem (he, GOLDEN_STEPS * 4, plain, GOLDEN_STEPS * 4);
  ts_helora_session_get_stats (helora, &stats);
  /* Per token: q, k, v share one encryption, the output projection has its own. */
  g_assert_cmpuint (stats.module_evaluations, ==, 4 * (golden.n_prompt + GOLDEN_STEPS - 1));
  g_assert_cmpuint (stats.encryptions, ==, 2 * (golden.n_prompt + GOLDEN_STEPS - 1));
  /* two engine threads: each decode step's two encryptions are made by the
   * begin hooks while the products run, q's serving k and v too */
  g_assert_cmpuint (stats.encryptions_begun, ==, 2 * (GOLDEN_STEPS - 1));
  g_assert_cmpfloat (stats.max_abs_delta_error, <, 1e-4 * stats.max_abs_delta_plain);
  g_clear_pointer (&helora, ts_helora_session_free);
  lm_lora_free (qkvo.lora);
  g_unlink (path);
  g_rmdir (dir);
}

/* The key vault's unlocked pair: the session takes a copy and keeps working
 * after the pair is gone; a pair of another preset is refused. */
static void
test_vault_key_pair (void)
{
  g_autoptr (GError) error = NULL;
  TsKeyPair *pair = ts_key_pair_generate ("fast", NULL, NULL, &error);
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL };
  g_autoptr (TsHeloraSession) helora = NULL;
  g_autofree gint32 *tokens = NULL;

  g_assert_no_error (error);
  options.key_pair = pair;
  helora = ts_helora_session_new (golden.lora, &options, &error);
  g_assert_no_error (error);
  options.params_preset = "default";
  g_assert_null (ts_helora_session_new (golden.lora, &options, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS);
  ts_key_pair_free (pair);
  tokens = golden_greedy (&golden, helora);
  g_assert_cmpmem (tokens, GOLDEN_STEPS * 4, golden.lora_greedy, GOLDEN_STEPS * 4);
}

static void
test_mode_parse (void)
{
  TsHeloraOptions o = { 0 };
  g_autoptr (GError) error = NULL;

  g_assert_true (ts_helora_mode_parse ("plain", &o, NULL));
  g_assert_cmpint (o.mode, ==, TS_HELORA_MODE_PLAIN);
  g_assert_true (ts_helora_mode_parse ("local", &o, NULL));
  g_assert_cmpint (o.mode, ==, TS_HELORA_MODE_LOCAL);
  g_assert_true (ts_helora_mode_parse ("ws://127.0.0.1:9/", &o, NULL));
  g_assert_cmpint (o.mode, ==, TS_HELORA_MODE_REMOTE);
  g_assert_cmpstr (o.remote_url, ==, "ws://127.0.0.1:9/");
  g_assert_false (ts_helora_mode_parse ("http://x", &o, &error));
  g_assert_nonnull (error);
}

static void
test_unknown_preset (void)
{
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .params_preset = "huge" };
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = ts_helora_session_new (golden.lora, &options, &error);

  g_assert_null (helora);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS);
}

int
main (int argc, char **argv)
{
  int rc;

  g_test_init (&argc, &argv, NULL);
  golden_load (&golden);
  g_test_add_func ("/helora/session/mode-parse", test_mode_parse);
  g_test_add_func ("/helora/session/unknown-preset", test_unknown_preset);
  g_test_add_func ("/helora/session/plain-matches-golden", test_plain_matches_golden);
  g_test_add_func ("/helora/session/local-sk", test_local_sk);
  g_test_add_func ("/helora/session/local-pk", test_local_pk);
  g_test_add_func ("/helora/session/local-engine-pool", test_local_engine_pool);
  g_test_add_func ("/helora/session/auto-preset", test_auto_preset);
  g_test_add_func ("/helora/session/swapped-keys", test_swapped_keys);
  g_test_add_func ("/helora/session/sealed-key", test_sealed_key);
  g_test_add_func ("/helora/session/shared-encryption", test_shared_encryption);
  g_test_add_func ("/helora/session/vault-key-pair", test_vault_key_pair);
  rc = g_test_run ();
  golden_clear (&golden);
  return rc;
}
