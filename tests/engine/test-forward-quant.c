/* test-forward-quant.c: the Q8_0 and Q4_K_M models against both kinds of goldens:
 * f32 activations vs llama.cpp on the dequantized-f32 copy (tight), and 8-bit
 * activation blocks vs llama.cpp on the quantized file (README criteria).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "test-forward-util.h"

static LmSession *
quant_session (const LmModel *m, bool exact)
{
  LmSessionParams p = { .n_ctx = 512, .n_batch = 64, .n_threads = 2, .exact_activations = exact,
                        .backend = GOLDEN_BACKEND };
  LmSession *s = NULL;
  g_assert_cmpint (lm_session_new (m, &p, &s), ==, LM_OK);
  return s;
}

/* Path A: exact activations equal llama.cpp on the dequantized weights. */
static void
test_exact_activations (gconstpointer data)
{
  const char *name = data;
  gsize n_tok, n_gold;
  g_autofree int32_t *tokens = golden_ints (name, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (name, "dequant_f32_logits_batched.bin", &n_gold);
  LmModel *m = golden_model (name);
  LmSession *s = quant_session (m, true);
  Hidden h;
  hidden_capture (&h, s, (uint32_t) n_tok);
  g_autofree float *logits = prefill_all (s, tokens, n_tok);
  lm_session_set_debug (s, NULL, NULL);
  gsize n_h;
  g_autofree float *gold_h = golden_floats (name, "dequant_f32_hidden_l_out.bin", &n_h);
  g_assert_cmpuint (n_h, ==, (gsize) h.n_layer * n_tok * h.n_embd);
  g_autofree char *what_h = g_strdup_printf ("%s f32-activation hidden l_out vs dequant_f32", name);
  assert_close (what_h, h.l_out, gold_h, n_h, 1e-3);
  hidden_clear (&h);
  g_autofree char *what = g_strdup_printf ("%s f32-activation prefill vs dequant_f32", name);
  assert_close (what, logits, gold, n_gold, LOGITS_TOL);
  lm_session_reset (s);
  run_greedy (m, s, name, "dequant_f32_");
  /* The long prompt, batched over several steps. */
  gsize n_long, n_long_gold;
  g_autofree int32_t *long_tokens = golden_ints (name, "long_prompt_tokens.bin", &n_long);
  g_autofree float *long_gold = golden_floats (name, "dequant_f32_long_logits_batched.bin",
                                               &n_long_gold);
  lm_session_reset (s);
  g_autofree float *long_logits = prefill_all (s, long_tokens, n_long);
  g_autofree char *what_long = g_strdup_printf ("%s f32-activation long prompt vs dequant_f32", name);
  assert_close (what_long, long_logits, long_gold, n_long_gold, LOGITS_TOL);
  lm_session_free (s);
  lm_model_free (m);
}

/* Path B: 8-bit activation blocks like llama.cpp's CPU backend, against the
 * native goldens: max abs 0.5 and argmax agreement >= 90% (README). */
static void
test_native_activations (gconstpointer data)
{
  const char *name = data;
  gsize n_tok, n_gold;
  g_autofree int32_t *tokens = golden_ints (name, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (name, "logits_batched.bin", &n_gold);
  LmModel *m = golden_model (name);
  uint32_t V = lm_model_info (m)->n_vocab;
  LmSession *s = quant_session (m, false);
  g_autofree float *logits = prefill_all (s, tokens, n_tok);
  g_autofree char *what = g_strdup_printf ("%s native prefill vs native goldens", name);
  assert_close (what, logits, gold, n_gold, 0.5);
  gsize agree = 0;
  for (gsize t = 0; t < n_tok; t++)
    agree += argmax (logits + t * V, V) == argmax (gold + t * V, V);
  g_test_message ("%s native argmax agreement %zu/%zu", name, agree, n_tok);
  g_assert_cmpfloat ((double) agree / n_tok, >=, 0.9);
  lm_session_free (s);
  lm_model_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (golden_backend_skip ())
    return g_test_run ();
  const char *models[] = { "tiny-qwen35moe-e256-q8_0", "tiny-qwen35moe-e256-q4_k_m" };
  for (size_t i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *p1 = g_strdup_printf ("/engine/forward/%s/exact-activations", models[i]);
      g_autofree char *p2 = g_strdup_printf ("/engine/forward/%s/native-activations", models[i]);
      g_test_add_data_func (p1, models[i], test_exact_activations);
      g_test_add_data_func (p2, models[i], test_native_activations);
    }
  return g_test_run ();
}
