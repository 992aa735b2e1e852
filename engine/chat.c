/* chat.c: ChatML rendering and tokenisation; the streaming reply filter.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "chat.h"

#include <stdlib.h>
#include <string.h>

#define IM_START "<|im_start|>"
#define IM_END "<|im_end|>"
#define EMPTY_THINK "<think>\n\n</think>\n\n"

/* What follows the last turn, for @flags. */
static const char *
generation_prompt (unsigned flags)
{
  if (!(flags & LM_CHAT_GENERATION_PROMPT))
    return NULL;
  return flags & LM_CHAT_NO_THINKING ? "assistant\n" EMPTY_THINK : "assistant\n";
}

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

char *
lm_chat_render (const LmChatMessage *messages, size_t n, unsigned flags)
{
  const char *gen = generation_prompt (flags);
  size_t total = 1 + (gen ? strlen (IM_START) + strlen (gen) : 0);
  for (size_t i = 0; i < n; i++)
    {
      const char *role = lm_chat_role_name (messages[i].role);
      if (role == NULL || messages[i].content == NULL)
        return NULL;
      total += strlen (IM_START) + strlen (role) + 1 + strlen (messages[i].content)
               + strlen (IM_END) + 1;
    }
  char *out = malloc (total);
  if (out == NULL)
    return NULL;
  char *p = out;
  for (size_t i = 0; i < n; i++)
    p = stpcpy (stpcpy (stpcpy (stpcpy (stpcpy (stpcpy (p, IM_START),
                                                lm_chat_role_name (messages[i].role)), "\n"),
                                messages[i].content), IM_END), "\n");
  if (gen)
    p = stpcpy (stpcpy (p, IM_START), gen);
  *p = 0;
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
  IdList list = { 0 };
  for (size_t i = 0; i < n && list.status == LM_OK; i++)
    {
      const char *role = lm_chat_role_name (messages[i].role);
      if (role == NULL || messages[i].content == NULL)
        {
          list.status = LM_ERR_INVALID_ARGUMENT;
          break;
        }
      /* Role line and content in one piece of text, so the pre-tokenizer sees
       * the same boundaries as in the rendered prompt. */
      size_t len = strlen (role) + 1 + strlen (messages[i].content);
      char *body = malloc (len + 1);
      if (body == NULL)
        {
          list.status = LM_ERR_NO_MEMORY;
          break;
        }
      stpcpy (stpcpy (stpcpy (body, role), "\n"), messages[i].content);
      append_ids (&list, &im_start, 1);
      append_text (&list, tok, body);
      append_ids (&list, &im_end, 1);
      append_text (&list, tok, "\n");
      free (body);
    }
  const char *gen = generation_prompt (flags);
  if (gen)
    {
      append_ids (&list, &im_start, 1);
      append_text (&list, tok, gen);
    }
  if (list.status != LM_OK)
    {
      free (list.ids);
      return list.status;
    }
  *ids_out = list.ids;
  *n_out = list.n;
  return LM_OK;
}

void
lm_chat_stream_init (LmChatStream *stream, const LmTokenizer *tok, bool show_thinking,
                     bool starts_in_thinking)
{
  memset (stream, 0, sizeof *stream);
  stream->tok = tok;
  stream->think_open = lm_tokenizer_find (tok, "<think>");
  stream->think_close = lm_tokenizer_find (tok, "</think>");
  stream->show_thinking = show_thinking;
  stream->in_thinking = starts_in_thinking;
}

LmChatEvent
lm_chat_stream_push (LmChatStream *stream, int32_t id, char *out, size_t cap, size_t *len_out,
                     bool *thinking_out)
{
  *len_out = 0;
  if (thinking_out)
    *thinking_out = stream->in_thinking;
  if (stream->stopped || lm_tokenizer_is_end (stream->tok, id))
    {
      stream->stopped = true;
      return LM_CHAT_STOP;
    }
  bool is_open = id >= 0 && id == stream->think_open;
  bool is_close = id >= 0 && id == stream->think_close;
  bool thinking = stream->in_thinking || is_open || is_close;
  if (is_open)
    stream->in_thinking = true;
  if (is_close)
    stream->in_thinking = false;
  if (thinking_out)
    *thinking_out = thinking;
  if (thinking && !stream->show_thinking)
    return LM_CHAT_CONTINUE;
  *len_out = lm_detokenizer_push (&stream->detok, stream->tok, id, false, out, cap);
  return LM_CHAT_CONTINUE;
}

size_t
lm_chat_stream_finish (LmChatStream *stream, char *out, size_t cap)
{
  return lm_detokenizer_flush (&stream->detok, out, cap);
}
