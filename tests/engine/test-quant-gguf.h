/* test-quant-gguf.h: a minimal GGUF tensor locator for the quantisation tests.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Independent of the engine's reader on purpose: it walks the header just far
 * enough to find one tensor's type and bytes in a trusted test file. */
#pragma once

#include <glib.h>

typedef struct {
  guint32 type;
  guint64 ne[4];
  const guint8 *data;   /* into the caller's file buffer */
} TestGgufTensor;

/* Finds @name in the GGUF image @file of @len bytes; fails the test if absent. */
void test_gguf_find_tensor (const guint8 *file, gsize len, const char *name,
                            TestGgufTensor *out);
