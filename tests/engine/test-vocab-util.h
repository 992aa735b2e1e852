/* test-vocab-util.h: tokenizers of the golden vocabulary with other metadata.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdbool.h>

#include "gguf.h"
#include "tokenizer.h"

typedef struct {
  const char *pre;             /* tokenizer.ggml.pre; NULL: none */
  const char *chat_template;   /* tokenizer.chat_template; NULL: none */
  bool without_think;          /* rename <think> and </think>: a model that does not think */
} VocabVariant;

/* The token of byte @b: its GPT-2 form, written out here from the rule
 * (bytes '!'..'~', 0xA1..0xAC, 0xAE..0xFF stand for themselves, the other 68
 * for U+0100 on in increasing order) rather than taken from tokenizer.c. */
int32_t vocab_byte_token (const LmTokenizer *tok, uint8_t b);

/* Builds a tokenizer from the vocabulary and merges of @src with the
 * metadata of @variant, through a GGUF file written for it. Returns NULL,
 * with the status in *status and the message in *error_out, when it is
 * refused. *file_out (close it) backs the tokenizer's source. */
LmTokenizer *vocab_variant_tokenizer (const GgufFile *src, const VocabVariant *variant,
                                      GgufFile **file_out, LmStatus *status, char **error_out);
