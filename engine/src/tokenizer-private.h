/* tokenizer-private.h: internals shared by the tokenizer's source files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer.h"

/* ---- Unicode data (tokenizer-unicode.c) ---- */

typedef enum {
  TOK_CLASS_OTHER = 0,
  TOK_CLASS_LETTER = 1,   /* \p{L} */
  TOK_CLASS_MARK = 2,     /* \p{M} */
  TOK_CLASS_NUMBER = 4,   /* \p{N} */
} TokClass;

TokClass lm_tok_unicode_class (uint32_t cp);
bool lm_tok_unicode_is_space (uint32_t cp);
/* Canonical_Combining_Class of @cp (0 for starters). */
uint8_t lm_tok_unicode_ccc (uint32_t cp);
/* One level of the canonical decomposition of @cp into @parts: returns how
 * many code points it maps to (0 when it has no canonical decomposition). */
int lm_tok_unicode_decompose (uint32_t cp, uint32_t parts[2]);
/* The primary composite of @first + @second, or 0 when there is none. */
uint32_t lm_tok_unicode_compose (uint32_t first, uint32_t second);

/* Decodes one UTF-8 sequence at @s (@len > 0 bytes left). Returns its length
 * (1..4) and the code point; a malformed byte decodes as U+FFFD of length 1. */
size_t lm_tok_utf8_decode (const uint8_t *s, size_t len, uint32_t *cp);
/* Writes @cp (at most U+10FFFF) as UTF-8 into @out; returns its length (1..4). */
size_t lm_tok_utf8_encode (uint32_t cp, char *out);

/* ---- NFC (tokenizer-nfc.c) ---- */

/* Normalises @len bytes of UTF-8 @text to NFC. Bytes that are not valid
 * UTF-8 stay as they are and never combine with their neighbours. When the
 * text is already in NFC, *out is NULL; otherwise it is the malloc()ed
 * normal form of *out_len bytes. Returns false only when out of memory. */
bool lm_tok_nfc (const uint8_t *text, size_t len, uint8_t **out, size_t *out_len);

/* ---- pre-tokenizers (tokenizer-pre.c) ---- */

typedef enum {
  TOK_PRE_QWEN2,    /* Qwen2, Qwen2.5, Qwen3: letter runs \p{L}+ */
  TOK_PRE_QWEN35,   /* Qwen3.5: letter runs [\p{L}\p{M}]+ */
} TokPreRule;

/* The rule named by tokenizer.ggml.pre; false for names we do not know. */
bool lm_tok_pre_rule_from_name (const char *name, size_t len, TokPreRule *rule);

/* Called for each piece [start, end) (byte offsets into the text). */
typedef void (*TokPieceFunc) (void *user_data, size_t start, size_t end);

/* Splits @text by @rule. Returns false only when out of memory. */
bool lm_tok_pre_split (TokPreRule rule, const uint8_t *text, size_t len, TokPieceFunc emit,
                    void *user_data);

/* ---- vocabulary access for the streaming decoder (tokenizer.c) ---- */

/* The bytes of token @id without copying them; false for ids that give no
 * text (unknown ids; CONTROL tokens unless @render_special). */
bool lm_tok_piece (const LmTokenizer *tok, int32_t id, bool render_special, const char **piece,
                size_t *len);
