/* test-tokenizer.c: the BPE tokenizer against the golden tokenizer cases.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * References: llama.cpp's ids in the golden cases (shared/testdata), the
 * Hugging Face tokenizers' ids of tests/data/tokenizer/qwen35-tiny.json
 * (tools/make-tokenizer-corpus.py) and GLib's NFC normalisation.
 */
#include <glib.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <string.h>

#include "gguf-writer.h"
#include "gguf.h"
#include "test-vocab-util.h"
#include "tokenizer.h"
#include "ts-test-util.h"

typedef struct {
  GgufFile *file;
  LmTokenizer *tok;
  JsonParser *cases;
  JsonParser *manifest;
  JsonParser *hf;          /* tokenizer/qwen35-tiny.json (the golden models share one vocabulary) */
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
  g_assert_cmpint (lm_gguf_open (path, &f, NULL), ==, LM_OK);
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
  fx->hf = parse_json ("tokenizer/qwen35-tiny.json");
}

static void
fixture_teardown (Fixture *fx, gconstpointer data)
{
  lm_tokenizer_free (fx->tok);
  lm_gguf_close (fx->file);
  g_object_unref (fx->cases);
  g_object_unref (fx->manifest);
  g_object_unref (fx->hf);
}

static JsonArray *
cases_in (JsonParser *parser)
{
  JsonObject *root = json_node_get_object (json_parser_get_root (parser));
  return json_object_get_array_member (root, "cases");
}

static JsonArray *
cases_of (Fixture *fx)
{
  return cases_in (fx->cases);
}

/* The Hugging Face reference case of @text. */
static JsonObject *
hf_case (Fixture *fx, const char *text)
{
  JsonArray *cases = cases_in (fx->hf);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      if (strcmp (json_object_get_string_member (c, "text"), text) == 0)
        return c;
    }
  g_error ("no Hugging Face reference for '%s'", text);
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

static bool
same_ids (JsonArray *a, JsonArray *b)
{
  if (json_array_get_length (a) != json_array_get_length (b))
    return false;
  for (guint i = 0; i < json_array_get_length (a); i++)
    if (json_array_get_int_element (a, i) != json_array_get_int_element (b, i))
      return false;
  return true;
}

/* Every golden case tokenized in one mode against llama.cpp's ids under
 * @key. llama.cpp does not normalise and the models' own tokenizers do (NFC):
 * where NFC changes the text (decomposed accents) the reference is the
 * Hugging Face tokenizer, whose ids are recorded for parse_special on; the
 * case has no special token in it, so they hold in both modes. */
static void
check_all_cases (Fixture *fx, const char *key, bool parse_special)
{
  JsonArray *cases = cases_of (fx);
  guint n_normalised = 0;
  g_assert_cmpuint (json_array_get_length (cases), ==, 35);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *text = json_object_get_string_member (c, "text");
      JsonObject *hf = hf_case (fx, text);
      JsonArray *want = json_object_get_array_member (c, key);
      if (json_object_has_member (hf, "hf_text"))
        {
          g_assert_true (same_ids (json_object_get_array_member (c, "ids"),
                                   json_object_get_array_member (c, "ids_no_parse_special")));
          g_assert_false (same_ids (want, json_object_get_array_member (hf, "hf_ids")));
          want = json_object_get_array_member (hf, "hf_ids");
          n_normalised++;
        }
      check_tokenize (fx->tok, text, parse_special, want);
    }
  g_assert_cmpuint (n_normalised, ==, 1);   /* "Combining: e\u0301 n\u0303 a\u0308" */
}

/* Every case of the Hugging Face file: its ids, the text they decode to, and
 * llama.cpp's ids wherever NFC leaves the text as it is. */
static void
test_hf_reference (Fixture *fx, gconstpointer data)
{
  JsonArray *cases = cases_in (fx->hf);
  guint n_llama = 0, n = json_array_get_length (cases);
  for (guint i = 0; i < n; i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      const char *text = json_object_get_string_member (c, "text");
      bool normalised = json_object_has_member (c, "hf_text");
      check_tokenize (fx->tok, text, true, json_object_get_array_member (c, "hf_ids"));
      if (!normalised)
        check_tokenize (fx->tok, text, true, json_object_get_array_member (c, "llama_ids"));
      n_llama += same_ids (json_object_get_array_member (c, "hf_ids"),
                           json_object_get_array_member (c, "llama_ids"));

      size_t n_ids;
      g_autofree int32_t *ids = ids_of (json_object_get_array_member (c, "hf_ids"), &n_ids);
      char *back = NULL;
      g_assert_cmpint (lm_detokenize (fx->tok, ids, n_ids, true, &back, NULL), ==, LM_OK);
      g_assert_cmpstr (back, ==, normalised ? json_object_get_string_member (c, "hf_text") : text);
      free (back);
    }
  g_test_message ("%u cases equal the Hugging Face ids, %u also llama.cpp's", n, n_llama);
  g_assert_cmpuint (n_llama, <, n);   /* the decomposed accents */
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
      size_t cap = lm_detokenizer_buffer_size (fx->tok);
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

  /* An unfinished character at the end comes out on flush, as U+FFFD. */
  LmDetokenizer st = { 0 };
  char buf[64];
  int32_t e2 = lm_tokenizer_find (fx->tok, "\xc3\xa2");   /* byte 0xE2 in GPT-2 form */
  g_assert_cmpint (e2, >=, 0);
  g_assert_cmpuint (lm_detokenizer_push (&st, fx->tok, e2, true, buf, sizeof buf), ==, 0);
  g_assert_cmpuint (lm_detokenizer_flush (&st, buf, sizeof buf), ==, 3);
  g_assert_cmpmem (buf, 3, "\xef\xbf\xbd", 3);
  g_assert_cmpuint (lm_detokenizer_flush (&st, buf, sizeof buf), ==, 0);
}

/* Pushes the byte tokens of @bytes one by one; returns what each push gave,
 * "|"-separated, and the flush at the end after a last "|". */
static char *
stream_bytes (const LmTokenizer *tok, const char *bytes)
{
  LmDetokenizer st = { 0 };
  GString *seen = g_string_new (NULL);
  g_autofree char *buf = g_malloc (lm_detokenizer_buffer_size (tok));
  for (const char *p = bytes; *p; p++)
    {
      size_t len = lm_detokenizer_push (&st, tok, vocab_byte_token (tok, (uint8_t) *p), false, buf,
                                        lm_detokenizer_buffer_size (tok));
      g_assert_true (g_utf8_validate (buf, (gssize) len, NULL));
      g_string_append_len (seen, buf, (gssize) len);
      g_string_append_c (seen, '|');
    }
  size_t len = lm_detokenizer_flush (&st, buf, 3);
  g_string_append_len (seen, buf, (gssize) len);
  return g_string_free (seen, FALSE);
}

/* A 4-byte emoji and a CJK character written one byte token at a time come
 * out whole with their last byte, never as U+FFFD; broken sequences give
 * one U+FFFD each, and an unfinished one at the end gives U+FFFD on flush. */
static void
test_streaming_split_characters (Fixture *fx, gconstpointer data)
{
  const LmTokenizer *tok = fx->tok;
  g_autofree char *whole = stream_bytes (tok, "a\xf0\x9f\x98\x80\xe6\x97\xa5" "b");
  g_assert_cmpstr (whole, ==, "a||||\xf0\x9f\x98\x80|||\xe6\x97\xa5|b|");
  g_autofree char *cut = stream_bytes (tok, "\xf0\x9f" "x" "\x80" "\xed\xa0" "\xe6\x97");
  g_assert_cmpstr (cut, ==, "||\xef\xbf\xbdx|\xef\xbf\xbd||\xef\xbf\xbd\xef\xbf\xbd|||"
                   "\xef\xbf\xbd");
  g_autofree char *invalid = stream_bytes (tok, "\xc0\xaf\xf5z");
  g_assert_cmpstr (invalid, ==, "\xef\xbf\xbd|\xef\xbf\xbd|\xef\xbf\xbd|z|");
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

/* NFC of @len bytes by GLib, the independent reference: each run of valid
 * UTF-8 normalised, bytes that are not valid UTF-8 (and NULs, which GLib
 * will not take) kept as they are. */
static GString *
glib_nfc (const char *text, size_t len)
{
  GString *out = g_string_new (NULL);
  const char *p = text, *end = text + len;
  while (p < end)
    {
      const char *stop;
      g_utf8_validate (p, end - p, &stop);
      if (stop > p)
        {
          g_autofree char *normal = g_utf8_normalize (p, stop - p, G_NORMALIZE_NFC);
          g_assert_nonnull (normal);
          g_string_append (out, normal);
        }
      if (stop < end)
        g_string_append_c (out, *stop++);
      p = stop;
    }
  return out;
}

/* The bytes the tokens of @text stand for: @text in NFC. */
static void
assert_roundtrip_nfc (const LmTokenizer *tok, const char *text, size_t len, bool parse_special)
{
  int32_t *ids = NULL;
  size_t n = 0;
  g_assert_cmpint (lm_tokenize (tok, text, len, parse_special, &ids, &n), ==, LM_OK);
  char *back = NULL;
  size_t back_len = 0;
  g_assert_cmpint (lm_detokenize (tok, ids, n, true, &back, &back_len), ==, LM_OK);
  GString *want = glib_nfc (text, len);
  g_assert_cmpmem (back, back_len, want->str, want->len);
  g_string_free (want, TRUE);
  free (back);
  free (ids);
}

/* Detokenising the tokens of any byte string gives the string back in NFC,
 * in both modes, for random mixes of ASCII, specials, multi-byte characters,
 * combining marks and invalid bytes. (The tokenizer normalises each text
 * between special tokens on its own; no part here can compose with, or be
 * reordered across, the '<' and '>' that special tokens begin and end with,
 * so normalising the whole text is the same.) */
static void
test_roundtrip_random (Fixture *fx, gconstpointer data)
{
  static const char *const parts[] = {
    "a", "the", " ", "  ", "\n", "\r\n", "\t", "'s", "'LL", "7", "é", "ñ", "Ж", "日本",
    "😀", "🇺🇸", "\xcc\x81", "\xcc\xa3", "\xe1\x84\x80", "\xe1\x85\xa1", "\xef\xbf\xbd",
    "\xe2\x84\xab", "\xff", "\xc3", "\xe2\x82", ",", "...", "<|im_start|>",
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
        assert_roundtrip_nfc (fx->tok, text->str, text->len, special);
      g_string_free (text, TRUE);
    }
  g_rand_free (rng);
}

/* Appends @cp and a newline, a starter that composes with nothing, so that
 * many code points can be normalised in one text, each on its own. */
static void
append_line (GString *text, gunichar cp)
{
  g_string_append_unichar (text, cp);
  g_string_append_c (text, '\n');
}

/* Every code point GLib's Unicode version assigns, normalised on its own
 * through the tokenizer, is what GLib makes of it. (Normalisation is stable
 * across Unicode versions for assigned code points; those assigned after
 * GLib's version are left out.) */
static void
test_nfc_code_points (Fixture *fx, gconstpointer data)
{
  GString *text = g_string_new (NULL);
  guint n = 0;
  for (gunichar cp = 1; cp <= 0x10FFFF; cp++)
    {
      if ((cp >= 0xD800 && cp <= 0xDFFF) || g_unichar_type (cp) == G_UNICODE_UNASSIGNED)
        continue;
      append_line (text, cp);
      n++;
      if (text->len > 60000 || cp == 0x10FFFF)
        {
          assert_roundtrip_nfc (fx->tok, text->str, text->len, false);
          g_string_truncate (text, 0);
        }
    }
  g_string_free (text, TRUE);
  g_assert_cmpuint (n, >, 280000);
}

/* The code points NFC acts on, by GLib's data: characters with a canonical
 * decomposition and the first parts they decompose to (the bases that
 * compose), the second parts (the marks that compose with them), and all
 * characters of a non-zero combining class. */
typedef struct {
  GArray *bases, *seconds, *marks;
} NfcPools;

static void
nfc_pools_init (NfcPools *p)
{
  p->bases = g_array_new (FALSE, FALSE, sizeof (gunichar));
  p->seconds = g_array_new (FALSE, FALSE, sizeof (gunichar));
  p->marks = g_array_new (FALSE, FALSE, sizeof (gunichar));
  for (gunichar cp = 0xA0; cp <= 0x10FFFF; cp++)
    {
      gunichar a, b;
      if ((cp >= 0xD800 && cp <= 0xDFFF) || g_unichar_type (cp) == G_UNICODE_UNASSIGNED)
        continue;
      if (g_unichar_combining_class (cp) != 0)
        g_array_append_val (p->marks, cp);
      if (!g_unichar_decompose (cp, &a, &b))
        continue;
      g_array_append_val (p->bases, cp);
      g_array_append_val (p->bases, a);
      if (b)
        g_array_append_val (p->seconds, b);
    }
}

static void
nfc_pools_clear (NfcPools *p)
{
  g_array_unref (p->bases);
  g_array_unref (p->seconds);
  g_array_unref (p->marks);
}

static gunichar
pick (GRand *rng, GArray *pool)
{
  return g_array_index (pool, gunichar, g_rand_int_range (rng, 0, (gint32) pool->len));
}

/* A base (or an ASCII letter) and up to five marks that compose or not;
 * now and then another base in between. */
static void
append_random_sequence (GRand *rng, const NfcPools *p, GString *text)
{
  int len = g_rand_int_range (rng, 0, 6);
  g_string_append_unichar (text, g_rand_boolean (rng) ? pick (rng, p->bases)
                                 : (gunichar) g_rand_int_range (rng, 'a', 'z' + 1));
  for (int k = 0; k < len; k++)
    {
      int kind = g_rand_int_range (rng, 0, 8);
      g_string_append_unichar (text, kind < 4 ? pick (rng, p->seconds)
                                     : kind < 7 ? pick (rng, p->marks) : pick (rng, p->bases));
    }
  g_string_append_c (text, '\n');
}

/* Random sequences of those against GLib: decomposition, the reordering of
 * marks, and composition with the marks that block it or not. */
static void
test_nfc_sequences (Fixture *fx, gconstpointer data)
{
  NfcPools pools;
  nfc_pools_init (&pools);
  GRand *rng = g_rand_new_with_seed ((guint32) ts_test_seed ());
  GString *text = g_string_new (NULL);
  for (int i = 0; i < 50000; i++)
    {
      append_random_sequence (rng, &pools, text);
      if (text->len > 30000)
        {
          assert_roundtrip_nfc (fx->tok, text->str, text->len, false);
          g_string_truncate (text, 0);
        }
    }
  assert_roundtrip_nfc (fx->tok, text->str, text->len, false);
  g_string_free (text, TRUE);
  g_rand_free (rng);
  nfc_pools_clear (&pools);
}

/* The tokenizer of @fx's vocabulary with pre-tokenizer @pre; NULL and the
 * message in *error_out when it is refused. */
static LmTokenizer *
tokenizer_with_pre (Fixture *fx, const char *pre, GgufFile **file_out, LmStatus *status,
                    char **error_out)
{
  VocabVariant variant = { .pre = pre };
  return vocab_variant_tokenizer (fx->file, &variant, file_out, status, error_out);
}

/* The qwen2 rule (Qwen2, 2.5, 3) on the tiny vocabulary against the Hugging
 * Face ids of that rule; it splits some texts unlike qwen35 (marks). */
static void
test_qwen2_rule (Fixture *fx, gconstpointer data)
{
  GgufFile *f = NULL;
  LmStatus st;
  LmTokenizer *tok = tokenizer_with_pre (fx, "qwen2", &f, &st, NULL);
  g_assert_cmpint (st, ==, LM_OK);
  JsonArray *cases = cases_in (fx->hf);
  guint n_differ = 0;
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      check_tokenize (tok, json_object_get_string_member (c, "text"), true,
                      json_object_get_array_member (c, "hf_qwen2_ids"));
      n_differ += !same_ids (json_object_get_array_member (c, "hf_qwen2_ids"),
                             json_object_get_array_member (c, "hf_ids"));
    }
  g_assert_cmpuint (n_differ, >, 0);
  lm_tokenizer_free (tok);
  lm_gguf_close (f);
}

/* Other pre-tokenizers, and none, are refused with a message naming them. */
static void
test_pre_names (Fixture *fx, gconstpointer data)
{
  static const char *const refused[] = { "llama3", "gpt2", "qwen", "qwen2 ", "" };
  for (size_t i = 0; i < G_N_ELEMENTS (refused); i++)
    {
      GgufFile *f = NULL;
      LmStatus st;
      char *err = NULL;
      g_assert_null (tokenizer_with_pre (fx, refused[i], &f, &st, &err));
      g_assert_cmpint (st, ==, LM_ERR_UNSUPPORTED);
      g_autofree char *quoted = g_strdup_printf ("'%s'", refused[i]);
      g_assert_nonnull (strstr (err, quoted));
      g_assert_nonnull (strstr (err, "qwen2 and qwen35"));
      free (err);
      lm_gguf_close (f);
    }
  GgufFile *f = NULL;
  LmStatus st;
  char *err = NULL;
  g_assert_null (tokenizer_with_pre (fx, NULL, &f, &st, &err));
  g_assert_cmpint (st, ==, LM_ERR_FORMAT);
  g_assert_nonnull (strstr (err, "tokenizer.ggml.pre is missing"));
  free (err);
  lm_gguf_close (f);
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
      lm_gguf_close (f);
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
  GgufWriter *w = lm_gguf_writer_new ();
  lm_gguf_writer_add_string (w, "tokenizer.ggml.model", "gpt2");
  lm_gguf_writer_add_string (w, "tokenizer.ggml.pre", "qwen35");
  lm_gguf_writer_add_string_array (w, "tokenizer.ggml.tokens", tokens, 6);
  lm_gguf_writer_add_array (w, "tokenizer.ggml.token_type", LM_GGUF_TYPE_INT32, types, 6);
  lm_gguf_writer_add_string_array (w, "tokenizer.ggml.merges", merges, 1);
  g_assert_cmpint (lm_gguf_writer_begin (w, path, NULL), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_finish (w, NULL), ==, LM_OK);
  lm_gguf_writer_free (w);
  GgufFile *f = NULL;
  g_assert_cmpint (lm_gguf_open (path, &f, NULL), ==, LM_OK);
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
  lm_gguf_close (f);

  /* A merge without a space is a load error naming it. */
  w = lm_gguf_writer_new ();
  lm_gguf_writer_add_string (w, "tokenizer.ggml.model", "gpt2");
  lm_gguf_writer_add_string (w, "tokenizer.ggml.pre", "qwen35");
  lm_gguf_writer_add_string_array (w, "tokenizer.ggml.tokens", tokens, 6);
  lm_gguf_writer_add_string_array (w, "tokenizer.ggml.merges", merges + 1, 1);
  lm_gguf_writer_begin (w, path, NULL);
  lm_gguf_writer_finish (w, NULL);
  lm_gguf_writer_free (w);
  g_assert_cmpint (lm_gguf_open (path, &f, NULL), ==, LM_OK);
  char *err = NULL;
  g_assert_cmpint (lm_tokenizer_new_from_gguf (f, &tok, &err), !=, LM_OK);
  g_assert_nonnull (strstr (err, "has no space"));
  free (err);
  lm_gguf_close (f);
  g_unlink (path);
  g_rmdir (dir);
}

/* "1 2 3\n" from a JSON array of ids. */
static char *
ids_line (JsonArray *ids)
{
  GString *w = g_string_new (NULL);
  for (guint i = 0; i < json_array_get_length (ids); i++)
    g_string_append_printf (w, i ? " %d" : "%d", (int) json_array_get_int_element (ids, i));
  g_string_append_c (w, '\n');
  return g_string_free (w, FALSE);
}

/* The Hugging Face ids of @text (qwen35-tiny.json), as the CLI prints them. */
static char *
hf_line (const char *text)
{
  g_autoptr (JsonParser) hf = parse_json ("tokenizer/qwen35-tiny.json");
  JsonArray *cases = cases_in (hf);
  for (guint i = 0; i < json_array_get_length (cases); i++)
    {
      JsonObject *c = json_array_get_object_element (cases, i);
      if (strcmp (json_object_get_string_member (c, "text"), text) == 0)
        return ids_line (json_object_get_array_member (c, "hf_ids"));
    }
  g_error ("no Hugging Face reference for '%s'", text);
}

/* Texts that start with '-' go after "--", which ends the options. */
static void
test_cli_dash_texts (const char *cli, const char *model)
{
  static const char *const texts[] = { "-x", "--help", "--", "- item one\n- item two", "-é" };
  for (size_t i = 0; i < G_N_ELEMENTS (texts); i++)
    {
      const char *argv[] = { cli, "tokenize", "--model", model, "--", texts[i], NULL };
      g_autofree char *out = NULL, *err = NULL;
      g_assert_cmpint (ts_test_spawn (argv, &out, &err), ==, 0);
      g_autofree char *want = hf_line (texts[i]);
      g_assert_cmpstr (out, ==, want);
    }
  /* Without "--" it is an option: refused, with the way out named. */
  const char *argv[] = { cli, "tokenize", "--model", model, "-x", NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (ts_test_spawn (argv, &out, &err), ==, 2);
  g_assert_nonnull (strstr (err, "Unknown option -x"));
  g_assert_nonnull (strstr (err, "after --"));
  /* Two texts are one too many. */
  const char *two[] = { cli, "tokenize", "--model", model, "--", "a", "b", NULL };
  g_autofree char *out2 = NULL, *err2 = NULL;
  g_assert_cmpint (ts_test_spawn (two, &out2, &err2), ==, 2);
}

/* generate --print-prompt: a prompt starting with '-' as the value of
 * --prompt, and --chat giving llama.cpp's golden ChatML prompt ids. */
static void
test_cli_prompt (const char *cli, const char *model, JsonObject *manifest)
{
  const char *dash[] = { cli, "generate", "--model", model, "--prompt", "-x", "--print-prompt",
                         NULL };
  g_autofree char *out = NULL, *err = NULL;
  g_assert_cmpint (ts_test_spawn (dash, &out, &err), ==, 0);
  g_autofree char *want = hf_line ("-x");
  g_assert_cmpstr (out, ==, want);

  const char *chat[] = { cli, "generate", "--model", model, "--chat", "--print-prompt", "-p",
                         "What is free software? Explain it briefly.", NULL };
  g_autofree char *chat_out = NULL, *chat_err = NULL;
  g_assert_cmpint (ts_test_spawn (chat, &chat_out, &chat_err), ==, 0);
  g_autofree char *chat_want = ids_line (json_object_get_array_member (manifest, "prompt_tokens"));
  g_assert_cmpstr (chat_out, ==, chat_want);
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

  test_cli_dash_texts (cli, model);
  test_cli_prompt (cli, model, m);

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
  ADD ("/engine/tokenizer/streaming-split-characters", test_streaming_split_characters);
  ADD ("/engine/tokenizer/hf-reference", test_hf_reference);
  ADD ("/engine/tokenizer/qwen2-rule", test_qwen2_rule);
  ADD ("/engine/tokenizer/pre-names", test_pre_names);
  ADD ("/engine/tokenizer/nfc-code-points", test_nfc_code_points);
  ADD ("/engine/tokenizer/nfc-sequences", test_nfc_sequences);
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
