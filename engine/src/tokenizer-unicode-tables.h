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

extern const char tok_unicode_version[];
extern const TokClassRange tok_class_ranges[];
extern const size_t tok_n_class_ranges;
extern const TokCccRange tok_ccc_ranges[];
extern const size_t tok_n_ccc_ranges;
extern const TokDecomposition tok_decompositions[];
extern const size_t tok_n_decompositions;
extern const TokComposition tok_compositions[];
extern const size_t tok_n_compositions;
