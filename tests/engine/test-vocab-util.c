/* test-vocab-util.c: tokenizers of the golden vocabulary with other metadata.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "test-vocab-util.h"

#include <glib.h>
#include <string.h>

#include "gguf-writer.h"
#include "ts-test-util.h"

static bool
stands_for_itself (unsigned b)
{
  return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

int32_t
vocab_byte_token (const LmTokenizer *tok, uint8_t b)
{
  gunichar cp = b;
  if (!stands_for_itself (b))
    {
      cp = 0x100;
      for (unsigned x = 0; x < b; x++)
        cp += !stands_for_itself (x);
    }
  char utf8[8] = { 0 };
  g_unichar_to_utf8 (cp, utf8);
  int32_t id = lm_tokenizer_find (tok, utf8);
  g_assert_cmpint (id, >=, 0);
  return id;
}

/* The strings of array @key of @src, the think tags renamed when asked. */
static GPtrArray *
string_array (const GgufFile *src, const char *key, bool without_think)
{
  GgufValueType et;
  uint64_t n;
  g_assert_true (lm_gguf_get_array (src, key, &et, &n, NULL));
  GPtrArray *out = g_ptr_array_new_with_free_func (g_free);
  for (uint64_t i = 0; i < n; i++)
    {
      GgufString s;
      g_assert_true (lm_gguf_get_array_string (src, key, i, &s));
      char *text = g_strndup (s.data, s.len);
      if (without_think && (strcmp (text, "<think>") == 0 || strcmp (text, "</think>") == 0))
        text[strlen (text) - 2] = 'q';   /* "<thinq>", "</thinq>" */
      g_ptr_array_add (out, text);
    }
  return out;
}

static void
write_variant (const GgufFile *src, const VocabVariant *v, const char *path)
{
  GgufValueType et;
  uint64_t n_types;
  const void *types;
  g_assert_true (lm_gguf_get_array (src, "tokenizer.ggml.token_type", &et, &n_types, &types));
  g_autoptr (GPtrArray) tokens = string_array (src, "tokenizer.ggml.tokens", v->without_think);
  g_autoptr (GPtrArray) merges = string_array (src, "tokenizer.ggml.merges", false);
  uint32_t eos;
  g_assert_true (lm_gguf_get_u32 (src, "tokenizer.ggml.eos_token_id", &eos));
  GgufWriter *w = lm_gguf_writer_new ();
  lm_gguf_writer_add_string (w, "tokenizer.ggml.model", "gpt2");
  if (v->pre != NULL)
    lm_gguf_writer_add_string (w, "tokenizer.ggml.pre", v->pre);
  lm_gguf_writer_add_string_array (w, "tokenizer.ggml.tokens", (const char *const *) tokens->pdata,
                                tokens->len);
  lm_gguf_writer_add_array (w, "tokenizer.ggml.token_type", LM_GGUF_TYPE_INT32, types, n_types);
  lm_gguf_writer_add_string_array (w, "tokenizer.ggml.merges", (const char *const *) merges->pdata,
                                merges->len);
  lm_gguf_writer_add_u32 (w, "tokenizer.ggml.eos_token_id", eos);
  if (v->chat_template != NULL)
    lm_gguf_writer_add_string (w, "tokenizer.chat_template", v->chat_template);
  g_assert_cmpint (lm_gguf_writer_begin (w, path, NULL), ==, LM_OK);
  g_assert_cmpint (lm_gguf_writer_finish (w, NULL), ==, LM_OK);
  lm_gguf_writer_free (w);
}

LmTokenizer *
vocab_variant_tokenizer (const GgufFile *src, const VocabVariant *variant, GgufFile **file_out,
                         LmStatus *status, char **error_out)
{
  g_autofree char *dir = g_dir_make_tmp ("test-vocab-XXXXXX", NULL);
  g_autofree char *path = g_build_filename (dir, "vocab.gguf", NULL);
  write_variant (src, variant, path);
  g_assert_cmpint (lm_gguf_open (path, file_out, NULL), ==, LM_OK);
  LmTokenizer *tok = NULL;
  *status = lm_tokenizer_new_from_gguf (*file_out, &tok, error_out);
  ts_test_remove_tree (dir);
  return tok;
}
