/* tokenizer-unicode-tables.h: the generated Unicode tables (tokenizer-unicode-tables.c).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Every table is sorted by its first field(s), for binary search.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "tokenizer-private.h"

typedef struct {
  uint32_t first, last;
  uint8_t cls;            /* TokClass */
} TokClassRange;

typedef struct {
  uint32_t first, last;
  uint8_t ccc;            /* canonical combining class, never 0 here */
} TokCccRange;

typedef struct {
  uint32_t cp, first, second;   /* second 0: a singleton mapping */
} TokDecomposition;

typedef struct {
  uint32_t first, second, composite;
} TokComposition;

extern const char lm_tok_unicode_version[];
extern const TokClassRange lm_tok_class_ranges[];
extern const size_t lm_tok_n_class_ranges;
extern const TokCccRange lm_tok_ccc_ranges[];
extern const size_t lm_tok_n_ccc_ranges;
extern const TokDecomposition lm_tok_decompositions[];
extern const size_t lm_tok_n_decompositions;
extern const TokComposition lm_tok_compositions[];
extern const size_t lm_tok_n_compositions;
