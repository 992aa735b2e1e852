/* test-session.c: sessions: concurrency, thread-count independence, rewind,
 * context bounds and memory accounting.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "test-forward-util.h"
#include "ts-test-util.h"
#include "threadpool.h"

#define MODEL "tiny-qwen35moe-f32"
#define N_GEN 16

typedef struct {
  const LmModel *model;
  uint32_t n_threads;
  const int32_t *prompt;
  gsize n_prompt;
  float *prefill_logits;      /* n_prompt x n_vocab */
  int32_t generated[N_GEN];
  float *last_logits;         /* n_vocab after the last generated token */
  LmThreadPool *shared_pool;  /* NULL: the session's own */
} Run;

/* Prefill (all logits) then N_GEN greedy steps; everything recorded. */
static gpointer
run_cb (gpointer data)
{
  Run *r = data;
  uint32_t V = lm_model_info (r->model)->n_vocab;
  LmSessionParams params = { .n_ctx = 512, .n_batch = 16, .n_threads = r->n_threads,
                             .pool = r->shared_pool };
  LmSession *s = NULL;
  g_assert_cmpint (lm_session_new (r->model, &params, &s), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (s, r->prompt, r->n_prompt, r->prefill_logits), ==, LM_OK);
  for (int k = 0; k < N_GEN; k++)
    {
      r->generated[k] = argmax (lm_session_logits (s), V);
      g_assert_cmpint (lm_session_decode (s, r->generated[k]), ==, LM_OK);
    }
  memcpy (r->last_logits, lm_session_logits (s), V * sizeof (float));
  lm_session_free (s);
  return NULL;
}

static void
run_init (Run *r, const LmModel *m, uint32_t n_threads, const int32_t *prompt, gsize n)
{
  uint32_t V = lm_model_info (m)->n_vocab;
  *r = (Run) { m, n_threads, prompt, n };
  r->prefill_logits = g_new (float, n * V);
  r->last_logits = g_new (float, V);
}

static void
run_clear (Run *r)
{
  g_free (r->prefill_logits);
  g_free (r->last_logits);
}

static void
assert_runs_identical (const Run *a, const Run *b)
{
  uint32_t V = lm_model_info (a->model)->n_vocab;
  g_assert_cmpmem (a->prefill_logits, a->n_prompt * V * 4, b->prefill_logits, b->n_prompt * V * 4);
  g_assert_cmpmem (a->generated, sizeof a->generated, b->generated, sizeof b->generated);
  g_assert_cmpmem (a->last_logits, V * 4, b->last_logits, V * 4);
}

/* Any thread count gives bit-identical results. */
static void
test_thread_counts (void)
{
  LmModel *m = golden_model (MODEL);
  gsize n;
  g_autofree int32_t *prompt = golden_ints (MODEL, "prompt_tokens.bin", &n);
  Run runs[3];
  uint32_t threads[3] = { 1, 2, 3 };
  for (int i = 0; i < 3; i++)
    {
      run_init (&runs[i], m, threads[i], prompt, n);
      run_cb (&runs[i]);
    }
  assert_runs_identical (&runs[0], &runs[1]);
  assert_runs_identical (&runs[0], &runs[2]);
  for (int i = 0; i < 3; i++)
    run_clear (&runs[i]);
  lm_model_free (m);
}

/* Two sessions on one model, on two threads at once, with different prompts,
 * give exactly what each gives alone. */
static void
test_concurrent_sessions (void)
{
  LmModel *m = golden_model (MODEL);
  gsize n_a, n_b;
  g_autofree int32_t *a = golden_ints (MODEL, "prompt_tokens.bin", &n_a);
  g_autofree int32_t *b = golden_ints (MODEL, "long_prompt_tokens.bin", &n_b);
  n_b = 100;
  Run alone[2], together[2];
  run_init (&alone[0], m, 1, a, n_a);
  run_init (&alone[1], m, 1, b, n_b);
  run_init (&together[0], m, 1, a, n_a);
  run_init (&together[1], m, 1, b, n_b);
  run_cb (&alone[0]);
  run_cb (&alone[1]);
  /* Each with its own pool, then both on one shared pool. */
  LmThreadPool *pool = lm_thread_pool_new (2);
  for (int round = 0; round < 2; round++)
    {
      together[0].shared_pool = together[1].shared_pool = round ? pool : NULL;
      GThread *t0 = g_thread_new ("session-a", run_cb, &together[0]);
      GThread *t1 = g_thread_new ("session-b", run_cb, &together[1]);
      g_thread_join (t0);
      g_thread_join (t1);
      for (int i = 0; i < 2; i++)
        assert_runs_identical (&alone[i], &together[i]);
    }
  lm_thread_pool_free (pool);
  for (int i = 0; i < 2; i++)
    {
      run_clear (&alone[i]);
      run_clear (&together[i]);
    }
  lm_model_free (m);
}

/* Rewinding to the end of the prompt gives the prompt's logits again, and the
 * continuation repeats. */
static void
test_rewind (void)
{
  LmModel *m = golden_model (MODEL);
  uint32_t V = lm_model_info (m)->n_vocab;
  gsize n, n_gold;
  g_autofree int32_t *prompt = golden_ints (MODEL, "prompt_tokens.bin", &n);
  g_autofree int32_t *greedy = golden_ints (MODEL, "greedy_tokens.bin", &n_gold);
  LmSession *s = golden_session (m, 2, 64);
  g_assert_cmpint (lm_session_prefill (s, prompt, n, NULL), ==, LM_OK);
  g_autofree float *after_prompt = g_memdup2 (lm_session_logits (s), V * 4);
  for (int k = 0; k < 5; k++)
    g_assert_cmpint (lm_session_decode (s, greedy[k]), ==, LM_OK);
  g_autofree float *after_5 = g_memdup2 (lm_session_logits (s), V * 4);
  g_assert_cmpint (lm_session_rewind (s, (uint32_t) n + 6), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_session_rewind (s, (uint32_t) n), ==, LM_OK);
  g_assert_cmpuint (lm_session_pos (s), ==, n);
  assert_close ("rewound logits", lm_session_logits (s), after_prompt, V, 0.0);
  for (int k = 0; k < 5; k++)
    g_assert_cmpint (lm_session_decode (s, greedy[k]), ==, LM_OK);
  assert_close ("replayed continuation", lm_session_logits (s), after_5, V, 0.0);
  lm_session_reset (s);
  g_assert_cmpuint (lm_session_pos (s), ==, 0);
  g_assert_cmpint (lm_session_prefill (s, prompt, n, NULL), ==, LM_OK);
  assert_close ("after reset", lm_session_logits (s), after_prompt, V, 0.0);
  lm_session_free (s);
  lm_model_free (m);
}

/* Counts the tokens a LoRA hook is asked for, computing A·h itself. */
static LmStatus
counting_hook_cb (const LmLoraHookCall *call, const float *h, float *u, void *user_data)
{
  if (call->module_index == 0)
    *(size_t *) user_data += call->n_tokens;
  lora_hook_a_times_h (call, h, u);
  return LM_OK;
}

/* A model of attention layers only (Qwen2) rewinds by moving back: the
 * logits and the continuation are those of a fresh session fed the kept
 * tokens, and only the last kept token is computed again (the adapter hook
 * sees one token, not the whole prefix). A chat that keeps its session
 * between turns relies on this to drop a reply's last tokens cheaply. */
static void
test_rewind_attention_only (void)
{
  g_autofree char *path = ts_test_data_path ("hf/qwen2/qwen2.gguf");
  LmModel *m = NULL;
  char *message = NULL;
  g_assert_cmpint (lm_model_load (path, &m, &message), ==, LM_OK);
  LmLora *lora = golden_lora_load (m, "hf/qwen2/lora/qwen2-lora.gguf");
  uint32_t V = lm_model_info (m)->n_vocab;
  gsize bytes;
  g_autofree int32_t *tokens = (int32_t *) ts_test_read_data ("hf/qwen2/long_prompt_tokens.bin",
                                                              &bytes);
  const gsize n = 40;
  size_t hooked = 0;
  LmSession *s = golden_session (m, 2, 16), *fresh = golden_session (m, 2, 16);

  g_assert_cmpuint (bytes / sizeof (int32_t), >=, n);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (s, 0, counting_hook_cb, &hooked), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (s, tokens, n, NULL), ==, LM_OK);
  g_assert_cmpuint (hooked, ==, n);
  g_assert_cmpint (lm_session_rewind (s, 25), ==, LM_OK);
  g_assert_cmpuint (lm_session_pos (s), ==, 25);
  g_assert_cmpuint (hooked, ==, n + 1);

  g_assert_cmpint (lm_session_set_lora (fresh, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (fresh, tokens, 25, NULL), ==, LM_OK);
  assert_close ("rewound logits", lm_session_logits (s), lm_session_logits (fresh), V, 1e-5);
  g_assert_cmpint (argmax (lm_session_logits (s), V), ==, argmax (lm_session_logits (fresh), V));
  /* a different continuation than the one dropped */
  g_assert_cmpint (lm_session_prefill (s, tokens + 30, 10, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (fresh, tokens + 30, 10, NULL), ==, LM_OK);
  assert_close ("continued after the rewind", lm_session_logits (s), lm_session_logits (fresh),
                V, 1e-5);
  lm_session_free (fresh);
  lm_session_free (s);
  lm_lora_free (lora);
  free (message);
  lm_model_free (m);
}

/* The context length bounds both the sequence and the memory. */
static void
test_context_bounds (void)
{
  LmModel *m = golden_model (MODEL);
  const LmModelInfo *in = lm_model_info (m);
  LmSessionParams small = { .n_ctx = 8, .n_batch = 4, .n_threads = 1 };
  LmSessionParams big = { .n_ctx = 264, .n_batch = 4, .n_threads = 1 };
  LmSession *s = NULL, *b = NULL;
  g_assert_cmpint (lm_session_new (m, &small, &s), ==, LM_OK);
  g_assert_cmpint (lm_session_new (m, &big, &b), ==, LM_OK);
  /* Per position: the token id, K and V of every full-attention layer, and
   * the attention's weight of each of its LM_ATTN_QUERIES queries (one
   * worker's scratch, allocated with the session). */
  size_t per_pos = 4 + 2 * 4 * (size_t) in->head_dim * in->n_head_kv + 4 * LM_ATTN_QUERIES;
  g_assert_cmpuint (lm_session_memory_bytes (b) - lm_session_memory_bytes (s), ==, 256 * per_pos);
  int32_t tokens[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
  g_assert_cmpint (lm_session_prefill (s, tokens, 9, NULL), ==, LM_ERR_CONTEXT_FULL);
  g_assert_cmpint (lm_session_prefill (s, tokens, 8, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (s, 1), ==, LM_ERR_CONTEXT_FULL);
  lm_session_reset (s);
  int32_t bad = (int32_t) in->n_vocab;
  g_assert_cmpint (lm_session_decode (s, bad), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_session_decode (s, -1), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpuint (lm_session_pos (s), ==, 0);
  lm_session_free (s);
  lm_session_free (b);
  lm_model_free (m);
}

/* Stage timings are filled per call with the DESIGN.md names. */
static void
test_timings (void)
{
  g_assert_cmpstr (lm_stage_name (LM_STAGE_FORWARD), ==, "forward");
  g_assert_cmpstr (lm_stage_name (LM_STAGE_LORA_B), ==, "lora_b");
  g_assert_cmpstr (lm_stage_name (LM_STAGE_LM_HEAD), ==, "lm_head");
  g_assert_cmpstr (lm_stage_name (LM_STAGE_SAMPLE), ==, "sample");
  g_assert_null (lm_stage_name (LM_N_STAGES));
  LmModel *m = golden_model (MODEL);
  LmSession *s = golden_session (m, 1, 64);
  g_assert_cmpint (lm_session_decode (s, 3), ==, LM_OK);
  LmTimings *t = lm_session_timings (s);
  g_assert_cmpuint (t->n_tokens, ==, 1);
  g_assert_cmpfloat (t->ms[LM_STAGE_FORWARD], >, 0.0);
  g_assert_cmpfloat (t->ms[LM_STAGE_LM_HEAD], >, 0.0);
  g_assert_cmpfloat (t->ms[LM_STAGE_LORA_B], ==, 0.0);
  lm_session_free (s);
  lm_model_free (m);
}

/* One-token decode steps (fused row jobs) give exactly the logits of a
 * prefill one token per step (separate products), on a quantized model
 * with 8-bit activations too. A batched prefill sums its K-quant products
 * and the attention's weighted values in the orders of llama.cpp's batch
 * kernels, which are not those of its single-token ones: close, not equal. */
#define BATCH_VS_DECODE_TOL 1.0

static void
test_decode_equals_prefill (gconstpointer data)
{
  const char *name = data;
  LmModel *m = golden_model (name);
  gsize n;
  g_autofree int32_t *prompt = golden_ints (name, "long_prompt_tokens.bin", &n);
  n = 80;
  LmSession *single = golden_session (m, 2, 1);
  g_autofree float *stepwise = prefill_all (single, prompt, n);
  lm_session_free (single);
  LmSession *s = golden_session (m, 2, 32);
  g_autofree float *batched = prefill_all (s, prompt, n);
  lm_session_reset (s);
  double worst = decode_max_diff (s, prompt, n, stepwise);
  lm_session_reset (s);
  double batch_diff = decode_max_diff (s, prompt, n, batched);
  g_test_message ("%s decode vs one-token prefill: max abs diff %.3g; vs batched prefill %.3g",
                  name, worst, batch_diff);
  g_assert_cmpfloat (worst, ==, 0.0);
  g_assert_cmpfloat (batch_diff, <, BATCH_VS_DECODE_TOL);
  lm_session_free (s);
  lm_model_free (m);
}

static bool
abort_after_cb (void *user_data)
{
  int *calls_left = user_data;
  return (*calls_left)-- <= 0;
}

/* An abort between prefill steps keeps the finished steps; the session goes on. */
static void
test_abort (void)
{
  LmModel *m = golden_model (MODEL);
  gsize n;
  g_autofree int32_t *prompt = golden_ints (MODEL, "long_prompt_tokens.bin", &n);
  LmSession *s = golden_session (m, 1, 16);
  int calls_left = 2;
  lm_session_set_abort (s, abort_after_cb, &calls_left);
  g_assert_cmpint (lm_session_prefill (s, prompt, 40, NULL), ==, LM_ERR_CANCELLED);
  g_assert_cmpuint (lm_session_pos (s), ==, 32);
  lm_session_set_abort (s, NULL, NULL);
  g_assert_cmpint (lm_session_prefill (s, prompt + 32, 8, NULL), ==, LM_OK);
  LmSession *whole = golden_session (m, 1, 16);
  g_assert_cmpint (lm_session_prefill (whole, prompt, 40, NULL), ==, LM_OK);
  assert_close ("resumed after abort", lm_session_logits (s), lm_session_logits (whole),
                lm_model_info (m)->n_vocab, 0.0);
  lm_session_free (whole);
  lm_session_free (s);
  lm_model_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/engine/session/thread-counts", test_thread_counts);
  g_test_add_func ("/engine/session/concurrent", test_concurrent_sessions);
  g_test_add_func ("/engine/session/rewind", test_rewind);
  g_test_add_func ("/engine/session/rewind-attention-only", test_rewind_attention_only);
  g_test_add_func ("/engine/session/context-bounds", test_context_bounds);
  g_test_add_func ("/engine/session/timings", test_timings);
  g_test_add_func ("/engine/session/abort", test_abort);
  g_test_add_data_func ("/engine/session/decode-equals-prefill/q4_k_m", "tiny-qwen35moe-e256-q4_k_m",
                        test_decode_equals_prefill);
  g_test_add_data_func ("/engine/session/decode-equals-prefill/f32", "tiny-qwen35-f32",
                        test_decode_equals_prefill);
  return g_test_run ();
}
