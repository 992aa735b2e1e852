/* test-hf-goldens.c: the tiny models of tests/data/hf/ against Hugging Face
 * transformers (float32, eager attention) on the same token ids: every
 * position of a short ChatML prompt (one batched prefill, and token by
 * token), a 300-token prompt prefilled in steps of 64, and 32 greedy tokens.
 * The Q8_0 file is checked against transformers on its dequantized weights
 * (f32 activations) and against llama.cpp on the file itself (8-bit
 * activation blocks). Made by tools/make-hf-goldens.py; see each folder's
 * manifest.json for the versions and the measured differences.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>

#include "test-forward-util.h"
#include "ts-test-util.h"

/* Q8_0 with 8-bit activations against llama.cpp on the same file. Rounding
 * to 8 bits is discontinuous: a value within float noise of a rounding tie
 * goes either way in two correct implementations, and one such value moves
 * this model's logits by up to 0.07 (manifest.json observed.flips). The
 * bound allows two, and 90% of the argmaxes must agree. The f32-activation
 * check against transformers is the tight one. */
#define Q8_LLAMA_TOL 0.25
#define Q8_ARGMAX_MIN 0.9

typedef enum {
  HF_F32,   /* logits.bin, greedy_*.bin, long_*.bin from transformers */
  HF_Q8_0,  /* dequant_*.bin from transformers, llama_*.bin from llama.cpp */
} HfKind;

typedef struct {
  const char *name;  /* folder under tests/data/hf/, and its .gguf */
  HfKind kind;
  size_t n_lora_modules;  /* modules the adapter of lora/ adapts; 0: no lora/ */
} HfGolden;

static const HfGolden hf_goldens[] = {
  /* q/k/v bias, tied embeddings; LoRA: q/k/v/o_proj, gate/up/down_proj x 2 layers */
  { "qwen2", HF_F32, 14 },
  { "qwen2-q8_0", HF_Q8_0, 0 },
  /* per-head q/k RMSNorm, untied; LoRA as qwen2 */
  { "qwen3", HF_F32, 14 },
  /* 16 experts, 4 routed, normalised weights; LoRA: q/k/v/o_proj only (the
   * experts are 3-D tensors no adapter may target, see test_lora_experts) */
  { "qwen3moe", HF_F32, 8 },
  /* Gated DeltaNet + gated attention, tied; LoRA: in_proj_qkv/z/a/b and
   * out_proj x 3, q/k/v/o_proj x 1, gate/up/down_proj x 4 */
  { "qwen35", HF_F32, 31 },
  /* the same with routed + shared experts; LoRA: 2 DeltaNet layers, 1
   * attention layer, the shared expert's gate/up/down_proj x 3 */
  { "qwen35moe", HF_F32, 23 },
};

/* Rank and lora_alpha of every lora/ adapter (tools/make-hf-lora-goldens.py). */
#define LORA_RANK 4
#define LORA_FACTOR (8.0f / LORA_RANK)
/* The adapters move the logits by several units; less than this and the
 * LoRA checks could not tell an adapter that is ignored. */
#define LORA_MIN_EFFECT 0.5

static void *
hf_read (const char *model, const char *file, gsize elem, gsize *count)
{
  g_autofree char *rel = g_strdup_printf ("hf/%s/%s", model, file);
  gsize len = 0;
  guint8 *data = ts_test_read_data (rel, &len);
  g_assert_cmpuint (len % elem, ==, 0);
  *count = len / elem;
  return data;
}

static float *
hf_floats (const char *model, const char *file, gsize *count)
{
  return hf_read (model, file, sizeof (float), count);
}

static int32_t *
hf_ints (const char *model, const char *file, gsize *count)
{
  return hf_read (model, file, sizeof (int32_t), count);
}

/* Loads hf/@name/@name.gguf; on error fails the test with the loader's
 * message (an architecture this runtime lacks is a failure, not a skip). */
static LmModel *
hf_model (const char *name)
{
  g_autofree char *rel = g_strdup_printf ("hf/%s/%s.gguf", name, name);
  g_autofree char *path = ts_test_data_path (rel);
  LmModel *m = NULL;
  char *error = NULL;
  LmStatus st = lm_model_load (path, &m, &error);
  if (st != LM_OK)
    g_test_fail_printf ("loading %s: %s (%s)", path, lm_status_message (st),
                        error ? error : "no message");
  free (error);
  return m;
}

static LmSession *
hf_session (const LmModel *m, bool exact_activations)
{
  LmSessionParams p = { .n_ctx = 512, .n_batch = 64, .n_threads = 2,
                        .exact_activations = exact_activations, .backend = GOLDEN_BACKEND };
  LmSession *s = NULL;
  char *error = NULL;
  LmStatus st = lm_session_new_full (m, &p, &s, &error);
  if (st != LM_OK)
    g_error ("session: %s (%s)", lm_status_message (st), error ? error : "");
  return s;
}

static uint32_t
n_vocab (const LmModel *m)
{
  return lm_model_info (m)->n_vocab;
}

/* Whether @file's @n floats are @rows rows of @m's vocabulary; fails the
 * test if not (assertions do not stop a test here, see main()). */
static gboolean
has_rows (const LmModel *m, const char *file, gsize n, gsize rows)
{
  if (n == rows * n_vocab (m))
    return TRUE;
  g_test_fail_printf ("%s holds %zu floats, not %zu rows of %u", file, n, rows, n_vocab (m));
  return FALSE;
}

/* One check's data: @name's model, a prompt, reference logits with one row
 * per prompt token (or per @rows), and a session. */
typedef struct {
  LmModel *m;
  int32_t *tokens;
  gsize n_tok;
  float *gold;
  gsize n_gold;
  LmSession *s;
} HfCase;

static void
hf_case_close (HfCase *c)
{
  if (c->s != NULL)
    lm_session_free (c->s);
  lm_model_free (c->m);
  g_free (c->tokens);
  g_free (c->gold);
  memset (c, 0, sizeof *c);
}

/* Fills @c; FALSE (with the test failed and @c empty) when the model does
 * not load or @gold_file has the wrong size. @rows 0: one row per token. */
static gboolean
hf_case_open (HfCase *c, const char *name, const char *tokens_file, const char *gold_file,
              gsize rows, bool exact_activations)
{
  memset (c, 0, sizeof *c);
  c->m = hf_model (name);
  if (c->m == NULL)
    return FALSE;
  c->tokens = hf_ints (name, tokens_file, &c->n_tok);
  c->gold = hf_floats (name, gold_file, &c->n_gold);
  if (!has_rows (c->m, gold_file, c->n_gold, rows != 0 ? rows : c->n_tok))
    {
      hf_case_close (c);
      return FALSE;
    }
  c->s = hf_session (c->m, exact_activations);
  return TRUE;
}

/* The short prompt in one prefill: every position's logits. */
static void
test_prefill (gconstpointer data)
{
  const char *name = data;
  HfCase c;
  if (!hf_case_open (&c, name, "prompt_tokens.bin", "logits.bin", 0, false))
    return;
  uint32_t V = n_vocab (c.m);
  g_autofree float *logits = prefill_all (c.s, c.tokens, c.n_tok);
  g_autofree char *what = g_strdup_printf ("%s batched prefill vs transformers", name);
  assert_close (what, logits, c.gold, c.n_gold, LOGITS_TOL);
  assert_close ("last logits", lm_session_logits (c.s), c.gold + (c.n_tok - 1) * V, V, LOGITS_TOL);
  hf_case_close (&c);
}

/* The short prompt one token at a time: the decode path at every position. */
static void
test_token_by_token (gconstpointer data)
{
  const char *name = data;
  HfCase c;
  if (!hf_case_open (&c, name, "prompt_tokens.bin", "logits.bin", 0, false))
    return;
  double worst = decode_max_diff (c.s, c.tokens, c.n_tok, c.gold);
  g_test_message ("%s token-by-token vs transformers: max abs diff %.3g", name, worst);
  g_assert_cmpfloat (worst, <=, LOGITS_TOL);
  hf_case_close (&c);
}

/* Prefill, then one step per token of @gold, fed @gold's tokens (so that
 * one miss does not hide the rest): returns how many argmaxes equal @gold;
 * *worst receives the largest logits difference from @glog's rows (0 when
 * @glog is NULL). */
static gsize
greedy_agreement (LmSession *s, const int32_t *prompt, gsize n_prompt, const int32_t *gold,
                  gsize n_gold, const float *glog, double *worst)
{
  uint32_t V = n_vocab (lm_session_model (s));
  g_assert_cmpint (lm_session_prefill (s, prompt, n_prompt, NULL), ==, LM_OK);
  gsize same = 0;
  *worst = 0.0;
  for (gsize k = 0; k < n_gold; k++)
    {
      const float *logits = lm_session_logits (s);
      if (glog != NULL)
        {
          double err = max_abs_diff (logits, glog + k * V, V);
          *worst = err > *worst ? err : *worst;
        }
      same += argmax (logits, V) == gold[k];
      g_assert_cmpint (lm_session_decode (s, gold[k]), ==, LM_OK);
    }
  return same;
}

/* Of @n rows of @a and @b, how many have the same argmax. */
static gsize
argmax_agreement (const float *a, const float *b, gsize n, uint32_t V)
{
  gsize same = 0;
  for (gsize t = 0; t < n; t++)
    same += argmax (a + t * V, V) == argmax (b + t * V, V);
  return same;
}

static void
test_greedy (gconstpointer data)
{
  const char *name = data;
  gsize n_gold;
  g_autofree int32_t *gold = hf_ints (name, "greedy_tokens.bin", &n_gold);
  HfCase c;
  if (!hf_case_open (&c, name, "prompt_tokens.bin", "greedy_logits.bin", n_gold, false))
    return;
  double worst;
  gsize same = greedy_agreement (c.s, c.tokens, c.n_tok, gold, n_gold, c.gold, &worst);
  g_test_message ("%s greedy vs transformers: %zu/%zu tokens identical, logits max abs diff %.3g",
                  name, same, n_gold, worst);
  g_assert_cmpuint (same, ==, n_gold);
  g_assert_cmpfloat (worst, <=, LOGITS_TOL);
  hf_case_close (&c);
}

/* 300 tokens in steps of 64: the rows the reference kept (every 10th and
 * the last position). */
static void
test_long_prompt (gconstpointer data)
{
  const char *name = data;
  gsize n_pos;
  g_autofree int32_t *positions = hf_ints (name, "long_positions.bin", &n_pos);
  HfCase c;
  if (!hf_case_open (&c, name, "long_prompt_tokens.bin", "long_logits.bin", n_pos, false))
    return;
  uint32_t V = n_vocab (c.m);
  g_autofree float *logits = prefill_all (c.s, c.tokens, c.n_tok);
  double worst = 0.0;
  for (gsize i = 0; i < n_pos; i++)
    {
      if (positions[i] < 0 || (gsize) positions[i] >= c.n_tok)
        {
          g_test_fail_printf ("long_positions.bin: %d is not a position of the prompt", positions[i]);
          break;
        }
      double err = max_abs_diff (logits + (gsize) positions[i] * V, c.gold + i * V, V);
      worst = err > worst ? err : worst;
    }
  g_test_message ("%s long prompt (%zu tokens, %zu rows) vs transformers: max abs diff %.3g",
                  name, c.n_tok, n_pos, worst);
  g_assert_cmpfloat (worst, <=, LOGITS_TOL);
  hf_case_close (&c);
}

/* Q8_0 with f32 activations: transformers on the dequantized weights. */
static void
test_q8_dequant (gconstpointer data)
{
  const char *name = data;
  gsize n_greedy;
  g_autofree int32_t *greedy = hf_ints (name, "dequant_greedy_tokens.bin", &n_greedy);
  HfCase c;
  if (!hf_case_open (&c, name, "prompt_tokens.bin", "dequant_logits.bin", 0, true))
    return;
  g_autofree float *logits = prefill_all (c.s, c.tokens, c.n_tok);
  g_autofree char *what = g_strdup_printf ("%s f32 activations vs transformers (dequantized)", name);
  assert_close (what, logits, c.gold, c.n_gold, LOGITS_TOL);
  lm_session_reset (c.s);
  double worst;
  gsize same = greedy_agreement (c.s, c.tokens, c.n_tok, greedy, n_greedy, NULL, &worst);
  g_test_message ("%s: %zu/%zu greedy tokens identical", what, same, n_greedy);
  g_assert_cmpuint (same, ==, n_greedy);
  hf_case_close (&c);
}

/* Q8_0 with 8-bit activation blocks: llama.cpp on the same file. */
static void
test_q8_llama (gconstpointer data)
{
  const char *name = data;
  gsize n_greedy;
  g_autofree int32_t *greedy = hf_ints (name, "llama_greedy_tokens.bin", &n_greedy);
  HfCase c;
  if (!hf_case_open (&c, name, "prompt_tokens.bin", "llama_logits.bin", 0, false))
    return;
  g_autofree float *logits = prefill_all (c.s, c.tokens, c.n_tok);
  g_autofree char *what = g_strdup_printf ("%s 8-bit activations vs llama.cpp", name);
  assert_close (what, logits, c.gold, c.n_gold, Q8_LLAMA_TOL);
  gsize agree = argmax_agreement (logits, c.gold, c.n_tok, n_vocab (c.m));
  lm_session_reset (c.s);
  double worst;
  gsize same = greedy_agreement (c.s, c.tokens, c.n_tok, greedy, n_greedy, NULL, &worst);
  g_test_message ("%s: argmax %zu/%zu prompt positions, %zu/%zu greedy steps", what, agree,
                  c.n_tok, same, n_greedy);
  g_assert_cmpfloat ((double) agree / c.n_tok, >=, Q8_ARGMAX_MIN);
  g_assert_cmpfloat ((double) same / n_greedy, >=, Q8_ARGMAX_MIN);
  hf_case_close (&c);
}

/* The adapter of hf/@name/lora/ in @form: "gguf" (@name-lora.gguf) or
 * "peft" (the peft/ folder), at user scale 1; NULL after failing the test. */
static LmLora *
hf_lora (const LmModel *m, const char *name, const char *form)
{
  g_autofree char *rel = g_str_equal (form, "gguf")
                           ? g_strdup_printf ("hf/%s/lora/%s-lora.gguf", name, name)
                           : g_strdup_printf ("hf/%s/lora/peft", name);
  g_autofree char *path = ts_test_data_path (rel);
  LmLora *lora = NULL;
  char *error = NULL;
  LmStatus st = lm_lora_load (m, path, 1.0f, &lora, &error);
  if (st != LM_OK)
    g_test_fail_printf ("loading %s: %s (%s)", path, lm_status_message (st),
                        error ? error : "no message");
  free (error);
  return lora;
}

/* Every module at rank 4 with factor alpha/r = 2, taken from the file. */
static void
check_lora_modules (const HfGolden *golden, const LmLora *lora, const char *form)
{
  g_test_message ("%s %s adapter: %zu modules", golden->name, form, lm_lora_n_modules (lora));
  g_assert_cmpuint (lm_lora_n_modules (lora), ==, golden->n_lora_modules);
  for (size_t i = 0; i < lm_lora_n_modules (lora); i++)
    {
      const LmLoraModule *mod = lm_lora_module (lora, i);
      g_assert_cmpuint (mod->rank, ==, LORA_RANK);
      g_assert_cmpfloat (mod->scale, ==, LORA_FACTOR);
    }
}

/* transformers + PEFT: every position of the short prompt in one prefill,
 * and 32 greedy steps (tokens identical, logits within LOGITS_TOL). */
static void
check_lora_run (const LmModel *m, const LmLora *lora, const char *name, const char *what,
                LmLoraHookFunc hook, void *hook_data)
{
  gsize n_tok, n_gold, n_base, n_greedy, n_glog;
  g_autofree int32_t *tokens = hf_ints (name, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = hf_floats (name, "lora/logits.bin", &n_gold);
  g_autofree float *base = hf_floats (name, "logits.bin", &n_base);
  g_autofree int32_t *greedy = hf_ints (name, "lora/greedy_tokens.bin", &n_greedy);
  g_autofree float *glog = hf_floats (name, "lora/greedy_logits.bin", &n_glog);
  if (!has_rows (m, "lora/logits.bin", n_gold, n_tok) || !has_rows (m, "logits.bin", n_base, n_tok)
      || !has_rows (m, "lora/greedy_logits.bin", n_glog, n_greedy))
    return;
  g_assert_cmpfloat (max_abs_diff (gold, base, n_gold), >=, LORA_MIN_EFFECT);
  LmSession *s = hf_session (m, false);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  if (hook != NULL)
    g_assert_cmpint (lm_session_set_lora_hook (s, LM_LORA_ALL_MODULES, hook, hook_data), ==, LM_OK);
  g_autofree float *logits = prefill_all (s, tokens, n_tok);
  g_autofree char *prefill_what = g_strdup_printf ("%s prefill vs transformers + PEFT", what);
  assert_close (prefill_what, logits, gold, n_gold, LOGITS_TOL);
  lm_session_reset (s);
  double worst;
  gsize same = greedy_agreement (s, tokens, n_tok, greedy, n_greedy, glog, &worst);
  g_test_message ("%s greedy vs transformers + PEFT: %zu/%zu tokens identical, logits max abs "
                  "diff %.3g", what, same, n_greedy, worst);
  g_assert_cmpuint (same, ==, n_greedy);
  g_assert_cmpfloat (worst, <=, LOGITS_TOL);
  lm_session_free (s);
}

static void
test_lora_form (const HfGolden *golden, const char *form)
{
  LmModel *m = hf_model (golden->name);
  if (m == NULL)
    return;
  LmLora *lora = hf_lora (m, golden->name, form);
  if (lora != NULL)
    {
      check_lora_modules (golden, lora, form);
      g_autofree char *what = g_strdup_printf ("%s LoRA (%s)", golden->name, form);
      check_lora_run (m, lora, golden->name, what, NULL, NULL);
    }
  lm_lora_free (lora);
  lm_model_free (m);
}

static void
test_lora_gguf (gconstpointer data)
{
  test_lora_form (data, "gguf");
}

static void
test_lora_peft (gconstpointer data)
{
  test_lora_form (data, "peft");
}

/* The two files were made apart (PEFT's save_pretrained, llama.cpp's
 * converter, which reorders Qwen3.5's value heads itself): loaded, they must
 * be one adapter. */
static void
test_lora_forms_agree (gconstpointer data)
{
  const HfGolden *golden = data;
  LmModel *m = hf_model (golden->name);
  if (m == NULL)
    return;
  LmLora *gguf = hf_lora (m, golden->name, "gguf"), *peft = hf_lora (m, golden->name, "peft");
  if (gguf != NULL && peft != NULL)
    {
      g_assert_cmpuint (lm_lora_n_modules (gguf), ==, lm_lora_n_modules (peft));
      for (size_t i = 0; i < lm_lora_n_modules (gguf); i++)
        {
          const LmLoraModule *a = lm_lora_module (gguf, i);
          int64_t j = lm_lora_find (peft, a->name);
          g_assert_cmpint (j, >=, 0);
          if (j < 0)
            continue;
          const LmLoraModule *b = lm_lora_module (peft, (size_t) j);
          g_assert_cmpuint (b->rank, ==, a->rank);
          g_assert_cmpfloat (b->scale, ==, a->scale);
          g_assert_cmpmem (a->a, a->rank * a->d_in * 4, b->a, b->rank * b->d_in * 4);
          g_assert_cmpmem (a->b, a->rank * a->d_out * 4, b->b, b->rank * b->d_out * 4);
        }
    }
  lm_lora_free (gguf);
  lm_lora_free (peft);
  lm_model_free (m);
}

typedef struct {
  unsigned calls;
} HookCount;

/* The HE-LoRA path: u = A·h computed outside the engine from the module's A. */
static LmStatus
external_a_times_h (const LmLoraHookCall *call, const float *h, float *u, void *user_data)
{
  HookCount *count = user_data;
  lora_hook_a_times_h (call, h, u);
  count->calls++;
  return LM_OK;
}

/* The PEFT adapter with every A·h evaluated by a hook: the same reference. */
static void
test_lora_hook (gconstpointer data)
{
  const HfGolden *golden = data;
  LmModel *m = hf_model (golden->name);
  if (m == NULL)
    return;
  LmLora *lora = hf_lora (m, golden->name, "peft");
  if (lora != NULL)
    {
      HookCount count = { 0 };
      g_autofree char *what = g_strdup_printf ("%s LoRA (peft, A*h by a hook)", golden->name);
      check_lora_run (m, lora, golden->name, what, external_a_times_h, &count);
      /* Two prefills (one batch each) and 32 decode steps, each module once per call. */
      g_assert_cmpuint (count.calls, ==, (2 + 32) * golden->n_lora_modules);
    }
  lm_lora_free (lora);
  lm_model_free (m);
}

/* transformers keeps a MoE layer's routed experts in 3-D tensors
 * (mlp.experts.gate_up_proj, down_proj), which PEFT adapts through
 * target_parameters; the runtime adapts 2-D projections only, so an adapter
 * with such tensors is refused whole, naming one, even though its attention
 * modules would fit. */
static void
test_lora_experts (gconstpointer data)
{
  const char *name = data;
  LmModel *m = hf_model (name);
  if (m == NULL)
    return;
  g_autofree char *rel = g_strdup_printf ("hf/%s/lora/peft-experts", name);
  g_autofree char *path = ts_test_data_path (rel);
  LmLora *lora = NULL;
  char *error = NULL;
  LmStatus st = lm_lora_load (m, path, 1.0f, &lora, &error);
  g_test_message ("%s: %s", rel, error ? error : "(no message)");
  g_assert_cmpint (st, ==, LM_ERR_UNSUPPORTED);
  g_assert_null (lora);
  g_assert_nonnull (error);
  g_assert_nonnull (error ? strstr (error, ".mlp.experts.") : NULL);
  g_assert_nonnull (error ? strstr (error, "routed experts") : NULL);
  free (error);
  lm_lora_free (lora);
  lm_model_free (m);
}

static void
add_test_data (const char *name, const char *what, gconstpointer data, GTestDataFunc fn)
{
  g_autofree char *path = g_strdup_printf ("/engine/hf/%s/%s", name, what);
  g_test_add_data_func (path, data, fn);
}

static void
add_test (const char *name, const char *what, GTestDataFunc fn)
{
  add_test_data (name, what, name, fn);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* One model's failure must not hide how the others fare. */
  g_test_set_nonfatal_assertions ();
  for (size_t i = 0; i < G_N_ELEMENTS (hf_goldens); i++)
    {
      const char *name = hf_goldens[i].name;
      if (hf_goldens[i].kind == HF_Q8_0)
        {
          add_test (name, "dequantized", test_q8_dequant);
          add_test (name, "llama", test_q8_llama);
          continue;
        }
      add_test (name, "prefill", test_prefill);
      add_test (name, "token-by-token", test_token_by_token);
      add_test (name, "greedy", test_greedy);
      add_test (name, "long-prompt", test_long_prompt);
      if (hf_goldens[i].n_lora_modules == 0)
        continue;
      add_test_data (name, "lora-gguf", &hf_goldens[i], test_lora_gguf);
      add_test_data (name, "lora-peft", &hf_goldens[i], test_lora_peft);
      add_test_data (name, "lora-forms-agree", &hf_goldens[i], test_lora_forms_agree);
      add_test_data (name, "lora-hook", &hf_goldens[i], test_lora_hook);
    }
  add_test ("qwen3moe", "lora-experts-refused", test_lora_experts);
  return g_test_run ();
}
