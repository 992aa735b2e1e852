/* test-forward.c: f32 forward pass against llama.cpp goldens (prefill, hidden
 * states, token-by-token decode, greedy decode, the long prompt).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "forward-ops.h"
#include "test-forward-util.h"

#define HIDDEN_TOL 1e-3

static void
test_prefill_and_hidden (gconstpointer data)
{
  const char *name = data;
  gsize n_tok, n_gold, n_h;
  g_autofree int32_t *tokens = golden_ints (name, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (name, "logits_batched.bin", &n_gold);
  LmModel *m = golden_model (name);
  const LmModelInfo *in = lm_model_info (m);
  g_assert_cmpuint (n_gold, ==, n_tok * in->n_vocab);
  LmSession *s = golden_session (m, 2, 64);
  Hidden h;
  hidden_capture (&h, s, (uint32_t) n_tok);
  g_autofree float *logits = prefill_all (s, tokens, n_tok);

  g_autofree float *g_res = golden_floats (name, "hidden_attn_residual.bin", &n_h);
  g_autofree float *g_out = golden_floats (name, "hidden_l_out.bin", &n_h);
  g_autofree float *g_fin = golden_floats (name, "final_norm.bin", &n_h);
  for (uint32_t il = 0; il < in->n_layer; il++)
    {
      g_autofree char *w1 = g_strdup_printf ("%s layer %u attn_residual", name, il);
      g_autofree char *w2 = g_strdup_printf ("%s layer %u l_out", name, il);
      size_t off = (size_t) il * n_tok * in->n_embd;
      assert_close (w1, h.attn_residual + off, g_res + off, n_tok * in->n_embd, HIDDEN_TOL);
      assert_close (w2, h.l_out + off, g_out + off, n_tok * in->n_embd, HIDDEN_TOL);
    }
  assert_close ("final_norm", h.final_norm, g_fin, n_tok * in->n_embd, HIDDEN_TOL);
  assert_close ("batched prefill logits", logits, gold, n_gold, LOGITS_TOL);
  assert_close ("last logits", lm_session_logits (s), gold + (n_tok - 1) * in->n_vocab,
                in->n_vocab, LOGITS_TOL);
  hidden_clear (&h);
  lm_session_free (s);
  lm_model_free (m);
}

static void
test_token_by_token (gconstpointer data)
{
  const char *name = data;
  gsize n_tok, n_gold;
  g_autofree int32_t *tokens = golden_ints (name, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (name, "logits_seq.bin", &n_gold);
  LmModel *m = golden_model (name);
  g_assert_cmpuint (n_gold, ==, n_tok * lm_model_info (m)->n_vocab);
  LmSession *s = golden_session (m, 1, 64);
  double worst = decode_max_diff (s, tokens, n_tok, gold);
  g_test_message ("%s token-by-token logits: max abs diff %.3g", name, worst);
  g_assert_cmpfloat (worst, <=, LOGITS_TOL);
  g_assert_cmpuint (lm_session_pos (s), ==, n_tok);
  lm_session_free (s);
  lm_model_free (m);
}

static void
test_greedy (gconstpointer data)
{
  const char *name = data;
  LmModel *m = golden_model (name);
  LmSession *s = golden_session (m, 2, 64);
  run_greedy (m, s, name, "");
  lm_session_free (s);
  lm_model_free (m);
}

/* 261 tokens: batched in steps of 64 (all positions) and one at a time (last). */
static void
test_long_prompt (gconstpointer data)
{
  const char *name = data;
  gsize n_tok, n_gold, n_last;
  g_autofree int32_t *tokens = golden_ints (name, "long_prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (name, "long_logits_batched.bin", &n_gold);
  g_autofree float *gold_last = golden_floats (name, "long_logits_seq_last.bin", &n_last);
  LmModel *m = golden_model (name);
  uint32_t V = lm_model_info (m)->n_vocab;
  LmSession *s = golden_session (m, 2, 64);
  g_autofree float *logits = prefill_all (s, tokens, n_tok);
  assert_close ("long batched logits", logits, gold, n_gold, LOGITS_TOL);
  lm_session_reset (s);
  for (gsize t = 0; t < n_tok; t++)
    g_assert_cmpint (lm_session_decode (s, tokens[t]), ==, LM_OK);
  assert_close ("long token-by-token last logits", lm_session_logits (s), gold_last, V, LOGITS_TOL);
  assert_close ("long token-by-token vs batched", lm_session_logits (s), logits + (n_tok - 1) * V,
                V, 1e-4);
  lm_session_free (s);
  lm_model_free (m);
}

/* Interleaved M-RoPE sections (FORMAT.md 3.4): for text, pairs assigned to
 * t/h/w rotate by the position, pairs of the fourth section not at all. */
static void
test_rope_sections (void)
{
  const int32_t sections[4] = { 2, 2, 2, 2 };
  float cs[16];
  lm_rope_table (5, 16, 10000.0f, sections, cs);
  for (uint32_t i = 0; i < 8; i++)
    {
      /* sector i: 0..5 are t,h,w,t,h,w (each < 3 * 2); 6 and 7 fall to e. */
      double theta = i < 6 ? 5.0 * pow (10000.0, -2.0 * i / 16) : 0.0;
      g_assert_cmpfloat_with_epsilon (cs[2 * i], cos (theta), 1e-6);
      g_assert_cmpfloat_with_epsilon (cs[2 * i + 1], sin (theta), 1e-6);
    }
  /* NEOX pairing: x[i] with x[i + n_rot/2]; dims past n_rot untouched. */
  float x[20], y[20];
  for (int i = 0; i < 20; i++)
    x[i] = y[i] = (float) (i + 1);
  lm_rope_apply (y, 16, cs);
  for (uint32_t i = 0; i < 8; i++)
    {
      g_assert_cmpfloat_with_epsilon (y[i], x[i] * cs[2 * i] - x[i + 8] * cs[2 * i + 1], 1e-5);
      g_assert_cmpfloat_with_epsilon (y[i + 8], x[i] * cs[2 * i + 1] + x[i + 8] * cs[2 * i], 1e-5);
    }
  for (int i = 16; i < 20; i++)
    g_assert_cmpfloat (y[i], ==, x[i]);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  if (golden_backend_skip ())
    return g_test_run ();
  g_test_add_func ("/engine/forward/rope-sections", test_rope_sections);
  const char *models[] = { "tiny-qwen35moe-f32", "tiny-qwen35-f32" };
  for (size_t i = 0; i < G_N_ELEMENTS (models); i++)
    {
      g_autofree char *p1 = g_strdup_printf ("/engine/forward/%s/prefill", models[i]);
      g_autofree char *p2 = g_strdup_printf ("/engine/forward/%s/token-by-token", models[i]);
      g_autofree char *p3 = g_strdup_printf ("/engine/forward/%s/greedy", models[i]);
      g_autofree char *p4 = g_strdup_printf ("/engine/forward/%s/long-prompt", models[i]);
      g_test_add_data_func (p1, models[i], test_prefill_and_hidden);
      g_test_add_data_func (p2, models[i], test_token_by_token);
      g_test_add_data_func (p3, models[i], test_greedy);
      g_test_add_data_func (p4, models[i], test_long_prompt);
    }
  return g_test_run ();
}
