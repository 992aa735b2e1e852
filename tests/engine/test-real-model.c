/* test-real-model.c: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, a real checkpoint as
 * users get it, against llama.cpp on the same file (tests/data/real/, made by
 * tools/make-real-model-refs.py). Skips, saying why, when the file is not in
 * the model cache.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <json-glib/json-glib.h>
#include <math.h>

#include "test-forward-util.h"
#include "ts-test-util.h"

#define REFS "real/qwen2.5-coder-0.5b-instruct-q4_k_m.json"

/* The attention (scores, softmax, exponential, weighted values), RoPE and
 * SwiGLU round as llama.cpp's CPU backend does: layer 0's attention output
 * is bit-identical to llama.cpp's at every position. The K-quant products
 * of ffn_down are not (llama.cpp's batched path sums a super-block's
 * integers before the float step, its decode path in 8 float lanes), and
 * Qwen2.5's outlier channels turn last-bit differences into flipped 8-bit
 * roundings, so the logits drift apart by up to ~0.4 over the layers.
 * llama.cpp's own two CPU paths (weight repacking on and off) agree at 155
 * of these 159 positions (97.5 %), this runtime at 154 to 156 depending on
 * the ISA's kernels: the bar sits below that noise floor, and a real error
 * drops it far lower (a rope leaving one pair unrotated: 25 %). */
#define MIN_ARGMAX_AGREEMENT 0.95

typedef struct {
  JsonParser *parser;
  JsonObject *root;
  LmModel *model;
  char *skip;
} Fixture;

static Fixture fx;

static void
fixture_load (void)
{
  g_autofree char *path = ts_test_data_path (REFS);
  fx.parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_file (fx.parser, path, &error));
  fx.root = json_node_get_object (json_parser_get_root (fx.parser));
  JsonObject *m = json_object_get_object_member (fx.root, "model");
  g_autofree char *file = ts_test_real_model (json_object_get_string_member (m, "file"),
                                              json_object_get_int_member (m, "bytes"), &fx.skip);
  if (file == NULL)
    return;
  char *msg = NULL;
  LmStatus st = lm_model_load (file, &fx.model, &msg);
  if (st != LM_OK)
    g_error ("loading %s: %s (%s)", file, lm_status_message (st), msg ? msg : "");
}

static int32_t *
ints_of (JsonArray *a, gsize *n)
{
  *n = json_array_get_length (a);
  int32_t *v = g_new (int32_t, *n);
  for (gsize i = 0; i < *n; i++)
    v[i] = (int32_t) json_array_get_int_element (a, (guint) i);
  return v;
}

static JsonObject *
prompt_named (const char *name)
{
  JsonArray *prompts = json_object_get_array_member (fx.root, "prompts");
  for (guint i = 0; i < json_array_get_length (prompts); i++)
    {
      JsonObject *p = json_array_get_object_element (prompts, i);
      if (g_strcmp0 (json_object_get_string_member (p, "name"), name) == 0)
        return p;
    }
  g_error ("no prompt %s in %s", name, REFS);
}

/* Largest |ours - llama.cpp| over the top-k logits llama.cpp recorded. */
static double
top_diff (const float *logits, JsonArray *top)
{
  double worst = 0.0;
  for (guint i = 0; i < json_array_get_length (top); i++)
    {
      JsonArray *pair = json_array_get_array_element (top, i);
      gint64 id = json_array_get_int_element (pair, 0);
      double d = fabs (logits[id] - json_array_get_double_element (pair, 1));
      worst = d > worst || isnan (d) ? d : worst;
    }
  return worst;
}

static gboolean
skipped (void)
{
  if (fx.model == NULL)
    g_test_skip (fx.skip);
  return fx.model == NULL;
}

/* Every position of the three prompts: argmax as llama.cpp's at >= 99 % of
 * them (counted over all prompts together); the logit error is reported. */
static void
test_logits (void)
{
  if (skipped ())
    return;
  uint32_t V = lm_model_info (fx.model)->n_vocab;
  const char *names[] = { "chat", "code", "prose" };
  gsize agree = 0, total = 0;
  double worst = 0.0;
  for (gsize k = 0; k < G_N_ELEMENTS (names); k++)
    {
      JsonObject *p = prompt_named (names[k]);
      gsize n, n_arg;
      g_autofree int32_t *ids = ints_of (json_object_get_array_member (p, "prompt_ids"), &n);
      g_autofree int32_t *want = ints_of (json_object_get_array_member (p, "argmax"), &n_arg);
      JsonArray *top = json_object_get_array_member (p, "top");
      g_assert_cmpuint (n_arg, ==, n);
      LmSession *s = golden_session (fx.model, 2, 64);
      g_autofree float *logits = prefill_all (s, ids, n);
      gsize here = 0;
      double err = 0.0;
      for (gsize t = 0; t < n; t++)
        {
          here += argmax (logits + t * V, V) == want[t];
          double d = top_diff (logits + t * V, json_array_get_array_element (top, (guint) t));
          err = d > err ? d : err;
        }
      g_test_message ("%s: %zu positions, argmax equal at %zu, max |diff| of top logits %.4g",
                      names[k], n, here, err);
      agree += here;
      total += n;
      worst = err > worst ? err : worst;
      lm_session_free (s);
    }
  g_test_message ("all: argmax equal at %zu of %zu positions (%.1f %%), max |diff| %.4g",
                  agree, total, 100.0 * agree / total, worst);
  g_assert_cmpfloat ((double) agree / total, >=, MIN_ARGMAX_AGREEMENT);
}

/* Greedy decoding of @name: must equal llama.cpp's tokens when @exact. */
static void
check_greedy (const char *name, gboolean exact)
{
  JsonObject *p = prompt_named (name);
  gsize n, n_want;
  g_autofree int32_t *ids = ints_of (json_object_get_array_member (p, "prompt_ids"), &n);
  g_autofree int32_t *want = ints_of (json_object_get_array_member (p, "greedy"), &n_want);
  uint32_t V = lm_model_info (fx.model)->n_vocab;
  LmSession *s = golden_session (fx.model, 2, 64);
  g_assert_cmpint (lm_session_prefill (s, ids, n, NULL), ==, LM_OK);
  gsize same = 0;
  while (same < n_want)
    {
      int32_t tok = argmax (lm_session_logits (s), V);
      if (tok != want[same])
        break;
      same++;
      g_assert_cmpint (lm_session_decode (s, tok), ==, LM_OK);
    }
  g_test_message ("%s: the first %zu of %zu greedy tokens equal llama.cpp's", name, same, n_want);
  lm_session_free (s);
  if (exact)
    g_assert_cmpuint (same, ==, n_want);
}

static void
test_greedy_chat (void)
{
  if (!skipped ())
    check_greedy ("chat", TRUE);
}

static void
test_greedy_others (void)
{
  if (skipped ())
    return;
  check_greedy ("code", FALSE);
  check_greedy ("prose", FALSE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  fixture_load ();
  g_test_add_func ("/engine/real/qwen2.5-coder-0.5b/logits", test_logits);
  g_test_add_func ("/engine/real/qwen2.5-coder-0.5b/greedy-chat", test_greedy_chat);
  g_test_add_func ("/engine/real/qwen2.5-coder-0.5b/greedy-others", test_greedy_others);
  int status = g_test_run ();
  lm_model_free (fx.model);
  g_free (fx.skip);
  g_clear_object (&fx.parser);
  return status;
}
