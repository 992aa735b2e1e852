/* test-gpu-emu.c: the GPU backend's forward pass, sessions and weight upload
 * run on the host emulation of the device API (gpu-emu.c): every buffer
 * offset, stride, expert grouping, LoRA path, partial offload, reset,
 * rewind and memory check of engine/src/cuda's C code (the device LoRA hook's
 * orchestration included), against the CPU backend
 * and the goldens, without a GPU. The kernels themselves are tested by
 * test-cuda-*.c on a GPU.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "gpu-emu.h"
#include "session-gpu.h"
#include "test-forward-util.h"
#include "ts-test-util.h"

#define N_PROMPT 64
#define N_DECODE 32
#define LORA_MODEL "tiny-qwen35moe-f32"
#define LORA_FILE "qwen35/" LORA_MODEL "/lora/tiny-qwen35moe-lora-f32.gguf"
/* The emulation computes with the CPU's f32 functions: only the order of a
 * few sums (MoE combine, LoRA scale) differs from the CPU backend. */
#define EMU_TOL 1e-4
#define HIDDEN_TOL 1e-3

static LmSession *
cpu_session (const LmModel *m, uint32_t n_batch)
{
  LmSessionParams p = { .n_ctx = 512, .n_batch = n_batch, .n_threads = 1,
                        .exact_activations = true };
  LmSession *s = NULL;
  g_assert_cmpint (lm_session_new (m, &p, &s), ==, LM_OK);
  return s;
}

/* A session whose GPU half runs on the emulation (a build without CUDA
 * has no device to probe, so the half is attached directly). */
static LmSession *
emu_session (const LmModel *m, uint32_t gpu_layers, uint32_t n_batch)
{
  LmSession *s = cpu_session (m, n_batch);
  char *error = NULL;
  LmStatus st = lm_gpu_session_new (s, gpu_layers, &error);
  if (st != LM_OK)
    g_error ("GPU session: %s (%s)", lm_status_message (st), error ? error : "");
  g_assert_cmpstr (lm_session_backend_name (s), ==, "cuda");
  return s;
}

/* All layers, then 1 and 2 layers on the "GPU", against the CPU; the prompt
 * in batches of 16 (several prefill steps) and in one of 64. */
static void
test_vs_cpu (gconstpointer data)
{
  const char *name = data;
  LmModel *m = golden_model (name);
  g_autofree int32_t *prompt = golden_prompt_prefix (name, N_PROMPT);
  uint32_t layers[] = { 0, 1, 2 }, batches[] = { 16, 64, 16 };
  for (size_t i = 0; i < G_N_ELEMENTS (layers); i++)
    {
      LmSession *cpu = cpu_session (m, batches[i]);
      LmSession *gpu = emu_session (m, layers[i], batches[i]);
      g_assert_cmpuint (lm_session_gpu_layers (gpu), ==,
                        layers[i] ? layers[i] : lm_model_info (m)->n_layer);
      g_autofree char *what = g_strdup_printf ("%s, %u GPU layers (0: all), batch %u", name,
                                               layers[i], batches[i]);
      size_t launches = gpu_emu_graph_launches;
      assert_sessions_agree (what, m, cpu, gpu, prompt, N_PROMPT, N_DECODE, EMU_TOL);
      /* Every decode step replayed the graph recorded by the first. */
      g_assert_true (lm_gpu_session_graph_recorded (gpu->gpu));
      g_assert_cmpuint (gpu_emu_graph_launches - launches, ==, N_DECODE);
      lm_session_free (gpu);
      lm_session_free (cpu);
    }
  g_assert_cmpuint (gpu_emu_live_allocations, ==, 0);
  lm_model_free (m);
}

/* The f32 goldens through the GPU path, hidden states (the debug observer's
 * device-to-host copies) included. */
static void
test_goldens (gconstpointer data)
{
  const char *name = data;
  gsize n_tok, n_gold, n_h;
  g_autofree int32_t *tokens = golden_ints (name, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (name, "logits_batched.bin", &n_gold);
  g_autofree float *g_out = golden_floats (name, "hidden_l_out.bin", &n_h);
  g_autofree float *g_fin = golden_floats (name, "final_norm.bin", &n_h);
  LmModel *m = golden_model (name);
  const LmModelInfo *in = lm_model_info (m);
  LmSession *s = emu_session (m, 0, 64);
  Hidden h;
  hidden_capture (&h, s, (uint32_t) n_tok);
  g_autofree float *logits = prefill_all (s, tokens, n_tok);
  assert_close ("hidden l_out", h.l_out, g_out, (gsize) in->n_layer * n_tok * in->n_embd,
                HIDDEN_TOL);
  assert_close ("final norm", h.final_norm, g_fin, n_tok * in->n_embd, HIDDEN_TOL);
  assert_close ("prefill logits", logits, gold, n_gold, LOGITS_TOL);
  hidden_clear (&h);
  lm_session_set_debug (s, NULL, NULL);
  lm_session_reset (s);
  run_greedy (m, s, name, "");
  lm_session_free (s);
  lm_model_free (m);
}

typedef struct {
  guint calls;
  gboolean fail;
} HookState;

static LmStatus
plain_hook_cb (const LmLoraHookCall *call, const float *h, float *u, void *user_data)
{
  HookState *state = user_data;
  state->calls++;
  if (state->fail)
    return LM_ERR_IO;
  lora_hook_a_times_h (call, h, u);
  return LM_OK;
}

/* Built-in adapter and hook on the GPU path: the LoRA goldens, the CPU, and
 * a failing hook that leaves the session to a rewind. */
static void
test_lora (void)
{
  LmModel *m = golden_model (LORA_MODEL);
  LmLora *lora = golden_lora_load (m, LORA_FILE);
  gsize n_tok, n_gold;
  g_autofree int32_t *tokens = golden_ints (LORA_MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (LORA_MODEL, "lora_logits_batched.bin", &n_gold);
  g_autofree int32_t *prompt = golden_prompt_prefix (LORA_MODEL, N_PROMPT);

  LmSession *s = emu_session (m, 0, 64);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  g_autofree float *builtin = prefill_all (s, tokens, n_tok);
  assert_close ("built-in LoRA vs goldens", builtin, gold, n_gold, LOGITS_TOL);
  lm_session_reset (s);
  run_greedy (m, s, LORA_MODEL, "lora_");

  LmSession *cpu = cpu_session (m, 16);
  LmSession *gpu = emu_session (m, 2, 16);
  g_assert_cmpint (lm_session_set_lora (cpu, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (gpu, lora), ==, LM_OK);
  assert_sessions_agree ("LoRA, 2 GPU layers vs CPU", m, cpu, gpu, prompt,
                         N_PROMPT, N_DECODE, EMU_TOL);
  lm_session_free (gpu);
  lm_session_free (cpu);

  LmSession *h = emu_session (m, 0, 64);
  g_assert_cmpint (lm_session_set_lora (h, lora), ==, LM_OK);
  HookState state = { 0 };
  g_assert_cmpint (lm_session_set_lora_hook (h, LM_LORA_ALL_MODULES, plain_hook_cb, &state), ==,
                   LM_OK);
  g_autofree float *hooked = prefill_all (h, tokens, n_tok);
  g_assert_cmpuint (state.calls, ==, lm_lora_n_modules (lora));
  assert_close ("hook vs built-in", hooked, builtin, n_gold, EMU_TOL);
  g_assert_cmpint (lm_session_decode (h, tokens[0]), ==, LM_OK);
  g_assert_cmpuint (state.calls, ==, 2 * lm_lora_n_modules (lora));
  /* A failing hook: the session refuses until rewound, then replays. */
  state.fail = TRUE;
  g_assert_cmpint (lm_session_decode (h, tokens[1]), ==, LM_ERR_HOOK);
  state.fail = FALSE;
  g_assert_cmpint (lm_session_decode (h, tokens[1]), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_session_rewind (h, (uint32_t) n_tok + 1), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (h, tokens[1]), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (s, tokens[0]), ==, LM_OK);
  lm_session_reset (s);
  g_assert_cmpint (lm_session_prefill (s, tokens, n_tok, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (s, tokens[0]), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (s, tokens[1]), ==, LM_OK);
  assert_close ("hook session after rewind", lm_session_logits (h), lm_session_logits (s),
                lm_model_info (m)->n_vocab, EMU_TOL);
  /* Detaching gives the base model again. */
  g_assert_cmpint (lm_session_set_lora (h, NULL), ==, LM_OK);
  lm_session_free (h);
  lm_session_free (s);
  lm_lora_free (lora);
  g_assert_cmpuint (gpu_emu_live_allocations, ==, 0);
  lm_model_free (m);
}

/* A device hook as the HE-LoRA GPU path is one: it checks that h and u are
 * device memory and enqueues A·h on the session's stream (run in stream
 * order by the emulation). */
typedef struct {
  guint calls;
  gboolean fail;
  const LmLoraModule *mod;
  const float *h;
  float *u;
  uint32_t n;
} DeviceHookState;

static LmStatus
device_work (void *data)
{
  DeviceHookState *state = data;
  LmLoraHookCall call = { 0, state->mod, 0, state->n, NULL };
  HookState plain = { 0 };
  return plain_hook_cb (&call, state->h, state->u, &plain);
}

static LmStatus
device_hook_cb (const LmLoraHookCall *call, const float *h_dev, float *u_dev, void *stream,
                void *user_data)
{
  DeviceHookState *state = user_data;
  const LmLoraModule *mod = call->module;
  state->calls++;
  if (state->fail)
    return LM_ERR_IO;
  g_assert_true (gpu_emu_is_device (h_dev, (size_t) call->n_tokens * mod->d_in * sizeof (float)));
  g_assert_true (gpu_emu_is_device (u_dev, (size_t) call->n_tokens * mod->rank * sizeof (float)));
  *state = (DeviceHookState) { state->calls, FALSE, mod, h_dev, u_dev, call->n_tokens };
  return gpu_emu_enqueue (stream, device_work, state);
}

/* Device-to-host copies of one decode step. */
static size_t
decode_copies (LmSession *s, int32_t token)
{
  size_t before = gpu_emu_copies_to_host;
  g_assert_cmpint (lm_session_decode (s, token), ==, LM_OK);
  return gpu_emu_copies_to_host - before;
}

/* The device hook on a GPU session: called instead of the host hook for
 * every module on the GPU, with device pointers; h never copied to the
 * host; same logits as the host hook; the host hook still serves the CPU
 * layers of a partial offload and the CPU backend. */
static void
test_lora_device_hook (void)
{
  LmModel *m = golden_model (LORA_MODEL);
  LmLora *lora = golden_lora_load (m, LORA_FILE);
  size_t n_mod = lm_lora_n_modules (lora);
  gsize n_tok;
  g_autofree int32_t *tokens = golden_ints (LORA_MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree int32_t *prompt = golden_prompt_prefix (LORA_MODEL, N_PROMPT);

  LmSession *host = emu_session (m, 0, 64);
  LmSession *dev = emu_session (m, 0, 64);
  LmSession *plain = emu_session (m, 0, 64);
  HookState host_state = { 0 }, dev_host_state = { 0 };
  DeviceHookState dev_state = { 0 };
  g_assert_cmpint (lm_session_set_lora (host, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (dev, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (plain, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_device_hook (dev, n_mod, device_hook_cb, &dev_state), ==,
                   LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_session_set_lora_hook (host, LM_LORA_ALL_MODULES, plain_hook_cb,
                                             &host_state), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (dev, LM_LORA_ALL_MODULES, plain_hook_cb,
                                             &dev_host_state), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_device_hook (dev, LM_LORA_ALL_MODULES, device_hook_cb,
                                                    &dev_state), ==, LM_OK);

  g_autofree float *by_host = prefill_all (host, tokens, n_tok);
  g_autofree float *by_dev = prefill_all (dev, tokens, n_tok);
  g_assert_cmpuint (dev_state.calls, ==, n_mod);
  g_assert_cmpuint (dev_host_state.calls, ==, 0);
  assert_close ("device hook vs host hook", by_dev, by_host,
                (gsize) n_tok * lm_model_info (m)->n_vocab, EMU_TOL);
  g_assert_cmpint (lm_session_prefill (plain, tokens, n_tok, NULL), ==, LM_OK);

  /* decode: the device hook adds no device-to-host copy (the built-in A·h
   * session's count), the host hook one per module; either records the
   * step as a graph per hooked module and one after the last */
  size_t launches = gpu_emu_graph_launches;
  size_t with_device = decode_copies (dev, tokens[0]);
  size_t with_host = decode_copies (host, tokens[0]);
  g_assert_cmpuint (gpu_emu_graph_launches - launches, ==, 2 * (n_mod + 1));
  size_t builtin = decode_copies (plain, tokens[0]);
  g_assert_cmpuint (with_device, ==, builtin);
  g_assert_cmpuint (with_host, >=, builtin + n_mod);
  g_assert_cmpuint (dev_state.calls, ==, 2 * n_mod);
  g_assert_cmpuint (dev_host_state.calls, ==, 0);
  assert_close ("device hook decode", lm_session_logits (dev), lm_session_logits (host),
                lm_model_info (m)->n_vocab, EMU_TOL);

  /* a failing device hook fails the step as a host hook does */
  dev_state.fail = TRUE;
  g_assert_cmpint (lm_session_decode (dev, tokens[1]), ==, LM_ERR_HOOK);
  dev_state.fail = FALSE;
  /* cleared: the host hook again */
  g_assert_cmpint (lm_session_rewind (dev, (uint32_t) n_tok + 1), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_device_hook (dev, LM_LORA_ALL_MODULES, NULL, NULL), ==,
                   LM_OK);
  g_assert_cmpint (lm_session_decode (dev, tokens[1]), ==, LM_OK);
  g_assert_cmpuint (dev_host_state.calls, ==, n_mod);
  lm_session_free (plain);
  lm_session_free (dev);
  lm_session_free (host);

  /* 2 GPU layers: the device hook there, the host hook on the CPU layers,
   * together the CPU backend's logits with the host hook */
  LmSession *cpu = cpu_session (m, 16);
  LmSession *split = emu_session (m, 2, 16);
  HookState cpu_state = { 0 }, split_state = { 0 };
  dev_state = (DeviceHookState) { 0 };
  g_assert_cmpint (lm_session_set_lora (cpu, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (split, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (cpu, LM_LORA_ALL_MODULES, plain_hook_cb, &cpu_state),
                   ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_device_hook (cpu, LM_LORA_ALL_MODULES, device_hook_cb,
                                                    &dev_state), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (split, LM_LORA_ALL_MODULES, plain_hook_cb,
                                             &split_state), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_device_hook (split, LM_LORA_ALL_MODULES, device_hook_cb,
                                                    &dev_state), ==, LM_OK);
  assert_sessions_agree ("device hook, 2 GPU layers vs CPU", m, cpu, split, prompt, N_PROMPT,
                         N_DECODE, EMU_TOL);
  g_assert_cmpuint (cpu_state.calls, ==, (N_PROMPT / 16 + N_DECODE) * n_mod);
  g_assert_cmpuint (split_state.calls + dev_state.calls, ==, (N_PROMPT / 16 + N_DECODE) * n_mod);
  g_assert_cmpuint (dev_state.calls, >, 0);
  lm_session_free (split);
  lm_session_free (cpu);
  lm_lora_free (lora);
  g_assert_cmpuint (gpu_emu_live_allocations, ==, 0);
  lm_model_free (m);
}

/* Rewind, reset and the mean hidden state, as on the CPU. */
static void
test_state (void)
{
  const char *name = "tiny-qwen35moe-e256-q4_k_m";
  LmModel *m = golden_model (name);
  uint32_t V = lm_model_info (m)->n_vocab, E = lm_model_info (m)->n_embd;
  g_autofree int32_t *prompt = golden_prompt_prefix (name, N_PROMPT);
  LmSession *s = emu_session (m, 0, 16);
  g_assert_cmpint (lm_session_prefill (s, prompt, 20, NULL), ==, LM_OK);
  g_autofree float *at20 = g_memdup2 (lm_session_logits (s), V * sizeof (float));
  for (int i = 20; i < 30; i++)
    g_assert_cmpint (lm_session_decode (s, prompt[i]), ==, LM_OK);
  g_assert_cmpint (lm_session_rewind (s, 20), ==, LM_OK);
  assert_close ("after rewind", lm_session_logits (s), at20, V, 0.0);
  lm_session_reset (s);
  g_assert_cmpint (lm_session_prefill (s, prompt, 20, NULL), ==, LM_OK);
  assert_close ("after reset", lm_session_logits (s), at20, V, 0.0);
  LmSession *cpu = cpu_session (m, 16);
  g_autofree float *a = g_new (float, E);
  g_autofree float *b = g_new (float, E);
  lm_session_reset (s);
  g_assert_cmpint (lm_session_mean_hidden (cpu, prompt, N_PROMPT, a), ==, LM_OK);
  g_assert_cmpint (lm_session_mean_hidden (s, prompt, N_PROMPT, b), ==, LM_OK);
  assert_close ("mean hidden", a, b, E, EMU_TOL);
  /* A bad token is refused before anything changes. */
  int32_t bad = (int32_t) V;
  g_assert_cmpint (lm_session_decode (s, bad), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_session_decode (s, prompt[0]), ==, LM_OK);
  lm_session_free (cpu);
  lm_session_free (s);
  lm_model_free (m);
}

/* Sessions share one device copy of the weights, taken by the first, grown
 * by one asking for more layers, freed with the last; weights that do not
 * fit are refused with a message and leave nothing behind. */
static void
test_shared_weights (void)
{
  LmModel *m = golden_model ("tiny-qwen35moe-e256-q8_0");
  LmSession *a = emu_session (m, 1, 16);
  size_t wa, sa, wb, sb;
  lm_session_gpu_memory (a, &wa, &sa);
  LmSession *b = emu_session (m, 0, 16);
  lm_session_gpu_memory (b, &wb, &sb);
  lm_session_gpu_memory (a, &wa, &sa);
  g_assert_cmpuint (wa, ==, wb);   /* one copy, grown for b */
  g_assert_cmpuint (sb, >, sa);    /* b has the KV cache and logits of every layer */
  g_assert_cmpuint (wb, >=, lm_model_weight_bytes (m));
  lm_session_free (a);
  lm_session_free (b);
  g_assert_cmpuint (gpu_emu_live_allocations, ==, 0);

  LmSession *s = cpu_session (m, 16);
  gpu_emu_free_bytes = (size_t) 1 << 20;
  char *error = NULL;
  g_assert_cmpint (lm_gpu_session_new (s, 0, &error), ==, LM_ERR_DEVICE);
  g_assert_nonnull (error);
  g_test_message ("%s", error);
  g_assert_nonnull (strstr (error, "not enough GPU memory"));
  free (error);
  g_assert_null (s->gpu);
  g_assert_cmpuint (gpu_emu_live_allocations, ==, 0);
  gpu_emu_free_bytes = (size_t) 1 << 34;
  int32_t tok = 1;
  g_assert_cmpint (lm_session_prefill (s, &tok, 1, NULL), ==, LM_OK);
  lm_session_free (s);
  lm_model_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  const char *models[] = { "tiny-qwen35-f32", "tiny-qwen35moe-f32", "tiny-qwen35moe-e256-q8_0",
                           "tiny-qwen35moe-e256-q4_k_m" };
  for (size_t i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *p = g_strdup_printf ("/engine/gpu-emu/%s/vs-cpu", models[i]);
      g_test_add_data_func (p, models[i], test_vs_cpu);
    }
  g_test_add_data_func ("/engine/gpu-emu/tiny-qwen35-f32/goldens", "tiny-qwen35-f32", test_goldens);
  g_test_add_data_func ("/engine/gpu-emu/tiny-qwen35moe-f32/goldens", "tiny-qwen35moe-f32",
                        test_goldens);
  g_test_add_func ("/engine/gpu-emu/lora", test_lora);
  g_test_add_func ("/engine/gpu-emu/lora-device-hook", test_lora_device_hook);
  g_test_add_func ("/engine/gpu-emu/state", test_state);
  g_test_add_func ("/engine/gpu-emu/shared-weights", test_shared_weights);
  return g_test_run ();
}
