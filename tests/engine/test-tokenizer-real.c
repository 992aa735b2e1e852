/* test-tokenizer-real.c: the tokenizer and chat prompts on the real Qwen2.5 vocabulary.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The model file is $TENSAFE_REAL_MODEL, else the one build-aux/fetch-model.sh
 * keeps in ${TENSAFE_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tensafe/models};
 * without it the test is skipped (exit status 77). The references are in
 * tests/data/tokenizer/qwen2-corpus.json (tools/make-tokenizer-corpus.py):
 * over a thousand strings with the ids of the Hugging Face tokenizer, which
 * ours must equal everywhere, and of llama.cpp, which ours must equal
 * wherever NFC leaves the text as it is (llama.cpp does not normalise); and
 * chat prompts of one user message as llama.cpp builds them from the file's
 * chat template.
 */
#include <glib.h>
#include <json-glib/json-glib.h>
#include <stdio.h>
#include <string.h>

#include "chat.h"
#include "gguf.h"
#include "tokenizer.h"
#include "ts-test-util.h"

#define MODEL_NAME "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
#define QWEN_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

static char *model_path;
static LmTokenizer *tok;
static JsonObject *corpus;

/* $TENSAFE_REAL_MODEL, else the file in the model cache of
 * build-aux/fetch-model.sh: $TENSAFE_MODEL_DIR, else $XDG_CACHE_HOME/tensafe/models. */
static char *
real_model_path (void)
{
  const char *env = g_getenv ("TENSAFE_REAL_MODEL");
  if (env != NULL && *env != '\0')
    return g_strdup (env);
  const char *dir = g_getenv ("TENSAFE_MODEL_DIR");
  if (dir != NULL && *dir != '\0')
    return g_build_filename (dir, MODEL_NAME, NULL);
  return g_build_filename (g_get_user_cache_dir (), "tensafe", "models", MODEL_NAME, NULL);
}

static int32_t *
ids_of (JsonArray *a, size_t *n)
{
  *n = json_array_get_length (a);
  int32_t *ids = g_new (int32_t, *n + 1);
  for (size_t i = 0; i < *n; i++)
    ids[i] = (int32_t) json_array_get_int_element (a, i);
  return ids;
}

static bool
equal_ids (const int32_t *got, size_t n, JsonArray *want)
{
  if (n != json_array_get_length (want))
    return false;
  for (size_t i = 0; i < n; i++)
    if (got[i] != json_array_get_int_element (want, i))
      return false;
  return true;
}

/* "1 2 3" */
static char *
ids_text (const int32_t *ids, size_t n)
{
  GString *s = g_string_new (NULL);
  for (size_t i = 0; i < n; i++)
    g_string_append_printf (s, i ? " %d" : "%d", ids[i]);
  return g_string_free (s, FALSE);
}

static JsonArray *
member (const char *name)
{
  return json_object_get_array_member (corpus, name);
}

/* Every string: the Hugging Face ids, and llama.cpp's where NFC changes
 * nothing; the counts go to the log. */
static void
test_corpus (void)
{
  JsonArray *cases = member ("cases");
  guint n = json_array_get_length (cases), n_hf = 0, n_llama = 0, n_normalised = 0;
  g_assert_cmpuint (n, >=, 1000);
  for (guint i = 0; i < n; i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *text = json_object_get_string_member (c, "text");
      bool normalised = json_object_has_member (c, "hf_text");
      int32_t *ids = NULL;
      size_t n_ids = 0;
      g_assert_cmpint (lm_tokenize (tok, text, strlen (text), true, &ids, &n_ids), ==, LM_OK);
      bool hf = equal_ids (ids, n_ids, json_object_get_array_member (c, "hf_ids"));
      bool llama = equal_ids (ids, n_ids, json_object_get_array_member (c, "llama_ids"));
      if (!hf || (!normalised && !llama))
        {
          g_autofree char *got = ids_text (ids, n_ids);
          g_test_message ("case %u '%s': got %s (%s)", i, text, got,
                          hf ? "llama.cpp differs" : "Hugging Face differs");
        }
      n_hf += hf;
      n_llama += llama;
      n_normalised += normalised;
      free (ids);
    }
  printf ("# %u strings: %u equal the Hugging Face ids, %u llama.cpp's; "
          "NFC changes %u of them\n", n, n_hf, n_llama, n_normalised);
  g_assert_cmpuint (n_hf, ==, n);
  g_assert_cmpuint (n_llama, >=, n - n_normalised);
  g_assert_cmpuint (n_normalised, >, 0);
}

/* The ids decode to the text the Hugging Face tokenizer decodes them to,
 * at once and token by token through the streaming decoder. */
static void
test_detokenize (void)
{
  JsonArray *cases = member ("cases");
  g_autofree char *buf = g_malloc (lm_detokenizer_buffer_size (tok));
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *want = json_object_get_string_member (
        c, json_object_has_member (c, "hf_text") ? "hf_text" : "text");
      size_t n;
      g_autofree int32_t *ids = ids_of (json_object_get_array_member (c, "hf_ids"), &n);
      char *text = NULL;
      g_assert_cmpint (lm_detokenize (tok, ids, n, true, &text, NULL), ==, LM_OK);
      g_assert_cmpstr (text, ==, want);
      free (text);

      LmDetokenizer st = { 0 };
      GString *streamed = g_string_new (NULL);
      for (size_t k = 0; k < n; k++)
        {
          size_t len = lm_detokenizer_push (&st, tok, ids[k], true, buf,
                                            lm_detokenizer_buffer_size (tok));
          g_string_append_len (streamed, buf, (gssize) len);
        }
      g_assert_cmpuint (lm_detokenizer_flush (&st, buf, 3), ==, 0);
      g_assert_cmpstr (streamed->str, ==, want);
      g_string_free (streamed, TRUE);
    }
}

/* One user message: the ids llama.cpp's jinja engine gives for the file's
 * template, default system prompt included; turning thinking off changes
 * nothing for Qwen2.5. */
static void
test_chat (void)
{
  g_autofree char *sys = lm_chat_default_system (tok);
  g_assert_cmpstr (sys, ==, QWEN_SYSTEM);
  g_assert_false (lm_chat_can_think (tok));
  JsonArray *chat = member ("chat");
  g_assert_cmpuint (json_array_get_length (chat), >, 0);
  for (guint i = 0; i < json_array_get_length (chat); i++)
    {
      JsonObject *c = json_array_get_object_element (chat, i);
      LmChatMessage msg = { LM_ROLE_USER, json_object_get_string_member (c, "user") };
      JsonArray *want = json_object_get_array_member (c, "llama_jinja_ids");
      for (int no_thinking = 0; no_thinking < 2; no_thinking++)
        {
          unsigned flags = LM_CHAT_GENERATION_PROMPT | (no_thinking ? LM_CHAT_NO_THINKING : 0);
          int32_t *ids = NULL;
          size_t n = 0;
          g_assert_cmpint (lm_chat_tokenize (tok, &msg, 1, flags, &ids, &n), ==, LM_OK);
          g_assert_true (equal_ids (ids, n, want));
          free (ids);
        }
    }
}

static char *
run_cli (const char *const *args)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_assert_nonnull (cli);
  g_autoptr (GPtrArray) argv = g_ptr_array_new ();
  g_ptr_array_add (argv, (gpointer) cli);
  for (size_t i = 0; args[i] != NULL; i++)
    g_ptr_array_add (argv, (gpointer) args[i]);
  g_ptr_array_add (argv, NULL);
  char *out = NULL;
  g_autofree char *err = NULL;
  int status = ts_test_spawn ((const char *const *) argv->pdata, &out, &err);
  if (status != 0)
    g_error ("tensafe-cli %s: exit %d: %s", args[0], status, err);
  return g_strchomp (out);
}

/* generate --chat gives llama.cpp's prompt ids; tokenize takes texts that
 * start with '-' after --. */
static void
test_cli (void)
{
  JsonArray *chat = member ("chat");
  for (guint i = 0; i < json_array_get_length (chat); i++)
    {
      JsonObject *c = json_array_get_object_element (chat, i);
      const char *args[] = { "generate", "--model", model_path, "--chat", "--print-prompt",
                             "--prompt", json_object_get_string_member (c, "user"), NULL };
      g_autofree char *out = run_cli (args);
      size_t n;
      g_autofree int32_t *want = ids_of (json_object_get_array_member (c, "llama_jinja_ids"), &n);
      g_autofree char *want_text = ids_text (want, n);
      g_assert_cmpstr (out, ==, want_text);
    }
  JsonArray *cases = member ("cases");
  guint n_dash = 0;
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *text = json_object_get_string_member (c, "text");
      if (text[0] != '-')
        continue;
      const char *args[] = { "tokenize", "--model", model_path, "--", text, NULL };
      g_autofree char *out = run_cli (args);
      size_t n;
      g_autofree int32_t *want = ids_of (json_object_get_array_member (c, "hf_ids"), &n);
      g_autofree char *want_text = ids_text (want, n);
      g_assert_cmpstr (out, ==, want_text);
      n_dash++;
    }
  g_assert_cmpuint (n_dash, >=, 10);
}

int
main (int argc, char **argv)
{
  model_path = real_model_path ();
  if (!g_file_test (model_path, G_FILE_TEST_EXISTS))
    {
      printf ("SKIP: no real model at %s (build-aux/fetch-model.sh fetches it, or set "
              "TENSAFE_REAL_MODEL)\n", model_path);
      g_free (model_path);
      return 77;
    }
  g_test_init (&argc, &argv, NULL);
  GgufFile *file = NULL;
  char *err = NULL;
  if (lm_gguf_open (model_path, &file, &err) != LM_OK
      || lm_tokenizer_new_from_gguf (file, &tok, &err) != LM_OK)
    g_error ("%s: %s", model_path, err);
  g_assert_cmpint (lm_tokenizer_n_vocab (tok), ==, 151936);
  g_autofree char *json = ts_test_data_path ("tokenizer/qwen2-corpus.json");
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  json_parser_load_from_file (parser, json, &error);
  g_assert_no_error (error);
  corpus = json_node_get_object (json_parser_get_root (parser));

  g_test_add_func ("/engine/tokenizer-real/corpus", test_corpus);
  g_test_add_func ("/engine/tokenizer-real/detokenize", test_detokenize);
  g_test_add_func ("/engine/tokenizer-real/chat", test_chat);
  g_test_add_func ("/engine/tokenizer-real/cli", test_cli);
  int status = g_test_run ();
  lm_tokenizer_free (tok);
  lm_gguf_close (file);
  g_free (model_path);
  return status;
}
