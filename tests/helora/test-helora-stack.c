/* test-helora-stack.c: stacked adapters in plaintext and under HE-LoRA (local mode).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * References never go through the stacking code: two halves of the golden
 * adapter must give the golden adapter's logits; an attention adapter
 * stacked on an FFN adapter must give the logits of one adapter holding
 * both module sets (made with the same seed, so the same A and B); and
 * encrypted local mode must give the plain stack's greedy tokens with one
 * encryption per distinct h per token.
 */
#include <math.h>
#include <stdlib.h>

#include "helora-golden.h"
#include "ts-adapter-stack.h"

static Golden golden;

static const char *const attn_stems[] = {
  "blk.3.attn_q", "blk.3.attn_k", "blk.3.attn_v", "blk.0.attn_qkv", "blk.0.attn_gate", NULL,
};
static const char *const ffn_stems[] = {
  "blk.3.ffn_gate_shexp", "blk.3.ffn_up_shexp", "blk.0.ffn_gate_shexp", "blk.0.ffn_up_shexp",
  NULL,
};
static const char *const all_stems[] = {
  "blk.3.attn_q", "blk.3.attn_k", "blk.3.attn_v", "blk.0.attn_qkv", "blk.0.attn_gate",
  "blk.3.ffn_gate_shexp", "blk.3.ffn_up_shexp", "blk.0.ffn_gate_shexp", "blk.0.ffn_up_shexp",
  NULL,
};
#define SYNTH_SEED 7
#define SYNTH_RANK 4
#define SYNTH_AMPLITUDE 0.08f

static LmLora *
synth (const char *const *stems)
{
  LmLora *lora = NULL;
  char *msg = NULL;

  if (lm_lora_synth (golden.model, stems, SYNTH_RANK, SYNTH_AMPLITUDE, SYNTH_SEED, &lora, &msg) != LM_OK)
    g_error ("synth: %s", msg);
  return lora;
}

static LmLora *
stack2 (const LmLora *a, float wa, const LmLora *b, float wb)
{
  const LmLora *loras[] = { a, b };
  const float weights[] = { wa, wb };
  g_autoptr (GError) error = NULL;
  LmLora *out = ts_adapter_stack (loras, weights, 2, &error);

  g_assert_no_error (error);
  return out;
}

/* Logits of every prompt position with @lora (NULL: none) in plaintext. */
static float *
prompt_logits (const LmLora *lora)
{
  LmSessionParams params = { .n_ctx = 64, .n_threads = 1 };
  guint n_vocab = lm_model_info (golden.model)->n_vocab;
  float *logits = g_new (float, golden.n_prompt * n_vocab);
  LmSession *s = NULL;

  g_assert_cmpint (lm_session_new (golden.model, &params, &s), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (s, golden.prompt, golden.n_prompt, logits), ==, LM_OK);
  lm_session_free (s);
  return logits;
}

static double
max_diff (const float *x, const float *y)
{
  gsize n = golden.n_prompt * lm_model_info (golden.model)->n_vocab;
  double m = 0;

  for (gsize i = 0; i < n; i++)
    m = fmax (m, fabs ((double) x[i] - y[i]));
  return m;
}

static void
test_weights_split_one_adapter (void)
{
  LmLora *halves = stack2 (golden.lora, 0.25f, golden.lora, 0.75f);
  g_autofree float *ref = prompt_logits (golden.lora);
  g_autofree float *got = prompt_logits (halves);
  g_autofree float *base = prompt_logits (NULL);

  g_assert_cmpuint (lm_lora_n_modules (halves), ==, lm_lora_n_modules (golden.lora));
  g_assert_cmpuint (lm_lora_module (halves, 0)->rank, ==, 2 * lm_lora_module (golden.lora, 0)->rank);
  g_assert_cmpfloat (max_diff (base, ref), >, 0.1);     /* the adapter matters */
  g_assert_cmpfloat (max_diff (got, ref), <, 1e-4);
  lm_lora_free (halves);
}

static void
test_attention_plus_ffn (void)
{
  LmLora *attn = synth (attn_stems), *ffn = synth (ffn_stems), *both = synth (all_stems);
  LmLora *stacked = stack2 (attn, 1.0f, ffn, 1.0f);
  LmLora *weighted = stack2 (attn, 0.5f, attn, 0.5f);
  g_autofree float *ref = prompt_logits (both);
  g_autofree float *got = prompt_logits (stacked);
  g_autofree float *attn_logits = prompt_logits (attn);
  g_autofree float *weighted_logits = prompt_logits (weighted);
  g_autofree float *base = prompt_logits (NULL);

  g_assert_cmpuint (lm_lora_n_modules (stacked), ==, 9);
  g_assert_cmpfloat (max_diff (base, ref), >, 0.05);
  g_assert_cmpfloat (max_diff (attn_logits, ref), >, 0.01);  /* the FFN part matters too */
  g_assert_cmpfloat (max_diff (got, ref), <, 1e-4);
  g_assert_cmpfloat (max_diff (weighted_logits, attn_logits), <, 1e-4);
  lm_lora_free (weighted);
  lm_lora_free (stacked);
  lm_lora_free (both);
  lm_lora_free (ffn);
  lm_lora_free (attn);
}

/* Which normalised state a module reads, as the model's forward pass does:
 * attention inputs, DeltaNet inputs, FFN inputs, or (others) their own. */
static guint
input_of (const LmLoraModule *m)
{
  switch (m->kind)
    {
    case LM_MODULE_ATTN_Q: case LM_MODULE_ATTN_K: case LM_MODULE_ATTN_V:
    case LM_MODULE_ATTN_QKV: case LM_MODULE_ATTN_GATE:
    case LM_MODULE_SSM_ALPHA: case LM_MODULE_SSM_BETA:
      return m->layer * 100;                 /* attn_norm(x) */
    case LM_MODULE_FFN_GATE: case LM_MODULE_FFN_UP:
    case LM_MODULE_FFN_GATE_SHEXP: case LM_MODULE_FFN_UP_SHEXP:
      return m->layer * 100 + 1;             /* post_attention_norm(x) */
    default:
      return m->layer * 100 + 2 + m->kind;
    }
}

static guint
distinct_inputs (const LmLora *lora)
{
  g_autoptr (GHashTable) seen = g_hash_table_new (NULL, NULL);

  for (gsize i = 0; i < lm_lora_n_modules (lora); i++)
    g_hash_table_add (seen, GUINT_TO_POINTER (input_of (lm_lora_module (lora, i)) + 1));
  return g_hash_table_size (seen);
}

static void
test_he_local_stack (void)
{
  LmLora *attn = synth (attn_stems), *ffn = synth (ffn_stems);
  const LmLora *loras[] = { attn, ffn, golden.lora };
  const float weights[] = { 1.0f, 0.8f, 0.5f };
  g_autoptr (GError) error = NULL;
  LmLora *stacked = ts_adapter_stack (loras, weights, 3, &error);
  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .track_error = TRUE, .n_threads = 2,
                              .params_preset = "fast" };
  g_autoptr (TsHeloraSession) helora = NULL;
  LmLora *saved = golden.lora;
  g_autofree gint32 *plain = NULL, *he = NULL;
  guint rows = golden.n_prompt + GOLDEN_STEPS - 1, inputs;
  TsHeloraStats stats;

  g_assert_no_error (error);
  inputs = distinct_inputs (stacked);
  g_assert_cmpuint (inputs, ==, 8);          /* 4 shared by 9 modules, 4 of the golden adapter */
  golden.lora = stacked;
  plain = golden_greedy (&golden, NULL);
  helora = ts_helora_session_new (stacked, &options, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (ts_helora_session_n_inputs (helora), ==, inputs);
  he = golden_greedy (&golden, helora);
  golden.lora = saved;
  g_assert_cmpmem (he, GOLDEN_STEPS * 4, plain, GOLDEN_STEPS * 4);
  ts_helora_session_get_stats (helora, &stats);
  g_test_message ("stacked: %zu modules, %u distinct h: %" G_GUINT64_FORMAT " encryptions, %"
                  G_GUINT64_FORMAT " module evaluations over %u tokens; max err %.3g of %.3g",
                  lm_lora_n_modules (stacked), inputs, stats.encryptions,
                  stats.module_evaluations, rows, stats.max_abs_delta_error,
                  stats.max_abs_delta_plain);
  g_assert_cmpuint (stats.encryptions, ==, (guint64) inputs * rows);
  g_assert_cmpuint (stats.module_evaluations, ==, (guint64) lm_lora_n_modules (stacked) * rows);
  g_assert_cmpfloat (stats.max_abs_delta_error, <, 1e-4 * stats.max_abs_delta_plain);
  ts_helora_session_free (g_steal_pointer (&helora));
  lm_lora_free (stacked);
  lm_lora_free (ffn);
  lm_lora_free (attn);
}

static void
test_refusals (void)
{
  const LmLora *none[] = { NULL };
  const float w[] = { NAN };
  const LmLora *one[] = { golden.lora };
  g_autoptr (GError) error = NULL;

  g_assert_null (ts_adapter_stack (none, w, 0, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);
  g_assert_null (ts_adapter_stack (one, w, 1, &error));
  g_assert_nonnull (error);
}

static void
test_describe (void)
{
  const char *ids[] = { "banking-qa", "code-review" };
  const float w[] = { 0.7f, 0.3f };
  g_autofree char *text = ts_adapter_stack_describe (ids, w, 2);

  g_assert_cmpstr (text, ==, "banking-qa ×0.70 + code-review ×0.30");
}

int
main (int argc, char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  golden_load (&golden);
  g_test_add_func ("/helora-stack/weights-split-one-adapter", test_weights_split_one_adapter);
  g_test_add_func ("/helora-stack/attention-plus-ffn", test_attention_plus_ffn);
  g_test_add_func ("/helora-stack/he-local", test_he_local_stack);
  g_test_add_func ("/helora-stack/refusals", test_refusals);
  g_test_add_func ("/helora-stack/describe", test_describe);
  status = g_test_run ();
  golden_clear (&golden);
  return status;
}
