/* test-router.c: adapter routing by override, keywords and base-model embeddings.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The embedding is checked against the golden final-norm hidden states of
 * an independent implementation. The tiny test model has random weights,
 * so its embeddings carry no meaning: the embedding rule is tested on
 * prompts that share most of their tokens with one adapter's examples,
 * which is what such a model can tell apart (shared tokens, not topics).
 */
#include <math.h>

#include <glib/gstdio.h>

#include "helora-golden.h"
#include "ts-router.h"
#include "ts-test-util.h"

static Golden golden;

static void
test_mean_hidden_matches_golden (void)
{
  guint E = lm_model_info (golden.model)->n_embd;
  gsize len;
  g_autofree float *rows = (float *) ts_test_read_data (GOLDEN_DIR "final_norm.bin", &len);
  g_autofree float *got = g_new (float, E);
  LmSessionParams params = { .n_ctx = 64, .n_threads = 1 };
  LmSession *s = NULL;
  double max_err = 0, max_ref = 0;

  g_assert_cmpuint (len, ==, golden.n_prompt * E * sizeof (float));
  g_assert_cmpint (lm_session_new (golden.model, &params, &s), ==, LM_OK);
  g_assert_cmpint (lm_session_mean_hidden (s, golden.prompt, golden.n_prompt, got), ==, LM_OK);
  g_assert_cmpuint (lm_session_pos (s), ==, golden.n_prompt);
  for (guint e = 0; e < E; e++)
    {
      double ref = 0;
      for (gsize t = 0; t < golden.n_prompt; t++)
        ref += rows[t * E + e];
      ref /= golden.n_prompt;
      max_err = fmax (max_err, fabs (ref - got[e]));
      max_ref = fmax (max_ref, fabs (ref));
    }
  g_assert_cmpfloat (max_ref, >, 0.1);
  g_assert_cmpfloat (max_err, <, 1e-3);
  lm_session_free (s);
}

typedef struct {
  const char *text;
  const char *expect;          /* NULL: not routed */
  TsRouteRule rule;
} Labelled;

static void
assert_routes (TsRouter *router, const Labelled *cases, guint n)
{
  for (guint i = 0; i < n; i++)
    {
      g_autoptr (GError) error = NULL;
      TsRoute route;

      g_assert_true (ts_router_route (router, cases[i].text, &route, &error));
      g_assert_no_error (error);
      g_test_message ("'%s' -> %s %s %.3f", cases[i].text, route.adapter_id ? route.adapter_id : "-",
                      ts_route_rule_name (route.rule), route.score);
      g_assert_cmpstr (route.adapter_id, ==, cases[i].expect);
      g_assert_cmpint (route.rule, ==, cases[i].rule);
      ts_route_clear (&route);
    }
}

static TsRouter *
keyword_router (const LmModel *model)
{
  static const char *const bank[] = { "bank", "account", "loan", "mortgage", NULL };
  static const char *const code[] = { "code", "bug", "function", "compile", NULL };
  static const char *const pirate[] = { "pirate", "ship", "treasure", NULL };
  g_autoptr (GError) error = NULL;
  TsRouter *router = ts_router_new (model, &error);

  g_assert_no_error (error);
  g_assert_true (ts_router_add_adapter (router, "banking-qa", bank, NULL, &error));
  g_assert_true (ts_router_add_adapter (router, "code-review", code, NULL, &error));
  g_assert_true (ts_router_add_adapter (router, "tiny-pirate", pirate, NULL, &error));
  g_assert_no_error (error);
  return router;
}

static void
test_keywords (void)
{
  static const Labelled cases[] = {
    { "How do I open a bank ACCOUNT?", "banking-qa", TS_ROUTE_KEYWORD },
    { "Can you review this function, it will not compile", "code-review", TS_ROUTE_KEYWORD },
    { "Tell me about the pirate ship and its treasure.", "tiny-pirate", TS_ROUTE_KEYWORD },
    { "A bug in my loan calculator code", "code-review", TS_ROUTE_KEYWORD },  /* 2 vs 1 */
    { "The bank's pirate", NULL, TS_ROUTE_NONE },                           /* a tie */
    { "bankers and accounts", NULL, TS_ROUTE_NONE },                        /* whole words only */
    { "What is the weather like?", NULL, TS_ROUTE_NONE },
  };
  g_autoptr (TsRouter) router = keyword_router (NULL);
  g_autoptr (GError) error = NULL;
  TsRoute route;

  assert_routes (router, cases, G_N_ELEMENTS (cases));
  g_assert_true (ts_router_route (router, "A bug in my loan calculator code", &route, &error));
  g_assert_cmpfloat_with_epsilon (route.score, 2.0 / 3.0, 1e-9);
  ts_route_clear (&route);
  g_assert_true (ts_router_route (router, "open a bank account", &route, &error));
  g_assert_cmpfloat (route.score, ==, 1.0);
  {
    g_autofree char *text = ts_route_describe (&route);
    g_assert_cmpstr (text, ==, "routed to: banking-qa, 1.00 (keyword)");
  }
  ts_route_clear (&route);
}

static void
test_override (void)
{
  g_autoptr (TsRouter) router = keyword_router (NULL);
  static const Labelled forced[] = {
    { "How do I open a bank account?", "tiny-pirate", TS_ROUTE_OVERRIDE },
  };
  static const Labelled automatic[] = {
    { "How do I open a bank account?", "banking-qa", TS_ROUTE_KEYWORD },
  };

  ts_router_set_override (router, "tiny-pirate");
  assert_routes (router, forced, 1);
  ts_router_set_override (router, NULL);
  assert_routes (router, automatic, 1);
}

/* Each prompt keeps most of one example's tokens in order and changes a
 * word or two: what a random model's embedding can tell apart. (Reordered
 * bags of the same words are not: its states depend on order.) */
static void
test_embedding_shared_tokens (void)
{
  static const char *const ex_a[] = { "How do I open a savings account at the bank?",
                                      "What is the interest rate on my bank loan?", NULL };
  static const char *const ex_b[] = { "Fix the bug in this Python function",
                                      "Why does this C function not compile?", NULL };
  static const char *const ex_c[] = { "Book a flight to Paris for next Monday",
                                      "Find a hotel near the station in Rome", NULL };
  static const Labelled cases[] = {
    { "How do I open a checking account at my bank?", "banking-qa", TS_ROUTE_EMBEDDING },
    { "What is the interest rate on my car loan?", "banking-qa", TS_ROUTE_EMBEDDING },
    { "Fix the bug in this C function", "code-review", TS_ROUTE_EMBEDDING },
    { "Why does this Rust function not compile?", "code-review", TS_ROUTE_EMBEDDING },
    { "Book a flight to Berlin for next Friday", "travel", TS_ROUTE_EMBEDDING },
    { "Find a hotel near the airport in Rome", "travel", TS_ROUTE_EMBEDDING },
  };
  g_autoptr (GError) error = NULL;
  g_autoptr (TsRouter) router = ts_router_new (golden.model, &error);

  g_assert_no_error (error);
  g_assert_true (ts_router_add_adapter (router, "banking-qa", NULL, ex_a, &error));
  g_assert_true (ts_router_add_adapter (router, "code-review", NULL, ex_b, &error));
  g_assert_true (ts_router_add_adapter (router, "travel", NULL, ex_c, &error));
  g_assert_no_error (error);
  assert_routes (router, cases, G_N_ELEMENTS (cases));
  /* A threshold above every similarity routes nothing. */
  ts_router_set_min_similarity (router, 1.01);
  {
    static const Labelled none[] = { { "Fix the bug in this C function", NULL, TS_ROUTE_NONE } };
    assert_routes (router, none, 1);
  }
}

static void
test_metadata (void)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("router-XXXXXX", &error);
  g_autofree char *path = g_build_filename (dir, "metadata.json", NULL);
  g_autofree char *bad = g_build_filename (dir, "bad.json", NULL);
  g_autoptr (TsRouter) router = ts_router_new (golden.model, &error);
  static const Labelled cases[] = {
    { "Write some poetry about the sea", "tiny-poet", TS_ROUTE_KEYWORD },
    { "a sonnet please", "tiny-poet", TS_ROUTE_KEYWORD },
  };

  g_assert_no_error (error);
  g_assert_true (g_file_set_contents (path,
      "{\"id\": \"tiny-poet\", \"tags\": [\"demo\", \"creative\", \"poetry\"],"
      " \"keywords\": [\"sonnet\", 3], \"examples\": [\"roses are red\", \"violets are blue\"]}",
      -1, &error));
  g_assert_true (g_file_set_contents (bad, "[1, 2]", -1, &error));
  g_assert_true (ts_router_add_metadata (router, NULL, path, &error));
  g_assert_no_error (error);
  g_assert_false (ts_router_add_metadata (router, NULL, bad, &error));
  g_assert_nonnull (error);
  g_assert_cmpuint (ts_router_n_adapters (router), ==, 1);
  assert_routes (router, cases, G_N_ELEMENTS (cases));
  g_unlink (path);
  g_unlink (bad);
  g_rmdir (dir);
}

int
main (int argc, char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  golden_load (&golden);
  g_test_add_func ("/router/mean-hidden-matches-golden", test_mean_hidden_matches_golden);
  g_test_add_func ("/router/keywords", test_keywords);
  g_test_add_func ("/router/override", test_override);
  g_test_add_func ("/router/embedding-shared-tokens", test_embedding_shared_tokens);
  g_test_add_func ("/router/metadata", test_metadata);
  status = g_test_run ();
  golden_clear (&golden);
  return status;
}
