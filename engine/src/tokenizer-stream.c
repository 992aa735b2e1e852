/* tokenizer-stream.c: streaming detokenisation into valid UTF-8.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Byte-level BPE tokens may end in the middle of a character (an emoji is
 * often two or three tokens). The bytes of an unfinished character are held
 * back until the token that completes it, so a caller never shows a
 * replacement character for text the model wrote correctly. Only bytes that
 * cannot be part of a valid character become U+FFFD, one for each maximal
 * ill-formed subsequence (the practice of Unicode 3.9 and of WHATWG), and an
 * unfinished character still held back at the end becomes U+FFFD too.
 */
#include "tokenizer-private.h"

#include <string.h>

#define REPLACEMENT "\xEF\xBF\xBD"

typedef struct {
  char *buf;
  size_t len, cap;
} Output;

static void
put (Output *o, const void *bytes, size_t n)
{
  size_t room = o->cap - o->len;
  size_t k = n < room ? n : room;
  memcpy (o->buf + o->len, bytes, k);
  o->len += k;
}

/* Length of the character a lead byte starts, or 0 when @b cannot start one. */
static uint8_t
sequence_length (uint8_t b)
{
  if (b >= 0xC2 && b <= 0xDF)
    return 2;
  if (b >= 0xE0 && b <= 0xEF)
    return 3;
  if (b >= 0xF0 && b <= 0xF4)
    return 4;
  return 0;
}

/* Whether @b can follow the held bytes: the second byte's range depends on
 * the lead, which rules out overlong forms, surrogates and > U+10FFFF. */
static bool
continues (const LmDetokenizer *s, uint8_t b)
{
  uint8_t lo = 0x80, hi = 0xBF;
  if (s->n_pending == 1)
    switch (s->pending[0])
      {
      case 0xE0: lo = 0xA0; break;
      case 0xED: hi = 0x9F; break;
      case 0xF0: lo = 0x90; break;
      case 0xF4: hi = 0x8F; break;
      default: break;
      }
  return b >= lo && b <= hi;
}

static void
feed (LmDetokenizer *s, uint8_t b, Output *o)
{
  if (s->n_pending > 0)
    {
      if (continues (s, b))
        {
          s->pending[s->n_pending++] = b;
          if (s->n_pending == s->n_needed)
            {
              put (o, s->pending, s->n_pending);
              s->n_pending = 0;
            }
          return;
        }
      put (o, REPLACEMENT, 3);   /* the held bytes were a broken character */
      s->n_pending = 0;
    }
  if (b < 0x80)
    put (o, &b, 1);
  else if ((s->n_needed = sequence_length (b)) == 0)
    put (o, REPLACEMENT, 3);
  else
    {
      s->pending[0] = b;
      s->n_pending = 1;
    }
}

size_t
lm_detokenizer_buffer_size (const LmTokenizer *tok)
{
  /* Held bytes plus the piece, each at worst one U+FFFD of 3 bytes. */
  return 3 * (lm_tokenizer_max_piece (tok) + sizeof ((LmDetokenizer *) 0)->pending);
}

size_t
lm_detokenizer_push (LmDetokenizer *state, const LmTokenizer *tok, int32_t id,
                     bool render_special, char *out, size_t cap)
{
  const char *piece;
  size_t n;
  if (!lm_tok_piece (tok, id, render_special, &piece, &n))
    return 0;
  Output o = { out, 0, cap };
  for (size_t i = 0; i < n; i++)
    feed (state, (uint8_t) piece[i], &o);
  return o.len;
}

size_t
lm_detokenizer_flush (LmDetokenizer *state, char *out, size_t cap)
{
  Output o = { out, 0, cap };
  if (state->n_pending > 0)
    put (&o, REPLACEMENT, 3);
  state->n_pending = 0;
  return o.len;
}
