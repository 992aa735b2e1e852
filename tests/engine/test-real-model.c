/* test-real-model.c: Qwen2.5-Coder-0.5B-Instruct Q4_K_M, a real checkpoint as
 * users get it, against llama.cpp on the same file (tests/data/real/, made by
 * tools/make-real-model-refs.py). Skips, saying why, when the file is not in
 * the model cache.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>

#include "test-forward-util.h"
#include "ts-test-util.h"

#define REFS "real/qwen2.5-coder-0.5b-instruct-q4_k_m.json"

/* Every product, the attention, RoPE and SwiGLU round as llama.cpp's CPU
 * backend (its AVX-512 build, default settings: Q4_K weights repacked,
 * Q6_K batches in its tiled kernel) does, on the AVX-512 and on the AVX2
 * kernels: the logits equal llama.cpp's as far as the reference file
 * prints them (6 significant digits), at every prompt position and every
 * greedy step. A last-bit difference anywhere (a product summed in
 * another order) shows as ~0.3 in the logits after 24 layers, through
 * Qwen2.5's outlier channels, and flips a few of these 159 argmaxes. */
#define MIN_ARGMAX_AGREEMENT 0.99
/* The reference prints 6 significant digits. */
#define PRINTED_REL 6e-6

typedef struct {
  JsonParser *parser;
  JsonObject *root;
  LmModel *model;
  char *path;     /* the model file, when it is there */
  char *skip;
} Fixture;

static Fixture fx;

/* The kernel sets the checks run on: each must follow llama.cpp. */
static const struct {
  LmIsa isa;
  const char *name;
} isas[] = { { LM_ISA_AVX512, "avx512" }, { LM_ISA_AVX2, "avx2" } };

/* A session on @isa's kernels, or NULL (the test skipped) without them. */
static LmSession *
isa_session (LmIsa isa)
{
  const LmKernels *kernels = lm_kernels_for_isa (isa);
  if (kernels == NULL)
    {
      g_test_skip ("this CPU lacks these kernels");
      return NULL;
    }
  LmSession *s = golden_session (fx.model, 2, 64);
  s->kernels = kernels;
  return s;
}

static void
fixture_load (void)
{
  g_autofree char *path = ts_test_data_path (REFS);
  fx.parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  g_assert_true (json_parser_load_from_file (fx.parser, path, &error));
  fx.root = json_node_get_object (json_parser_get_root (fx.parser));
  JsonObject *m = json_object_get_object_member (fx.root, "model");
  fx.path = ts_test_real_model (json_object_get_string_member (m, "file"),
                                json_object_get_int_member (m, "bytes"), &fx.skip);
  if (fx.path == NULL)
    return;
  char *msg = NULL;
  LmStatus st = lm_model_load (fx.path, &fx.model, &msg);
  if (st != LM_OK)
    g_error ("loading %s: %s (%s)", fx.path, lm_status_message (st), msg ? msg : "");
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

/* Largest |ours - llama.cpp| over the top-k logits llama.cpp recorded;
 * *beyond counts those off by more than the printing can explain. */
static double
top_diff (const float *logits, JsonArray *top, gsize *beyond)
{
  double worst = 0.0;
  for (guint i = 0; i < json_array_get_length (top); i++)
    {
      JsonArray *pair = json_array_get_array_element (top, i);
      gint64 id = json_array_get_int_element (pair, 0);
      double want = json_array_get_double_element (pair, 1);
      double d = fabs (logits[id] - want);
      worst = d > worst || isnan (d) ? d : worst;
      *beyond += !(d <= PRINTED_REL * fabs (want) + 1e-6);
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

/* Every position of the three prompts on @isa's kernels: argmax as
 * llama.cpp's at >= 99 % of them (counted over all prompts together), the
 * recorded top logits equal to its as printed. */
static void
test_logits (gconstpointer data)
{
  if (skipped ())
    return;
  uint32_t V = lm_model_info (fx.model)->n_vocab;
  const char *names[] = { "chat", "code", "prose" };
  gsize agree = 0, total = 0, beyond = 0;
  double worst = 0.0;
  for (gsize k = 0; k < G_N_ELEMENTS (names); k++)
    {
      JsonObject *p = prompt_named (names[k]);
      gsize n, n_arg;
      g_autofree int32_t *ids = ints_of (json_object_get_array_member (p, "prompt_ids"), &n);
      g_autofree int32_t *want = ints_of (json_object_get_array_member (p, "argmax"), &n_arg);
      JsonArray *top = json_object_get_array_member (p, "top");
      g_assert_cmpuint (n_arg, ==, n);
      LmSession *s = isa_session (GPOINTER_TO_INT (data));
      if (s == NULL)
        return;
      g_autofree float *logits = prefill_all (s, ids, n);
      gsize here = 0;
      double err = 0.0;
      for (gsize t = 0; t < n; t++)
        {
          here += argmax (logits + t * V, V) == want[t];
          double d = top_diff (logits + t * V, json_array_get_array_element (top, (guint) t), &beyond);
          err = d > err ? d : err;
        }
      g_test_message ("%s: %zu positions, argmax equal at %zu, max |diff| of top logits %.4g",
                      names[k], n, here, err);
      agree += here;
      total += n;
      worst = err > worst ? err : worst;
      lm_session_free (s);
    }
  g_test_message ("all: argmax equal at %zu of %zu positions (%.1f %%), max |diff| %.4g; "
                  "%zu top logits off by more than the printed digits",
                  agree, total, 100.0 * agree / total, worst, beyond);
  g_assert_cmpfloat ((double) agree / total, >=, MIN_ARGMAX_AGREEMENT);
  g_assert_cmpuint (beyond, ==, 0);
}

/* A margin below this between llama.cpp's two largest logits is a near-tie
 * that any rounding difference may decide either way (last bits grow to
 * ~0.3 in the logits, see above); the command-line check, which runs on
 * the best kernels with its own session settings, tolerates a divergence
 * there. A real error moves the logits by several units. */
#define NEAR_TIE 0.5

/* Free-running greedy decoding of @name: the number of leading tokens equal
 * to llama.cpp's. */
static gsize
greedy_prefix (JsonObject *p, const int32_t *want, gsize n_want, LmIsa isa)
{
  gsize n;
  g_autofree int32_t *ids = ints_of (json_object_get_array_member (p, "prompt_ids"), &n);
  uint32_t V = lm_model_info (fx.model)->n_vocab;
  LmSession *s = isa_session (isa);
  g_assert_cmpint (lm_session_prefill (s, ids, n, NULL), ==, LM_OK);
  gsize same = 0;
  while (same < n_want && argmax (lm_session_logits (s), V) == want[same])
    g_assert_cmpint (lm_session_decode (s, want[same++]), ==, LM_OK);
  lm_session_free (s);
  return same;
}

/* Greedy decoding of @name on @isa's kernels, step by step with
 * llama.cpp's tokens fed back (decode path, one token at a time): every
 * step's argmax must be llama.cpp's token, near-ties included, and so
 * free-running decoding gives all of its tokens. */
static void
check_greedy (const char *name, LmIsa isa)
{
  JsonObject *p = prompt_named (name);
  gsize n, n_want;
  g_autofree int32_t *ids = ints_of (json_object_get_array_member (p, "prompt_ids"), &n);
  g_autofree int32_t *want = ints_of (json_object_get_array_member (p, "greedy"), &n_want);
  JsonArray *margin = json_object_get_array_member (p, "greedy_margin");
  uint32_t V = lm_model_info (fx.model)->n_vocab;
  LmSession *s = isa_session (isa);
  if (s == NULL)
    return;
  g_assert_cmpint (lm_session_prefill (s, ids, n, NULL), ==, LM_OK);
  gsize ties = 0;
  for (gsize k = 0; k < n_want; k++)
    {
      ties += json_array_get_double_element (margin, (guint) k) < NEAR_TIE;
      if (argmax (lm_session_logits (s), V) != want[k])
        g_error ("%s: step %zu chose %d, llama.cpp %d (its margin %.3g)", name, k,
                 argmax (lm_session_logits (s), V), want[k],
                 json_array_get_double_element (margin, (guint) k));
      g_assert_cmpint (lm_session_decode (s, want[k]), ==, LM_OK);
    }
  lm_session_free (s);
  gsize same = greedy_prefix (p, want, n_want, isa);
  g_test_message ("%s: all %zu greedy steps chose llama.cpp's token (%zu near-ties); "
                  "free-running, the first %zu tokens are identical", name, n_want, ties, same);
  g_assert_cmpuint (same, ==, n_want);
}

static void
test_greedy_chat (gconstpointer data)
{
  if (!skipped ())
    check_greedy ("chat", GPOINTER_TO_INT (data));
}

static void
test_greedy_others (gconstpointer data)
{
  if (skipped ())
    return;
  check_greedy ("code", GPOINTER_TO_INT (data));
  check_greedy ("prose", GPOINTER_TO_INT (data));
}

/* Runs tensafe-cli with @args (NULL-ended) after "generate -m MODEL -t 2
 * --greedy --print-ids"; returns the printed ids. */
static GArray *
cli_generate (const char *const *args)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_assert_nonnull (cli);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  const char *head[] = { cli, "generate", "-m", fx.path, "-t", "2", "--greedy", "--print-ids" };
  for (gsize i = 0; i < G_N_ELEMENTS (head); i++)
    g_ptr_array_add (argv, (gpointer) head[i]);
  for (gsize i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  g_autofree char *out = NULL, *err = NULL;
  int status = ts_test_spawn ((const char *const *) argv->pdata, &out, &err);
  if (status != 0)
    g_error ("tensafe-cli generate failed (%d): %s", status, err);
  GArray *ids = g_array_new (FALSE, FALSE, sizeof (int32_t));
  g_auto (GStrv) words = g_strsplit_set (g_strstrip (out), " \n", -1);
  for (gsize i = 0; words[i] != NULL; i++)
    if (*words[i] != '\0')
      {
        int32_t id = (int32_t) g_ascii_strtoll (words[i], NULL, 10);
        g_array_append_val (ids, id);
      }
  return ids;
}

/* What a user types: generate --chat answers the savings-account question
 * with llama.cpp's greedy tokens (the prompt built from the file's own chat
 * template), up to its end of turn or the first near-tie. */
static void
test_cli_chat (void)
{
  if (skipped ())
    return;
  JsonObject *p = prompt_named ("chat");
  gsize n_want;
  g_autofree int32_t *want = ints_of (json_object_get_array_member (p, "greedy"), &n_want);
  JsonArray *margin = json_object_get_array_member (p, "greedy_margin");
  const char *args[] = { "--chat", "-p", "What is a savings account?", "-n", "64", NULL };
  g_autoptr (GArray) got = cli_generate (args);
  gsize k = 0;
  while (k < got->len && k < n_want && g_array_index (got, int32_t, k) == want[k])
    k++;
  g_test_message ("generate --chat: %u tokens, the first %zu equal llama.cpp's", got->len, k);
  g_assert_cmpuint (k, >, 0);
  if (k < got->len && k < n_want)   /* a divergence: only at a near-tie */
    g_assert_cmpfloat (json_array_get_double_element (margin, (guint) k), <, NEAR_TIE);
}

/* generate --he local with a random rank-16 adapter on attn_q and attn_v:
 * the same tokens as the adapter in plaintext. (With seed 7 the two part
 * at token 36, a near-tie that the HE product's 2e-8 difference decides
 * the other way, in every run alike: 24 tokens stay clear of it.) */
static void
test_cli_he_local (void)
{
  if (skipped ())
    return;
  g_autofree char *dir = g_dir_make_tmp ("tensafe-real-XXXXXX", NULL);
  g_autofree char *adapter = g_build_filename (dir, "r16.gguf", NULL);
  const char *synth[] = { g_getenv ("TENSAFE_CLI"), "adapter", "synth", "-m", fx.path, "--rank", "16",
                          "--seed", "7", adapter, NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (ts_test_spawn (synth, &out, &err), ==, 0);
  const char *plain[] = { "--lora", adapter, "--chat", "-p", "What is a savings account?", "-n", "24",
                          NULL };
  const char *he[] = { "--lora", adapter, "--he", "local", "--chat", "-p",
                       "What is a savings account?", "-n", "24", NULL };
  g_autoptr (GArray) a = cli_generate (plain);
  g_autoptr (GArray) b = cli_generate (he);
  g_test_message ("rank-16 adapter: %u tokens in plaintext, %u under CKKS", a->len, b->len);
  g_assert_cmpuint (a->len, ==, b->len);
  g_assert_cmpmem (a->data, a->len * sizeof (int32_t), b->data, b->len * sizeof (int32_t));
  g_remove (adapter);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  fixture_load ();
  for (gsize i = 0; i < G_N_ELEMENTS (isas); i++)
    {
      gconstpointer isa = GINT_TO_POINTER (isas[i].isa);
      g_autofree char *logits = g_strdup_printf ("/engine/real/qwen2.5-coder-0.5b/%s/logits", isas[i].name);
      g_autofree char *chat = g_strdup_printf ("/engine/real/qwen2.5-coder-0.5b/%s/greedy-chat", isas[i].name);
      g_autofree char *others = g_strdup_printf ("/engine/real/qwen2.5-coder-0.5b/%s/greedy-others",
                                                 isas[i].name);
      g_test_add_data_func (logits, isa, test_logits);
      g_test_add_data_func (chat, isa, test_greedy_chat);
      g_test_add_data_func (others, isa, test_greedy_others);
    }
  g_test_add_func ("/engine/real/qwen2.5-coder-0.5b/cli-chat", test_cli_chat);
  g_test_add_func ("/engine/real/qwen2.5-coder-0.5b/cli-he-local", test_cli_he_local);
  int status = g_test_run ();
  lm_model_free (fx.model);
  g_free (fx.skip);
  g_free (fx.path);
  g_clear_object (&fx.parser);
  return status;
}
