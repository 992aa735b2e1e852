/* tokenizer-unicode.c: lookups in the Unicode tables; UTF-8 decoding and encoding.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The tables themselves are generated (tokenizer-unicode-tables.c); Hangul
 * syllables are decomposed and composed arithmetically (Unicode 3.12), as
 * their 11,172 mappings follow one formula.
 */
#include "tokenizer-unicode-tables.h"

#define HANGUL_S_BASE 0xAC00u
#define HANGUL_L_BASE 0x1100u
#define HANGUL_V_BASE 0x1161u
#define HANGUL_T_BASE 0x11A7u
#define HANGUL_L_COUNT 19u
#define HANGUL_V_COUNT 21u
#define HANGUL_T_COUNT 28u
#define HANGUL_N_COUNT (HANGUL_V_COUNT * HANGUL_T_COUNT)
#define HANGUL_S_COUNT (HANGUL_L_COUNT * HANGUL_N_COUNT)

TokClass
lm_tok_unicode_class (uint32_t cp)
{
  size_t lo = 0, hi = lm_tok_n_class_ranges;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      if (cp < lm_tok_class_ranges[mid].first)
        hi = mid;
      else if (cp > lm_tok_class_ranges[mid].last)
        lo = mid + 1;
      else
        return (TokClass) lm_tok_class_ranges[mid].cls;
    }
  return TOK_CLASS_OTHER;
}

bool
lm_tok_unicode_is_space (uint32_t cp)
{
  /* The White_Space property (PropList.txt), which is what \s means in the
   * regex engines of the reference tokenizers; unchanged since Unicode 6.3. */
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680
         || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F
         || cp == 0x205F || cp == 0x3000;
}

uint8_t
lm_tok_unicode_ccc (uint32_t cp)
{
  if (cp < 0x300)
    return 0;
  size_t lo = 0, hi = lm_tok_n_ccc_ranges;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      if (cp < lm_tok_ccc_ranges[mid].first)
        hi = mid;
      else if (cp > lm_tok_ccc_ranges[mid].last)
        lo = mid + 1;
      else
        return lm_tok_ccc_ranges[mid].ccc;
    }
  return 0;
}

int
lm_tok_unicode_decompose (uint32_t cp, uint32_t parts[2])
{
  if (cp >= HANGUL_S_BASE && cp < HANGUL_S_BASE + HANGUL_S_COUNT)
    {
      uint32_t s = cp - HANGUL_S_BASE, t = s % HANGUL_T_COUNT;
      /* LVT = LV + T, LV = L + V */
      parts[0] = t ? cp - t : HANGUL_L_BASE + s / HANGUL_N_COUNT;
      parts[1] = t ? HANGUL_T_BASE + t : HANGUL_V_BASE + (s % HANGUL_N_COUNT) / HANGUL_T_COUNT;
      return 2;
    }
  size_t lo = 0, hi = lm_tok_n_decompositions;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      if (cp < lm_tok_decompositions[mid].cp)
        hi = mid;
      else if (cp > lm_tok_decompositions[mid].cp)
        lo = mid + 1;
      else
        {
          parts[0] = lm_tok_decompositions[mid].first;
          parts[1] = lm_tok_decompositions[mid].second;
          return parts[1] ? 2 : 1;
        }
    }
  return 0;
}

static uint32_t
compose_hangul (uint32_t first, uint32_t second)
{
  if (first >= HANGUL_L_BASE && first < HANGUL_L_BASE + HANGUL_L_COUNT
      && second >= HANGUL_V_BASE && second < HANGUL_V_BASE + HANGUL_V_COUNT)
    return HANGUL_S_BASE
           + ((first - HANGUL_L_BASE) * HANGUL_V_COUNT + (second - HANGUL_V_BASE)) * HANGUL_T_COUNT;
  if (first >= HANGUL_S_BASE && first < HANGUL_S_BASE + HANGUL_S_COUNT
      && (first - HANGUL_S_BASE) % HANGUL_T_COUNT == 0
      && second > HANGUL_T_BASE && second < HANGUL_T_BASE + HANGUL_T_COUNT)
    return first + (second - HANGUL_T_BASE);
  return 0;
}

uint32_t
lm_tok_unicode_compose (uint32_t first, uint32_t second)
{
  uint32_t hangul = compose_hangul (first, second);
  if (hangul)
    return hangul;
  size_t lo = 0, hi = lm_tok_n_compositions;
  while (lo < hi)
    {
      size_t mid = lo + (hi - lo) / 2;
      const TokComposition *c = &lm_tok_compositions[mid];
      if (first < c->first || (first == c->first && second < c->second))
        hi = mid;
      else if (first > c->first || second > c->second)
        lo = mid + 1;
      else
        return c->composite;
    }
  return 0;
}

size_t
lm_tok_utf8_decode (const uint8_t *s, size_t len, uint32_t *cp)
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

size_t
lm_tok_utf8_encode (uint32_t cp, char *out)
{
  if (cp < 0x80)
    {
      out[0] = (char) cp;
      return 1;
    }
  if (cp < 0x800)
    {
      out[0] = (char) (0xC0 | (cp >> 6));
      out[1] = (char) (0x80 | (cp & 0x3F));
      return 2;
    }
  if (cp < 0x10000)
    {
      out[0] = (char) (0xE0 | (cp >> 12));
      out[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
      out[2] = (char) (0x80 | (cp & 0x3F));
      return 3;
    }
  out[0] = (char) (0xF0 | (cp >> 18));
  out[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
  out[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
  out[3] = (char) (0x80 | (cp & 0x3F));
  return 4;
}
