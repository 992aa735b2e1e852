/* chat.c: ChatML rendering and tokenisation; the streaming reply splitter.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "chat.h"

#include <stdlib.h>
#include <string.h>

#define IM_START "<|im_start|>"
#define IM_END "<|im_end|>"
#define SYSTEM_TURN IM_START "system\n"
#define EMPTY_THINK "<think>\n\n</think>\n\n"
#define OPEN_THINK "<think>\n"

const char *
lm_chat_role_name (LmChatRole role)
{
  switch (role)
    {
    case LM_ROLE_SYSTEM: return "system";
    case LM_ROLE_USER: return "user";
    case LM_ROLE_ASSISTANT: return "assistant";
    }
  return NULL;
}

bool
lm_chat_can_think (const LmTokenizer *tok)
{
  return lm_tokenizer_find (tok, "<think>") >= 0 && lm_tokenizer_find (tok, "</think>") >= 0;
}

/* What follows the last turn, for @flags. */
static const char *
generation_prompt (const LmTokenizer *tok, unsigned flags)
{
  if (!(flags & LM_CHAT_GENERATION_PROMPT))
    return NULL;
  if ((flags & LM_CHAT_NO_THINKING) && lm_chat_can_think (tok))
    return "assistant\n" EMPTY_THINK;
  if ((flags & LM_CHAT_OPEN_THINKING) && lm_chat_can_think (tok))
    return "assistant\n" OPEN_THINK;
  return "assistant\n";
}

/* ---- the default system prompt of the chat template ---- */

/* Decodes the Jinja string literal whose opening quote is at @p into a
 * malloc()ed string and sets *end past its closing quote; NULL when the
 * literal is not closed or memory runs out. */
static char *
read_literal (const char *p, const char **end)
{
  char quote = *p++;
  char *out = malloc (strlen (p) + 1);
  size_t o = 0;
  if (out == NULL)
    return NULL;
  for (; *p && *p != quote; p++)
    {
      if (*p != '\\' || p[1] == 0)
        {
          out[o++] = *p;
          continue;
        }
      p++;
      out[o++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p == 'r' ? '\r' : *p;
    }
  if (*p != quote)
    {
      free (out);
      return NULL;
    }
  out[o] = 0;
  *end = p + 1;
  return out;
}

/* The Qwen2 and 2.5 templates write their default as one literal system
 * turn, '<|im_start|>system\n...<|im_end|>\n', emitted when the first
 * message is not a system message; the Qwen3 and 3.5 templates have none
 * (their system turn is always built around messages[0].content). */
char *
lm_chat_default_system (const LmTokenizer *tok)
{
  const char *p = lm_tokenizer_chat_template (tok);
  size_t head = strlen (SYSTEM_TURN), tail = strlen (IM_END "\n");
  while (p != NULL && (p = strpbrk (p, "'\"")) != NULL)
    {
      char *text = read_literal (p, &p);
      if (text == NULL)
        return NULL;
      size_t n = strlen (text);
      if (n > head + tail && strncmp (text, SYSTEM_TURN, head) == 0
          && strcmp (text + n - tail, IM_END "\n") == 0)
        {
          memmove (text, text + head, n - head - tail);
          text[n - head - tail] = 0;
          return text;
        }
      free (text);
    }
  return NULL;
}

/* ---- prompts ---- */

typedef struct {
  const char *role, *content;
} Turn;

/* @messages as turns, after the default system turn where the template
 * adds one (*default_out holds its text). NULL for an invalid message or
 * when out of memory. */
static Turn *
build_turns (const LmTokenizer *tok, const LmChatMessage *messages, size_t n, size_t *n_out,
             char **default_out)
{
  *default_out = NULL;
  for (size_t i = 0; i < n; i++)
    if (lm_chat_role_name (messages[i].role) == NULL || messages[i].content == NULL)
      return NULL;
  if (n == 0 || messages[0].role != LM_ROLE_SYSTEM)
    *default_out = lm_chat_default_system (tok);
  Turn *turns = malloc ((n + 1) * sizeof *turns);
  if (turns == NULL)
    {
      free (*default_out);
      *default_out = NULL;
      return NULL;
    }
  size_t k = 0;
  if (*default_out != NULL)
    turns[k++] = (Turn) { "system", *default_out };
  for (size_t i = 0; i < n; i++)
    turns[k++] = (Turn) { lm_chat_role_name (messages[i].role), messages[i].content };
  *n_out = k;
  return turns;
}

char *
lm_chat_render (const LmTokenizer *tok, const LmChatMessage *messages, size_t n,
                unsigned flags)
{
  size_t n_turns;
  char *default_system;
  Turn *turns = build_turns (tok, messages, n, &n_turns, &default_system);
  if (turns == NULL)
    return NULL;
  const char *gen = generation_prompt (tok, flags);
  size_t total = 1 + (gen ? strlen (IM_START) + strlen (gen) : 0);
  for (size_t i = 0; i < n_turns; i++)
    total += strlen (IM_START) + strlen (turns[i].role) + 1 + strlen (turns[i].content)
             + strlen (IM_END) + 1;
  char *out = malloc (total);
  char *p = out;
  for (size_t i = 0; out != NULL && i < n_turns; i++)
    p = stpcpy (stpcpy (stpcpy (stpcpy (stpcpy (stpcpy (p, IM_START), turns[i].role), "\n"),
                                turns[i].content), IM_END), "\n");
  if (out != NULL && gen)
    p = stpcpy (stpcpy (p, IM_START), gen);
  if (out != NULL)
    *p = 0;
  free (turns);
  free (default_system);
  return out;
}

typedef struct {
  int32_t *ids;
  size_t n, cap;
  LmStatus status;
} IdList;

static void
append_ids (IdList *list, const int32_t *ids, size_t n)
{
  if (list->status != LM_OK)
    return;
  if (list->n + n > list->cap)
    {
      size_t cap = (list->n + n) * 2 + 16;
      int32_t *grown = realloc (list->ids, cap * sizeof *grown);
      if (grown == NULL)
        {
          list->status = LM_ERR_NO_MEMORY;
          return;
        }
      list->ids = grown;
      list->cap = cap;
    }
  memcpy (list->ids + list->n, ids, n * sizeof *ids);
  list->n += n;
}

/* Tokenizes @text with specials off and appends it. */
static void
append_text (IdList *list, const LmTokenizer *tok, const char *text)
{
  int32_t *ids = NULL;
  size_t n = 0;
  if (list->status != LM_OK)
    return;
  list->status = lm_tokenize (tok, text, strlen (text), false, &ids, &n);
  append_ids (list, ids, n);
  free (ids);
}

/* The role line and the content in one piece of text, so the pre-tokenizer
 * sees the same boundaries as in the rendered prompt. */
static void
append_turn_body (IdList *list, const LmTokenizer *tok, const Turn *turn)
{
  char *body = malloc (strlen (turn->role) + 1 + strlen (turn->content) + 1);
  if (body == NULL)
    {
      list->status = LM_ERR_NO_MEMORY;
      return;
    }
  stpcpy (stpcpy (stpcpy (body, turn->role), "\n"), turn->content);
  append_text (list, tok, body);
  free (body);
}

LmStatus
lm_chat_tokenize (const LmTokenizer *tok, const LmChatMessage *messages, size_t n,
                  unsigned flags, int32_t **ids_out, size_t *n_out)
{
  if (tok == NULL || (messages == NULL && n > 0) || ids_out == NULL || n_out == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  int32_t im_start = lm_tokenizer_find (tok, IM_START);
  int32_t im_end = lm_tokenizer_find (tok, IM_END);
  if (im_start < 0 || im_end < 0)
    return LM_ERR_INVALID_ARGUMENT;   /* not a ChatML vocabulary */
  size_t n_turns;
  char *default_system;
  Turn *turns = build_turns (tok, messages, n, &n_turns, &default_system);
  if (turns == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  IdList list = { 0 };
  for (size_t i = 0; i < n_turns; i++)
    {
      append_ids (&list, &im_start, 1);
      append_turn_body (&list, tok, &turns[i]);
      append_ids (&list, &im_end, 1);
      append_text (&list, tok, "\n");
    }
  const char *gen = generation_prompt (tok, flags);
  if (gen)
    {
      append_ids (&list, &im_start, 1);
      append_text (&list, tok, gen);
    }
  free (turns);
  free (default_system);
  if (list.status != LM_OK)
    {
      free (list.ids);
      return list.status;
    }
  *ids_out = list.ids;
  *n_out = list.n;
  return LM_OK;
}

/* ---- the reply splitter ---- */

void
lm_chat_stream_init (LmChatStream *stream, const LmTokenizer *tok, bool starts_in_thinking)
{
  memset (stream, 0, sizeof *stream);
  stream->tok = tok;
  stream->think_open = lm_tokenizer_find (tok, "<think>");
  stream->think_close = lm_tokenizer_find (tok, "</think>");
  stream->part = starts_in_thinking ? LM_CHAT_THINKING : LM_CHAT_ANSWER;
  stream->at_part_start = starts_in_thinking;
}

size_t
lm_chat_stream_buffer_size (const LmTokenizer *tok)
{
  return lm_detokenizer_buffer_size (tok) + 3;   /* + the U+FFFD of a finish */
}

/* Drops the newlines that open a part ("<think>\n", "</think>\n\n"). */
static size_t
drop_leading_newlines (LmChatStream *stream, char *out, size_t len)
{
  if (!stream->at_part_start)
    return len;
  size_t skip = 0;
  while (skip < len && out[skip] == '\n')
    skip++;
  if (skip < len)
    stream->at_part_start = false;
  memmove (out, out + skip, len - skip);
  return len - skip;
}

LmChatEvent
lm_chat_stream_push (LmChatStream *stream, int32_t id, char *out, size_t cap, size_t *len_out,
                     LmChatPart *part_out)
{
  *len_out = 0;
  if (part_out)
    *part_out = stream->part;
  if (stream->stopped || lm_tokenizer_is_end (stream->tok, id))
    {
      stream->stopped = true;
      return LM_CHAT_STOP;
    }
  if (id >= 0 && (id == stream->think_open || id == stream->think_close))
    {
      /* A character left unfinished ends with the part it was in. */
      *len_out = lm_detokenizer_flush (&stream->detok, out, cap);
      stream->part = id == stream->think_open ? LM_CHAT_THINKING : LM_CHAT_ANSWER;
      stream->at_part_start = true;
      return LM_CHAT_CONTINUE;
    }
  size_t len = lm_detokenizer_push (&stream->detok, stream->tok, id, false, out, cap);
  *len_out = drop_leading_newlines (stream, out, len);
  return LM_CHAT_CONTINUE;
}

size_t
lm_chat_stream_finish (LmChatStream *stream, char *out, size_t cap, LmChatPart *part_out)
{
  if (part_out)
    *part_out = stream->part;
  return lm_detokenizer_flush (&stream->detok, out, cap);
}
