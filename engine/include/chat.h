/* chat.h: ChatML prompts for the Qwen family and a streaming reply splitter.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A turn is "<|im_start|>ROLE\nCONTENT<|im_end|>\n"; the generation prompt is
 * "<|im_start|>assistant\n". Only the turn markers are control tokens: the
 * role line and the content are tokenized with parse_special off, so text a
 * user types can never forge a turn (USER_DEFINED tokens such as <think> are
 * still recognised, as in the reference tokenizer).
 *
 * What differs between the models comes from the GGUF: the system prompt a
 * template puts first when there is none (Qwen2 and 2.5 do, Qwen3 and 3.5
 * do not) is read from tokenizer.chat_template, and thinking (Qwen3, 3.5) is
 * known from the <think> and </think> tokens of the vocabulary.
 *
 * Ownership: returned buffers are malloc()ed and belong to the caller.
 * Thread-safety: functions are reentrant; an LmChatStream belongs to one thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lm.h"
#include "tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  LM_ROLE_SYSTEM,
  LM_ROLE_USER,
  LM_ROLE_ASSISTANT,
} LmChatRole;

typedef struct {
  LmChatRole role;
  const char *content;   /* UTF-8, NUL-terminated */
} LmChatMessage;

const char *lm_chat_role_name (LmChatRole role);

typedef enum {
  /* end with "<|im_start|>assistant\n" */
  LM_CHAT_GENERATION_PROMPT = 1 << 0,
  /* Thinking off (Qwen3's enable_thinking=false): the generation prompt
   * goes on with an empty "<think>\n\n</think>\n\n". Adds nothing for a
   * model that does not think (Qwen2.5), so it is always safe to pass. */
  LM_CHAT_NO_THINKING = 1 << 1,
  /* Thinking on, as Qwen3.5's template has it: the generation prompt goes
   * on with an opened "<think>\n", so the reply starts in its thinking
   * (lm_chat_stream_init's @starts_in_thinking). Qwen3 would write the
   * same tag itself. Adds nothing for a model that does not think. */
  LM_CHAT_OPEN_THINKING = 1 << 2,
} LmChatFlags;

/* Whether the model thinks: its vocabulary has <think> and </think>. */
bool lm_chat_can_think (const LmTokenizer *tok);

/* The system prompt the model's chat template puts first when a
 * conversation has none (Qwen2.5: "You are Qwen, created by Alibaba Cloud.
 * You are a helpful assistant."), malloc()ed; NULL when it adds none. */
char *lm_chat_default_system (const LmTokenizer *tok);

/* The ChatML text of @messages with @flags (LmChatFlags) for the model of
 * @tok, default system prompt included, as a NUL-terminated string; NULL
 * when out of memory or a role is invalid. */
char *lm_chat_render (const LmTokenizer *tok, const LmChatMessage *messages, size_t n,
                      unsigned flags);

/* The token ids of that text, built as described above. */
LmStatus lm_chat_tokenize (const LmTokenizer *tok, const LmChatMessage *messages, size_t n,
                           unsigned flags, int32_t **ids_out, size_t *n_out);

/* Which part of a reply a piece of text belongs to. */
typedef enum {
  LM_CHAT_ANSWER,
  LM_CHAT_THINKING,   /* between <think> and </think> */
} LmChatPart;

/* Streaming splitter for a reply: turns token ids into text, tells the
 * thinking apart from the answer so a caller can show or hide it, and stops
 * at <|im_end|> / EOS. The <think> and </think> tags themselves are never
 * text, and the newlines the model puts right after them (as in
 * "<think>\n...</think>\n\nanswer") are dropped, as Qwen's own reply parser
 * does. Control tokens give no text. */
typedef struct {
  const LmTokenizer *tok;
  LmDetokenizer detok;
  int32_t think_open, think_close;   /* -1 when the vocabulary lacks them */
  LmChatPart part;
  bool at_part_start;                /* no text shown since the last tag */
  bool stopped;
} LmChatStream;

typedef enum {
  LM_CHAT_CONTINUE,   /* keep generating */
  LM_CHAT_STOP,       /* an end token: the reply is complete */
} LmChatEvent;

/* @starts_in_thinking: the prompt already opened a <think> section. */
void lm_chat_stream_init (LmChatStream *stream, const LmTokenizer *tok, bool starts_in_thinking);

/* A buffer size that holds the text of one push and of a finish after it. */
size_t lm_chat_stream_buffer_size (const LmTokenizer *tok);

/* Feeds one generated token. Writes the text it completes into @out and its
 * length into *len_out, and into *part_out (may be NULL) which part that
 * text belongs to. Text is valid UTF-8; a character split across tokens
 * comes out whole with the token that completes it. */
LmChatEvent lm_chat_stream_push (LmChatStream *stream, int32_t id, char *out, size_t cap,
                                 size_t *len_out, LmChatPart *part_out);
/* At the end of the reply: an unfinished character still held back comes
 * out as U+FFFD. Returns its length (0 or 3); *part_out may be NULL. */
size_t lm_chat_stream_finish (LmChatStream *stream, char *out, size_t cap, LmChatPart *part_out);

#ifdef __cplusplus
}
#endif
