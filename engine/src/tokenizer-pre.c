/* tokenizer-pre.c: the pre-tokenizer split rules of Qwen2 and Qwen3.5, written out by hand.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each rule is a regex from the models' tokenizer.json, applied repeatedly
 * at the current position, first matching alternative wins:
 *
 *   qwen2  (Qwen2, Qwen2.5, Qwen3; llama.cpp's LLAMA_VOCAB_PRE_TYPE_QWEN2)
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
 *     | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   qwen35 (Qwen3.5; LLAMA_VOCAB_PRE_TYPE_QWEN35)
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}
 *     | ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * They differ in where combining marks go: qwen35 keeps them in letter runs,
 * qwen2 puts them with punctuation. Every alternative is a function returning
 * the number of code points it matches at a position (0 = no match), with the
 * backtracking the regex would do spelled out. The case-insensitive
 * contractions match ASCII letters only, as in the reference tokenizer
 * ("'\u017f", long s, is not a contraction there).
 */
#include "tokenizer-private.h"

#include <stdlib.h>
#include <string.h>

#define CLASS_SPACE 8   /* beside the TokClass values: \s */

typedef struct {
  const uint32_t *cp;
  const uint8_t *cls;     /* TokClass, or CLASS_SPACE */
  size_t n;
  bool marks_in_words;    /* qwen35 */
} CpText;

bool
lm_tok_pre_rule_from_name (const char *name, size_t len, TokPreRule *rule)
{
  if (len == 5 && memcmp (name, "qwen2", 5) == 0)
    *rule = TOK_PRE_QWEN2;
  else if (len == 6 && memcmp (name, "qwen35", 6) == 0)
    *rule = TOK_PRE_QWEN35;
  else
    return false;
  return true;
}

static bool
is_crlf (uint32_t c)
{
  return c == '\r' || c == '\n';
}

/* \p{L} for qwen2, [\p{L}\p{M}] for qwen35 */
static bool
is_word (const CpText *t, size_t i)
{
  return t->cls[i] == TOK_CLASS_LETTER || (t->marks_in_words && t->cls[i] == TOK_CLASS_MARK);
}

/* [^\s\p{L}\p{N}] for qwen2, [^\s\p{L}\p{M}\p{N}] for qwen35 */
static bool
is_punct (const CpText *t, size_t i)
{
  return t->cls[i] == TOK_CLASS_OTHER || (!t->marks_in_words && t->cls[i] == TOK_CLASS_MARK);
}

static bool
is_space (const CpText *t, size_t i)
{
  return t->cls[i] == CLASS_SPACE;
}

static uint32_t
lower_ascii (uint32_t c)
{
  return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d) */
static size_t
match_contraction (const CpText *t, size_t i)
{
  if (t->cp[i] != '\'' || i + 1 >= t->n)
    return 0;
  uint32_t a = lower_ascii (t->cp[i + 1]);
  if (a == 's' || a == 't' || a == 'm' || a == 'd')
    return 2;
  if (i + 2 >= t->n)
    return 0;
  uint32_t b = lower_ascii (t->cp[i + 2]);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
    return 3;
  return 0;
}

static size_t
word_run (const CpText *t, size_t i)
{
  size_t j = i;
  while (j < t->n && is_word (t, j))
    j++;
  return j - i;
}

/* [^\r\n\p{L}\p{N}]?\p{L}+ (qwen2) or [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ (qwen35) */
static size_t
match_word (const CpText *t, size_t i)
{
  bool can_prefix = !is_crlf (t->cp[i]) && t->cls[i] != TOK_CLASS_LETTER
                    && t->cls[i] != TOK_CLASS_NUMBER;
  if (can_prefix && i + 1 < t->n)
    {
      size_t run = word_run (t, i + 1);
      if (run > 0)
        return 1 + run;
    }
  /* Without the optional prefix (in qwen35 a lone mark can start the run). */
  return word_run (t, i);
}

/* \p{N} */
static size_t
match_number (const CpText *t, size_t i)
{
  return t->cls[i] == TOK_CLASS_NUMBER ? 1 : 0;
}

/*  ?[^\s\p{L}\p{N}]+[\r\n]* (qwen2) or  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]* (qwen35) */
static size_t
match_punct (const CpText *t, size_t i)
{
  size_t j = i;
  if (t->cp[j] == ' ')
    j++;
  size_t start = j;
  while (j < t->n && is_punct (t, j))
    j++;
  if (j == start)
    return 0;
  while (j < t->n && is_crlf (t->cp[j]))
    j++;
  return j - i;
}

/* \s*[\r\n]+ : up to and including the last CR/LF of the whitespace run. */
static size_t
match_newlines (const CpText *t, size_t i)
{
  size_t end = 0;
  for (size_t j = i; j < t->n && is_space (t, j); j++)
    if (is_crlf (t->cp[j]))
      end = j + 1 - i;
  return end;
}

/* \s+(?!\S) then \s+ */
static size_t
match_spaces (const CpText *t, size_t i)
{
  size_t j = i;
  while (j < t->n && is_space (t, j))
    j++;
  size_t run = j - i;
  if (run == 0)
    return 0;
  if (j == t->n || run == 1)
    return run;            /* at the end, or \s+ alone */
  return run - 1;          /* leave one space to lead the next word */
}

static size_t
match_at (const CpText *t, size_t i)
{
  size_t m;
  if ((m = match_contraction (t, i)) || (m = match_word (t, i)) || (m = match_number (t, i))
      || (m = match_punct (t, i)) || (m = match_newlines (t, i)) || (m = match_spaces (t, i)))
    return m;
  return 1;   /* unreachable: every code point matches some alternative */
}

bool
lm_tok_pre_split (TokPreRule rule, const uint8_t *text, size_t len, TokPieceFunc emit,
               void *user_data)
{
  if (len == 0)
    return true;
  uint32_t *cp = malloc (len * sizeof *cp);
  uint8_t *cls = malloc (len);
  size_t *off = malloc ((len + 1) * sizeof *off);
  bool ok = cp && cls && off;
  if (ok)
    {
      size_t n = 0;
      for (size_t pos = 0; pos < len; n++)
        {
          off[n] = pos;
          pos += lm_tok_utf8_decode (text + pos, len - pos, &cp[n]);
          cls[n] = lm_tok_unicode_is_space (cp[n]) ? CLASS_SPACE : lm_tok_unicode_class (cp[n]);
        }
      off[n] = len;
      CpText t = { cp, cls, n, rule == TOK_PRE_QWEN35 };
      for (size_t i = 0; i < n;)
        {
          size_t m = match_at (&t, i);
          emit (user_data, off[i], off[i + m]);
          i += m;
        }
    }
  free (cp);
  free (cls);
  free (off);
  return ok;
}
