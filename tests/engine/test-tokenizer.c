/* test-tokenizer.c: the BPE tokenizer against the golden tokenizer cases.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "gguf-writer.h"
#include "gguf.h"
#include "tokenizer.h"
#include "ts-test-util.h"

typedef struct {
  GgufFile *file;
  LmTokenizer *tok;
  JsonParser *cases;
  JsonParser *manifest;
} Fixture;

static JsonParser *
parse_json (const char *rel)
{
  g_autofree char *path = ts_test_data_path (rel);
  JsonParser *parser = json_parser_new ();
  g_autoptr (GError) error = NULL;
  json_parser_load_from_file (parser, path, &error);
  g_assert_no_error (error);
  return parser;
}

static LmTokenizer *
load_tokenizer (const char *model, GgufFile **file_out)
{
  g_autofree char *rel = g_strdup_printf ("qwen35/%s/%s.gguf", model, model);
  g_autofree char *path = ts_test_data_path (rel);
  GgufFile *f = NULL;
  g_assert_cmpint (gguf_open (path, &f, NULL), ==, LM_OK);
  LmTokenizer *tok = NULL;
  char *err = NULL;
  if (lm_tokenizer_new_from_gguf (f, &tok, &err) != LM_OK)
    g_error ("%s", err);
  *file_out = f;
  return tok;
}

static void
fixture_setup (Fixture *fx, gconstpointer data)
{
  fx->tok = load_tokenizer ("tiny-qwen35moe-f32", &fx->file);
  fx->cases = parse_json ("qwen35/tiny-qwen35moe-f32/tokenizer_cases.json");
  fx->manifest = parse_json ("qwen35/tiny-qwen35moe-f32/manifest.json");
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
  lm_tokenizer_free (fx->tok);
  gguf_close (fx->file);
  g_object_unref (fx->cases);
  g_object_unref (fx->manifest);
}

static JsonArray *
cases_of (Fixture *fx)
{
  JsonObject *root = json_node_get_object (json_parser_get_root (fx->cases));
  return json_object_get_array_member (root, "cases");
}

static void
assert_ids (const char *what, const int32_t *got, size_t n, JsonArray *want)
{
  GString *g = g_string_new (NULL), *w = g_string_new (NULL);
  for (size_t i = 0; i < n; i++)
    g_string_append_printf (g, "%d ", got[i]);
  for (guint i = 0; i < json_array_get_length (want); i++)
    g_string_append_printf (w, "%d ", (int) json_array_get_int_element (want, i));
  if (strcmp (g->str, w->str) != 0)
    g_error ("%s:\n got  %s\n want %s", what, g->str, w->str);
  g_string_free (g, TRUE);
  g_string_free (w, TRUE);
}

static void
check_tokenize (const LmTokenizer *tok, const char *text, bool parse_special, JsonArray *want)
{
  int32_t *ids = NULL;
  size_t n = 0;
  g_assert_cmpint (lm_tokenize (tok, text, strlen (text), parse_special, &ids, &n), ==, LM_OK);
  g_autofree char *what = g_strdup_printf ("'%s' (parse_special=%d)", text, parse_special);
  assert_ids (what, ids, n, want);
  free (ids);
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

/* Every golden case tokenized in one mode against the ids under @key. */
static void
check_all_cases (Fixture *fx, const char *key, bool parse_special)
{
  JsonArray *cases = cases_of (fx);
  g_assert_cmpuint (json_array_get_length (cases), ==, 35);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      check_tokenize (fx->tok, json_object_get_string_member (c, "text"), parse_special,
                      json_object_get_array_member (c, key));
    }
}

static void
test_cases_parse_special (Fixture *fx, gconstpointer data)
{
  check_all_cases (fx, "ids", true);
}

static void
test_cases_no_parse_special (Fixture *fx, gconstpointer data)
{
  check_all_cases (fx, "ids_no_parse_special", false);
}

static void
test_cases_detokenize (Fixture *fx, gconstpointer data)
{
  JsonArray *cases = cases_of (fx);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      size_t n;
      g_autofree int32_t *ids = ids_of (json_object_get_array_member (c, "ids"), &n);
      char *text = NULL;
      size_t len = 0;
      g_assert_cmpint (lm_detokenize (fx->tok, ids, n, true, &text, &len), ==, LM_OK);
      const char *want = json_object_get_string_member (c, "detokenized");
      g_assert_cmpuint (len, ==, strlen (want));
      g_assert_cmpstr (text, ==, want);
      free (text);

      /* Pieces one by one match the golden bytes of each token. */
      JsonArray *hex = json_object_get_array_member (c, "pieces_hex");
      g_assert_cmpuint (json_array_get_length (hex), ==, n);
      for (size_t k = 0; k < n; k++)
        {
          char buf[256];
          size_t pl = lm_token_piece (fx->tok, ids[k], true, buf, sizeof buf);
          GString *h = g_string_new (NULL);
          for (size_t b = 0; b < pl; b++)
            g_string_append_printf (h, "%02x", (uint8_t) buf[b]);
          g_assert_cmpstr (h->str, ==, json_array_get_string_element (hex, k));
          g_string_free (h, TRUE);
        }
    }
}

/* Streaming: chunks concatenate to the whole text and each chunk is valid
 * UTF-8 on its own (partial characters are held back). */
static void
test_streaming (Fixture *fx, gconstpointer data)
{
  JsonArray *cases = cases_of (fx);
  guint split_chars = 0;
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      size_t n;
      g_autofree int32_t *ids = ids_of (json_object_get_array_member (c, "ids"), &n);
      GString *all = g_string_new (NULL);
      LmDetokenizer st = { 0 };
      size_t cap = lm_tokenizer_max_piece (fx->tok) + 4;
      g_autofree char *buf = g_malloc (cap);
      for (size_t k = 0; k < n; k++)
        {
          size_t len = lm_detokenizer_push (&st, fx->tok, ids[k], true, buf, cap);
          g_assert_true (g_utf8_validate (buf, (gssize) len, NULL));
          split_chars += st.n_pending > 0;
          g_string_append_len (all, buf, (gssize) len);
        }
      size_t len = lm_detokenizer_flush (&st, buf, cap);
      g_assert_cmpuint (len, ==, 0);
      g_assert_cmpstr (all->str, ==, json_object_get_string_member (c, "detokenized"));
      g_string_free (all, TRUE);
    }
  /* the CJK and emoji cases do split characters across tokens */
  g_assert_cmpuint (split_chars, >, 0);

  /* An unfinished character at the end comes out on flush. */
  LmDetokenizer st = { 0 };
  char buf[64];
  int32_t e2 = lm_tokenizer_find (fx->tok, "\xc3\xa2");   /* byte 0xE2 in GPT-2 form */
  g_assert_cmpint (e2, >=, 0);
  g_assert_cmpuint (lm_detokenizer_push (&st, fx->tok, e2, true, buf, sizeof buf), ==, 0);
  g_assert_cmpuint (lm_detokenizer_flush (&st, buf, sizeof buf), ==, 1);
  g_assert_cmpuint ((uint8_t) buf[0], ==, 0xE2);
}

static void
test_prompts (Fixture *fx, gconstpointer data)
{
  JsonObject *m = json_node_get_object (json_parser_get_root (fx->manifest));
  check_tokenize (fx->tok, json_object_get_string_member (m, "prompt_text"), true,
                  json_object_get_array_member (m, "prompt_tokens"));
  check_tokenize (fx->tok, json_object_get_string_member (m, "long_prompt_text"), true,
                  json_object_get_array_member (m, "long_prompt_tokens"));
}

static void
test_special_ids (Fixture *fx, gconstpointer data)
{
  JsonObject *m = json_node_get_object (json_parser_get_root (fx->manifest));
  JsonObject *sp = json_object_get_object_member (m, "special_tokens");
  g_assert_cmpint (lm_tokenizer_n_vocab (fx->tok), ==, 1024);
  g_assert_cmpint (lm_tokenizer_eos (fx->tok), ==, json_object_get_int_member (sp, "eos"));
  g_assert_cmpint (lm_tokenizer_bos (fx->tok), ==, json_object_get_int_member (sp, "bos"));
  g_assert_cmpint (lm_tokenizer_pad (fx->tok), ==, 998);
  g_assert_cmpint (lm_tokenizer_find (fx->tok, "<|im_start|>"), ==, 999);
  g_assert_cmpint (lm_tokenizer_find (fx->tok, "<think>"), ==, 1022);
  g_assert_cmpint (lm_tokenizer_find (fx->tok, "no such token"), ==, -1);
  g_assert_cmpint (lm_tokenizer_token_type (fx->tok, 999), ==, LM_TOKEN_CONTROL);
  g_assert_cmpint (lm_tokenizer_token_type (fx->tok, 1022), ==, LM_TOKEN_USER_DEFINED);
  g_assert_cmpint (lm_tokenizer_token_type (fx->tok, 0), ==, LM_TOKEN_NORMAL);
  g_assert_true (lm_tokenizer_is_end (fx->tok, 1000));
  g_assert_true (lm_tokenizer_is_end (fx->tok, 998));
  g_assert_false (lm_tokenizer_is_end (fx->tok, 999));
  g_assert_false (lm_tokenizer_is_end (fx->tok, -1));
  /* CONTROL tokens are dropped unless rendered; USER_DEFINED always shown. */
  char buf[32];
  g_assert_cmpuint (lm_token_piece (fx->tok, 999, false, buf, sizeof buf), ==, 0);
  g_assert_cmpuint (lm_token_piece (fx->tok, 1022, false, buf, sizeof buf), ==, 7);
  g_assert_cmpuint (lm_token_piece (fx->tok, 5000, true, buf, sizeof buf), ==, 0);
}

/* Invalid UTF-8 and a long run without merges boundaries do not break it. */
static void
test_odd_input (Fixture *fx, gconstpointer data)
{
  const char bad[] = "ab\xff\xfe\xc3(\xe2\x82 end\x00z";
  int32_t *ids = NULL;
  size_t n = 0;
  g_assert_cmpint (lm_tokenize (fx->tok, bad, sizeof bad - 1, true, &ids, &n), ==, LM_OK);
  char *text = NULL;
  size_t len = 0;
  g_assert_cmpint (lm_detokenize (fx->tok, ids, n, true, &text, &len), ==, LM_OK);
  g_assert_cmpuint (len, ==, sizeof bad - 1);
  g_assert_cmpmem (text, len, bad, sizeof bad - 1);
  free (ids);
  free (text);

  size_t big = 200000;
  g_autofree char *run = g_malloc (big);
  memset (run, 'a', big);
  g_assert_cmpint (lm_tokenize (fx->tok, run, big, true, &ids, &n), ==, LM_OK);
  g_assert_cmpint (lm_detokenize (fx->tok, ids, n, true, &text, &len), ==, LM_OK);
  g_assert_cmpmem (text, len, run, big);
  free (ids);
  free (text);
  g_assert_cmpint (lm_tokenize (fx->tok, "", 0, true, &ids, &n), ==, LM_OK);
  g_assert_cmpuint (n, ==, 0);
}

/* Detokenising the tokens of any byte string gives the string back, in both
 * modes, for random mixes of ASCII, specials, multi-byte characters and
 * invalid bytes. */
static void
test_roundtrip_random (Fixture *fx, gconstpointer data)
{
  static const char *const parts[] = {
    "a", "the", " ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "7", "é", "ñ", "Ж", "日本",
    "😀", "🇺🇸", "\xcc\x81", "\xff", "\xc3", "\xe2\x82", ",", "...", "<|im_start|>",
    "<|im_end|>", "<think>", "<|im_start|", "\x00", "\u00a0", "\u3000", "²", "Ⅻ",
  };
  GRand *rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  for (int iter = 0; iter < 300; iter++)
    {
      GString *text = g_string_new (NULL);
      int n_parts = g_rand_int_range (rng, 0, 40);
      for (int k = 0; k < n_parts; k++)
        {
          const char *p = parts[g_rand_int_range (rng, 0, G_N_ELEMENTS (parts))];
          g_string_append_len (text, p, p[0] ? (gssize) strlen (p) : 1);
        }
      for (int special = 0; special < 2; special++)
        {
          int32_t *ids = NULL;
          size_t n = 0;
          g_assert_cmpint (lm_tokenize (fx->tok, text->str, text->len, special, &ids, &n), ==,
                           LM_OK);
          char *back = NULL;
          size_t len = 0;
          g_assert_cmpint (lm_detokenize (fx->tok, ids, n, true, &back, &len), ==, LM_OK);
          g_assert_cmpmem (back, len, text->str, text->len);
          free (back);
          free (ids);
        }
      g_string_free (text, TRUE);
    }
  g_rand_free (rng);
}

/* Every golden model carries the same tokenizer. */
static void
test_all_models (void)
{
  const char *models[] = { "tiny-qwen35-f32", "tiny-qwen35moe-e256-q8_0",
                           "tiny-qwen35moe-e256-q4_k_m" };
  g_autoptr (JsonParser) mp = parse_json ("qwen35/tiny-qwen35moe-f32/manifest.json");
  JsonObject *m = json_node_get_object (json_parser_get_root (mp));
  for (size_t i = 0; i < G_N_ELEMENTS (models); i++)
    {
      GgufFile *f;
      LmTokenizer *tok = load_tokenizer (models[i], &f);
      check_tokenize (tok, json_object_get_string_member (m, "prompt_text"), true,
                      json_object_get_array_member (m, "prompt_tokens"));
      lm_tokenizer_free (tok);
      gguf_close (f);
    }
}

/* A vocabulary whose token texts are not valid UTF-8 (found by fuzzing:
 * decoding once wrote past the piece buffer) loads, and such tokens stand
 * for their raw bytes. */
static void
test_malformed_vocab (void)
{
  g_autofree char *dir = g_dir_make_tmp ("test-tokenizer-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "bad.gguf", NULL);
  const char *tokens[] = { "a", "\xff\xfe\xfd", "\xc3", "b", "\xef\xbf\xbd", "<c>" };
  int32_t types[] = { 1, 1, 1, 1, 1, 3 };
  const char *merges[] = { "a b", "\xff", "x y" };
  GgufWriter *w = gguf_writer_new ();
  gguf_writer_add_string (w, "tokenizer.ggml.model", "gpt2");
  gguf_writer_add_string_array (w, "tokenizer.ggml.tokens", tokens, 6);
  gguf_writer_add_array (w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 6);
  gguf_writer_add_string_array (w, "tokenizer.ggml.merges", merges, 1);
  g_assert_cmpint (gguf_writer_begin (w, path, NULL), ==, LM_OK);
  g_assert_cmpint (gguf_writer_finish (w, NULL), ==, LM_OK);
  gguf_writer_free (w);
  GgufFile *f = NULL;
  g_assert_cmpint (gguf_open (path, &f, NULL), ==, LM_OK);
  LmTokenizer *tok = NULL;
  g_assert_cmpint (lm_tokenizer_new_from_gguf (f, &tok, NULL), ==, LM_OK);
  char buf[16];
  g_assert_cmpuint (lm_token_piece (tok, 1, true, buf, sizeof buf), ==, 3);
  g_assert_cmpmem (buf, 3, "\xff\xfe\xfd", 3);
  g_assert_cmpuint (lm_token_piece (tok, 2, true, buf, sizeof buf), ==, 1);
  g_assert_cmpuint (lm_token_piece (tok, 4, true, buf, sizeof buf), ==, 3);   /* U+FFFD kept */
  g_assert_cmpuint (lm_tokenizer_max_piece (tok), ==, 3);
  int32_t *ids;
  size_t n;
  g_assert_cmpint (lm_tokenize (tok, "ab<c>", 5, true, &ids, &n), ==, LM_OK);
  g_assert_cmpuint (n, ==, 3);   /* "ab" is not in the vocabulary: the merge never applies */
  g_assert_cmpint (ids[2], ==, 5);
  free (ids);
  lm_tokenizer_free (tok);
  gguf_close (f);

  /* A merge without a space is a load error naming it. */
  w = gguf_writer_new ();
  gguf_writer_add_string (w, "tokenizer.ggml.model", "gpt2");
  gguf_writer_add_string_array (w, "tokenizer.ggml.tokens", tokens, 6);
  gguf_writer_add_string_array (w, "tokenizer.ggml.merges", merges + 1, 1);
  gguf_writer_begin (w, path, NULL);
  gguf_writer_finish (w, NULL);
  gguf_writer_free (w);
  g_assert_cmpint (gguf_open (path, &f, NULL), ==, LM_OK);
  char *err = NULL;
  g_assert_cmpint (lm_tokenizer_new_from_gguf (f, &tok, &err), !=, LM_OK);
  g_assert_nonnull (strstr (err, "has no space"));
  free (err);
  gguf_close (f);
  g_unlink (path);
  g_rmdir (dir);
}

/* The CLI prints the prompt's ids space-separated, and fails on a bad file. */
static void
test_cli (void)
{
  const char *cli = g_getenv ("TENSAFE_CLI");
  g_assert_nonnull (cli);
  g_autoptr (JsonParser) mp = parse_json ("qwen35/tiny-qwen35moe-f32/manifest.json");
  JsonObject *m = json_node_get_object (json_parser_get_root (mp));
  g_autofree char *model = ts_test_data_path ("qwen35/tiny-qwen35-f32/tiny-qwen35-f32.gguf");
  const char *argv[] = { cli, "tokenize", "--model", model,
                         json_object_get_string_member (m, "prompt_text"), NULL };
  g_autofree char *out = NULL;
  int status = -1;
  g_autoptr (GError) error = NULL;
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out, NULL,
                &status, &error);
  g_assert_no_error (error);
  g_assert_true (g_spawn_check_wait_status (status, NULL));
  JsonArray *want = json_object_get_array_member (m, "prompt_tokens");
  GString *w = g_string_new (NULL);
  for (guint i = 0; i < json_array_get_length (want); i++)
    g_string_append_printf (w, i ? " %d" : "%d", (int) json_array_get_int_element (want, i));
  g_string_append_c (w, '\n');
  g_assert_cmpstr (out, ==, w->str);
  g_string_free (w, TRUE);

  const char *bad[] = { cli, "tokenize", "--model", "/nonexistent.gguf", "x", NULL };
  g_spawn_sync (NULL, (char **) bad, NULL, G_SPAWN_STDERR_TO_DEV_NULL | G_SPAWN_STDOUT_TO_DEV_NULL,
                NULL, NULL, NULL, NULL, &status, NULL);
  g_assert_false (g_spawn_check_wait_status (status, NULL));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
#define ADD(path, fn) g_test_add (path, Fixture, NULL, fixture_setup, fn, fixture_teardown)
  ADD ("/engine/tokenizer/cases-parse-special", test_cases_parse_special);
  ADD ("/engine/tokenizer/cases-no-parse-special", test_cases_no_parse_special);
  ADD ("/engine/tokenizer/cases-detokenize", test_cases_detokenize);
  ADD ("/engine/tokenizer/streaming", test_streaming);
  ADD ("/engine/tokenizer/prompts", test_prompts);
  ADD ("/engine/tokenizer/special-ids", test_special_ids);
  ADD ("/engine/tokenizer/odd-input", test_odd_input);
  ADD ("/engine/tokenizer/roundtrip-random", test_roundtrip_random);
#undef ADD
  g_test_add_func ("/engine/tokenizer/all-models", test_all_models);
  g_test_add_func ("/engine/tokenizer/cli", test_cli);
  g_test_add_func ("/engine/tokenizer/malformed-vocab", test_malformed_vocab);
  return g_test_run ();
}
