/* test-generation-cache.c: a reply continues the previous reply's engine session
 * (TsGenerationCache): only the tokens the conversation does not share with it
 * are fed, and the reply is the one a fresh session gives.
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include <string.h>

#include "ckks-params.h"
#include "ts-generation-cache.h"
#include "ts-generation.h"
#include "ts-helora-ckks.h"
#include "ts-test-util.h"

#define N_TOKENS 12

typedef struct {
  const char *model;      /* under tests/data or data/ */
  const char *adapter;
  const char *he_mode;    /* NULL: plaintext LoRA */
} Case;

typedef struct {
  GArray *ids;
  GString *text;
  char *fingerprint;      /* STARTED's key fingerprint */
  guint prompt_tokens, reused_tokens;
  gboolean done;
  GError *error;
} Reply;

static void
reply_cb (TsGenerationJob *job, const TsGenerationEvent *event, gpointer data)
{
  Reply *r = data;

  if (event->kind == TS_GENERATION_EVENT_STARTED)
    {
      r->prompt_tokens = event->prompt_tokens;
      r->reused_tokens = event->reused_tokens;
      r->fingerprint = g_strdup (event->key_fingerprint);
    }
  else if (event->kind == TS_GENERATION_EVENT_TOKEN)
    {
      g_array_append_val (r->ids, event->token_id);
      g_string_append (r->text, event->text);
    }
  else
    {
      r->done = TRUE;
      if (event->error != NULL)
        r->error = g_error_copy (event->error);
    }
}

static TsGenerationRequest *
request_for (const Case *c, const char *const *turns)
{
  TsGenerationRequest *r = ts_generation_request_new ();

  for (guint i = 0; turns[i] != NULL; i++)
    g_ptr_array_add (r->turns, g_strdup (turns[i]));
  r->system_prompt = g_strdup ("You are a helpful assistant.");
  r->temperature = 0;
  r->max_tokens = N_TOKENS;
  r->he_mode = g_strdup (c->he_mode);
  r->he_preset = g_strdup ("fast");
  return r;
}

static void
run (TsGenerationModel *model, const TsGenerationRequest *request, TsGenerationCache *cache,
     Reply *r)
{
  g_autoptr (TsGenerationJob) job = NULL;

  *r = (Reply) { g_array_new (FALSE, FALSE, sizeof (gint32)), g_string_new (NULL) };
  job = ts_generation_job_start_cached (model, request, cache, NULL, reply_cb, r);
  while (!r->done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_no_error (r->error);
  g_assert_cmpuint (r->ids->len, >, 0);
}

static void
reply_clear (Reply *r)
{
  g_free (r->fingerprint);
  g_array_unref (r->ids);
  g_string_free (r->text, TRUE);
}

/* Leading ids two lists share, at most @limit. */
static guint
common_prefix (const gint32 *a, guint n_a, const gint32 *b, guint n_b, guint limit)
{
  guint n = 0;

  while (n < n_a && n < n_b && n < limit && a[n] == b[n])
    n++;
  return n;
}

static TsGenerationModel *
load (const Case *c)
{
  g_autofree char *model = ts_test_data_path (c->model);
  g_autofree char *adapter = ts_test_data_path (c->adapter);
  GError *error = NULL;
  TsGenerationModel *m = ts_generation_model_load (model, adapter, &error);

  g_assert_no_error (error);
  return m;
}

/* Two turns of one conversation with a cache: the second is told which of
 * its prompt tokens the first reply's session already holds (its prompt
 * and its fed reply tokens, worked out here from their ids), feeds only the
 * rest, and answers with the tokens of a fresh session. */
static void
test_continues (gconstpointer data)
{
  const Case *c = data;
  g_autoptr (TsGenerationCache) cache = ts_generation_cache_new ();
  TsGenerationModel *model = load (c);
  const char *first[] = { "What is a savings account?", NULL };
  g_autoptr (TsGenerationRequest) r1 = request_for (c, first);
  Reply one, two, fresh;
  g_autoptr (GArray) p1 = NULL, p2 = NULL, held = NULL;
  GError *error = NULL;

  run (model, r1, cache, &one);
  g_assert_cmpuint (one.reused_tokens, ==, 0);
  {
    const char *second[] = { first[0], one.text->str, "And a checking account?", NULL };
    g_autoptr (TsGenerationRequest) r2 = request_for (c, second);

    p1 = ts_generation_prompt_tokens (model, r1, &error);
    g_assert_no_error (error);
    p2 = ts_generation_prompt_tokens (model, r2, &error);
    g_assert_no_error (error);
    /* what the session holds: the prompt and every reply token fed back
     * (all but the last one drawn) */
    held = g_array_copy (p1);
    g_array_append_vals (held, one.ids->data, one.ids->len - 1);
    run (model, r2, cache, &two);
    g_assert_cmpuint (two.prompt_tokens, ==, p2->len);
    g_assert_cmpuint (two.reused_tokens, ==,
                      common_prefix ((gint32 *) held->data, held->len, (gint32 *) p2->data,
                                     p2->len, p2->len - 1));
    g_assert_cmpuint (two.reused_tokens, >, 10);
    g_assert_cmpuint (ts_generation_cache_get_last_reused (cache), ==, two.reused_tokens);
    run (model, r2, NULL, &fresh);
    g_assert_cmpuint (fresh.reused_tokens, ==, 0);
    g_assert_cmpuint (two.ids->len, ==, fresh.ids->len);
    g_assert_cmpmem (two.ids->data, two.ids->len * 4, fresh.ids->data, fresh.ids->len * 4);
    reply_clear (&fresh);
    reply_clear (&two);
  }
  reply_clear (&one);
  ts_generation_model_unref (model);
}

/* A kept session is continued only by a reply computed the same way: after
 * a plaintext-LoRA reply, an HE-LoRA one starts afresh (and the other way
 * round); another model frees it. */
static void
test_other_computation_starts_afresh (void)
{
  Case plain = { "hf/qwen2/qwen2.gguf", "hf/qwen2/lora/qwen2-lora.gguf", NULL };
  Case he = { plain.model, plain.adapter, "local" };
  g_autoptr (TsGenerationCache) cache = ts_generation_cache_new ();
  TsGenerationModel *model = load (&plain);
  const char *turns[] = { "What is a savings account?", NULL };
  g_autoptr (TsGenerationRequest) r_plain = request_for (&plain, turns);
  g_autoptr (TsGenerationRequest) r_he = request_for (&he, turns);
  Reply r;

  run (model, r_plain, cache, &r);
  reply_clear (&r);
  run (model, r_plain, cache, &r);
  g_assert_cmpuint (r.reused_tokens, ==, r.prompt_tokens - 1);
  reply_clear (&r);
  run (model, r_he, cache, &r);
  g_assert_cmpuint (r.reused_tokens, ==, 0);
  reply_clear (&r);
  run (model, r_he, cache, &r);
  g_assert_cmpuint (r.reused_tokens, ==, r.prompt_tokens - 1);
  reply_clear (&r);
  r_he->n_threads = 2;
  run (model, r_he, cache, &r);
  g_assert_cmpuint (r.reused_tokens, ==, 0);
  reply_clear (&r);
  ts_generation_model_unref (model);
}

/* A reply whose HE session cannot start (an evaluator nobody listens at)
 * ends with its error and keeps nothing; the next reply starts afresh. */
static void
test_failed_reply_keeps_nothing (void)
{
  Case plain = { "hf/qwen2/qwen2.gguf", "hf/qwen2/lora/qwen2-lora.gguf", NULL };
  Case unreachable = { plain.model, plain.adapter, "ws://127.0.0.1:1/v1/helora" };
  g_autoptr (TsGenerationCache) cache = ts_generation_cache_new ();
  TsGenerationModel *model = load (&plain);
  const char *turns[] = { "What is a savings account?", NULL };
  g_autoptr (TsGenerationRequest) r_plain = request_for (&plain, turns);
  g_autoptr (TsGenerationRequest) r_bad = request_for (&unreachable, turns);
  g_autoptr (TsGenerationJob) job = NULL;
  Reply r = { g_array_new (FALSE, FALSE, sizeof (gint32)), g_string_new (NULL) };

  job = ts_generation_job_start_cached (model, r_bad, cache, NULL, reply_cb, &r);
  while (!r.done)
    g_main_context_iteration (NULL, TRUE);
  g_assert_nonnull (r.error);
  g_clear_error (&r.error);
  reply_clear (&r);
  run (model, r_plain, cache, &r);
  g_assert_cmpuint (r.reused_tokens, ==, 0);
  reply_clear (&r);
  ts_generation_model_unref (model);
}

/* Hex SHA-256 of preset @name's parameters, from the CKKS engine itself. */
static char *
preset_fingerprint (const char *name)
{
  g_autoptr (GError) error = NULL;
  CkksContext *ctx = ts_helora_ckks_context_new (name, &error);
  GString *hex = g_string_new (NULL);

  g_assert_no_error (error);
  for (int i = 0; i < 32; i++)
    g_string_append_printf (hex, "%02x", ckks_context_fingerprint (ctx)[i]);
  ckks_context_free (ctx);
  return g_string_free (hex, FALSE);
}

/* The "auto" preset (the chat's Automatic, local evaluator) runs an adapter
 * whose inputs are at most 1024 wide on the compact ring, and the reply
 * says so with that ring's fingerprint (the lock badge's); a named preset
 * keeps its own. */
static void
test_auto_preset_fingerprint (void)
{
  Case he = { "hf/qwen2/qwen2.gguf", "hf/qwen2/lora/qwen2-lora.gguf", "local" };
  TsGenerationModel *model = load (&he);
  const char *turns[] = { "What is a savings account?", NULL };
  g_autoptr (TsGenerationRequest) r_auto = request_for (&he, turns);
  g_autoptr (TsGenerationRequest) r_fast = request_for (&he, turns);
  g_autofree char *compact = preset_fingerprint (CKKS_PRESET_COMPACT);
  g_autofree char *fast = preset_fingerprint ("fast");
  Reply r;

  g_free (r_auto->he_preset);
  r_auto->he_preset = g_strdup ("auto");
  run (model, r_auto, NULL, &r);
  g_assert_cmpstr (r.fingerprint, ==, compact);
  reply_clear (&r);
  run (model, r_fast, NULL, &r);
  g_assert_cmpstr (r.fingerprint, ==, fast);
  g_assert_cmpstr (compact, !=, fast);
  reply_clear (&r);
  ts_generation_model_unref (model);
}

int
main (int argc, char **argv)
{
  static const Case attention_plain = { "hf/qwen2/qwen2.gguf", "hf/qwen2/lora/qwen2-lora.gguf",
                                        NULL };
  static const Case attention_he = { "hf/qwen2/qwen2.gguf", "hf/qwen2/lora/qwen2-lora.gguf",
                                     "local" };
  static const Case recurrent_he = { "qwen35/tiny-qwen35moe-f32/tiny-qwen35moe-f32.gguf",
                                     "qwen35/tiny-qwen35moe-f32/lora/tiny-qwen35moe-lora-f32.gguf",
                                     "local" };

  g_test_init (&argc, &argv, NULL);
  g_test_add_data_func ("/generation-cache/continues/attention-plaintext", &attention_plain,
                        test_continues);
  g_test_add_data_func ("/generation-cache/continues/attention-he", &attention_he,
                        test_continues);
  g_test_add_data_func ("/generation-cache/continues/recurrent-he", &recurrent_he,
                        test_continues);
  g_test_add_func ("/generation-cache/other-computation-starts-afresh",
                   test_other_computation_starts_afresh);
  g_test_add_func ("/generation-cache/failed-reply-keeps-nothing",
                   test_failed_reply_keeps_nothing);
  g_test_add_func ("/generation-cache/auto-preset-fingerprint", test_auto_preset_fingerprint);
  return g_test_run ();
}
