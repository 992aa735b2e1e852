/* test-quant-refs.h: the reference files of tests/data/quant (made by
 * tools/make-quant-refs.py from gguf-py's numpy code).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "gguf.h"

/* One type's file: rows of blocks, gguf-py's decoding of them, an activation
 * row with its 8-bit blocks as ggml's x86 backend makes them, and per row
 * the float64 products (f32 and native activations) with their sum |terms|.
 * Every array is an aligned copy owned by the struct. */
typedef struct {
  LmTensorType type;
  guint32 n_cols, n_rows;
  guint32 n_src_rows;        /* rows 0 .. n_src_rows-1 are gguf-py's encoding of src */
  guint32 act_type;          /* ggml type of act: 8 (Q8_0), 9 (Q8_1) or 15 (Q8_K) */
  gsize act_bytes, row_bytes;
  float *src;                /* [n_src_rows][n_cols] */
  guint8 *w;                 /* [n_rows][row_bytes] */
  float *deq;                /* [n_rows][n_cols] */
  float *x;                  /* [n_cols] */
  guint8 *act;               /* [act_bytes] */
  double *dot_f32, *mag_f32, *dot_native, *mag_native;   /* [n_rows] each */
} TestQuantRef;

/* The file names ("q4_0", ...) and their types, in test order. */
extern const char *const test_quant_ref_names[7];
extern const LmTensorType test_quant_ref_types[7];
#define TEST_QUANT_N_REFS 7

/* Loads tests/data/quant/@name.bin; fails the test on a malformed file. */
void test_quant_ref_load (const char *name, TestQuantRef *ref);
void test_quant_ref_clear (TestQuantRef *ref);
