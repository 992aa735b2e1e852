/* tokenizer-nfc.c: Unicode Normalization Form C of the text before it is split.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The Hugging Face tokenizers of Qwen2, 2.5, 3 and 3.5 (tokenizer.json, and
 * Qwen2Tokenizer / Qwen3_5Tokenizer in transformers) put an NFC normalizer
 * before the pre-tokenizer; llama.cpp does not normalise. We follow the
 * models' own tokenizers, so decomposed text such as "cafe" + U+0301 gets
 * the ids of "café" ([924, 58858] on Qwen2.5's vocabulary) where llama.cpp
 * gives [924, 1859, 53839].
 *
 * The algorithm is the one of UAX #15: full canonical decomposition, the
 * canonical ordering of combining marks, then canonical composition.
 */
#include "tokenizer-private.h"

#include <stdlib.h>
#include <string.h>

/* Values from here on stand for a byte that is not valid UTF-8: it is kept
 * as it is, like a starter that composes with nothing. */
#define RAW_BYTE 0x110000u

typedef struct {
  uint32_t *cp;
  size_t n, cap;
  bool oom;
} CpBuffer;

static void
push (CpBuffer *b, uint32_t cp)
{
  if (b->oom)
    return;
  if (b->n == b->cap)
    {
      size_t cap = b->cap ? 2 * b->cap : 64;
      uint32_t *grown = realloc (b->cp, cap * sizeof *grown);
      if (grown == NULL)
        {
          b->oom = true;
          return;
        }
      b->cp = grown;
      b->cap = cap;
    }
  b->cp[b->n++] = cp;
}

static void
push_decomposed (CpBuffer *b, uint32_t cp)
{
  uint32_t parts[2];
  int n = cp < RAW_BYTE ? lm_tok_unicode_decompose (cp, parts) : 0;
  if (n == 0)
    push (b, cp);
  /* Mappings nest at most a few levels deep (e.g. U+1E08 -> U+00C7 U+0301). */
  for (int i = 0; i < n; i++)
    push_decomposed (b, parts[i]);
}

static uint8_t
ccc_of (uint32_t cp)
{
  return cp < RAW_BYTE ? lm_tok_unicode_ccc (cp) : 0;
}

/* Stable sort of every run of non-starters by combining class. */
static void
reorder_marks (CpBuffer *b)
{
  for (size_t i = 1; i < b->n; i++)
    {
      uint32_t c = b->cp[i];
      uint8_t cc = ccc_of (c);
      if (cc == 0)
        continue;
      size_t j = i;
      while (j > 0 && ccc_of (b->cp[j - 1]) > cc)
        {
          b->cp[j] = b->cp[j - 1];
          j--;
        }
      b->cp[j] = c;
    }
}

/* Combines each character with the last starter when nothing between them
 * blocks it: a character of class 0 or of a class not below its own. Only
 * non-starters lie between the two, sorted by class, so the last of them
 * (last_ccc) decides. */
static void
compose (CpBuffer *b)
{
  size_t out = 0, starter = SIZE_MAX;
  uint8_t last_ccc = 0;
  for (size_t i = 0; i < b->n; i++)
    {
      uint32_t c = b->cp[i];
      uint8_t cc = ccc_of (c);
      if (starter != SIZE_MAX && b->cp[starter] < RAW_BYTE && c < RAW_BYTE)
        {
          bool adjacent = out == starter + 1;
          uint32_t composite = adjacent || last_ccc < cc ? lm_tok_unicode_compose (b->cp[starter], c)
                                                         : 0;
          if (composite)
            {
              b->cp[starter] = composite;
              continue;
            }
        }
      if (cc == 0)
        starter = out;
      last_ccc = cc;
      b->cp[out++] = c;
    }
  b->n = out;
}

static bool
is_ascii (const uint8_t *text, size_t len)
{
  for (size_t i = 0; i < len; i++)
    if (text[i] >= 0x80)
      return false;
  return true;
}

/* The code points back as UTF-8; NULL when out of memory. */
static uint8_t *
encode (const CpBuffer *b, size_t *len_out)
{
  uint8_t *out = malloc (4 * b->n + 1);
  if (out == NULL)
    return NULL;
  size_t o = 0;
  for (size_t i = 0; i < b->n; i++)
    if (b->cp[i] >= RAW_BYTE)
      out[o++] = (uint8_t) (b->cp[i] - RAW_BYTE);
    else
      o += lm_tok_utf8_encode (b->cp[i], (char *) out + o);
  *len_out = o;
  return out;
}

bool
lm_tok_nfc (const uint8_t *text, size_t len, uint8_t **out, size_t *out_len)
{
  *out = NULL;
  *out_len = len;
  if (is_ascii (text, len))   /* ASCII is always in NFC */
    return true;
  CpBuffer b = { 0 };
  for (size_t pos = 0; pos < len;)
    {
      uint32_t cp;
      size_t k = lm_tok_utf8_decode (text + pos, len - pos, &cp);
      bool malformed = cp == 0xFFFD && (k != 3 || memcmp (text + pos, "\xEF\xBF\xBD", 3) != 0);
      push_decomposed (&b, malformed ? RAW_BYTE + text[pos] : cp);
      pos += k;
    }
  if (!b.oom)
    {
      reorder_marks (&b);
      compose (&b);
    }
  uint8_t *normal = b.oom ? NULL : encode (&b, out_len);
  free (b.cp);
  if (normal == NULL)
    return false;
  if (*out_len == len && memcmp (normal, text, len) == 0)
    free (normal);   /* already in NFC */
  else
    *out = normal;
  return true;
}
