/* test-generation-thinking.c: replies of a model that thinks, with thinking on and off:
 * the prompt against the chat template's text, and the thinking kept apart
 * from the answer.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <stdlib.h>
#include <string.h>

#include "lm.h"
#include "tokenizer.h"
#include "ts-generation.h"
#include "ts-test-util.h"

static char *model_path;

/* The conversation every test asks about: an earlier exchange, then a question. */
static TsGenerationRequest *
request_new (gboolean thinking)
{
  TsGenerationRequest *request = ts_generation_request_new ();

  g_ptr_array_add (request->turns, g_strdup ("Hi"));
  g_ptr_array_add (request->turns, g_strdup ("Hello!"));
  g_ptr_array_add (request->turns, g_strdup ("Tell me about encrypted adapters."));
  request->thinking = thinking;
  request->temperature = 0;
  return request;
}

/* The text Qwen3.5's chat template renders for request_new()'s turns, up
 * to its generation prompt, written out here; @end is what follows
 * "<|im_start|>assistant\n". */
static char *
template_text (const char *end)
{
  return g_strconcat ("<|im_start|>user\nHi<|im_end|>\n"
                      "<|im_start|>assistant\nHello!<|im_end|>\n"
                      "<|im_start|>user\nTell me about encrypted adapters.<|im_end|>\n"
                      "<|im_start|>assistant\n", end, NULL);
}

/* @text's ids from the model's own tokenizer, turn markers and think tags
 * recognised as in the reference tokenizer. */
static GArray *
tokenize_text (TsGenerationModel *model, const char *text)
{
  LmTokenizer *tok = NULL;
  int32_t *ids = NULL;
  size_t n = 0;
  GArray *out = g_array_new (FALSE, FALSE, sizeof (gint32));

  g_assert_cmpint (lm_tokenizer_new_from_gguf (lm_model_gguf (ts_generation_model_get_lm (model)),
                                               &tok, NULL), ==, LM_OK);
  g_assert_cmpint (lm_tokenize (tok, text, strlen (text), true, &ids, &n), ==, LM_OK);
  g_array_append_vals (out, ids, (guint) n);
  free (ids);
  lm_tokenizer_free (tok);
  return out;
}

static void
assert_prompt (TsGenerationModel *model, gboolean thinking, const char *end)
{
  g_autoptr (TsGenerationRequest) request = request_new (thinking);
  g_autoptr (GError) error = NULL;
  g_autoptr (GArray) ids = ts_generation_prompt_tokens (model, request, &error);
  g_autofree char *text = template_text (end);
  g_autoptr (GArray) want = tokenize_text (model, text);

  g_assert_no_error (error);
  g_assert_nonnull (ids);
  g_assert_cmpmem (ids->data, ids->len * sizeof (gint32), want->data, want->len * sizeof (gint32));
}

/* On: the prompt opens the thinking; off: the empty think block of
 * enable_thinking=false. The earlier answer goes back without thinking. */
static void
test_prompt (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = ts_generation_model_load (model_path, NULL, &error);

  g_assert_no_error (error);
  g_assert_true (ts_generation_model_can_think (model));
  assert_prompt (model, TRUE, "<think>\n");
  assert_prompt (model, FALSE, "<think>\n\n</think>\n\n");
}

/* A model without the think tags (as Qwen2.5) gets the plain generation
 * prompt either way. */
static void
test_prompt_model_without_thinking (void)
{
  g_autofree char *dir = g_dir_make_tmp ("ts-thinking-XXXXXX", NULL);
  g_autofree char *copy = g_build_filename (dir, "no-think.gguf", NULL);
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = NULL;

  ts_test_copy_model_without_think (model_path, copy);
  model = ts_generation_model_load (copy, NULL, &error);
  g_assert_no_error (error);
  g_assert_false (ts_generation_model_can_think (model));
  assert_prompt (model, TRUE, "");
  assert_prompt (model, FALSE, "");
  ts_test_remove_tree (dir);
}

/* The real Qwen2.5 (when it is in the model cache) does not think: the
 * same prompt with thinking on and off, ending in the assistant's turn. */
static void
test_real_qwen25_does_not_think (void)
{
  g_autofree char *reason = NULL;
  g_autofree char *path = ts_test_real_model ("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                                              491400064, &reason);
  g_autoptr (TsGenerationModel) model = NULL;
  g_autoptr (TsGenerationRequest) on = request_new (TRUE), off = request_new (FALSE);
  g_autoptr (GArray) on_ids = NULL, off_ids = NULL, end = NULL;
  g_autoptr (GError) error = NULL;

  if (path == NULL)
    {
      g_test_skip (reason);
      return;
    }
  model = ts_generation_model_load (path, NULL, &error);
  g_assert_no_error (error);
  g_assert_false (ts_generation_model_can_think (model));
  on_ids = ts_generation_prompt_tokens (model, on, &error);
  off_ids = ts_generation_prompt_tokens (model, off, &error);
  g_assert_no_error (error);
  g_assert_cmpmem (on_ids->data, on_ids->len * sizeof (gint32), off_ids->data,
                   off_ids->len * sizeof (gint32));
  end = tokenize_text (model, "<|im_end|>\n<|im_start|>assistant\n");
  g_assert_cmpuint (on_ids->len, >, end->len);
  g_assert_cmpmem ((gint32 *) on_ids->data + on_ids->len - end->len, end->len * sizeof (gint32),
                   end->data, end->len * sizeof (gint32));
}

typedef struct {
  GArray *ids;
  GArray *thinking_flags;      /* gboolean per token */
  GString *answer;
  GString *thinking;
  gboolean done;
  GError *error;
} Reply;

static void
reply_cb (TsGenerationJob *job, const TsGenerationEvent *event, gpointer data)
{
  Reply *r = data;

  if (event->kind == TS_GENERATION_EVENT_TOKEN)
    {
      g_assert_nonnull (event->text);
      g_assert_nonnull (event->thinking);
      /* A token's text is of one part: the other one is empty. */
      g_assert_true (event->is_thinking ? *event->text == '\0' : *event->thinking == '\0');
      g_array_append_val (r->ids, event->token_id);
      g_array_append_val (r->thinking_flags, event->is_thinking);
      g_string_append (r->answer, event->text);
      g_string_append (r->thinking, event->thinking);
    }
  else if (event->kind != TS_GENERATION_EVENT_STARTED)
    {
      r->done = TRUE;
      if (event->error != NULL)
        r->error = g_error_copy (event->error);
    }
}

static void
reply_clear (Reply *r)
{
  g_array_unref (r->ids);
  g_array_unref (r->thinking_flags);
  g_string_free (r->answer, TRUE);
  g_string_free (r->thinking, TRUE);
  g_clear_error (&r->error);
}

static void
generate (TsGenerationModel *model, TsGenerationRequest *request, guint n_tokens, Reply *r)
{
  g_autoptr (TsGenerationJob) job = NULL;

  r->ids = g_array_new (FALSE, FALSE, sizeof (gint32));
  r->thinking_flags = g_array_new (FALSE, FALSE, sizeof (gboolean));
  r->answer = g_string_new (NULL);
  r->thinking = g_string_new (NULL);
  request->max_tokens = n_tokens;
  job = ts_generation_job_start (model, request, NULL, reply_cb, r);
  while (!r->done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_no_error (r->error);
}

/* The text of @ids[@from, @to) with the newlines that open a part dropped
 * and no control tokens: written out from the tokenizer's pieces. */
static char *
piece_text (TsGenerationModel *model, const GArray *ids, guint from, guint to)
{
  LmTokenizer *tok = NULL;
  char *text = NULL, *valid;
  size_t len = 0;
  const char *p;

  g_assert_cmpint (lm_tokenizer_new_from_gguf (lm_model_gguf (ts_generation_model_get_lm (model)),
                                               &tok, NULL), ==, LM_OK);
  g_assert_cmpint (lm_detokenize (tok, (const int32_t *) ids->data + from, to - from, false,
                                  &text, &len), ==, LM_OK);
  for (p = text; *p == '\n'; p++)
    ;
  /* The random model writes bytes that are not UTF-8: replies replace them. */
  valid = g_utf8_make_valid (p, -1);
  free (text);
  lm_tokenizer_free (tok);
  return valid;
}

#define THINK_CLOSE 1023     /* </think> in the demo model's vocabulary (its manifest) */
#define IM_END 1000          /* <|im_end|> */
#define ENDOFTEXT 998        /* <|endoftext|> */

/* Prompts after which the demo model, greedy, closes its thinking within
 * 40 tokens (found by trying "Question N: …" for N up to 400): several, so
 * that a near-tie decided otherwise on another CPU still leaves one. */
static const char *const closing_prompts[] = {
  "Question 191: what is an adapter?",
  "Question 197: what is an adapter?",
  "Question 370: what is an adapter?",
};

/* Checks one reply; returns whether its thinking ended before its answer. */
static gboolean
check_reply (TsGenerationModel *model, const Reply *r)
{
  guint close = r->ids->len, end = r->ids->len;
  g_autofree char *want_thinking = NULL, *want_answer = NULL;
  gint32 last = g_array_index (r->ids, gint32, end - 1);

  for (guint i = 0; i < r->ids->len && close == r->ids->len; i++)
    if (g_array_index (r->ids, gint32, i) == THINK_CLOSE)
      close = i;
  for (guint i = 0; i < r->ids->len; i++)
    g_assert_cmpint (g_array_index (r->thinking_flags, gboolean, i), ==, i <= close);
  if (last == IM_END || last == ENDOFTEXT)
    end--;
  want_thinking = piece_text (model, r->ids, 0, MIN (close, end));
  want_answer = close < end ? piece_text (model, r->ids, close + 1, end) : g_strdup ("");
  g_test_message ("%u tokens, </think> at %u: %zu bytes of thinking, %zu of answer",
                  r->ids->len, close, strlen (want_thinking), strlen (want_answer));
  g_assert_cmpstr (r->thinking->str, ==, want_thinking);
  g_assert_cmpstr (r->answer->str, ==, want_answer);
  return close < end && r->answer->len > 0;
}

/* Thinking on: every token up to </think> is thinking, its text comes as
 * thinking text only, and what follows is the answer; each side's text is
 * the pieces of its ids. */
static void
test_thinking_apart (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = ts_generation_model_load (model_path, NULL, &error);
  guint closed = 0;

  g_assert_no_error (error);
  for (guint k = 0; k < G_N_ELEMENTS (closing_prompts); k++)
    {
      g_autoptr (TsGenerationRequest) request = request_new (TRUE);
      Reply r = { 0 };

      g_free (g_ptr_array_steal_index (request->turns, 2));
      g_ptr_array_add (request->turns, g_strdup (closing_prompts[k]));
      generate (model, request, 40, &r);
      closed += check_reply (model, &r);
      reply_clear (&r);
    }
  g_assert_cmpuint (closed, >, 0);
}

/* Thinking off: the reply has no thinking at all. */
static void
test_thinking_off (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsGenerationModel) model = ts_generation_model_load (model_path, NULL, &error);
  g_autoptr (TsGenerationRequest) request = request_new (FALSE);
  Reply r = { 0 };

  g_assert_no_error (error);
  generate (model, request, 16, &r);
  g_assert_cmpuint (r.thinking->len, ==, 0);
  for (guint i = 0; i < r.ids->len; i++)
    g_assert_false (g_array_index (r.thinking_flags, gboolean, i));
  reply_clear (&r);
}

int
main (int argc, char **argv)
{
  int status;

  g_test_init (&argc, &argv, NULL);
  model_path = g_build_filename (TS_SOURCE_DATA_DIR, "demo", "tiny-qwen35moe-f32.gguf", NULL);
  g_test_add_func ("/generation-thinking/prompt", test_prompt);
  g_test_add_func ("/generation-thinking/prompt-model-without-thinking",
                   test_prompt_model_without_thinking);
  g_test_add_func ("/generation-thinking/real-qwen2.5-does-not-think",
                   test_real_qwen25_does_not_think);
  g_test_add_func ("/generation-thinking/thinking-apart", test_thinking_apart);
  g_test_add_func ("/generation-thinking/thinking-off", test_thinking_off);
  status = g_test_run ();
  g_free (model_path);
  return status;
}
