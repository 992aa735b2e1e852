/* tokenizer.h: byte-level BPE tokenizer (GGUF `gpt2` model, Qwen pre-tokenizers, NFC).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Ownership: an LmTokenizer copies everything it needs out of the GgufFile, so
 * the file may be closed afterwards. Results (ids, text) are newly allocated
 * with malloc() and belong to the caller.
 * Thread-safety: an LmTokenizer is immutable after creation and may be used
 * from any number of threads at once. An LmDetokenizer (streaming state) is
 * owned by one thread at a time.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"
#include "lm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* tokenizer.ggml.token_type values. */
typedef enum {
  LM_TOKEN_NORMAL = 1, LM_TOKEN_UNKNOWN = 2, LM_TOKEN_CONTROL = 3,
  LM_TOKEN_USER_DEFINED = 4, LM_TOKEN_UNUSED = 5, LM_TOKEN_BYTE = 6,
} LmTokenType;

typedef struct LmTokenizer LmTokenizer;

/* Builds a tokenizer from the tokenizer.* metadata of @file. Needs model
 * "gpt2" and pre-tokenizer (tokenizer.ggml.pre) "qwen2" (Qwen2, 2.5, 3) or
 * "qwen35" (Qwen3.5), each with its own split rule; any other is refused.
 * On failure sets *error_out (free() it) when non-NULL. */
LmStatus lm_tokenizer_new_from_gguf (const GgufFile *file, LmTokenizer **out, char **error_out);
void lm_tokenizer_free (LmTokenizer *tok);

int32_t lm_tokenizer_n_vocab (const LmTokenizer *tok);
/* Special ids from the metadata; -1 when the file names none. */
int32_t lm_tokenizer_bos (const LmTokenizer *tok);
int32_t lm_tokenizer_eos (const LmTokenizer *tok);
int32_t lm_tokenizer_pad (const LmTokenizer *tok);
/* Id of the token whose text is exactly @text (e.g. "<|im_end|>"), or -1. */
int32_t lm_tokenizer_find (const LmTokenizer *tok, const char *text);
LmTokenType lm_tokenizer_token_type (const LmTokenizer *tok, int32_t id);
/* True for ids that end generation: EOS, <|im_end|>, <|endoftext|>. */
bool lm_tokenizer_is_end (const LmTokenizer *tok, int32_t id);

/* Tokenizes @len bytes of UTF-8 @text as the model's Hugging Face tokenizer
 * does. With @parse_special, CONTROL tokens written in the text are
 * recognised; USER_DEFINED ones always are. The text between them is
 * normalised to NFC before it is split, so the ids may stand for other bytes
 * than the input (decomposed accents come back composed). No BOS is added.
 * *ids_out is malloc()ed (NULL when *n_out is 0). */
LmStatus lm_tokenize (const LmTokenizer *tok, const char *text, size_t len, bool parse_special,
                      int32_t **ids_out, size_t *n_out);

/* The bytes token @id stands for (CONTROL tokens only with @render_special).
 * Returns the piece length; copies min(length, cap) bytes into @buf. A piece
 * may be part of a UTF-8 character. Unknown ids give 0. */
size_t lm_token_piece (const LmTokenizer *tok, int32_t id, bool render_special, char *buf,
                       size_t cap);

/* Concatenated pieces of @ids as one malloc()ed, NUL-terminated string
 * (*len_out excludes the NUL; the text may contain NULs of its own). The
 * bytes are given as they are, valid UTF-8 or not. */
LmStatus lm_detokenize (const LmTokenizer *tok, const int32_t *ids, size_t n, bool render_special,
                        char **text_out, size_t *len_out);

/* The chat template of the file (tokenizer.chat_template), or NULL. */
const char *lm_tokenizer_chat_template (const LmTokenizer *tok);

/* Longest piece of any token, in bytes. */
size_t lm_tokenizer_max_piece (const LmTokenizer *tok);

/* Streaming detokenisation into valid UTF-8: the bytes of a character that
 * is split across tokens are held back until it is complete. Start from a
 * zeroed struct. */
typedef struct {
  uint8_t pending[4];
  uint8_t n_pending;   /* bytes held back */
  uint8_t n_needed;    /* length of the character they begin */
} LmDetokenizer;

/* The @cap lm_detokenizer_push() needs for any token of @tok. */
size_t lm_detokenizer_buffer_size (const LmTokenizer *tok);

/* Appends the text token @id completes to @out and returns how many bytes
 * were written; with a @cap below lm_detokenizer_buffer_size() the text may
 * be cut. The text is always valid UTF-8: bytes that cannot belong to a
 * character (a continuation byte without its lead, a character cut off by
 * another) come out as U+FFFD. */
size_t lm_detokenizer_push (LmDetokenizer *state, const LmTokenizer *tok, int32_t id,
                            bool render_special, char *out, size_t cap);
/* At the end of the text: an unfinished character still held back comes out
 * as one U+FFFD (3 bytes; @cap should be at least 3). Resets @state. */
size_t lm_detokenizer_flush (LmDetokenizer *state, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
