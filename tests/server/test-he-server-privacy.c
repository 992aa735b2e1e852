/* test-he-server-privacy.c: the adapter-private mode through tensafe-he-server:
 * same greedy tokens as plain, c1 no longer reveals A, the budget refusal
 * arrives as its own error code, the spent budget survives a restart, and
 * pads are made ahead (at once, or between turns).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <string.h>

#include "../helora/helora-golden.h"
#include "ckks-client.h"
#include "ckks-objects.h"
#include "ckks-privacy.h"
#include "ckks-serial.h"
#include "server-fixture.h"
#include "ts-helora-adapter.h"
#include "ts-helora-ckks.h"
#include "ts-helora-ckks-evaluator.h"
#include "ts-helora-session.h"
#include "ts-key-pair.h"
#include "ts-privacy-accountant.h"
#include "ts-test-util.h"

#define PRESET "fast"
/* lambda_s = 40, the default, moves u by ~1e-4 of max|u| on the private
 * layout (docs/security.md §3.1): far below what changes a greedy token of
 * the golden model */
#define LAMBDA_S CKKS_PRIVACY_DEFAULT_LAMBDA

typedef struct {
  char *dir;                   /* adapters */
  char *state_dir;
  char *state;                 /* the accountant's file */
  char *lora_path;
  ServerFixture *server;
  Golden golden;
  guint pad_pool_answers;      /* 0: the server's defaults */
  guint pad_refill_idle_ms;
} Fixture;

static void
start_server (Fixture *f, double epsilon)
{
  HeServerOptions options = {
    .adapters_dir = f->dir, .n_threads = 2, .open_evaluator = ts_helora_ckks_evaluator_open,
    .privacy_epsilon = epsilon, .privacy_delta = 1e-6, .privacy_state = f->state,
    .pad_pool_answers = f->pad_pool_answers, .pad_refill_idle_ms = f->pad_refill_idle_ms,
  };
  f->server = server_fixture_start (&options);
}

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  gsize len;
  golden_load (&f->golden);
  g_autofree guint8 *bytes = ts_test_read_data (GOLDEN_LORA, &len);
  f->dir = g_dir_make_tmp ("he-private-XXXXXX", &error);
  f->state_dir = g_dir_make_tmp ("he-private-state-XXXXXX", &error);
  g_assert_no_error (error);
  f->lora_path = g_build_filename (f->dir, "tiny-lora.gguf", NULL);
  f->state = g_build_filename (f->state_dir, "privacy.tsv", NULL);
  g_assert_true (g_file_set_contents (f->lora_path, (const char *) bytes, len, &error));
  start_server (f, GPOINTER_TO_UINT (data) / 1000.0);
}

/* Pads made between turns: pools of 4 answers, refilled after IDLE_MS
 * without answers (long against a test's answers on a busy machine). */
#define IDLE_MS 3000
#define IDLE_POOL 4

static void
fixture_set_up_idle (Fixture *f, gconstpointer data)
{
  f->pad_pool_answers = IDLE_POOL;
  f->pad_refill_idle_ms = IDLE_MS;
  fixture_set_up (f, data);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  if (f->server != NULL)
    server_fixture_stop (f->server);
  golden_clear (&f->golden);
  g_unlink (f->lora_path);
  g_unlink (f->state);
  g_rmdir (f->dir);
  g_rmdir (f->state_dir);
  g_free (f->lora_path);
  g_free (f->state);
  g_free (f->dir);
  g_free (f->state_dir);
}

static TsHeloraSession *
remote_session (Fixture *f, gboolean private_mode, double rho, GError **error)
{
  TsHeloraOptions options = {
    .mode = TS_HELORA_MODE_REMOTE, .params_preset = PRESET, .adapter_path = f->lora_path,
    .remote_url = server_fixture_ws_url (f->server), .timeout_ms = 20000,
    .private_mode = private_mode, .private_lambda_s = LAMBDA_S, .private_rho = rho,
  };
  return ts_helora_session_new (f->golden.lora, &options, error);
}

/* Private (flooding, masks, no DP) and plain give the golden greedy tokens. */
static void
test_greedy_tokens (Fixture *f, gconstpointer data)
{
  for (int private_mode = 0; private_mode <= 1; private_mode++)
    {
      g_autoptr (GError) error = NULL;
      g_autoptr (TsHeloraSession) helora = remote_session (f, private_mode, 0.0, &error);
      g_assert_no_error (error);
      g_autofree gint32 *tokens = golden_greedy (&f->golden, helora);
      g_assert_cmpmem (tokens, GOLDEN_STEPS * 4, f->golden.lora_greedy, GOLDEN_STEPS * 4);
    }
}

/* A random h for @module, encrypted (*cts) and evaluated on @remote: the
 * result frame, or NULL with @error. */
static TsHeloraFrame *
evaluate_random (CkksClient *c, TsHeloraRemote *remote, guint16 module, GRand *rng, float **h,
                 double *hf, GPtrArray **cts, GError **error)
{
  *h = ckks_client_random_h (c, module, rng);
  *cts = ckks_client_encrypt (c, module, *h, hf);
  return ts_helora_remote_evaluate (remote, 1, &module, 1, *cts, error);
}

/* Products c1_out·c1_in' vs c1_out'·c1_in of two tokens' first result: all
 * equal when c1_out = c1_in·p_A (the plaintext of A leaks), none equal once
 * re-randomised. Returns the fraction of equal values. */
static double
c1_ratio_agreement (CkksClient *c, TsHeloraRemote *remote, GRand *rng)
{
  const CkksHeloraLayout *l = g_ptr_array_index (c->layouts, 0);
  guint limbs = ckks_helora_layout_limbs (l);
  gsize n = ckks_context_ring_degree (c->ctx);
  CkksCiphertext **in, **out;
  g_autoptr (GError) error = NULL;
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, 2, &in), ==, CKKS_OK);
  g_assert_cmpint (ckks_helora_ciphertexts_new (l, 2, &out), ==, CKKS_OK);
  for (int t = 0; t < 2; t++)
    {
      g_autofree float *h = NULL;
      double hf;
      g_autoptr (GPtrArray) cts = NULL;
      g_autoptr (TsHeloraFrame) res = evaluate_random (c, remote, 0, rng, &h, &hf, &cts, &error);
      g_assert_no_error (error);
      TsHeloraModuleResult *mr = &g_array_index (res->u.result.modules, TsHeloraModuleResult, 0);
      g_assert_true (ts_helora_ckks_ciphertext_from_bytes (g_ptr_array_index (cts, 0), in[t],
                                                           limbs, &error));
      g_assert_true (ts_helora_ckks_result_from_bytes (l, g_ptr_array_index (mr->blobs, 0),
                                                       out[t], &error));
    }
  gsize equal = 0;
  for (guint i = 0; i < limbs; i++)
    {
      unsigned __int128 q = ckks_context_params (c->ctx)->moduli[i];
      for (gsize k = i * n; k < (i + 1) * n; k++)
        equal += (unsigned __int128) out[0]->c1[k] * in[1]->c1[k] % q
                 == (unsigned __int128) out[1]->c1[k] * in[0]->c1[k] % q;
    }
  ckks_helora_ciphertexts_free (in, 2);
  ckks_helora_ciphertexts_free (out, 2);
  return (double) equal / (double) (limbs * n);
}

static GBytes *
public_key_bytes (CkksClient *c)
{
  CkksPublicKey *pk;
  g_assert_cmpint (ckks_public_key_new (c->sk, &pk), ==, CKKS_OK);
  gsize len = ckks_public_key_serialized_size (pk);
  guint8 *buf = g_malloc (len);
  g_assert_cmpint (ckks_public_key_serialize (pk, buf, len), ==, CKKS_OK);
  ckks_public_key_free (pk);
  return g_bytes_new_take (buf, len);
}

static TsHeloraRemote *
connect_private (Fixture *f, CkksClient *c, GBytes *pk, double rho, GError **error)
{
  g_autoptr (TsHeloraFrame) hello = ckks_client_hello (c);
  TsHeloraRemote *remote = ts_helora_remote_connect (server_fixture_ws_url (f->server), 20000,
                                                     error);
  g_assert_nonnull (remote);
  hello->u.hello.private_mode = TRUE;
  hello->u.hello.split_scales = TRUE;
  hello->u.hello.lambda_s = LAMBDA_S;
  hello->u.hello.dp = rho > 0.0;
  hello->u.hello.rho_per_answer = rho;
  hello->u.hello.public_key = g_bytes_ref (pk);
  g_autoptr (TsHeloraFrame) ack = ts_helora_remote_hello (remote, &hello->u.hello, error);
  if (ack == NULL)
    g_clear_pointer (&remote, ts_helora_remote_free);
  return remote;
}

/* A client on the private layouts, with its public key (the budget's
 * identity) in @pk_out. */
static CkksClient *
private_client_new (Fixture *f, GBytes **pk_out)
{
  CkksClient *c = ckks_client_new (PRESET, f->lora_path);

  *pk_out = public_key_bytes (c);
  ckks_client_use_scales (c, CKKS_HELORA_SCALES_PRIVACY);
  return c;
}

/* Pads one token spends: one per result of every module. */
static guint
count_pads_per_token (CkksClient *c)
{
  guint n = 0;

  for (guint m = 0; m < c->layouts->len; m++)
    n += ckks_helora_layout_n_outputs (g_ptr_array_index (c->layouts, m));
  return n;
}

/* Through the real server: plain results hand over the plaintext of A
 * (c1_out / c1_in is the same for every token); private ones do not. */
static void
test_c1_hides_a (Fixture *f, gconstpointer data)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  CkksClient *c = ckks_client_new (PRESET, f->lora_path);
  g_autoptr (GBytes) pk = public_key_bytes (c);
  g_autoptr (GError) error = NULL;
  TsHeloraRemote *plain = ckks_client_connect (c, server_fixture_ws_url (f->server));
  g_assert_cmpfloat (c1_ratio_agreement (c, plain, rng), ==, 1.0);
  ts_helora_remote_free (plain);
  /* refused: more flooding than the 2-limb results hold (docs/security.md
   * §3.1), 40 on an older client's 48/48 layout, less than the server's
   * floor (40 by default) */
  static const struct { guint16 lambda; gboolean split; const char *why; } refusals[] = {
    { 60, TRUE, "at most" }, { 40, FALSE, "at most" }, { 16, TRUE, "at least" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (refusals); i++)
    {
      g_autoptr (TsHeloraFrame) bad = ckks_client_hello (c);
      TsHeloraRemote *refused = ts_helora_remote_connect (server_fixture_ws_url (f->server),
                                                          20000, &error);
      bad->u.hello.private_mode = TRUE;
      bad->u.hello.split_scales = refusals[i].split;
      bad->u.hello.lambda_s = refusals[i].lambda;
      bad->u.hello.public_key = g_bytes_ref (pk);
      g_assert_null (ts_helora_remote_hello (refused, &bad->u.hello, &error));
      g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS);
      g_test_message ("lambda_s %u refused: %s", refusals[i].lambda, error->message);
      g_assert_nonnull (strstr (error->message, refusals[i].why));
      g_clear_error (&error);
      ts_helora_remote_free (refused);
    }
  ckks_client_use_scales (c, CKKS_HELORA_SCALES_PRIVACY);
  TsHeloraRemote *priv = connect_private (f, c, pk, 0.0, &error);
  g_assert_no_error (error);
  double agree = c1_ratio_agreement (c, priv, rng);
  g_test_message ("private: %.2g of the c1 ratios agree", agree);
  g_assert_cmpfloat (agree, <, 1e-3);
  /* u survives, within the flooding error of lambda_s = 40 (docs/security.md) */
  g_autofree float *h = NULL;
  double hf, u[64];
  g_autoptr (GPtrArray) cts = NULL;
  g_autoptr (TsHeloraFrame) res = evaluate_random (c, priv, 1, rng, &h, &hf, &cts, &error);
  g_assert_no_error (error);
  TsHeloraAdapterModule *m = g_ptr_array_index (c->modules, 1);
  g_assert_cmpuint (m->rank, <=, G_N_ELEMENTS (u));
  ckks_client_decrypt (c, NULL, 1,
                       g_array_index (res->u.result.modules, TsHeloraModuleResult, 0).blobs, hf, u);
  double err = ckks_client_error (c, 1, h, u);
  g_test_message ("private: max |u - A·h| = %.3g", err);
  g_assert_cmpfloat (err, <, 2e-3);
  /* an input on the 48/48 split is refused, not evaluated into garbage */
  ckks_client_use_scales (c, CKKS_HELORA_SCALES_PLAIN);
  g_autofree float *h2 = NULL;
  g_autoptr (GPtrArray) cts2 = NULL;
  g_autoptr (TsHeloraFrame) wrong = evaluate_random (c, priv, 1, rng, &h2, &hf, &cts2, &error);
  g_assert_null (wrong);
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_BAD_CIPHERTEXT);
  ts_helora_remote_free (priv);
  ckks_client_free (c);
}

/* The budget (epsilon 4 per client, rho 0.2 per answer = epsilon 3.52):
 * the first answer fits, the second is refused with privacy-budget; after
 * a restart the same client (same public key) is still refused. */
static void
test_budget_refusal_and_restart (Fixture *f, gconstpointer data)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  g_autoptr (GBytes) pk = NULL;
  CkksClient *c = private_client_new (f, &pk);
  g_autoptr (GError) error = NULL;
  for (int run = 0; run < 2; run++)
    {
      TsHeloraRemote *remote = connect_private (f, c, pk, 0.2, &error);
      g_assert_no_error (error);
      for (int t = run; t < 2; t++)
        {
          g_autofree float *h = NULL;
          double hf;
          g_autoptr (GPtrArray) cts = NULL;
          g_autoptr (TsHeloraFrame) res = evaluate_random (c, remote, 0, rng, &h, &hf, &cts,
                                                           &error);
          if (t == 0)
            g_assert_no_error (error);
          else
            {
              g_assert_null (res);
              g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PRIVACY_BUDGET);
              g_assert_nonnull (strstr (error->message, "budget"));
              g_clear_error (&error);
            }
        }
      ts_helora_remote_free (remote);
      g_assert_true (g_file_test (f->state, G_FILE_TEST_IS_REGULAR));
      server_fixture_stop (f->server);
      start_server (f, 4.0);
    }
  ckks_client_free (c);
}

/* A session asking for a flood the layouts cannot hold stops before it
 * connects; one asking for less than the server's floor is refused by the
 * server; both say why. The default (0) is 40. */
static void
test_session_lambda (Fixture *f, gconstpointer data)
{
  static const struct { guint lambda; const char *why; } cases[] = {
    { 60, "at most 49" }, { 16, "at least lambda_s = 40" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      TsHeloraOptions options = {
        .mode = TS_HELORA_MODE_REMOTE, .params_preset = PRESET, .adapter_path = f->lora_path,
        .remote_url = server_fixture_ws_url (f->server), .timeout_ms = 20000,
        .private_mode = TRUE, .private_lambda_s = cases[i].lambda,
      };
      g_autoptr (GError) error = NULL;
      g_assert_null (ts_helora_session_new (f->golden.lora, &options, &error));
      g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_PARAMS);
      g_test_message ("lambda_s %u: %s", cases[i].lambda, error->message);
      g_assert_nonnull (strstr (error->message, cases[i].why));
    }
  g_autofree char *text = server_fixture_get (f->server, "/metrics");
  g_assert_nonnull (strstr (text, "tensafe_he_errors_total{code=\"params\"} 1\n"));
}

/* The session says why it stopped: a budget for less than a token. */
static void
test_session_reports_budget (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) helora = remote_session (f, TRUE, 0.2, &error);
  g_assert_no_error (error);
  LmSession *session = NULL;
  LmSessionParams params = { .n_ctx = (guint32) f->golden.n_prompt + 2, .n_threads = 1 };
  g_assert_cmpint (lm_session_new (f->golden.model, &params, &session), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (session, f->golden.lora), ==, LM_OK);
  g_assert_true (ts_helora_session_attach (helora, session, &error));
  g_assert_cmpint (lm_session_prefill (session, f->golden.prompt, f->golden.n_prompt, NULL), ==,
                   LM_ERR_HOOK);
  const GError *why = ts_helora_session_last_error (helora);
  g_assert_nonnull (why);
  g_assert_error ((GError *) why, TS_HELORA_ERROR, TS_HELORA_ERROR_PRIVACY_BUDGET);
  lm_session_free (session);
}

/* A session that prefills the golden prompt privately (DP cost @rho per
 * answer) under @pair, sending @pk (NULL: a key made for the session);
 * returns what the server reports afterwards. */
static void
prefill_and_ask (Fixture *f, TsKeyPair *pair, GBytes *pk, double rho,
                 TsHeloraPrivacyStatus *status)
{
  g_autoptr (GError) error = NULL;
  TsHeloraOptions options = {
    .mode = TS_HELORA_MODE_REMOTE, .params_preset = PRESET, .adapter_path = f->lora_path,
    .remote_url = server_fixture_ws_url (f->server), .timeout_ms = 20000, .key_pair = pair,
    .private_mode = TRUE, .private_lambda_s = LAMBDA_S, .private_rho = rho,
    .private_public_key = pk,
  };
  g_autoptr (TsHeloraSession) helora = ts_helora_session_new (f->golden.lora, &options, &error);
  LmSessionParams params = { .n_ctx = (guint32) f->golden.n_prompt + 2, .n_threads = 1 };
  LmSession *session = NULL;

  g_assert_no_error (error);
  g_assert_cmpint (lm_session_new (f->golden.model, &params, &session), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (session, f->golden.lora), ==, LM_OK);
  g_assert_true (ts_helora_session_attach (helora, session, &error));
  g_assert_cmpint (lm_session_prefill (session, f->golden.prompt, f->golden.n_prompt, NULL), ==,
                   LM_OK);
  g_assert_true (ts_helora_session_privacy_status (helora, status, &error));
  g_assert_no_error (error);
  lm_session_free (session);
}

/* The server reports what it charged: every module answer of the prefill
 * costs rho; the same public key adds up over connections, a fresh key
 * starts afresh; epsilon follows from rho at the budget's delta. */
static void
test_privacy_status (Fixture *f, gconstpointer data)
{
  const double rho = 1e-4;
  double answers = (double) f->golden.n_prompt * (double) lm_lora_n_modules (f->golden.lora);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsKeyPair) pair = ts_key_pair_generate (PRESET, NULL, NULL, &error);
  g_assert_no_error (error);
  gsize len = ckks_public_key_serialized_size (pair->pk);
  guint8 *buf = g_malloc (len);
  g_assert_cmpint (ckks_public_key_serialize (pair->pk, buf, len), ==, CKKS_OK);
  g_autoptr (GBytes) pk = g_bytes_new_take (buf, len);
  TsHeloraPrivacyStatus first, second, fresh;

  prefill_and_ask (f, pair, pk, rho, &first);
  g_assert_cmpuint (first.flags, ==, TS_HELORA_PRIVACY_BUDGET);
  g_assert_cmpfloat_with_epsilon (first.rho_spent, answers * rho, answers * rho * 1e-9);
  g_assert_cmpfloat_with_epsilon (first.epsilon_spent,
                                  ts_privacy_epsilon (first.rho_spent, 1e-6), 1e-12);
  g_assert_cmpfloat_with_epsilon (first.epsilon_budget, 8.0, 1e-9);
  g_assert_cmpfloat (first.delta, ==, 1e-6);
  prefill_and_ask (f, pair, pk, rho, &second);
  g_assert_cmpfloat_with_epsilon (second.rho_spent, 2 * answers * rho, answers * rho * 1e-9);
  g_assert_cmpfloat (second.epsilon_spent, >, first.epsilon_spent);
  prefill_and_ask (f, pair, NULL, rho, &fresh);
  g_assert_cmpfloat_with_epsilon (fresh.rho_spent, answers * rho, answers * rho * 1e-9);
  g_test_message ("%.0f answers: epsilon %.4f, then %.4f of %.1f", answers, first.epsilon_spent,
                  second.epsilon_spent, second.epsilon_budget);
}

/* Without a budget only rho (0: nothing charged) is reported; a connection
 * without a private hello is not ready for the query. */
static void
test_privacy_status_without_budget (Fixture *f, gconstpointer data)
{
  CkksClient *c = ckks_client_new (PRESET, f->lora_path);
  g_autoptr (GBytes) pk = public_key_bytes (c);
  g_autoptr (GError) error = NULL;
  TsHeloraPrivacyStatus status = { 0 };
  TsHeloraRemote *plain = ckks_client_connect (c, server_fixture_ws_url (f->server));
  TsHeloraRemote *priv = NULL;

  g_assert_false (ts_helora_remote_privacy_status (plain, &status, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_NOT_READY);
  g_clear_error (&error);
  /* The connection stays usable after the refusal. */
  g_assert_false (ts_helora_remote_is_closed (plain));
  ts_helora_remote_free (plain);
  priv = connect_private (f, c, pk, 0.0, &error);
  g_assert_no_error (error);
  status.rho_spent = -1;
  g_assert_true (ts_helora_remote_privacy_status (priv, &status, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (status.flags, ==, 0);
  g_assert_cmpfloat (status.rho_spent, ==, 0.0);
  ts_helora_remote_free (priv);
  ckks_client_free (c);
}

/* The value of the sample @name (with its labels) in a /metrics text. */
static double
metric (const char *text, const char *name)
{
  g_autofree char *key = g_strconcat ("\n", name, " ", NULL);
  const char *at = strstr (text, key);
  g_assert_nonnull (at);
  return g_ascii_strtod (at + strlen (key), NULL);
}

/* Polls /metrics until @name is @value (or at least @value when
 * @at_least), 20 s at most; the text. */
static char *
wait_metric_full (Fixture *f, const char *name, double value, gboolean at_least)
{
  for (int tries = 0; tries < 2000; tries++)
    {
      char *text = server_fixture_get (f->server, "/metrics");
      double v = metric (text, name);
      if (v == value || (at_least && v > value))
        return text;
      g_free (text);
      g_usleep (10000);
    }
  g_error ("%s never reached %g", name, value);
}

static char *
wait_metric (Fixture *f, const char *name, double value)
{
  return wait_metric_full (f, name, value, FALSE);
}

/* A private connection's pad pools are filled off the answers' path by the
 * refill thread (2 answers' worth per module by default); an answer takes
 * its B pads from the pool, none made inline, and the pool is refilled. */
static void
test_pad_refill (Fixture *f, gconstpointer data)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  g_autoptr (GBytes) pk = NULL;
  CkksClient *c = private_client_new (f, &pk);
  g_autoptr (GError) error = NULL;
  TsHeloraRemote *remote = connect_private (f, c, pk, 0.0, &error);
  g_assert_no_error (error);
  guint pads_per_token = count_pads_per_token (c);
  /* the hello made the first answer's pads, the thread the second's (a
   * pad is counted just after it is pooled: wait for both) */
  g_autofree char *made = wait_metric_full (f, "tensafe_he_pads_made_total{by=\"refill\"}",
                                            pads_per_token, TRUE);
  g_autofree char *full = wait_metric (f, "tensafe_he_pad_pool_fill", 1.0);
  g_assert_cmpfloat (metric (full, "tensafe_he_pad_pool_target"), ==,
                     HE_SERVER_DEFAULT_PAD_POOL_ANSWERS * pads_per_token);
  double refilled = metric (full, "tensafe_he_pads_made_total{by=\"refill\"}");
  g_assert_cmpfloat (metric (full, "tensafe_he_pads_per_second"), >, 0.0);
  g_assert_cmpfloat (metric (full, "tensafe_he_pad_pool_answers"), ==,
                     HE_SERVER_DEFAULT_PAD_POOL_ANSWERS);
  g_assert_cmpfloat (metric (full, "tensafe_he_pad_pool_answers_configured"), ==,
                     HE_SERVER_DEFAULT_PAD_POOL_ANSWERS);
  guint16 module = 0;
  guint b = ckks_helora_layout_n_outputs (g_ptr_array_index (c->layouts, module));
  g_autofree float *h = NULL;
  double hf, u[64];
  g_autoptr (GPtrArray) cts = NULL;
  g_autoptr (TsHeloraFrame) res = evaluate_random (c, remote, module, rng, &h, &hf, &cts, &error);
  g_assert_no_error (error);
  ckks_client_decrypt (c, NULL, module,
                       g_array_index (res->u.result.modules, TsHeloraModuleResult, 0).blobs, hf, u);
  g_assert_cmpfloat (ckks_client_error (c, module, h, u), <, 2e-3);
  g_autofree char *refill = wait_metric_full (f, "tensafe_he_pads_made_total{by=\"refill\"}",
                                              refilled + b, TRUE);
  g_autofree char *again = wait_metric (f, "tensafe_he_pad_pool_fill", 1.0);
  g_assert_cmpfloat (metric (again, "tensafe_he_pads_from_pool_total"), ==, b);
  g_assert_cmpfloat (metric (again, "tensafe_he_pads_made_total{by=\"inline\"}"), ==, 0);
  g_assert_cmpfloat (metric (again, "tensafe_he_pads_made_total{by=\"refill\"}"), <=,
                     pads_per_token + b);
  ts_helora_remote_free (remote);
  /* gone with its connection: nothing left to keep full */
  g_autofree char *after = wait_metric (f, "tensafe_he_pad_pool_target", 0.0);
  ckks_client_free (c);
}

/* With an idle period the refill thread leaves the pools alone while a
 * turn's answers come, unless one runs below 2 answers, and fills them
 * once the server has been idle that long; no pad is made inline. */
static void
test_pad_refill_idle (Fixture *f, gconstpointer data)
{
  g_autoptr (GRand) rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  g_autoptr (GBytes) pk = NULL;
  CkksClient *c = private_client_new (f, &pk);
  g_autoptr (GError) error = NULL;
  TsHeloraRemote *remote = connect_private (f, c, pk, 0.0, &error);
  g_assert_no_error (error);
  guint ppt = count_pads_per_token (c);
  guint b = ckks_helora_layout_n_outputs (g_ptr_array_index (c->layouts, 0));
  const char *refill = "tensafe_he_pads_made_total{by=\"refill\"}";
  /* idle from the start: filled at once (the hello made the first answer) */
  g_free (wait_metric_full (f, refill, (IDLE_POOL - 1) * ppt, TRUE));
  g_autofree char *full = wait_metric (f, "tensafe_he_pad_pool_fill", 1.0);
  g_assert_cmpfloat (metric (full, "tensafe_he_pad_pool_target"), ==, IDLE_POOL * ppt);
  g_assert_cmpfloat (metric (full, refill), ==, (IDLE_POOL - 1) * ppt);
  /* a turn of two answers leaves module 0 at 2: nothing is made meanwhile */
  for (int t = 0; t < 3; t++)
    {
      g_autofree float *h = NULL;
      double hf;
      g_autoptr (GPtrArray) cts = NULL;
      g_autoptr (TsHeloraFrame) res = evaluate_random (c, remote, 0, rng, &h, &hf, &cts, &error);
      g_assert_no_error (error);
      if (t == 1)
        {
          g_autofree char *busy = server_fixture_get (f->server, "/metrics");
          g_assert_cmpfloat (metric (busy, refill), ==, (IDLE_POOL - 1) * ppt);
          g_assert_cmpfloat (metric (busy, "tensafe_he_pad_pool_pads"), ==, IDLE_POOL * ppt - 2 * b);
        }
    }
  /* the third left it at 1 answer: back to 2 at once, the rest waits */
  gint64 answered = g_get_monotonic_time ();
  g_autofree char *low = wait_metric_full (f, refill, (IDLE_POOL - 1) * ppt + b, TRUE);
  g_assert_cmpint (g_get_monotonic_time () - answered, <, IDLE_MS * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpfloat (metric (low, refill), ==, (IDLE_POOL - 1) * ppt + b);
  g_free (wait_metric_full (f, refill, (IDLE_POOL - 1) * ppt + 3 * b, TRUE));
  g_autofree char *again = wait_metric (f, "tensafe_he_pad_pool_fill", 1.0);
  g_assert_cmpint (g_get_monotonic_time () - answered, >=,
                   (IDLE_MS - 100) * G_TIME_SPAN_MILLISECOND);
  g_assert_cmpfloat (metric (again, "tensafe_he_pads_made_total{by=\"inline\"}"), ==, 0);
  g_assert_cmpfloat (metric (again, "tensafe_he_pads_from_pool_total"), ==, 3 * b);
  ts_helora_remote_free (remote);
  ckks_client_free (c);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* data: the server's epsilon in thousandths (0: no DP budget) */
  g_test_add ("/he-server-private/greedy-tokens", Fixture, GUINT_TO_POINTER (0), fixture_set_up,
              test_greedy_tokens, fixture_tear_down);
  g_test_add ("/he-server-private/c1-hides-a", Fixture, GUINT_TO_POINTER (0), fixture_set_up,
              test_c1_hides_a, fixture_tear_down);
  g_test_add ("/he-server-private/session-lambda", Fixture, GUINT_TO_POINTER (0), fixture_set_up,
              test_session_lambda, fixture_tear_down);
  g_test_add ("/he-server-private/pad-refill", Fixture, GUINT_TO_POINTER (0), fixture_set_up,
              test_pad_refill, fixture_tear_down);
  g_test_add ("/he-server-private/pad-refill-idle", Fixture, GUINT_TO_POINTER (0),
              fixture_set_up_idle, test_pad_refill_idle, fixture_tear_down);
  g_test_add ("/he-server-private/budget-refusal-and-restart", Fixture, GUINT_TO_POINTER (4000),
              fixture_set_up, test_budget_refusal_and_restart, fixture_tear_down);
  g_test_add ("/he-server-private/session-reports-budget", Fixture, GUINT_TO_POINTER (4000),
              fixture_set_up, test_session_reports_budget, fixture_tear_down);
  g_test_add ("/he-server-private/privacy-status", Fixture, GUINT_TO_POINTER (8000),
              fixture_set_up, test_privacy_status, fixture_tear_down);
  g_test_add ("/he-server-private/privacy-status-without-budget", Fixture, GUINT_TO_POINTER (0),
              fixture_set_up, test_privacy_status_without_budget, fixture_tear_down);
  return g_test_run ();
}
