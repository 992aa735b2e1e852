/* tokenizer-pre.c: the Qwen3.5 pre-tokenizer split rule, written out by hand.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The rule is the regex
 *   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}
 *   | ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * applied repeatedly at the current position, first matching alternative wins.
 * Every alternative is implemented as a function returning the number of code
 * points it matches at a position (0 = no match), with the backtracking the
 * regex would do spelled out.
 */
#include "tokenizer-private.h"

#include <stdlib.h>

typedef struct {
  const uint32_t *cp;
  const uint8_t *cls;     /* TokClass, or 8 for whitespace */
  size_t n;
} CpText;

#define CLASS_SPACE 8

size_t
tok_utf8_decode (const uint8_t *s, size_t len, uint32_t *cp)
{
  uint8_t b = s[0];
  size_t need;
  uint32_t v, min;
  if (b < 0x80)
    {
      *cp = b;
      return 1;
    }
  if ((b & 0xE0) == 0xC0)
    need = 2, v = b & 0x1F, min = 0x80;
  else if ((b & 0xF0) == 0xE0)
    need = 3, v = b & 0x0F, min = 0x800;
  else if ((b & 0xF8) == 0xF0)
    need = 4, v = b & 0x07, min = 0x10000;
  else
    goto bad;
  if (need > len)
    goto bad;
  for (size_t i = 1; i < need; i++)
    {
      if ((s[i] & 0xC0) != 0x80)
        goto bad;
      v = (v << 6) | (s[i] & 0x3F);
    }
  if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
    goto bad;
  *cp = v;
  return need;
bad:
  *cp = 0xFFFD;
  return 1;
}

static bool
is_crlf (uint32_t c)
{
  return c == '\r' || c == '\n';
}

static bool
is_letter_or_mark (const CpText *t, size_t i)
{
  return t->cls[i] == TOK_CLASS_LETTER || t->cls[i] == TOK_CLASS_MARK;
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
letter_run (const CpText *t, size_t i)
{
  size_t j = i;
  while (j < t->n && is_letter_or_mark (t, j))
    j++;
  return j - i;
}

/* [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ */
static size_t
match_word (const CpText *t, size_t i)
{
  bool can_prefix = !is_crlf (t->cp[i]) && t->cls[i] != TOK_CLASS_LETTER
                    && t->cls[i] != TOK_CLASS_NUMBER;
  if (can_prefix && i + 1 < t->n)
    {
      size_t run = letter_run (t, i + 1);
      if (run > 0)
        return 1 + run;
    }
  /* Without the optional prefix (a lone mark can start the run). */
  return letter_run (t, i);
}

/* \p{N} */
static size_t
match_number (const CpText *t, size_t i)
{
  return t->cls[i] == TOK_CLASS_NUMBER ? 1 : 0;
}

/*  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]* */
static size_t
match_punct (const CpText *t, size_t i)
{
  size_t j = i;
  if (t->cp[j] == ' ')
    j++;
  size_t start = j;
  while (j < t->n && t->cls[j] == TOK_CLASS_OTHER)
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
tok_pre_split_qwen35 (const uint8_t *text, size_t len, TokPieceFunc emit, void *user_data)
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
          pos += tok_utf8_decode (text + pos, len - pos, &cp[n]);
          cls[n] = tok_unicode_is_space (cp[n]) ? CLASS_SPACE : tok_unicode_class (cp[n]);
        }
      off[n] = len;
      CpText t = { cp, cls, n };
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
