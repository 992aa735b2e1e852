/* test-lora.c: LoRA adapters (GGUF and PEFT) against the llama.cpp LoRA goldens,
 * the external-evaluation hook, and rejection of adapters that do not fit.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-forward-util.h"
#include "test-lora-util.h"
#include "ts-test-util.h"

#include <glib/gstdio.h>

#define MODEL "tiny-qwen35moe-f32"

/* The adapter of FORMAT.md 7.2: four modules, rank 8, factor 16/8. */
static void
check_modules (const LmLora *lora)
{
  g_assert_cmpuint (lm_lora_n_modules (lora), ==, 4);
  const char *names[] = { "blk.0.ssm_out.weight", "blk.1.ssm_out.weight",
                          "blk.2.ssm_out.weight", "blk.3.attn_output.weight" };
  for (size_t i = 0; i < G_N_ELEMENTS (names); i++)
    {
      int64_t index = lm_lora_find (lora, names[i]);
      g_assert_cmpint (index, >=, 0);
      const LmLoraModule *mod = lm_lora_module (lora, (size_t) index);
      g_assert_cmpuint (mod->rank, ==, 8);
      g_assert_cmpuint (mod->d_in, ==, 128);
      g_assert_cmpuint (mod->d_out, ==, 128);
      g_assert_cmpuint (mod->layer, ==, i);
      g_assert_cmpfloat (mod->scale, ==, 2.0f);
    }
}

/* Prefill logits against lora_logits_batched.bin, then greedy tokens. */
static void
check_against_goldens (const LmModel *m, LmSession *s, const char *what)
{
  gsize n_tok, n_gold;
  g_autofree int32_t *tokens = golden_ints (MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree float *gold = golden_floats (MODEL, "lora_logits_batched.bin", &n_gold);
  g_autofree float *logits = prefill_all (s, tokens, n_tok);
  assert_close (what, logits, gold, n_gold, LOGITS_TOL);
  lm_session_reset (s);
  run_greedy (m, s, MODEL, "lora_");
}

static void
test_adapter (gconstpointer data)
{
  const char *rel = data;
  LmModel *m = golden_model (MODEL);
  LmLora *lora = golden_lora_load (m, rel);
  check_modules (lora);
  LmSession *s = golden_session (m, 2, 64);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  check_against_goldens (m, s, rel);
  g_assert_cmpfloat (lm_session_timings (s)->ms[LM_STAGE_LORA_B], >, 0.0);
  lm_session_free (s);
  lm_lora_free (lora);
  lm_model_free (m);
}

/* Both formats describe the same adapter: identical A and B after the PEFT
 * column permutation. */
static void
test_formats_agree (void)
{
  LmModel *m = golden_model (MODEL);
  LmLora *a = golden_lora_load (m, "qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf");
  LmLora *b = golden_lora_load (m, "qwen35/" MODEL "/lora/peft");
  for (size_t i = 0; i < lm_lora_n_modules (a); i++)
    {
      const LmLoraModule *ma = lm_lora_module (a, i);
      int64_t j = lm_lora_find (b, ma->name);
      g_assert_cmpint (j, >=, 0);
      const LmLoraModule *mb = lm_lora_module (b, (size_t) j);
      g_assert_cmpuint (mb->rank, ==, ma->rank);
      g_assert_cmpfloat (mb->scale, ==, ma->scale);
      g_assert_cmpmem (ma->a, ma->rank * ma->d_in * 4, mb->a, mb->rank * mb->d_in * 4);
      g_assert_cmpmem (ma->b, ma->rank * ma->d_out * 4, mb->b, mb->rank * mb->d_out * 4);
    }
  lm_lora_free (a);
  lm_lora_free (b);
  lm_model_free (m);
}

typedef struct {
  unsigned calls;
  unsigned rows;
  int pool_size;   /* of the last call's pool, 0 for none */
} HookStats;

typedef struct {
  const LmLoraHookCall *call;
  const float *h;
  float *u;
} HookRows;

/* Row r of u = A·h for every token, in double. */
static void
hook_row (void *ctx, int r, int n)
{
  const HookRows *job = ctx;
  const LmLoraModule *mod = job->call->module;
  for (uint32_t t = 0; t < job->call->n_tokens; t++)
    {
      double sum = 0.0;
      for (uint32_t i = 0; i < mod->d_in; i++)
        sum += (double) mod->a[(size_t) r * mod->d_in + i] * job->h[(size_t) t * mod->d_in + i];
      job->u[(size_t) t * mod->rank + (size_t) r] = (float) sum;
    }
}

/* What an HE evaluator computes: u = A·h, here in double-precision plain C,
 * its rows spread over the session's pool as the local evaluator does. */
static LmStatus
plain_hook_cb (const LmLoraHookCall *call, const float *h, float *u, void *user_data)
{
  HookStats *stats = user_data;
  HookRows job = { call, h, u };
  stats->pool_size = call->pool != NULL ? lm_thread_pool_size (call->pool) : 0;
  lm_thread_pool_run (call->pool, hook_row, &job, (int) call->module->rank);
  stats->calls++;
  stats->rows += call->n_tokens;
  lm_timings_add (call->timings, LM_STAGE_EVALUATE, 0.25);
  return LM_OK;
}

static void
test_hook_equals_builtin (void)
{
  LmModel *m = golden_model (MODEL);
  LmLora *lora = golden_lora_load (m, "qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf");
  LmSession *s = golden_session (m, 2, 64);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  HookStats stats = { 0 };
  g_assert_cmpint (lm_session_set_lora_hook (s, LM_LORA_ALL_MODULES, plain_hook_cb, &stats), ==,
                   LM_OK);
  gsize n_tok;
  g_autofree int32_t *tokens = golden_ints (MODEL, "prompt_tokens.bin", &n_tok);
  g_autofree float *hooked = prefill_all (s, tokens, n_tok);
  g_assert_cmpuint (stats.calls, ==, 4);          /* one batch, four modules */
  g_assert_cmpint (stats.pool_size, ==, 2);       /* the session's two threads */
  g_assert_cmpuint (stats.rows, ==, 4 * n_tok);
  g_assert_cmpfloat (lm_session_timings (s)->ms[LM_STAGE_EVALUATE], ==, 1.0);
  g_assert_cmpint (lm_session_decode (s, tokens[0]), ==, LM_OK);
  g_assert_cmpuint (stats.calls, ==, 8);

  LmSession *plain = golden_session (m, 2, 64);
  g_assert_cmpint (lm_session_set_lora (plain, lora), ==, LM_OK);
  g_autofree float *builtin = prefill_all (plain, tokens, n_tok);
  assert_close ("hook vs built-in LoRA", hooked, builtin, n_tok * 1024, 1e-4);
  gsize n_gold;
  g_autofree float *gold = golden_floats (MODEL, "lora_logits_batched.bin", &n_gold);
  assert_close ("hook vs LoRA goldens", hooked, gold, n_gold, LOGITS_TOL);
  lm_session_free (plain);
  lm_session_free (s);
  lm_lora_free (lora);
  lm_model_free (m);
}

/* What the begin hook saw of each module, for the hook proper to check. */
typedef struct {
  HookStats hooks;
  unsigned begins;
  uint32_t begun_pos[64];
  float *begun_h[64];
  bool fail;
} BeginStats;

static LmStatus
begin_cb (const LmLoraHookCall *call, const float *h, void *user_data)
{
  BeginStats *b = user_data;
  g_assert_null (call->pool);
  g_assert_cmpuint (call->n_tokens, ==, 1);
  g_assert_cmpuint (call->module_index, <, G_N_ELEMENTS (b->begun_h));
  g_free (b->begun_h[call->module_index]);
  b->begun_h[call->module_index] = g_memdup2 (h, call->module->d_in * sizeof *h);
  b->begun_pos[call->module_index] = call->pos;
  b->begins++;
  return b->fail ? LM_ERR_IO : LM_OK;
}

/* The hook proper after a begin: in decode it gets the h its begin got. */
static LmStatus
hook_after_begin_cb (const LmLoraHookCall *call, const float *h, float *u, void *user_data)
{
  BeginStats *b = user_data;
  if (call->n_tokens == 1 && b->begins > 0)
    {
      g_assert_cmpuint (b->begun_pos[call->module_index], ==, call->pos);
      g_assert_cmpmem (b->begun_h[call->module_index], call->module->d_in * sizeof *h, h,
                       call->module->d_in * sizeof *h);
    }
  return plain_hook_cb (call, h, u, &b->hooks);
}

/* Begin hooks run in decode only, once per module and step, before the
 * hook proper with the same h; the logits are those of the hook alone; a
 * failing begin fails the step; one thread never begins. */
static void
test_begin_hook (void)
{
  LmModel *m = golden_model (MODEL);
  LmLora *lora = golden_lora_load (m, "qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf");
  gsize n_tok;
  g_autofree int32_t *tokens = golden_ints (MODEL, "prompt_tokens.bin", &n_tok);
  LmSession *begun = golden_session (m, 2, 64), *alone = golden_session (m, 2, 64);
  BeginStats b = { 0 };
  HookStats alone_stats = { 0 };

  g_assert_cmpint (lm_session_set_lora_begin_hook (NULL, 0, begin_cb, &b), ==,
                   LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_session_set_lora (begun, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora (alone, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_begin_hook (begun, 99, begin_cb, &b), ==,
                   LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_session_set_lora_hook (begun, LM_LORA_ALL_MODULES, hook_after_begin_cb, &b),
                   ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_begin_hook (begun, LM_LORA_ALL_MODULES, begin_cb, &b), ==,
                   LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (alone, LM_LORA_ALL_MODULES, plain_hook_cb,
                                             &alone_stats), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (begun, tokens, (uint32_t) n_tok - 3, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (alone, tokens, (uint32_t) n_tok - 3, NULL), ==, LM_OK);
  g_assert_cmpuint (b.begins, ==, 0);
  for (gsize t = n_tok - 3; t < n_tok; t++)
    {
      g_assert_cmpint (lm_session_decode (begun, tokens[t]), ==, LM_OK);
      g_assert_cmpint (lm_session_decode (alone, tokens[t]), ==, LM_OK);
      assert_close ("begin hooks vs the hook alone", lm_session_logits (begun),
                    lm_session_logits (alone), 1024, 0.0);
    }
  g_assert_cmpuint (b.begins, ==, 3 * lm_lora_n_modules (lora));
  g_assert_cmpuint (b.hooks.calls, ==, alone_stats.calls);

  b.fail = TRUE;
  g_assert_cmpint (lm_session_decode (begun, tokens[0]), ==, LM_ERR_HOOK);
  g_assert_cmpuint (b.begins, ==, 3 * lm_lora_n_modules (lora) + 1);

  LmSession *one = golden_session (m, 1, 64);
  BeginStats b1 = { 0 };
  g_assert_cmpint (lm_session_set_lora (one, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (one, LM_LORA_ALL_MODULES, hook_after_begin_cb, &b1),
                   ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_begin_hook (one, LM_LORA_ALL_MODULES, begin_cb, &b1), ==,
                   LM_OK);
  g_assert_cmpint (lm_session_prefill (one, tokens, 4, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (one, tokens[4]), ==, LM_OK);
  g_assert_cmpuint (b1.begins, ==, 0);
  g_assert_cmpuint (b1.hooks.calls, ==, 2 * lm_lora_n_modules (lora));

  for (gsize i = 0; i < G_N_ELEMENTS (b.begun_h); i++)
    g_free (b.begun_h[i]);
  lm_session_free (one);
  lm_session_free (begun);
  lm_session_free (alone);
  lm_lora_free (lora);
  lm_model_free (m);
}

static LmStatus
failing_hook_cb (const LmLoraHookCall *call, const float *h, float *u, void *user_data)
{
  return LM_ERR_IO;
}

static void
test_hook_failure (void)
{
  LmModel *m = golden_model (MODEL);
  LmLora *lora = golden_lora_load (m, "qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf");
  LmSession *s = golden_session (m, 1, 64);
  g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (s, 0, failing_hook_cb, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (s, 99, failing_hook_cb, NULL), ==,
                   LM_ERR_INVALID_ARGUMENT);
  gsize n_tok;
  g_autofree int32_t *tokens = golden_ints (MODEL, "prompt_tokens.bin", &n_tok);
  g_assert_cmpint (lm_session_prefill (s, tokens, 10, NULL), ==, LM_ERR_HOOK);
  g_assert_cmpuint (lm_session_pos (s), ==, 0);
  /* Hook-less first part, then a failing step: the session refuses to go on
   * until it is rewound, and the replay gives what a fresh session gives. */
  g_assert_cmpint (lm_session_set_lora_hook (s, 0, NULL, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (s, tokens, 10, NULL), ==, LM_ERR_INVALID_ARGUMENT);
  lm_session_reset (s);
  g_assert_cmpint (lm_session_prefill (s, tokens, 10, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_set_lora_hook (s, 0, failing_hook_cb, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (s, tokens[10]), ==, LM_ERR_HOOK);
  g_assert_cmpuint (lm_session_pos (s), ==, 10);
  g_assert_cmpint (lm_session_set_lora_hook (s, 0, NULL, NULL), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (s, tokens[10]), ==, LM_ERR_INVALID_ARGUMENT);
  g_assert_cmpint (lm_session_rewind (s, 10), ==, LM_OK);
  g_assert_cmpint (lm_session_decode (s, tokens[10]), ==, LM_OK);
  LmSession *fresh = golden_session (m, 1, 64);
  g_assert_cmpint (lm_session_set_lora (fresh, lora), ==, LM_OK);
  g_assert_cmpint (lm_session_prefill (fresh, tokens, 11, NULL), ==, LM_OK);
  assert_close ("replayed after a hook failure", lm_session_logits (s), lm_session_logits (fresh),
                1024, 0.0);
  lm_session_free (fresh);
  lm_session_free (s);
  lm_lora_free (lora);
  lm_model_free (m);
}

/* Adapters that do not fit the model are refused with a message naming why. */
static void
test_rejects (void)
{
  LmModel *m = golden_model (MODEL);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-lora-XXXXXX", NULL);
  g_assert_nonnull (dir);
  struct { const char *target; uint32_t d_in, rank, d_out; LmStatus want; const char *needle; } cases[] = {
    { "blk.3.attn_output.weight", 100, 8, 128, LM_ERR_SHAPE, "blk.3.attn_output.weight" },
    { "blk.3.attn_output.weight", 128, 8, 64, LM_ERR_SHAPE, "blk.3.attn_output.weight" },
    { "blk.0.attn_output.weight", 128, 8, 128, LM_ERR_SHAPE, "no such tensor" },
    { "blk.9.ssm_out.weight", 128, 8, 128, LM_ERR_SHAPE, "no such tensor" },
    { "blk.0.not_a_module.weight", 128, 8, 128, LM_ERR_UNSUPPORTED, "not_a_module" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *path = g_strdup_printf ("%s/bad%zu.gguf", dir, i);
      write_lora_gguf (path, cases[i].target, cases[i].d_in, cases[i].rank, cases[i].d_out);
      LmLora *lora = NULL;
      char *error = NULL;
      LmStatus st = lm_lora_load (m, path, 1.0f, &lora, &error);
      g_test_message ("case %zu: %s", i, error ? error : "(no message)");
      g_assert_cmpint (st, ==, cases[i].want);
      g_assert_null (lora);
      g_assert_nonnull (error);
      g_assert_nonnull (strstr (error, cases[i].needle));
      free (error);
      g_remove (path);
    }
  /* Truncated copies of the real adapter: an error, never a crash. */
  gsize len;
  g_autofree guint8 *real = ts_test_read_data ("qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf", &len);
  g_autofree char *cut = g_strdup_printf ("%s/cut.gguf", dir);
  const gsize sizes[] = { 0, 7, 100, len / 3, len - 1 };
  for (size_t i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      g_assert_true (g_file_set_contents (cut, (const char *) real, (gssize) sizes[i], NULL));
      LmLora *lora = NULL;
      char *error = NULL;
      g_assert_cmpint (lm_lora_load (m, cut, 1.0f, &lora, &error), !=, LM_OK);
      g_assert_null (lora);
      g_assert_nonnull (error);
      free (error);
    }
  g_remove (cut);
  /* A well-formed file of the same writer loads (so the cases above fail for
   * the reason they name). */
  g_autofree char *good = g_strdup_printf ("%s/good.gguf", dir);
  write_lora_gguf (good, "blk.3.attn_output.weight", 128, 4, 128);
  LmLora *lora = NULL;
  g_assert_cmpint (lm_lora_load (m, good, 1.0f, &lora, NULL), ==, LM_OK);
  g_assert_cmpfloat (lm_lora_module (lora, 0)->scale, ==, 16.0f / 4);
  lm_lora_free (lora);
  g_remove (good);
  g_rmdir (dir);
  lm_model_free (m);
}

/* PEFT folders: unsupported modules and bad shapes are named in the error;
 * a value-head-indexed module is permuted (FORMAT.md 5.3). */
static void
test_peft_rejects (void)
{
  LmModel *m = golden_model (MODEL);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-peft-XXXXXX", NULL);
  struct { const char *module; uint32_t d_in, d_out; LmStatus want; const char *needle; } cases[] = {
    { "layers.0.mlp.experts.3.gate_proj", 128, 64, LM_ERR_UNSUPPORTED, "experts.3" },
    { "layers.3.self_attn.o_proj", 128, 100, LM_ERR_SHAPE, "blk.3.attn_output.weight" },
    { "layers.1.self_attn.o_proj", 128, 128, LM_ERR_SHAPE, "no such tensor" },
  };
  for (size_t i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      write_lora_peft (dir, cases[i].module, cases[i].d_in, 4, cases[i].d_out);
      LmLora *lora = NULL;
      char *error = NULL;
      g_assert_cmpint (lm_lora_load (m, dir, 1.0f, &lora, &error), ==, cases[i].want);
      g_test_message ("case %zu: %s", i, error);
      g_assert_nonnull (strstr (error, cases[i].needle));
      free (error);
    }
  /* in_proj_z: B's rows are value heads; GGUF row block g = t*Hk + m comes
   * from HF block m*(Hv/Hk) + t (Hk = 2, Hv = 4, S = 32). */
  write_lora_peft (dir, "layers.0.linear_attn.in_proj_z", 128, 4, 128);
  LmLora *lora = NULL;
  g_assert_cmpint (lm_lora_load (m, dir, 1.0f, &lora, NULL), ==, LM_OK);
  const LmLoraModule *mod = lm_lora_module (lora, 0);
  g_assert_cmpstr (mod->name, ==, "blk.0.attn_gate.weight");
  uint32_t hf_of_gguf[4] = { 0, 2, 1, 3 };
  for (uint32_t g = 0; g < 4; g++)
    for (uint32_t row = 0; row < 32; row++)
      for (uint32_t r = 0; r < 4; r++)
        {
          size_t hf_index = ((size_t) (hf_of_gguf[g] * 32 + row)) * 4 + r;
          float want = 0.02f * (float) ((int) (hf_index % 7) - 3);
          g_assert_cmpfloat (mod->b[((size_t) g * 32 + row) * 4 + r], ==, want);
        }
  lm_lora_free (lora);
  g_autofree char *config = g_build_filename (dir, "adapter_config.json", NULL);
  g_autofree char *tensors = g_build_filename (dir, "adapter_model.safetensors", NULL);
  g_remove (tensors);
  char *error = NULL;
  g_assert_cmpint (lm_lora_load (m, dir, 1.0f, &lora, &error), !=, LM_OK);
  g_assert_nonnull (error);
  free (error);
  g_remove (config);
  g_rmdir (dir);
  lm_model_free (m);
}

/* A PEFT lora_alpha that is not a positive finite number, and weights that
 * hold a NaN or an infinity, are refused by name instead of scaling every
 * answer into garbage. */
static void
test_peft_rejects_bad_values (void)
{
  LmModel *m = golden_model (MODEL);
  g_autofree char *dir = g_dir_make_tmp ("tensafe-peft-XXXXXX", NULL);
  g_autofree char *config = g_build_filename (dir, "adapter_config.json", NULL);
  g_autofree char *tensors = g_build_filename (dir, "adapter_model.safetensors", NULL);
  const char *alphas[] = { "\"16\"", "[16]", "null", "0", "-8", "1e308", "{}" };

  for (size_t i = 0; i < G_N_ELEMENTS (alphas); i++)
    {
      write_lora_peft (dir, "layers.3.self_attn.o_proj", 128, 4, 128);
      g_autofree char *text = g_strdup_printf (
        "{\"peft_type\": \"LORA\", \"r\": 4, \"lora_alpha\": %s}", alphas[i]);
      g_assert_true (g_file_set_contents (config, text, -1, NULL));
      LmLora *lora = NULL;
      char *error = NULL;
      g_assert_cmpint (lm_lora_load (m, dir, 1.0f, &lora, &error), ==, LM_ERR_FORMAT);
      g_test_message ("lora_alpha %s: %s", alphas[i], error);
      g_assert_nonnull (strstr (error, "lora_alpha"));
      free (error);
    }
  /* a NaN in A, then an infinity in B (the values of write_lora_peft are
   * 0.01 in A and 0.02 in B, little-endian floats after the header) */
  const float poison[] = { NAN, INFINITY };
  const char *which[] = { "A holds", "B holds" };
  for (size_t i = 0; i < G_N_ELEMENTS (poison); i++)
    {
      write_lora_peft (dir, "layers.3.self_attn.o_proj", 128, 4, 128);
      gsize len;
      g_autofree char *bytes = NULL;
      g_assert_true (g_file_get_contents (tensors, &bytes, &len, NULL));
      guint64 header_len;
      memcpy (&header_len, bytes, 8);
      size_t at = 8 + GUINT64_FROM_LE (header_len) + (i == 0 ? 5 * 4 : 4 * 128 * 4 + 7 * 4);
      memcpy (bytes + at, &poison[i], 4);
      g_assert_true (g_file_set_contents (tensors, bytes, (gssize) len, NULL));
      LmLora *lora = NULL;
      char *error = NULL;
      g_assert_cmpint (lm_lora_load (m, dir, 1.0f, &lora, &error), ==, LM_ERR_FORMAT);
      g_test_message ("poisoned %s: %s", which[i], error);
      g_assert_nonnull (strstr (error, which[i]));
      free (error);
    }
  g_remove (tensors);
  g_remove (config);
  g_rmdir (dir);
  lm_model_free (m);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/engine/lora/gguf", "qwen35/" MODEL "/lora/tiny-qwen35moe-lora-f32.gguf",
                        test_adapter);
  g_test_add_data_func ("/engine/lora/peft", "qwen35/" MODEL "/lora/peft", test_adapter);
  g_test_add_func ("/engine/lora/formats-agree", test_formats_agree);
  g_test_add_func ("/engine/lora/hook-equals-builtin", test_hook_equals_builtin);
  g_test_add_func ("/engine/lora/hook-failure", test_hook_failure);
  g_test_add_func ("/engine/lora/begin-hook", test_begin_hook);
  g_test_add_func ("/engine/lora/rejects", test_rejects);
  g_test_add_func ("/engine/lora/peft-rejects", test_peft_rejects);
  g_test_add_func ("/engine/lora/peft-rejects-bad-values", test_peft_rejects_bad_values);
  return g_test_run ();
}
