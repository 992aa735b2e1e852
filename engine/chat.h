/* chat.h: ChatML prompts for the Qwen family and a streaming reply filter.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A turn is "<|im_start|>ROLE\nCONTENT<|im_end|>\n"; the generation prompt is
 * "<|im_start|>assistant\n". Only the turn markers are control tokens: the
 * role line and the content are tokenized with parse_special off, so text a
 * user types can never forge a turn (USER_DEFINED tokens such as <think> are
 * still recognised, as in the reference tokenizer).
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
  /* and then an empty "<think>\n\n</think>\n\n" (Qwen's non-thinking mode) */
  LM_CHAT_NO_THINKING = 1 << 1,
} LmChatFlags;

/* The ChatML text of @messages with @flags (LmChatFlags), as a
 * NUL-terminated string; NULL when out of memory or a role is invalid. */
char *lm_chat_render (const LmChatMessage *messages, size_t n, unsigned flags);

/* The token ids of that text, built as described above. */
LmStatus lm_chat_tokenize (const LmTokenizer *tok, const LmChatMessage *messages, size_t n,
                           unsigned flags, int32_t **ids_out, size_t *n_out);

/* Streaming filter for a reply: turns token ids into displayable text, stops
 * at <|im_end|> / EOS, and shows or hides <think>...</think> sections. */
typedef struct {
  const LmTokenizer *tok;
  LmDetokenizer detok;
  int32_t think_open, think_close;   /* -1 when the vocabulary lacks them */
  bool show_thinking;
  bool in_thinking;
  bool stopped;
} LmChatStream;

typedef enum {
  LM_CHAT_CONTINUE,   /* keep generating */
  LM_CHAT_STOP,       /* an end token: the reply is complete */
} LmChatEvent;

/* @starts_in_thinking: the prompt already opened a <think> section. */
void lm_chat_stream_init (LmChatStream *stream, const LmTokenizer *tok, bool show_thinking,
                          bool starts_in_thinking);
/* Feeds one generated token. Writes the text to show now into @out (cap must
 * be at least lm_tokenizer_max_piece() + 4) and its length into *len_out;
 * *thinking_out (may be NULL) tells whether that text is inside <think>.
 * Control tokens are never shown; with show_thinking the tags themselves are. */
LmChatEvent lm_chat_stream_push (LmChatStream *stream, int32_t id, char *out, size_t cap,
                                 size_t *len_out, bool *thinking_out);
/* Text still held back (an unfinished UTF-8 character) at the end. */
size_t lm_chat_stream_finish (LmChatStream *stream, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
