/* tokenizer-private.h: internals shared by the tokenizer's source files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  TOK_CLASS_OTHER = 0,
  TOK_CLASS_LETTER = 1,   /* \p{L} */
  TOK_CLASS_MARK = 2,     /* \p{M} */
  TOK_CLASS_NUMBER = 4,   /* \p{N} */
} TokClass;

TokClass tok_unicode_class (uint32_t cp);
bool tok_unicode_is_space (uint32_t cp);

/* Decodes one UTF-8 sequence at @s (@len > 0 bytes left). Returns its length
 * (1..4) and the code point; a malformed byte decodes as U+FFFD of length 1. */
size_t tok_utf8_decode (const uint8_t *s, size_t len, uint32_t *cp);

/* Called for each piece [start, end) (byte offsets into the text). */
typedef void (*TokPieceFunc) (void *user_data, size_t start, size_t end);

/* Splits @text by the Qwen3.5 pre-tokenizer rule (FORMAT.md 6.2). Returns
 * false only when out of memory. */
bool tok_pre_split_qwen35 (const uint8_t *text, size_t len, TokPieceFunc emit, void *user_data);
