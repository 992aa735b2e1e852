/* test-gpu-session.c: the GPU backend of sessions: backend choice and its
 * failure without a GPU (runs everywhere), and with a GPU: the GPU against
 * the CPU over a 64-token prompt and 32 decode steps on every tiny model
 * (the golden qwen35 / qwen35moe ones, and qwen2, qwen3 and qwen3moe ones
 * written here by lm_synth_write), partial offload, two sessions at once,
 * LoRA (built-in and hook), rewind, reset and the mean hidden state.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "gguf-synth.h"
#include "lm-gpu.h"
#include "model-private.h"
#include "session-gpu.h"
#include "ts-config.h"

/* The device hook below computes A·h with the engine's own kernels: only in
 * builds that have them (or their host emulation, GPU_EMU). */
#if TS_HAVE_CUDA || defined (GPU_EMU)
#define HAVE_DEVICE_API 1
#else
#define HAVE_DEVICE_API 0
#endif
#if HAVE_DEVICE_API
#include "lm-cuda-matvec.h"
#include "lm-cuda-rt.h"
#endif
#include "test-forward-util.h"
#include "ts-test-util.h"

#define N_PROMPT 64
#define N_DECODE 32
#define LORA_MODEL "tiny-qwen35moe-f32"
#define LORA_FILE "qwen35/" LORA_MODEL "/lora/tiny-qwen35moe-lora-f32.gguf"
/* GPU against CPU, both f32 activations: only the order of the sums differs. */
#define GPU_TOL 2e-3
/* Both 8-bit activations: the integer sums agree, but everything around
 * them (attention, routing, norms, the f32 products) sums in another order
 * on the GPU, and a difference of one ulp moves an activation across a
 * rounding step of its 8-bit block now and then; on these small random
 * models one such step moves the logits by about 0.1 (measured on an H200:
 * 0.157 on tiny-qwen35moe-e256-q8_0, where the CPU itself differs from its
 * native goldens by 0.23 on another x86 machine). So the bound is the one
 * the native goldens hold every backend to (test-forward-quant.c). */
#define GPU_NATIVE_TOL 0.5

static char gpu_why[200];

/* The architectures without golden files: tiny synthetic models, each
 * attention part and FFN form once (qwen2: q/k/v bias; qwen3: q/k norms;
 * qwen3moe: routed experts without a shared expert; none has the output
 * gate), written on first use into synth_dir. */
typedef struct {
  const char *name;
  LmSynthArch arch;
  LmSynthType type;
} SynthModel;

static const SynthModel synth_models[] = {
  { "tiny-qwen2-f32", LM_SYNTH_QWEN2, LM_SYNTH_F32 },
  { "tiny-qwen3-f32", LM_SYNTH_QWEN3, LM_SYNTH_F32 },
  { "tiny-qwen3moe-f32", LM_SYNTH_QWEN3MOE, LM_SYNTH_F32 },
  { "tiny-qwen2-q8_0", LM_SYNTH_QWEN2, LM_SYNTH_Q8_0 },
  { "tiny-qwen3moe-q8_0", LM_SYNTH_QWEN3MOE, LM_SYNTH_Q8_0 },
};
static char *synth_dir;

static const SynthModel *
synth_model (const char *name)
{
  for (size_t i = 0; i < G_N_ELEMENTS (synth_models); i++)
    if (strcmp (synth_models[i].name, name) == 0)
      return &synth_models[i];
  return NULL;
}

static char *
synth_path (const SynthModel *sm)
{
  g_autofree char *file = g_strconcat (sm->name, ".gguf", NULL);
  return g_build_filename (synth_dir, file, NULL);
}

/* The golden model @name, or the synthetic one (written if not yet). */
static LmModel *
test_model (const char *name)
{
  const SynthModel *sm = synth_model (name);
  if (sm == NULL)
    return golden_model (name);
  if (synth_dir == NULL && (synth_dir = g_dir_make_tmp ("test-gpu-session-XXXXXX", NULL)) == NULL)
    g_error ("cannot make a temporary folder for the synthetic models");
  g_autofree char *path = synth_path (sm);
  char *error = NULL;
  if (!g_file_test (path, G_FILE_TEST_EXISTS))
    {
      LmSynthOptions o = { .arch = sm->arch, .preset = LM_SYNTH_TINY, .type = sm->type,
                           .seed = 20261127, .threads = 2 };
      if (lm_synth_write (&o, path, &error) != LM_OK)
        g_error ("writing %s: %s", path, error ? error : "");
    }
  LmModel *m = NULL;
  if (lm_model_load (path, &m, &error) != LM_OK)
    g_error ("loading %s: %s", path, error ? error : "");
  g_assert_cmpint (lm_model_info (m)->arch, ==, (LmArch) sm->arch);
  return m;
}

/* N_PROMPT tokens: the golden prompt's, or seeded random ids of the
 * synthetic model's vocabulary. */
static int32_t *
test_prompt (const char *name, const LmModel *m)
{
  if (synth_model (name) == NULL)
    return golden_prompt_prefix (name, N_PROMPT);
  int32_t *prompt = g_new (int32_t, N_PROMPT);
  GRand *r = g_rand_new_with_seed (g_str_hash (name));
  for (int i = 0; i < N_PROMPT; i++)
    prompt[i] = g_rand_int_range (r, 0, (gint32) lm_model_info (m)->n_vocab);
  g_rand_free (r);
  return prompt;
}

static void
synth_dir_remove (void)
{
  if (synth_dir == NULL)
    return;
  for (size_t i = 0; i < G_N_ELEMENTS (synth_models); i++)
    {
      g_autofree char *path = synth_path (&synth_models[i]);
      g_remove (path);
    }
  g_rmdir (synth_dir);
  g_free (synth_dir);
  synth_dir = NULL;
}

/* Skips the current test unless the GPU backend can run here. */
static gboolean
need_gpu (void)
{
  if (lm_gpu_available (gpu_why, sizeof gpu_why))
    return TRUE;
  g_test_skip (gpu_why);
  return FALSE;
}

/* @exact: f32 activations, else the default 8-bit activation blocks. */
static LmSession *
new_session_mode (const LmModel *m, LmBackend backend, uint32_t gpu_layers, uint32_t n_batch,
                  gboolean exact)
{
  LmSessionParams p = { .n_ctx = 512, .n_batch = n_batch, .n_threads = 2,
                        .exact_activations = exact, .backend = backend,
                        .gpu_layers = gpu_layers };
  LmSession *s = NULL;
  char *error = NULL;
  LmStatus st = lm_session_new_full (m, &p, &s, &error);
  if (st != LM_OK)
    g_error ("session: %s (%s)", lm_status_message (st), error ? error : "");
  g_assert_cmpstr (lm_session_backend_name (s), ==, backend == LM_BACKEND_CUDA ? "cuda" : "cpu");
  return s;
}

static LmSession *
new_session (const LmModel *m, LmBackend backend, uint32_t gpu_layers, uint32_t n_batch)
{
  return new_session_mode (m, backend, gpu_layers, n_batch, TRUE);
}

/* Without a usable GPU (or without CUDA in the build) an explicit cuda
 * request fails with LM_ERR_DEVICE and the probe's reason, auto runs on the
 * CPU and says why, and the CPU backend says nothing. */
static void
test_backend_choice (void)
{
  LmBackend b;
  g_assert_true (lm_backend_from_name ("cpu", &b) && b == LM_BACKEND_CPU);
  g_assert_true (lm_backend_from_name ("cuda", &b) && b == LM_BACKEND_CUDA);
  g_assert_true (lm_backend_from_name ("auto", &b) && b == LM_BACKEND_AUTO);
  g_assert_false (lm_backend_from_name ("tpu", &b));
  g_assert_false (lm_backend_from_name (NULL, &b));

  LmModel *m = golden_model ("tiny-qwen35-f32");
  LmSessionParams p = { .n_ctx = 64, .n_threads = 1, .backend = (LmBackend) 7 };
  LmSession *s = NULL;
  char *error = NULL;
  g_assert_cmpint (lm_session_new_full (m, &p, &s, &error), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_null (s);
  g_assert_nonnull (error);
  free (error);
  error = NULL;

  p.backend = LM_BACKEND_CPU;
  g_assert_cmpint (lm_session_new_full (m, &p, &s, &error), ==, LM_OK);
  g_assert_cmpstr (lm_session_backend_name (s), ==, "cpu");
  g_assert_null (lm_session_backend_note (s));
  g_assert_cmpuint (lm_session_gpu_layers (s), ==, 0);
  lm_session_free (s);

  char why[200] = "";
  gboolean gpu = lm_gpu_available (why, sizeof why);
  p.backend = LM_BACKEND_CUDA;
  LmStatus st = lm_session_new_full (m, &p, &s, &error);
  if (gpu)
    {
      g_assert_cmpint (st, ==, LM_OK);
      g_assert_cmpstr (lm_session_backend_name (s), ==, "cuda");
      g_assert_cmpuint (lm_session_gpu_layers (s), ==, lm_model_info (m)->n_layer);
      lm_session_free (s);
    }
  else
    {
      g_assert_cmpint (st, ==, LM_ERR_DEVICE);
      g_assert_null (s);
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error, why));
      g_test_message ("explicit cuda request: %s", error);
      free (error);
      error = NULL;
      /* Without the message too. */
      g_assert_cmpint (lm_session_new (m, &p, &s), ==, LM_ERR_DEVICE);
      g_assert_null (s);
    }

  p.backend = LM_BACKEND_AUTO;
  g_assert_cmpint (lm_session_new_full (m, &p, &s, &error), ==, LM_OK);
  g_assert_null (error);
  g_assert_cmpstr (lm_session_backend_name (s), ==, gpu ? "cuda" : "cpu");
  if (!gpu)
    {
      g_assert_nonnull (lm_session_backend_note (s));
      g_assert_nonnull (strstr (lm_session_backend_note (s), why));
      /* The fallback session works. */
      int32_t tok = 1;
      g_assert_cmpint (lm_session_prefill (s, &tok, 1, NULL), ==, LM_OK);
    }
  size_t weights = 1, session = 1;
  lm_session_gpu_memory (s, &weights, &session);
  g_assert_true (gpu ? weights > 0 && session > 0 : weights == 0 && session == 0);
  lm_session_free (s);
  lm_model_free (m);
}

static void
test_vs_cpu (gconstpointer data)
{
  const char *name = data;
  if (!need_gpu ())
    return;
  LmModel *m = test_model (name);
  g_autofree int32_t *prompt = test_prompt (name, m);
  /* Batches of 16: a 64-token prompt takes several prefill steps. */
  LmSession *cpu = new_session (m, LM_BACKEND_CPU, 0, 16);
  LmSession *gpu = new_session (m, LM_BACKEND_CUDA, 0, 16);
  g_autofree char *what = g_strdup_printf ("%s GPU vs CPU", name);
  assert_sessions_agree (what, m, cpu, gpu, prompt, N_PROMPT, N_DECODE, GPU_TOL);
  /* The decode steps replayed a recorded graph. */
  g_assert_true (lm_gpu_session_graph_recorded (gpu->gpu));
  size_t weights, session;
  lm_session_gpu_memory (gpu, &weights, &session);
  g_test_message ("%s: GPU weights %zu bytes, session %zu bytes", name, weights, session);
  g_assert_cmpuint (weights, >=, lm_model_weight_bytes (m) / 2);
  lm_session_free (gpu);
  lm_session_free (cpu);
  lm_model_free (m);
}

/* TENSAFE_CUDA_BRANCHES=1: the DeltaNet gates and the shared expert on a
 * second stream in decode, recorded with the rest; the CPU's logits in
 * both activation modes, and against the same session without branches
 * (the same kernels: the same bits). */
static void
test_branches (gconstpointer data)
{
  const char *name = data;
  if (!need_gpu ())
    return;
  LmModel *m = test_model (name);
  g_autofree int32_t *prompt = test_prompt (name, m);
  for (int exact = 0; exact < 2; exact++)
    {
      LmSession *cpu = new_session_mode (m, LM_BACKEND_CPU, 0, 16, exact);
      LmSession *plain = new_session_mode (m, LM_BACKEND_CUDA, 0, 16, exact);
      g_setenv ("TENSAFE_CUDA_BRANCHES", "1", TRUE);
      LmSession *forked = new_session_mode (m, LM_BACKEND_CUDA, 0, 16, exact);
      g_unsetenv ("TENSAFE_CUDA_BRANCHES");
      g_autofree char *what = g_strdup_printf ("%s GPU with branches vs CPU%s", name,
                                               exact ? "" : ", 8-bit activations");
      assert_sessions_agree (what, m, cpu, forked, prompt, N_PROMPT, N_DECODE,
                             exact ? GPU_TOL : GPU_NATIVE_TOL);
      g_assert_true (lm_gpu_session_graph_recorded (forked->gpu));
      lm_session_reset (forked);
      g_autofree char *same = g_strdup_printf ("%s GPU with branches vs without", name);
      assert_sessions_agree (same, m, plain, forked, prompt, N_PROMPT, N_DECODE, 0.0);
      lm_session_free (forked);
      lm_session_free (plain);
      lm_session_free (cpu);
    }
  lm_model_free (m);
}

/* One layer on the GPU, the rest and the head on the CPU: the same logits as
 * all layers on the GPU. */
static void
test_partial_offload (gconstpointer data)
{
  const char *name = data;
  if (!need_gpu ())
    return;
  LmModel *m = test_model (name);
  g_autofree int32_t *prompt = test_prompt (name, m);
  LmSession *full = new_session (m, LM_BACKEND_CUDA, 0, 64);
  LmSession *part = new_session (m, LM_BACKEND_CUDA, 1, 64);
  g_assert_cmpuint (lm_session_gpu_layers (part), ==, 1);
  g_autofree char *what = g_strdup_printf ("%s 1 GPU layer vs all", name);
  assert_sessions_agree (what, m, full, part, prompt, N_PROMPT, N_DECODE, GPU_TOL);
  lm_session_free (part);
  lm_session_free (full);
  lm_model_free (m);
}

typedef struct {
  const LmModel *model;
  const int32_t *prompt;
  float *logits;    /* N_PROMPT + N_DECODE rows */
} Run;

/* Prefill, then greedy steps; every step's logits recorded. */
static gpointer
run_cb (gpointer data)
{
  Run *r = data;
  uint32_t V = lm_model_info (r->model)->n_vocab;
  LmSession *s = new_session (r->model, LM_BACKEND_CUDA, 0, 64);
  g_assert_cmpint (lm_session_prefill (s, r->prompt, N_PROMPT, r->logits), ==, LM_OK);
  for (int k = 0; k < N_DECODE; k++)
    {
      int32_t next = argmax (lm_session_logits (s), V);
      g_assert_cmpint (lm_session_decode (s, next), ==, LM_OK);
      memcpy (r->logits + (size_t) (N_PROMPT + k) * V, lm_session_logits (s), V * sizeof (float));
    }
  lm_session_free (s);
  return NULL;
}

/* Two GPU sessions of one model on two threads at once give what one alone
 * gives, and share the device weights. */
static void
test_two_sessions (void)
{
  if (!need_gpu ())
    return;
  const char *name = "tiny-qwen35moe-f32";
  LmModel *m = golden_model (name);
  uint32_t V = lm_model_info (m)->n_vocab;
  g_autofree int32_t *prompt = golden_prompt_prefix (name, N_PROMPT);
  gsize rows = (gsize) (N_PROMPT + N_DECODE) * V;
  Run alone = { m, prompt, g_new (float, rows) };
  run_cb (&alone);
  Run a = { m, prompt, g_new (float, rows) }, b = { m, prompt, g_new (float, rows) };
  GThread *ta = g_thread_new ("gpu-a", run_cb, &a);
  GThread *tb = g_thread_new ("gpu-b", run_cb, &b);
  g_thread_join (ta);
  g_thread_join (tb);
  assert_close ("session A vs alone", a.logits, alone.logits, rows, 1e-5);
  assert_close ("session B vs alone", b.logits, alone.logits, rows, 1e-5);
  /* Both hold the one device copy of the weights. */
  LmSession *s1 = new_session (m, LM_BACKEND_CUDA, 0, 64);
  LmSession *s2 = new_session (m, LM_BACKEND_CUDA, 0, 64);
  size_t w1, w2, b1, b2;
  lm_session_gpu_memory (s1, &w1, &b1);
  lm_session_gpu_memory (s2, &w2, &b2);
  g_assert_cmpuint (w1, ==, w2);
  g_assert_cmpuint (b1, ==, b2);
  lm_session_free (s1);
  lm_session_free (s2);
  g_free (alone.logits);
  g_free (a.logits);
  g_free (b.logits);
  lm_model_free (m);
}

/* u = A·h on the host, as an HE-LoRA evaluator's result would arrive. */
static LmStatus
plain_hook_cb (const LmLoraHookCall *call, const float *h, float *u, void *user_data)
{
  guint *calls = user_data;
  ++*calls;
  lora_hook_a_times_h (call, h, u);
  return LM_OK;
}

/* A decode step with hooks is recorded as one graph per hooked module plus
 * the last, and each replay calls every hook once (@calls counts them). */
static void
assert_hooks_replayed (LmSession *s, const LmLora *lora, guint *calls)
{
  size_t n_mod = lm_lora_n_modules (lora);
  g_assert_cmpuint (lm_gpu_session_graph_segments (s->gpu), ==, n_mod + 1);
  guint before = *calls;
  g_assert_cmpint (lm_session_decode (s, 1), ==, LM_OK);
  g_assert_cmpuint (*calls - before, ==, n_mod);
  g_assert_cmpuint (lm_gpu_session_graph_segments (s->gpu), ==, n_mod + 1);
}

/* The built-in adapter on the GPU and the hook path (h to the host and u
 * back) against the llama.cpp LoRA goldens. */
static void
test_lora (void)
{
  if (!need_gpu ())
    return;
  LmModel *m = golden_model (LORA_MODEL);
  LmLora *lora = golden_lora_load (m, LORA_FILE);
  gsize n_tok, n_gold;
  g_autofree int32_t *tokens = golden_ints (LORA_MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (LORA_MODEL, "lora_logits_batched.bin", &n_gold);

  LmSession *s = golden_session (m, 2, 64);
  /* A decode step first records the graph without the adapter; attaching
   * one must replace it. */
  g_assert_cmpint (lm_session_decode (s, tokens[0]), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (s, tokens[1]), ==, LM_OK);
  lm_session_reset (s);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  g_autofree float *builtin = prefill_all (s, tokens, n_tok);
  assert_close ("GPU built-in LoRA vs goldens", builtin, gold, n_gold, LOGITS_TOL);
  lm_session_reset (s);
  run_greedy (m, s, LORA_MODEL, "lora_");

  LmSession *h = golden_session (m, 2, 64);
  g_assert_cmpint (lm_session_set_lora (h, lora), ==, LM_OK);
  guint calls = 0;
  g_assert_cmpint (lm_session_set_lora_hook (h, LM_LORA_ALL_MODULES, plain_hook_cb, &calls), ==,
                   LM_OK);
  g_autofree float *hooked = prefill_all (h, tokens, n_tok);
  g_assert_cmpuint (calls, ==, lm_lora_n_modules (lora));
  assert_close ("GPU hook LoRA vs goldens", hooked, gold, n_gold, LOGITS_TOL);
  assert_close ("GPU hook vs built-in", hooked, builtin, n_gold, 1e-4);
  lm_session_reset (h);
  run_greedy (m, h, LORA_MODEL, "lora_");
  assert_hooks_replayed (h, lora, &calls);
  lm_session_free (h);
  lm_session_free (s);
  lm_lora_free (lora);
  lm_model_free (m);
}

#if HAVE_DEVICE_API
/* A device hook: A·h with h and u in device memory, enqueued on the
 * engine's stream (what HE-LoRA on the GPU does, minus the encryption). */
typedef struct {
  float **a_dev;
  guint calls;
} DeviceHook;

static LmStatus
device_hook_cb (const LmLoraHookCall *call, const float *h_dev, float *u_dev, void *stream,
                void *user_data)
{
  DeviceHook *d = user_data;
  const LmLoraModule *mod = call->module;
  const float *a = d->a_dev[call->module_index];
  d->calls++;
  if (call->n_tokens == 1)
    return lm_cuda_matvec ((LmCudaStream) stream, LM_TYPE_F32, a, mod->d_in, mod->rank, h_dev,
                           u_dev, false);
  return lm_cuda_matmul ((LmCudaStream) stream, LM_TYPE_F32, a, mod->d_in, mod->rank, h_dev,
                         call->n_tokens, u_dev);
}

/* The device hook path: the LoRA goldens and greedy tokens, with the host
 * hook of the same session never called (h stays on the device). */
static void
test_lora_device_hook (void)
{
  if (!need_gpu ())
    return;
  LmModel *m = golden_model (LORA_MODEL);
  LmLora *lora = golden_lora_load (m, LORA_FILE);
  size_t n_mod = lm_lora_n_modules (lora);
  gsize n_tok, n_gold;
  g_autofree int32_t *tokens = golden_ints (LORA_MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (LORA_MODEL, "lora_logits_batched.bin", &n_gold);
  DeviceHook d = { g_new0 (float *, n_mod), 0 };
  for (size_t i = 0; i < n_mod; i++)
    {
      const LmLoraModule *mod = lm_lora_module (lora, i);
      size_t bytes = (size_t) mod->d_in * mod->rank * sizeof (float);
      g_assert_cmpint (lm_cuda_rt_malloc ((void **) &d.a_dev[i], bytes), ==, LM_OK);
      g_assert_cmpint (lm_cuda_rt_upload (d.a_dev[i], mod->a, bytes), ==, LM_OK);
    }
  LmSession *s = golden_session (m, 2, 64);
  guint host_calls = 0;
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (s, LM_LORA_ALL_MODULES, plain_hook_cb, &host_calls),
                   ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_device_hook (s, LM_LORA_ALL_MODULES, device_hook_cb, &d),
                   ==, LM_OK);
  g_autofree float *hooked = prefill_all (s, tokens, n_tok);
  g_assert_cmpuint (d.calls, ==, n_mod);
  assert_close ("GPU device hook LoRA vs goldens", hooked, gold, n_gold, LOGITS_TOL);
  lm_session_reset (s);
  run_greedy (m, s, LORA_MODEL, "lora_");
  g_assert_cmpuint (host_calls, ==, 0);
  g_assert_cmpuint (d.calls, >, n_mod);
  assert_hooks_replayed (s, lora, &d.calls);
  lm_session_free (s);
  for (size_t i = 0; i < n_mod; i++)
    lm_cuda_rt_free (d.a_dev[i]);
  g_free (d.a_dev);
  lm_lora_free (lora);
  lm_model_free (m);
}
#endif

/* Rewind replays the kept tokens, reset starts over: both as on the CPU. */
static void
test_rewind_reset (void)
{
  if (!need_gpu ())
    return;
  const char *name = "tiny-qwen35moe-e256-q8_0";
  LmModel *m = golden_model (name);
  uint32_t V = lm_model_info (m)->n_vocab;
  g_autofree int32_t *prompt = golden_prompt_prefix (name, N_PROMPT);
  LmSession *s = new_session (m, LM_BACKEND_CUDA, 0, 16);
  g_assert_cmpint (lm_session_prefill (s, prompt, 20, NULL), ==, LM_OK);
  g_autofree float *at20 = g_memdup2 (lm_session_logits (s), V * sizeof (float));
  for (int i = 20; i < 30; i++)
    g_assert_cmpint (lm_session_decode (s, prompt[i]), ==, LM_OK);
  g_assert_cmpint (lm_session_rewind (s, 20), ==, LM_OK);
  g_assert_cmpuint (lm_session_pos (s), ==, 20);
  assert_close ("after rewind", lm_session_logits (s), at20, V, 1e-5);
  g_assert_cmpint (lm_session_decode (s, prompt[20]), ==, LM_OK);
  LmSession *cpu = new_session (m, LM_BACKEND_CPU, 0, 16);
  g_assert_cmpint (lm_session_prefill (cpu, prompt, 21, NULL), ==, LM_OK);
  assert_close ("rewound GPU vs CPU", lm_session_logits (s), lm_session_logits (cpu), V, GPU_TOL);
  lm_session_reset (s);
  g_assert_cmpint (lm_session_prefill (s, prompt, 20, NULL), ==, LM_OK);
  assert_close ("after reset", lm_session_logits (s), at20, V, 1e-5);
  lm_session_free (cpu);
  lm_session_free (s);
  lm_model_free (m);
}

static void
test_mean_hidden (void)
{
  if (!need_gpu ())
    return;
  const char *name = "tiny-qwen35-f32";
  LmModel *m = golden_model (name);
  uint32_t E = lm_model_info (m)->n_embd;
  g_autofree int32_t *prompt = golden_prompt_prefix (name, N_PROMPT);
  LmSession *cpu = new_session (m, LM_BACKEND_CPU, 0, 16);
  LmSession *gpu = new_session (m, LM_BACKEND_CUDA, 0, 16);
  g_autofree float *a = g_new (float, E);
  g_autofree float *b = g_new (float, E);
  g_assert_cmpint (lm_session_mean_hidden (cpu, prompt, N_PROMPT, a), ==, LM_OK);
  g_assert_cmpint (lm_session_mean_hidden (gpu, prompt, N_PROMPT, b), ==, LM_OK);
  assert_close ("mean hidden GPU vs CPU", a, b, E, 1e-4);
  lm_session_free (gpu);
  lm_session_free (cpu);
  lm_model_free (m);
}

/* A session with every layer on the GPU leaves the host weights in the
 * file mapping; the first one that computes a layer on the CPU copies the
 * dense weights into huge pages (model-resident.c), where they are used. */
static void
test_host_copy (void)
{
  if (!need_gpu ())
    return;
  g_autofree char *thp = NULL;
  gboolean huge = g_file_get_contents ("/sys/kernel/mm/transparent_hugepage/enabled", &thp,
                                       NULL, NULL)
                  && strstr (thp, "[never]") == NULL && g_getenv ("TENSAFE_WEIGHTS") == NULL;
  LmModel *m = golden_model ("tiny-qwen35moe-f32");
  LmSession *all = new_session (m, LM_BACKEND_CUDA, 0, 16);
  g_assert_null (m->resident);
  LmSession *split = new_session (m, LM_BACKEND_CUDA, 1, 16);
  g_assert_true ((m->resident != NULL) == huge);
  lm_session_free (split);
  lm_session_free (all);
  lm_model_free (m);
}

/* The default 8-bit activation mode on both backends: the GPU rounds the
 * activations as the CPU does in prefill and decode (an f32-activation GPU
 * differs from it by up to several units on the quantised models). */
static void
test_vs_cpu_native (gconstpointer data)
{
  const char *name = data;
  if (!need_gpu ())
    return;
  LmModel *m = test_model (name);
  g_autofree int32_t *prompt = test_prompt (name, m);
  LmSession *cpu = new_session_mode (m, LM_BACKEND_CPU, 0, 16, FALSE);
  LmSession *gpu = new_session_mode (m, LM_BACKEND_CUDA, 0, 16, FALSE);
  g_autofree char *what = g_strdup_printf ("%s GPU vs CPU, 8-bit activations", name);
  assert_sessions_agree (what, m, cpu, gpu, prompt, N_PROMPT, N_DECODE, GPU_NATIVE_TOL);
  g_assert_true (lm_gpu_session_graph_recorded (gpu->gpu));
  lm_session_free (gpu);
  lm_session_free (cpu);
  lm_model_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/gpu/backend-choice", test_backend_choice);
  const char *models[] = { "tiny-qwen35-f32", "tiny-qwen35moe-f32", "tiny-qwen35moe-e256-q8_0",
                           "tiny-qwen35moe-e256-q4_k_m", "tiny-qwen2-f32", "tiny-qwen3-f32",
                           "tiny-qwen3moe-f32", "tiny-qwen2-q8_0", "tiny-qwen3moe-q8_0" };
  for (size_t i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *p1 = g_strdup_printf ("/engine/gpu/%s/vs-cpu", models[i]);
      g_autofree char *p2 = g_strdup_printf ("/engine/gpu/%s/partial-offload", models[i]);
      g_test_add_data_func (p1, models[i], test_vs_cpu);
      g_test_add_data_func (p2, models[i], test_partial_offload);
    }
  const char *quantised[] = { "tiny-qwen35moe-e256-q8_0", "tiny-qwen35moe-e256-q4_k_m",
                              "tiny-qwen2-q8_0", "tiny-qwen3moe-q8_0" };
  for (size_t i = 0; i < G_N_ELEMENTS (quantised); i++)
    {
      g_autofree char *p = g_strdup_printf ("/engine/gpu/%s/vs-cpu-native", quantised[i]);
      g_test_add_data_func (p, quantised[i], test_vs_cpu_native);
    }
  const char *branched[] = { "tiny-qwen35moe-f32", "tiny-qwen35moe-e256-q4_k_m",
                             "tiny-qwen35-f32" };
  for (size_t i = 0; i < G_N_ELEMENTS (branched); i++)
    {
      g_autofree char *p = g_strdup_printf ("/engine/gpu/%s/branches", branched[i]);
      g_test_add_data_func (p, branched[i], test_branches);
    }
  g_test_add_func ("/engine/gpu/two-sessions", test_two_sessions);
  g_test_add_func ("/engine/gpu/host-copy", test_host_copy);
  g_test_add_func ("/engine/gpu/lora", test_lora);
#if HAVE_DEVICE_API
  g_test_add_func ("/engine/gpu/lora-device-hook", test_lora_device_hook);
#endif
  g_test_add_func ("/engine/gpu/rewind-reset", test_rewind_reset);
  g_test_add_func ("/engine/gpu/mean-hidden", test_mean_hidden);
  int rc = g_test_run ();
  synth_dir_remove ();
  return rc;
}
