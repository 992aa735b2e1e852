/* test-he-server-stack.c: stacked adapters on the evaluator server.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The server stacks the golden adapter, an attention adapter (whose
 * attn_output overlaps the golden one) and a shared-expert FFN adapter, as
 * files of its adapter folder. A remote session on that stack must give the
 * logits of the same stack evaluated locally and in plaintext, with one
 * encryption and one upload per distinct h. Plans are shared by every client
 * naming the same stack, whatever the weights; swapping one member under 20
 * clients fails no request; missing or unfit members are refused by name;
 * the adapter-private mode works on a stack and charges the stacked A.
 */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "../helora/helora-golden.h"
#include "ckks-client.h"
#include "gguf-writer.h"
#include "server-fixture.h"
#include "ts-adapter-stack.h"
#include "ts-helora-adapter.h"
#include "ts-helora-ckks-evaluator.h"
#include "ts-helora-session.h"
#include "ts-privacy-accountant.h"
#include "ts-test-util.h"

#define PRESET "fast"
#define N_MEMBERS 3
#define SWAP_CLIENTS 20

static const char *const ffn_stems[] = {
  "blk.0.ffn_gate_shexp", "blk.0.ffn_up_shexp", "blk.3.ffn_gate_shexp", "blk.3.ffn_up_shexp",
  NULL,
};
static const char *const attn_kinds[] = { "attn_q", "attn_output", NULL };
static const float weights[N_MEMBERS] = { 1.0f, 0.5f, 1.5f };

typedef struct {
  Golden golden;
  char *dir;
  char *paths[N_MEMBERS + 1];  /* golden copy, attention, FFN; NULL-ended */
  ServerFixture *server;
} Fixture;

/* Stacks opened by the server (each costs an encoding of every plan). */
static gint stack_opens;

static TsHeloraEvaluator *
counting_open_stack (const char *const *paths, const float *w, guint n, const char *params_id,
                     gpointer model, GError **error)
{
  g_atomic_int_inc (&stack_opens);
  return ts_helora_ckks_evaluator_open_stack (paths, w, n, params_id, model, error);
}

static void
write_ffn_adapter (Fixture *f, const char *path)
{
  g_autoptr (GError) error = NULL;
  LmLora *ffn = NULL;

  g_assert_cmpint (lm_lora_synth (f->golden.model, ffn_stems, 4, 0.08f, 5, &ffn, NULL), ==, LM_OK);
  g_assert_true (ts_helora_adapter_write (f->golden.model, ffn, path, &error));
  g_assert_no_error (error);
  lm_lora_free (ffn);
}

/* @name in the adapter folder, written as a seeded attention adapter. */
static char *
write_attn_adapter (Fixture *f, const char *name, guint seed)
{
  g_autofree char *tmp = g_build_filename (f->dir, ".attn.tmp", NULL);
  char *path = g_build_filename (f->dir, name, NULL);
  g_autoptr (GError) error = NULL;

  /* written aside and renamed: a swap replaces the file atomically */
  g_assert_true (ts_helora_adapter_write_synthetic (f->golden.model, tmp, 4, seed, attn_kinds,
                                                    &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_rename (tmp, path), ==, 0);
  return path;
}

static HeServerOptions
server_options (Fixture *f)
{
  return (HeServerOptions) {
    .adapters_dir = f->dir, .n_threads = 2, .max_in_flight = 8,
    .open_evaluator = ts_helora_ckks_evaluator_open, .open_stack = counting_open_stack,
    .open_data = f->golden.model,
  };
}

static void
fixture_set_up (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  gsize len;
  g_autofree guint8 *golden = NULL;
  HeServerOptions options;

  golden_load (&f->golden);
  golden = ts_test_read_data (GOLDEN_LORA, &len);
  f->dir = g_dir_make_tmp ("he-stack-XXXXXX", &error);
  g_assert_no_error (error);
  f->paths[0] = g_build_filename (f->dir, "tiny-lora.gguf", NULL);
  g_assert_true (g_file_set_contents (f->paths[0], (const char *) golden, len, &error));
  f->paths[1] = write_attn_adapter (f, "attn.gguf", 3);
  f->paths[2] = g_build_filename (f->dir, "ffn.gguf", NULL);
  write_ffn_adapter (f, f->paths[2]);
  g_atomic_int_set (&stack_opens, 0);
  options = server_options (f);
  f->server = server_fixture_start (&options);
}

static void
fixture_tear_down (Fixture *f, gconstpointer data)
{
  g_autoptr (GDir) dir = NULL;
  const char *name;

  if (f->server != NULL)
    server_fixture_stop (f->server);
  dir = g_dir_open (f->dir, 0, NULL);
  while (dir != NULL && (name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = g_build_filename (f->dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (f->dir);
  g_free (f->dir);
  for (guint i = 0; i < N_MEMBERS; i++)
    g_free (f->paths[i]);
  golden_clear (&f->golden);
}

static LmLora *
load_stack (Fixture *f, guint n)
{
  g_autoptr (GError) error = NULL;
  LmLora *stack = ts_adapter_stack_load (f->golden.model, (const char *const *) f->paths,
                                         weights, n, &error);

  g_assert_no_error (error);
  return stack;
}

/* Logits of every prompt position with @lora, through @helora when given. */
static float *
prompt_logits (Fixture *f, const LmLora *lora, TsHeloraSession *helora)
{
  LmSessionParams params = { .n_ctx = 64, .n_threads = 1 };
  guint n_vocab = lm_model_info (f->golden.model)->n_vocab;
  float *logits = g_new (float, f->golden.n_prompt * n_vocab);
  g_autoptr (GError) error = NULL;
  LmSession *s = NULL;

  g_assert_cmpint (lm_session_new (f->golden.model, &params, &s), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  if (helora != NULL)
    g_assert_true (ts_helora_session_attach (helora, s, &error));
  g_assert_no_error (error);
  g_assert_cmpint (lm_session_prefill (s, f->golden.prompt, f->golden.n_prompt, logits), ==, LM_OK);
  lm_session_free (s);
  return logits;
}

static double
max_diff (Fixture *f, const float *x, const float *y)
{
  gsize n = f->golden.n_prompt * lm_model_info (f->golden.model)->n_vocab;
  double m = 0;

  for (gsize i = 0; i < n; i++)
    m = fmax (m, fabs ((double) x[i] - y[i]));
  return m;
}

static TsHeloraOptions
stack_options (Fixture *f, TsHeloraMode mode, guint n)
{
  return (TsHeloraOptions) {
    .mode = mode, .params_preset = PRESET, .track_error = TRUE, .timeout_ms = 20000,
    .remote_url = server_fixture_ws_url (f->server),
    .stacked_paths = (const char *const *) f->paths, .stacked_weights = weights, .n_stacked = n,
  };
}

/* What a session sends: hellos (and their flags) and evaluate frames. */
typedef struct {
  gint hellos_stacked;
  gint evaluates;
  gint modules;                /* module indices over all evaluate frames */
} Tap;

static void
tap_cb (GBytes *message, gpointer data)
{
  Tap *t = data;
  g_autoptr (TsHeloraFrame) frame = ts_helora_frame_decode (message, G_MAXUINT32, NULL);

  g_assert_nonnull (frame);
  if (frame->type == TS_HELORA_FRAME_HELLO && frame->u.hello.stack->len == N_MEMBERS)
    g_atomic_int_inc (&t->hellos_stacked);
  if (frame->type != TS_HELORA_FRAME_EVALUATE)
    return;
  g_atomic_int_inc (&t->evaluates);
  g_atomic_int_add (&t->modules, (gint) frame->u.evaluate.modules->len);
}

/* Remote logits equal local and plain ones within CKKS error; each distinct
 * h is encrypted and uploaded once per token, whatever adapter its modules
 * came from. */
static void
test_remote_equals_local (Fixture *f, gconstpointer data)
{
  LmLora *stack = load_stack (f, N_MEMBERS);
  guint n_modules = lm_lora_n_modules (stack), n_tokens = f->golden.n_prompt;
  TsHeloraOptions local_options = stack_options (f, TS_HELORA_MODE_LOCAL, N_MEMBERS);
  TsHeloraOptions remote_options = stack_options (f, TS_HELORA_MODE_REMOTE, N_MEMBERS);
  Tap tap = { 0 };
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) local = NULL, remote = NULL;
  g_autofree float *base = prompt_logits (f, NULL, NULL);
  g_autofree float *golden_only = prompt_logits (f, f->golden.lora, NULL);
  g_autofree float *plain = prompt_logits (f, stack, NULL);
  g_autofree float *local_logits = NULL, *remote_logits = NULL;
  TsHeloraStats ls, rs;
  guint n_inputs;

  remote_options.tap = tap_cb;
  remote_options.tap_data = &tap;
  local = ts_helora_session_new (stack, &local_options, &error);
  g_assert_no_error (error);
  remote = ts_helora_session_new (stack, &remote_options, &error);
  g_assert_no_error (error);
  local_logits = prompt_logits (f, stack, local);
  remote_logits = prompt_logits (f, stack, remote);

  g_assert_cmpfloat (max_diff (f, base, plain), >, 0.05);
  g_assert_cmpfloat (max_diff (f, golden_only, plain), >, 0.01);  /* the members matter */
  g_assert_cmpfloat (max_diff (f, remote_logits, plain), <, 1e-4);
  g_assert_cmpfloat (max_diff (f, remote_logits, local_logits), <, 1e-4);

  n_inputs = ts_helora_session_n_inputs (remote);
  g_assert_cmpuint (n_inputs, <, n_modules);
  g_assert_cmpuint (ts_helora_session_n_inputs (local), ==, n_inputs);
  ts_helora_session_get_stats (local, &ls);
  ts_helora_session_get_stats (remote, &rs);
  g_assert_cmpuint (rs.encryptions, ==, (guint64) n_inputs * n_tokens);
  g_assert_cmpuint (ls.encryptions, ==, rs.encryptions);
  g_assert_cmpuint (rs.module_evaluations, ==, (guint64) n_modules * n_tokens);
  g_assert_cmpfloat (rs.max_abs_delta_error, <, 1e-6);
  g_assert_cmpfloat (rs.max_abs_delta_plain, >, 1e-3);
  /* one hello naming the whole stack, one upload per distinct h and token */
  g_assert_cmpint (tap.hellos_stacked, ==, 1);
  g_assert_cmpint (tap.evaluates, ==, (gint) (n_inputs * n_tokens));
  g_assert_cmpint (tap.modules, ==, (gint) (n_modules * n_tokens));
  g_assert_cmpint (g_atomic_int_get (&stack_opens), ==, 1);
  lm_lora_free (stack);
}

static TsHeloraRemote *
connect_stack (Fixture *f, CkksClient *client, GError **error)
{
  g_autoptr (TsHeloraFrame) hello = ckks_client_hello (client);
  g_autoptr (TsHeloraFrame) ack = NULL;
  TsHeloraRemote *remote = ts_helora_remote_connect (server_fixture_ws_url (f->server), 10000,
                                                     error);

  if (remote != NULL)
    ack = ts_helora_remote_hello (remote, &hello->u.hello, error);
  if (ack == NULL)
    g_clear_pointer (&remote, ts_helora_remote_free);
  return remote;
}

static void
assert_all_modules (CkksClient *client, TsHeloraRemote *remote, GRand *rng)
{
  for (guint m = 0; m < client->modules->len; m++)
    ckks_client_assert_evaluates (client, remote, m, rng);
}

/* Clients naming the same adapters in the same order share the plans, even
 * with other weights; another order is another stack (other A rows). */
static void
test_shared_plans (Fixture *f, gconstpointer data)
{
  const float other_weights[] = { 2.0f, -1.0f };
  const char *const pair[] = { f->paths[0], f->paths[1], NULL };
  const char *const swapped[] = { f->paths[1], f->paths[0], NULL };
  CkksClient *a = ckks_client_new_stack (PRESET, pair, weights);
  CkksClient *b = ckks_client_new_stack (PRESET, pair, other_weights);
  CkksClient *c = ckks_client_new_stack (PRESET, swapped, weights);
  g_autoptr (GRand) rng = g_rand_new_with_seed (11);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraRemote) ra = connect_stack (f, a, &error);
  g_autoptr (TsHeloraRemote) rb = connect_stack (f, b, &error);
  g_autoptr (TsHeloraRemote) rc = NULL;

  g_assert_no_error (error);
  g_assert_cmpint (g_atomic_int_get (&stack_opens), ==, 1);
  rc = connect_stack (f, c, &error);
  g_assert_no_error (error);
  g_assert_cmpint (g_atomic_int_get (&stack_opens), ==, 2);
  assert_all_modules (a, ra, rng);
  assert_all_modules (b, rb, rng);
  assert_all_modules (c, rc, rng);
  ckks_client_free (c);
  ckks_client_free (b);
  ckks_client_free (a);
}

/* A hello for @paths (NULL-ended) should fail with @code and name @needle. */
static void
assert_refused (Fixture *f, const char *const *paths, int code, const char *needle)
{
  CkksClient *client = ckks_client_new_stack (PRESET, paths, weights);
  g_autoptr (GError) error = NULL;
  TsHeloraRemote *remote = connect_stack (f, client, &error);

  g_assert_null (remote);
  g_assert_error (error, TS_HELORA_ERROR, code);
  g_test_message ("refused: %s", error->message);
  g_assert_nonnull (strstr (error->message, needle));
  ckks_client_free (client);
}

/* An adapter whose attn_q A is two columns too wide for the model. */
static char *
write_unfit_adapter (Fixture *f)
{
  const LmModelInfo *info = lm_model_info (f->golden.model);
  char *path = g_build_filename (f->dir, "unfit.gguf", NULL);
  guint64 ne_a[2] = { info->n_embd + 2, 2 }, ne_b[2] = { 2, info->n_embd };
  g_autofree float *zeros = g_new0 (float, 2 * (info->n_embd + 2));
  GgufWriter *w = lm_gguf_writer_new ();

  g_assert_cmpint (lm_gguf_writer_add_string (w, "general.architecture", lm_arch_name (info->arch)),
                   ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_string (w, "general.type", "adapter"), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_string (w, "adapter.type", "lora"), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_tensor (w, "blk.3.attn_k.weight.lora_a", LM_TYPE_F32, 2, ne_a), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_add_tensor (w, "blk.3.attn_k.weight.lora_b", LM_TYPE_F32, 2, ne_b), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_begin (w, path, NULL), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_write (w, zeros, 2 * (info->n_embd + 2) * sizeof (float)), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_write (w, zeros, 2 * info->n_embd * sizeof (float)), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_finish (w, NULL), ==, LM_OK);
  lm_gguf_writer_free (w);
  return path;
}

/* Each refusal names the member at fault; the server stays healthy. */
static void
test_refusals (Fixture *f, gconstpointer data)
{
  g_autofree char *elsewhere_dir = g_dir_make_tmp ("he-stack-other-XXXXXX", NULL);
  g_autofree char *missing = g_build_filename (elsewhere_dir, "nowhere.gguf", NULL);
  g_autofree char *changed = g_build_filename (elsewhere_dir, "attn.gguf", NULL);
  g_autofree char *unfit = write_unfit_adapter (f);
  g_autoptr (GError) error = NULL;
  g_autoptr (GRand) rng = g_rand_new_with_seed (5);
  const char *const with_missing[] = { f->paths[0], missing, NULL };
  const char *const with_changed[] = { f->paths[0], changed, NULL };
  const char *const with_unfit[] = { f->paths[1], unfit, NULL };
  HeServerOptions options = server_options (f);
  CkksClient *good = ckks_client_new_stack (PRESET, (const char *const *) f->paths, weights);
  g_autoptr (TsHeloraRemote) remote = NULL;
  g_autofree char *bytes = NULL;
  guint status = 0;
  gsize len;

  /* a member the server lacks; one whose file differs from the server's */
  g_assert_true (g_file_get_contents (f->paths[0], &bytes, &len, NULL));
  g_assert_true (g_file_set_contents (missing, bytes, (gssize) len, NULL));
  g_assert_true (g_file_set_contents (changed, bytes, (gssize) len, NULL));
  assert_refused (f, with_missing, TS_HELORA_ERROR_UNKNOWN_ADAPTER, "'nowhere'");
  assert_refused (f, with_changed, TS_HELORA_ERROR_ADAPTER_HASH, "Stacked adapter 2 of 2: Adapter 'attn'");
  /* a member that does not fit the base model, so the two do not stack */
  g_free (server_fixture_request (f->server, "POST", "admin/adapters/unfit/reload", &status));
  g_assert_cmpuint (status, ==, 200);
  assert_refused (f, with_unfit, TS_HELORA_ERROR_UNKNOWN_ADAPTER, "do not stack");
  g_assert_cmpint (g_atomic_int_get (&stack_opens), ==, 1);
  remote = connect_stack (f, good, &error);
  g_assert_no_error (error);
  assert_all_modules (good, remote, rng);
  g_clear_pointer (&remote, ts_helora_remote_free);

  /* stacking needs the base model, and a server may not stack at all */
  g_assert_null (ts_helora_ckks_evaluator_open_stack ((const char *const *) f->paths, weights, 2,
                                                      PRESET, NULL, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE);
  g_assert_nonnull (strstr (error->message, "--model"));
  g_clear_error (&error);
  server_fixture_stop (f->server);
  options.open_stack = NULL;
  f->server = server_fixture_start (&options);
  assert_refused (f, (const char *const *) f->paths, TS_HELORA_ERROR_UNAVAILABLE, "stacked");
  ckks_client_free (good);
  g_unlink (missing);
  g_unlink (changed);
  g_rmdir (elsewhere_dir);
}

/* ---- hot-swap of one member ---- */

typedef struct {
  Fixture *f;
  CkksClient *old_client;      /* the stack with the first "swap" */
  CkksClient *new_client;      /* set once the second is served */
  gint swapped;                /* atomic */
  gint ready;                  /* atomic: clients pinned to the first version */
  gint evaluations;            /* atomic: answers checked */
} SwapTest;

/* One client: pinned to the first version through the swap (every answer
 * must be that stack's), then a new session that gets the second one. */
static gpointer
swap_client_thread (gpointer data)
{
  SwapTest *t = data;
  g_autoptr (GRand) rng = g_rand_new ();
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraRemote) old = connect_stack (t->f, t->old_client, &error);
  g_autoptr (TsHeloraRemote) fresh = NULL;
  guint n = t->old_client->modules->len, after = 0;

  g_assert_no_error (error);
  g_atomic_int_inc (&t->ready);
  while (after < 3)
    {
      gboolean swapped = g_atomic_int_get (&t->swapped);
      ckks_client_assert_evaluates (t->old_client, old, g_rand_int_range (rng, 0, n), rng);
      g_atomic_int_inc (&t->evaluations);
      after += swapped;
    }
  fresh = connect_stack (t->f, t->new_client, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < 3; i++)
    {
      ckks_client_assert_evaluates (t->new_client, fresh, g_rand_int_range (rng, 0, n), rng);
      ckks_client_assert_evaluates (t->old_client, old, g_rand_int_range (rng, 0, n), rng);
      g_atomic_int_add (&t->evaluations, 2);
    }
  return NULL;
}

/* 20 clients on (golden, swap); "swap" is replaced while they evaluate. */
static void
test_hot_swap_member (Fixture *f, gconstpointer data)
{
  g_autofree char *swap = write_attn_adapter (f, "swap.gguf", 21);
  const char *const members[] = { f->paths[0], swap, NULL };
  SwapTest t = { f };
  GThread *threads[SWAP_CLIENTS];
  g_autoptr (GError) error = NULL;
  g_autofree char *metrics = NULL, *body = NULL;
  guint status = 0;

  body = server_fixture_request (f->server, "POST", "admin/adapters/swap/reload", &status);
  g_assert_cmpuint (status, ==, 200);
  t.old_client = ckks_client_new_stack (PRESET, members, weights);
  for (guint i = 0; i < SWAP_CLIENTS; i++)
    threads[i] = g_thread_new ("stack-client", swap_client_thread, &t);
  while (g_atomic_int_get (&t.ready) < SWAP_CLIENTS || g_atomic_int_get (&t.evaluations) < 40)
    g_usleep (1000);
  g_free (write_attn_adapter (f, "swap.gguf", 22));
  g_clear_pointer (&body, g_free);
  body = server_fixture_request (f->server, "POST", "admin/adapters/swap/reload", &status);
  g_assert_cmpuint (status, ==, 200);
  g_assert_nonnull (strstr (body, "\"action\":\"replaced\""));
  t.new_client = ckks_client_new_stack (PRESET, members, weights);
  g_atomic_int_set (&t.swapped, TRUE);
  for (guint i = 0; i < SWAP_CLIENTS; i++)
    g_thread_join (threads[i]);
  g_test_message ("%d answers checked, none failed", t.evaluations);
  g_assert_cmpint (t.evaluations, >=, SWAP_CLIENTS * 9);
  /* 20 clients, two versions: two stacks encoded */
  g_assert_cmpint (g_atomic_int_get (&stack_opens), ==, 2);
  /* a new session cannot pin the replaced member */
  g_assert_null (connect_stack (f, t.old_client, &error));
  g_assert_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_ADAPTER_HASH);
  g_assert_nonnull (strstr (error->message, "'swap'"));
  metrics = server_fixture_get (f->server, "/metrics");
  g_assert_nonnull (strstr (metrics, "tensafe_he_errors_total{code=\"internal\"} 0\n"));
  g_assert_nonnull (strstr (metrics, "tensafe_he_errors_total{code=\"adapter-hash\"} 1\n"));
  ckks_client_free (t.new_client);
  ckks_client_free (t.old_client);
}

/* ---- adapter-private mode ---- */

/* The stacked A's largest row norm per module: the sensitivity the
 * accountant charges. Recomputed here from the members' own A. */
static void
assert_stacked_sensitivity (Fixture *f)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraEvaluator) ev = ts_helora_ckks_evaluator_open_stack (
    (const char *const *) f->paths, weights, N_MEMBERS, PRESET, f->golden.model, &error);
  const char *const *paths = (const char *const *) f->paths;
  CkksClient *reference = ckks_client_new_stack (PRESET, paths, weights);

  g_assert_no_error (error);
  for (guint m = 0; m < reference->modules->len; m++)
    {
      TsHeloraAdapterModule *am = g_ptr_array_index (reference->modules, m);
      TsHeloraModuleShape shape;
      double norm = 0, expected = 0;
      guint index;

      g_assert_true (ts_helora_evaluator_find_module (ev, am->name, FALSE, &index, &shape, &error));
      g_assert_cmpuint (shape.rank, ==, am->rank);
      g_assert_nonnull (ts_helora_ckks_evaluator_plan (ev, index, CKKS_HELORA_SCALES_PLAIN, &norm,
                                                       &error));
      for (guint i = 0; i < am->rank; i++)
        expected = fmax (expected, ts_privacy_sensitivity (am->a + (gsize) i * am->d_in, 1,
                                                           am->d_in, 1.0));
      g_assert_cmpfloat_with_epsilon (norm, expected, 1e-6 * expected);
    }
  ckks_client_free (reference);
}

static double
spent_rho (const char *state)
{
  g_autofree char *text = NULL;
  g_auto (GStrv) lines = NULL;
  double rho = 0;

  g_assert_true (g_file_get_contents (state, &text, NULL, NULL));
  lines = g_strsplit (text, "\n", -1);
  for (guint i = 0; lines[i] != NULL; i++)
    if (lines[i][0] != '\0' && lines[i][0] != '#')
      rho += g_ascii_strtod (lines[i], NULL);
  return rho;
}

/* The adapter-private mode on a stack: the plain stack's greedy tokens
 * without DP; with DP every module answer is charged to the client. */
static void
test_private_stack (Fixture *f, gconstpointer data)
{
  g_autofree char *state_dir = g_dir_make_tmp ("he-stack-state-XXXXXX", NULL);
  g_autofree char *state = g_build_filename (state_dir, "privacy.tsv", NULL);
  HeServerOptions options = server_options (f);
  LmLora *stack = load_stack (f, N_MEMBERS), *golden_lora = f->golden.lora;
  TsHeloraOptions ho = stack_options (f, TS_HELORA_MODE_REMOTE, N_MEMBERS);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsHeloraSession) private_session = NULL, dp_session = NULL;
  g_autofree gint32 *plain = NULL, *private_tokens = NULL;
  g_autofree float *logits = NULL;
  TsHeloraStats st;

  assert_stacked_sensitivity (f);
  server_fixture_stop (f->server);
  options.privacy_epsilon = 1e3;
  options.privacy_delta = 1e-6;
  options.privacy_state = state;
  f->server = server_fixture_start (&options);
  ho.remote_url = server_fixture_ws_url (f->server);
  ho.private_mode = TRUE;
  ho.private_lambda_s = 0;               /* the default, 40 */
  f->golden.lora = stack;                /* golden_greedy() runs this adapter */
  plain = golden_greedy (&f->golden, NULL);
  private_session = ts_helora_session_new (stack, &ho, &error);
  g_assert_no_error (error);
  private_tokens = golden_greedy (&f->golden, private_session);
  g_assert_cmpmem (private_tokens, GOLDEN_STEPS * 4, plain, GOLDEN_STEPS * 4);

  ho.private_rho = 1e-3;
  dp_session = ts_helora_session_new (stack, &ho, &error);
  g_assert_no_error (error);
  logits = prompt_logits (f, stack, dp_session);
  ts_helora_session_get_stats (dp_session, &st);
  g_assert_cmpuint (st.module_evaluations, ==, lm_lora_n_modules (stack) * f->golden.n_prompt);
  g_assert_cmpfloat_with_epsilon (spent_rho (state), 1e-3 * st.module_evaluations, 1e-9);
  f->golden.lora = golden_lora;
  lm_lora_free (stack);
  server_fixture_stop (f->server);
  f->server = NULL;
  g_unlink (state);
  g_rmdir (state_dir);
}

static void
add (const char *path, void (*func) (Fixture *, gconstpointer))
{
  g_test_add (path, Fixture, NULL, fixture_set_up, func, fixture_tear_down);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  add ("/he-server-stack/remote-equals-local", test_remote_equals_local);
  add ("/he-server-stack/shared-plans", test_shared_plans);
  add ("/he-server-stack/refusals", test_refusals);
  add ("/he-server-stack/hot-swap-member", test_hot_swap_member);
  add ("/he-server-stack/private", test_private_stack);
  return g_test_run ();
}
