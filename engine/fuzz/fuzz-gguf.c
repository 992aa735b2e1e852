/* fuzz-gguf.c: libFuzzer target for the GGUF reader and the tokenizer built from it.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "tokenizer.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Reads every value the API exposes, so the sanitizers see any bad pointer. */
static void
touch_everything (const GgufFile *f)
{
  volatile uint8_t sink = 0;
  for (uint64_t i = 0; i < lm_gguf_n_kv (f); i++)
    {
      GgufString key = lm_gguf_key_name (f, (int64_t) i);
      char name[300];
      size_t n = key.len < sizeof name - 1 ? key.len : sizeof name - 1;
      memcpy (name, key.data, n);
      name[n] = 0;
      GgufValueType et;
      uint64_t count;
      const void *elems;
      GgufString s;
      if (lm_gguf_get_array (f, name, &et, &count, &elems) && count > 0)
        {
          if (elems)
            sink ^= ((const uint8_t *) elems)[0];
          if (lm_gguf_get_array_string (f, name, count - 1, &s) && s.len)
            sink ^= (uint8_t) s.data[s.len - 1];
        }
      if (lm_gguf_get_string (f, name, &s) && s.len)
        sink ^= (uint8_t) s.data[s.len - 1];
    }
  for (uint64_t i = 0; i < lm_gguf_n_tensors (f); i++)
    {
      const GgufTensorInfo *t = lm_gguf_tensor (f, i);
      sink ^= ((const uint8_t *) t->data)[0] ^ ((const uint8_t *) t->data)[t->n_bytes - 1];
    }
  (void) sink;
}

static void
exercise_tokenizer (const GgufFile *f)
{
  LmTokenizer *tok = NULL;
  char *err = NULL;
  if (lm_tokenizer_new_from_gguf (f, &tok, &err) != LM_OK)
    {
      free (err);
      return;
    }
  static const char text[] = "Hello <|im_start|>wörld 123 \xff\xfe don't\n\n  <think>x";
  for (int special = 0; special < 2; special++)
    {
      int32_t *ids = NULL;
      size_t n = 0;
      if (lm_tokenize (tok, text, sizeof text - 1, special, &ids, &n) == LM_OK)
        {
          char *back = NULL;
          size_t len;
          if (lm_detokenize (tok, ids, n, true, &back, &len) == LM_OK)
            free (back);
          LmDetokenizer st = { 0 };
          size_t cap = lm_detokenizer_buffer_size (tok);
          char *buf = malloc (cap);
          for (size_t i = 0; buf && i < n; i++)
            lm_detokenizer_push (&st, tok, ids[i], special, buf, cap);
          free (buf);
          free (ids);
        }
    }
  lm_tokenizer_free (tok);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  GgufFile *f = NULL;
  char *err = NULL;
  if (lm_gguf_open_memory (data, size, &f, &err) == LM_OK)
    {
      touch_everything (f);
      exercise_tokenizer (f);
      lm_gguf_close (f);
    }
  free (err);
  return 0;
}
