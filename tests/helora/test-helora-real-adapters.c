/* test-helora-real-adapters.c: the distilled style adapters of data/market on
 * the real Qwen2.5-Coder-0.5B-Instruct model (skipped when it is absent).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each adapter answers the 20 held-out questions of tools/distill (questions
 * its training never saw) greedily, in the chat template with the default
 * system prompt, three ways: no adapter, the plaintext adapter and HE-LoRA in
 * local mode on the CPU. The style rule (a regular expression, below) must
 * hold in at least MIN_STYLED of the adapter's answers and in at most
 * MAX_BASE_STYLED of the base model's.
 *
 * HE-LoRA must give the plaintext adapter's tokens on every question, up
 * to a near-tie: with the 8-bit activation blocks the chat runs with, the
 * CKKS error of the adapter's output (~1e-8) can flip the rounding of one
 * activation and move a logit by a few hundredths (docs/models.md: the
 * same flips part llama.cpp's own CPU paths), so where the plaintext top-2
 * margin is below NEAR_TIE the two may part. NEAR_TIE is the bar of
 * engine-real-model for the same noise (a flip moves logits by up to ~0.4
 * after 24 layers). Every parting is reported with its token and margin; one
 * at a larger margin fails. (Measured: pirate 4 of 20 answers part, at
 * tokens 15 to 36, margins 0.019 to 0.051; banking 8 of 20, at tokens 4 to
 * 79, margins 0.011 to 0.184; data/market/README.md.)
 *
 * With exact (f32) activations nothing rounds the CKKS error up to a
 * visible step, and HE-LoRA must give the plaintext adapter's tokens on
 * every question, no exception: the chat runs that way (ts-generation.c).
 */
#include <math.h>
#include <string.h>

#include "chat.h"
#include "gguf.h"
#include "lm.h"
#include "tokenizer.h"
#include "ts-helora-session.h"
#include "ts-test-util.h"

#define MODEL_FILE "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
#define MODEL_BYTES G_GUINT64_CONSTANT (491400064)
#define N_QUESTIONS 20
#define MIN_STYLED 16
#define MAX_BASE_STYLED 2
#define NEAR_TIE 0.5f

/* Under AddressSanitizer the generations run 4 to 5 times slower (past the
 * half-hour limit on a 2-core Xeon whose plain build takes 9 minutes): the
 * test there answers the first few questions and holds HE-LoRA to the
 * plaintext adapter on them, which is where memory errors would show; the
 * style counts, which need all 20 answers, are the plain build's. */
#if defined(__SANITIZE_ADDRESS__)
#define N_ASKED 4
#else
#define N_ASKED N_QUESTIONS
#endif

typedef struct {
  const char *folder;      /* data/market/FOLDER */
  const char *questions;   /* tools/distill/FILE, one question a line */
  guint max_tokens;        /* answer length: enough for the style to show */
  const char *rule;        /* the styled answer matches this */
} StyleCase;

/* Pirate: at least one pirate word. Banking: the compliance line the adapter
 * learned to end with (it comes after a two-sentence answer, hence the
 * longer budget). */
static const StyleCase cases[] = {
  { "qwen2.5-coder-0.5b-pirate", "pirate-heldout.txt", 40,
    "(?i)\\b(arr+|ahoy|mateys?|aye|ye|avast|landlubbers?|hearties|booty|savvy|scallywags?|shiver)\\b" },
  { "qwen2.5-coder-0.5b-banking", "banking-heldout.txt", 96,
    "(?im)^\\s*note:|not financial advice" },
};

typedef struct {
  LmModel *model;
  LmTokenizer *tok;
  char *skip;
} Fixture;

static Fixture fx;

static void
fixture_load (void)
{
  g_autofree char *path = ts_test_real_model (MODEL_FILE, MODEL_BYTES, &fx.skip);
  char *msg = NULL;
  if (path == NULL)
    return;
  if (lm_model_load (path, &fx.model, &msg) != LM_OK
      || lm_tokenizer_new_from_gguf (lm_model_gguf (fx.model), &fx.tok, &msg) != LM_OK)
    g_error ("loading %s: %s", path, msg ? msg : "");
}

/* Greedy tokens after @prompt, at most @max, the end token excluded;
 * margins (optional) receives the top-2 logit margin of each step. */
static GArray *
greedy (LmSession *s, const int32_t *prompt, size_t n_prompt, guint max, GArray *margins)
{
  GArray *out = g_array_new (FALSE, FALSE, sizeof (int32_t));
  uint32_t n_vocab = lm_model_info (fx.model)->n_vocab;

  lm_session_reset (s);
  g_assert_cmpint (lm_session_prefill (s, prompt, n_prompt, NULL), ==, LM_OK);
  for (guint k = 0; k < max; k++)
    {
      const float *logits = lm_session_logits (s);
      int32_t best = 0, second = 1;
      if (logits[1] > logits[0])
        best = 1, second = 0;
      for (uint32_t v = 2; v < n_vocab; v++)
        if (logits[v] > logits[best])
          second = best, best = (int32_t) v;
        else if (logits[v] > logits[second])
          second = (int32_t) v;
      if (margins != NULL)
        {
          float m = logits[best] - logits[second];
          g_array_append_val (margins, m);
        }
      if (lm_tokenizer_is_end (fx.tok, best))
        break;
      g_array_append_val (out, best);
      g_assert_cmpint (lm_session_decode (s, best), ==, LM_OK);
    }
  return out;
}

static char *
text_of (GArray *ids)
{
  char *text = NULL;
  size_t len;
  g_assert_cmpint (lm_detokenize (fx.tok, (int32_t *) ids->data, ids->len, false, &text, &len),
                   ==, LM_OK);
  return text;
}

static char **
held_out_questions (const char *file)
{
  g_autofree char *path = g_build_filename (DISTILL_DIR, file, NULL);
  g_autofree char *text = NULL;
  g_autoptr (GError) error = NULL;
  g_assert_true (g_file_get_contents (path, &text, NULL, &error));
  g_strstrip (text);
  char **lines = g_strsplit (text, "\n", -1);
  g_assert_cmpuint (g_strv_length (lines), ==, N_QUESTIONS);
  return lines;
}

static LmSession *
new_session (const LmLora *lora, gboolean exact)
{
  LmSessionParams params = { .n_ctx = 256, .n_threads = 2, .exact_activations = exact };
  LmSession *s = NULL;
  g_assert_cmpint (lm_session_new (fx.model, &params, &s), ==, LM_OK);
  if (lora != NULL)
    g_assert_cmpint (lm_session_set_lora (s, lora), ==, LM_OK);
  return s;
}

typedef struct {
  guint base_styled, lora_styled, he_equal, he_near_tie, exact_equal;
} Tally;

typedef struct {
  LmSession *base, *plain, *he, *plain_exact, *he_exact;
} Sessions;

/* Where @a and @b part (their length when they do not). */
static guint
parting (GArray *a, GArray *b)
{
  guint k = 0;
  while (k < a->len && k < b->len
         && g_array_index (a, int32_t, k) == g_array_index (b, int32_t, k))
    k++;
  return k;
}

/* With exact activations: HE-LoRA's tokens are the plaintext adapter's. */
static void
run_exact (const StyleCase *c, const int32_t *prompt, size_t n_prompt, const Sessions *s,
           Tally *t)
{
  g_autoptr (GArray) margins = g_array_new (FALSE, FALSE, sizeof (float));
  g_autoptr (GArray) plain_ids = greedy (s->plain_exact, prompt, n_prompt, c->max_tokens,
                                         margins);
  g_autoptr (GArray) he_ids = greedy (s->he_exact, prompt, n_prompt, c->max_tokens, NULL);
  guint k = parting (plain_ids, he_ids);

  if (k == plain_ids->len && k == he_ids->len)
    {
      t->exact_equal++;
      return;
    }
  g_test_message ("  exact activations: HE-LoRA parts from the plaintext adapter at token %u "
                  "(plaintext top-2 margin %.6f)", k, g_array_index (margins, float, k));
}

/* One question: the base and adapter answers and their style, and whether
 * HE-LoRA's tokens are the plaintext adapter's (else where they part, and
 * the margin there). */
static void
run_question (const StyleCase *c, const char *question, GRegex *rule, const Sessions *s,
              Tally *t)
{
  LmChatMessage msg = { LM_ROLE_USER, question };
  g_autofree int32_t *prompt = NULL;
  size_t n_prompt;
  g_assert_cmpint (lm_chat_tokenize (fx.tok, &msg, 1, LM_CHAT_GENERATION_PROMPT, &prompt,
                                     &n_prompt), ==, LM_OK);
  g_autoptr (GArray) margins = g_array_new (FALSE, FALSE, sizeof (float));
  g_autoptr (GArray) base_ids = greedy (s->base, prompt, n_prompt, c->max_tokens, NULL);
  g_autoptr (GArray) plain_ids = greedy (s->plain, prompt, n_prompt, c->max_tokens, margins);
  g_autoptr (GArray) he_ids = greedy (s->he, prompt, n_prompt, c->max_tokens, NULL);
  g_autofree char *base_text = text_of (base_ids), *plain_text = text_of (plain_ids);
  gboolean base_ok = g_regex_match (rule, base_text, 0, NULL);
  gboolean plain_ok = g_regex_match (rule, plain_text, 0, NULL);

  t->base_styled += base_ok;
  t->lora_styled += plain_ok;
  g_test_message ("%s | %s\n  base [%s]: %s\n  adapter [%s]: %s", c->folder, question,
                  base_ok ? "styled" : "plain", base_text, plain_ok ? "styled" : "plain",
                  plain_text);
  run_exact (c, prompt, n_prompt, s, t);
  guint k = parting (plain_ids, he_ids);
  if (k == plain_ids->len && k == he_ids->len)
    {
      t->he_equal++;
      return;
    }
  float margin = g_array_index (margins, float, k);
  g_test_message ("  HE-LoRA parts from the plaintext adapter at token %u, where the "
                  "plaintext top-2 margin is %.5f", k, margin);
  t->he_near_tie += margin < NEAR_TIE;
}

static void
test_style (gconstpointer data)
{
  const StyleCase *c = data;
  if (fx.model == NULL)
    {
      g_test_skip (fx.skip);
      return;
    }
  g_autofree char *dir = g_build_filename (TS_SOURCE_DATA_DIR, "market", c->folder, NULL);
  g_auto (GStrv) questions = held_out_questions (c->questions);
  g_autoptr (GRegex) rule = g_regex_new (c->rule, G_REGEX_OPTIMIZE, 0, NULL);
  g_autoptr (GError) error = NULL;
  LmLora *lora = NULL;
  char *msg = NULL;
  if (lm_lora_load (fx.model, dir, 1.0f, &lora, &msg) != LM_OK)
    g_error ("loading %s: %s", dir, msg ? msg : "");

  TsHeloraOptions options = { .mode = TS_HELORA_MODE_LOCAL, .backend = TS_HELORA_BACKEND_CPU,
                              .n_threads = 2 };
  TsHeloraSession *helora = ts_helora_session_new (lora, &options, &error);
  g_assert_no_error (error);
  Sessions s = { new_session (NULL, FALSE), new_session (lora, FALSE), new_session (lora, FALSE),
                 new_session (lora, TRUE), new_session (lora, TRUE) };
  g_assert_true (ts_helora_session_attach (helora, s.he, &error));
  g_assert_no_error (error);
  /* a session of its own (a fresh key), as a second chat would have */
  TsHeloraSession *helora_exact = ts_helora_session_new (lora, &options, &error);
  g_assert_no_error (error);
  g_assert_true (ts_helora_session_attach (helora_exact, s.he_exact, &error));
  g_assert_no_error (error);

  Tally t = { 0 };
  gint64 start = g_get_monotonic_time ();
  for (guint i = 0; i < N_ASKED; i++)
    run_question (c, questions[i], rule, &s, &t);
  g_test_message ("%s: styled %u/%d with the adapter, %u/%d without; HE-LoRA = plaintext on "
                  "%u/%d, parted at a near-tie on %u; with exact activations on %u/%d (%.0f s)",
                  c->folder, t.lora_styled, N_ASKED, t.base_styled, N_ASKED, t.he_equal,
                  N_ASKED, t.he_near_tie, t.exact_equal, N_ASKED,
                  (g_get_monotonic_time () - start) / 1e6);
  if (N_ASKED == N_QUESTIONS)
    {
      g_assert_cmpuint (t.lora_styled, >=, MIN_STYLED);
      g_assert_cmpuint (t.base_styled, <=, MAX_BASE_STYLED);
    }
  else
    g_test_message ("the style counts need all %d answers: not checked here", N_QUESTIONS);
  g_assert_cmpuint (t.he_equal + t.he_near_tie, ==, N_ASKED);
  g_assert_cmpuint (t.exact_equal, ==, N_ASKED);

  lm_session_free (s.he_exact);
  ts_helora_session_free (helora_exact);
  lm_session_free (s.plain_exact);
  lm_session_free (s.he);
  ts_helora_session_free (helora);
  lm_session_free (s.plain);
  lm_session_free (s.base);
  lm_lora_free (lora);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  fixture_load ();
  for (gsize i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup_printf ("/helora/real-adapters/%s", cases[i].folder);
      g_test_add_data_func (name, &cases[i], test_style);
    }
  int rc = g_test_run ();
  lm_tokenizer_free (fx.tok);
  lm_model_free (fx.model);
  g_free (fx.skip);
  return rc;
}
