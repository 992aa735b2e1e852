/* safetensors-json.c: recursive-descent JSON parser with bounds and depth checks.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "safetensors-json.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const char *s;
  size_t n, pos;
  char err[256];
  bool failed;
} Parser;

static bool __attribute__ ((format (printf, 2, 3)))
fail (Parser *p, const char *fmt, ...)
{
  if (p->failed)
    return false;
  char msg[200];
  va_list ap;
  va_start (ap, fmt);
  vsnprintf (msg, sizeof msg, fmt, ap);
  va_end (ap);
  snprintf (p->err, sizeof p->err, "JSON at byte %zu: %s", p->pos, msg);
  p->failed = true;
  return false;
}

static void
skip_ws (Parser *p)
{
  while (p->pos < p->n && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'
                           || p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

static bool
expect_literal (Parser *p, const char *lit)
{
  size_t k = strlen (lit);
  if (p->n - p->pos < k || memcmp (p->s + p->pos, lit, k) != 0)
    return fail (p, "invalid literal");
  p->pos += k;
  return true;
}

static int
hex_value (char c)
{
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool
read_hex4 (Parser *p, uint32_t *out)
{
  if (p->n - p->pos < 4)
    return fail (p, "truncated \\u escape");
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    {
      int h = hex_value (p->s[p->pos + i]);
      if (h < 0)
        return fail (p, "bad hex digit in \\u escape");
      v = v << 4 | (uint32_t) h;
    }
  p->pos += 4;
  *out = v;
  return true;
}

static size_t
put_utf8 (uint32_t cp, char *o)
{
  if (cp < 0x80) { o[0] = (char) cp; return 1; }
  if (cp < 0x800) { o[0] = (char) (0xC0 | cp >> 6); o[1] = (char) (0x80 | (cp & 0x3F)); return 2; }
  if (cp < 0x10000)
    {
      o[0] = (char) (0xE0 | cp >> 12);
      o[1] = (char) (0x80 | ((cp >> 6) & 0x3F));
      o[2] = (char) (0x80 | (cp & 0x3F));
      return 3;
    }
  o[0] = (char) (0xF0 | cp >> 18);
  o[1] = (char) (0x80 | ((cp >> 12) & 0x3F));
  o[2] = (char) (0x80 | ((cp >> 6) & 0x3F));
  o[3] = (char) (0x80 | (cp & 0x3F));
  return 4;
}

/* Parses a string at p->pos (the opening quote). The unescaped text is never
 * longer than the source, so one allocation of the source length suffices. */
static bool
parse_string (Parser *p, char **out, size_t *len_out)
{
  size_t start = ++p->pos, end = start;
  while (end < p->n && p->s[end] != '"')
    end += p->s[end] == '\\' ? 2 : 1;
  if (end >= p->n)
    return fail (p, "unterminated string");
  char *o = malloc (end - start + 1);
  if (o == NULL)
    return fail (p, "out of memory");
  size_t k = 0;
  while (p->pos < end)
    {
      unsigned char c = (unsigned char) p->s[p->pos];
      if (c < 0x20)
        {
          free (o);
          return fail (p, "control character in string");
        }
      if (c != '\\')
        {
          o[k++] = (char) c;
          p->pos++;
          continue;
        }
      char e = p->s[++p->pos];
      p->pos++;
      const char *simple = strchr ("\"\\/bfnrt", e);
      if (e != 0 && simple)
        {
          static const char repl[] = "\"\\/\b\f\n\r\t";
          o[k++] = repl[simple - "\"\\/bfnrt"];
          continue;
        }
      uint32_t cp;
      if (e != 'u' || !read_hex4 (p, &cp))
        {
          free (o);
          return fail (p, "bad escape in string");
        }
      if (cp >= 0xD800 && cp <= 0xDBFF)
        {
          uint32_t lo;
          if (p->n - p->pos < 2 || p->s[p->pos] != '\\' || p->s[p->pos + 1] != 'u'
              || (p->pos += 2, !read_hex4 (p, &lo)) || lo < 0xDC00 || lo > 0xDFFF)
            {
              free (o);
              return fail (p, "unpaired surrogate in string");
            }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
      else if (cp >= 0xDC00 && cp <= 0xDFFF)
        {
          free (o);
          return fail (p, "unpaired surrogate in string");
        }
      k += put_utf8 (cp, o + k);   /* 6 or 12 source bytes give at most 3 or 4 */
    }
  p->pos = end + 1;
  o[k] = 0;
  *out = o;
  *len_out = k;
  return true;
}

static bool
parse_number (Parser *p, LmJson *v)
{
  size_t start = p->pos;
  bool plain = true;
  if (p->pos < p->n && p->s[p->pos] == '-')
    p->pos++, plain = false;
  size_t digits = p->pos;
  while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
    p->pos++;
  if (p->pos == digits)
    return fail (p, "invalid number");
  if (p->s[digits] == '0' && p->pos - digits > 1)
    return fail (p, "number with a leading zero");
  if (p->pos < p->n && p->s[p->pos] == '.')
    {
      plain = false;
      size_t f = ++p->pos;
      while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
      if (p->pos == f)
        return fail (p, "invalid fraction");
    }
  if (p->pos < p->n && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E'))
    {
      plain = false;
      p->pos++;
      if (p->pos < p->n && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
        p->pos++;
      size_t e = p->pos;
      while (p->pos < p->n && p->s[p->pos] >= '0' && p->s[p->pos] <= '9')
        p->pos++;
      if (p->pos == e)
        return fail (p, "invalid exponent");
    }
  size_t len = p->pos - start;
  if (len > 400)
    return fail (p, "number too long");
  char buf[401];
  memcpy (buf, p->s + start, len);
  buf[len] = 0;
  v->type = LM_JSON_NUMBER;
  v->number = strtod (buf, NULL);
  if (plain)
    {
      uint64_t u = 0;
      bool fits = true;
      for (size_t i = 0; i < len && fits; i++)
        fits = !__builtin_mul_overflow (u, 10, &u)
               && !__builtin_add_overflow (u, (uint64_t) (buf[i] - '0'), &u);
      v->is_uint = fits;
      v->uint = fits ? u : 0;
    }
  return true;
}

static bool parse_value (Parser *p, LmJson *v, int depth);

static bool
grow_items (Parser *p, LmJson *v, size_t *cap, bool with_keys)
{
  if (v->n_items < *cap)
    return true;
  size_t nc = *cap ? *cap * 2 : 4;
  LmJson *items = realloc (v->items, nc * sizeof *items);
  if (items)
    v->items = items;
  if (with_keys)
    {
      char **keys = realloc (v->keys, nc * sizeof *keys);
      if (keys)
        v->keys = keys;
      size_t *lens = realloc (v->key_lens, nc * sizeof *lens);
      if (lens)
        v->key_lens = lens;
      if (!keys || !lens)
        return fail (p, "out of memory");
    }
  if (!items)
    return fail (p, "out of memory");
  *cap = nc;
  return true;
}

static bool
parse_array (Parser *p, LmJson *v, int depth)
{
  size_t cap = 0;
  v->type = LM_JSON_ARRAY;
  p->pos++;
  skip_ws (p);
  if (p->pos < p->n && p->s[p->pos] == ']')
    {
      p->pos++;
      return true;
    }
  for (;;)
    {
      if (!grow_items (p, v, &cap, false))
        return false;
      memset (&v->items[v->n_items], 0, sizeof *v->items);
      v->n_items++;
      if (!parse_value (p, &v->items[v->n_items - 1], depth + 1))
        return false;
      skip_ws (p);
      if (p->pos >= p->n)
        return fail (p, "unterminated array");
      if (p->s[p->pos] == ']')
        {
          p->pos++;
          return true;
        }
      if (p->s[p->pos] != ',')
        return fail (p, "expected ',' or ']' in array");
      p->pos++;
    }
}

typedef struct {
  const char *key;
  size_t len;
} KeyRef;

static int
compare_keys (const void *a, const void *b)
{
  const KeyRef *x = a, *y = b;
  if (x->len != y->len)
    return x->len < y->len ? -1 : 1;
  return memcmp (x->key, y->key, x->len);
}

/* Sorting keeps this O(n log n) for headers with many thousands of keys. */
static bool
check_unique_keys (Parser *p, const LmJson *v)
{
  if (v->n_items < 2)
    return true;
  KeyRef *refs = malloc (v->n_items * sizeof *refs);
  if (refs == NULL)
    return fail (p, "out of memory");
  for (size_t i = 0; i < v->n_items; i++)
    refs[i] = (KeyRef) { v->keys[i], v->key_lens[i] };
  qsort (refs, v->n_items, sizeof *refs, compare_keys);
  bool ok = true;
  for (size_t i = 1; i < v->n_items && ok; i++)
    if (compare_keys (&refs[i - 1], &refs[i]) == 0)
      ok = fail (p, "duplicate key '%.60s'", refs[i].key);
  free (refs);
  return ok;
}

static bool
parse_object (Parser *p, LmJson *v, int depth)
{
  size_t cap = 0;
  v->type = LM_JSON_OBJECT;
  p->pos++;
  skip_ws (p);
  if (p->pos < p->n && p->s[p->pos] == '}')
    {
      p->pos++;
      return true;
    }
  for (;;)
    {
      skip_ws (p);
      if (p->pos >= p->n || p->s[p->pos] != '"')
        return fail (p, "expected a string key in object");
      char *key;
      size_t klen;
      if (!parse_string (p, &key, &klen))
        return false;
      /* Keys go in first so that the tree can free them on any error. */
      if (!grow_items (p, v, &cap, true))
        {
          free (key);
          return false;
        }
      size_t i = v->n_items++;
      memset (&v->items[i], 0, sizeof *v->items);
      v->keys[i] = key;
      v->key_lens[i] = klen;
      skip_ws (p);
      if (p->pos >= p->n || p->s[p->pos] != ':')
        return fail (p, "expected ':' after object key");
      p->pos++;
      if (!parse_value (p, &v->items[i], depth + 1))
        return false;
      skip_ws (p);
      if (p->pos >= p->n)
        return fail (p, "unterminated object");
      if (p->s[p->pos] == '}')
        {
          p->pos++;
          return check_unique_keys (p, v);
        }
      if (p->s[p->pos] != ',')
        return fail (p, "expected ',' or '}' in object");
      p->pos++;
    }
}

static bool
parse_value (Parser *p, LmJson *v, int depth)
{
  if (depth > LM_JSON_MAX_DEPTH)
    return fail (p, "nested deeper than %d levels", LM_JSON_MAX_DEPTH);
  skip_ws (p);
  if (p->pos >= p->n)
    return fail (p, "unexpected end of text");
  switch (p->s[p->pos])
    {
    case '{': return parse_object (p, v, depth);
    case '[': return parse_array (p, v, depth);
    case '"':
      v->type = LM_JSON_STRING;
      return parse_string (p, &v->string, &v->len);
    case 't': v->type = LM_JSON_BOOL; v->boolean = true; return expect_literal (p, "true");
    case 'f': v->type = LM_JSON_BOOL; return expect_literal (p, "false");
    case 'n': v->type = LM_JSON_NULL; return expect_literal (p, "null");
    default: return parse_number (p, v);
    }
}

static void
free_value (LmJson *v)
{
  for (size_t i = 0; i < v->n_items; i++)
    {
      free_value (&v->items[i]);
      if (v->keys)
        free (v->keys[i]);
    }
  free (v->items);
  free (v->keys);
  free (v->key_lens);
  free (v->string);
}

LmJson *
lm_json_parse (const char *text, size_t len, char **error_out)
{
  Parser p = { .s = text, .n = len };
  LmJson *root = calloc (1, sizeof *root);
  if (root == NULL)
    return NULL;
  if (parse_value (&p, root, 0))
    {
      skip_ws (&p);
      if (p.pos != p.n)
        fail (&p, "trailing characters after the value");
    }
  if (p.failed)
    {
      if (error_out)
        *error_out = strdup (p.err);
      lm_json_free (root);
      return NULL;
    }
  return root;
}

void
lm_json_free (LmJson *root)
{
  if (root == NULL)
    return;
  free_value (root);
  free (root);
}

const LmJson *
lm_json_get (const LmJson *obj, const char *key)
{
  if (obj == NULL || obj->type != LM_JSON_OBJECT)
    return NULL;
  size_t k = strlen (key);
  for (size_t i = 0; i < obj->n_items; i++)
    if (obj->key_lens[i] == k && memcmp (obj->keys[i], key, k) == 0)
      return &obj->items[i];
  return NULL;
}

bool
lm_json_get_string (const LmJson *obj, const char *key, const char **out)
{
  const LmJson *v = lm_json_get (obj, key);
  if (v == NULL || v->type != LM_JSON_STRING)
    return false;
  *out = v->string;
  return true;
}

bool
lm_json_get_uint (const LmJson *obj, const char *key, uint64_t *out)
{
  const LmJson *v = lm_json_get (obj, key);
  if (v == NULL || v->type != LM_JSON_NUMBER || !v->is_uint)
    return false;
  *out = v->uint;
  return true;
}

bool
lm_json_get_number (const LmJson *obj, const char *key, double *out)
{
  const LmJson *v = lm_json_get (obj, key);
  if (v == NULL || v->type != LM_JSON_NUMBER)
    return false;
  *out = v->number;
  return true;
}
