/* kern-stub.h: temporary f32-only stand-ins for the kernel library.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "gguf.h"

typedef struct LmThreadPool LmThreadPool;

size_t lm_row_bytes (LmTensorType type, int64_t n);
LmStatus lm_dequantize_row (LmTensorType type, const void *src, float *dst, int64_t n);
void lm_matvec (LmThreadPool *pool, LmTensorType type, const void *w, int64_t n_in,
                int64_t n_out, const float *x, float *y);
void lm_matmul (LmThreadPool *pool, LmTensorType type, const void *w, int64_t n_in,
                int64_t n_out, const float *x, int64_t n_tok, float *y);
LmThreadPool *lm_thread_pool_new (int n);
void lm_thread_pool_free (LmThreadPool *pool);
int lm_thread_pool_size (const LmThreadPool *pool);
void lm_thread_pool_run (LmThreadPool *pool, void (*fn) (void *ctx, int i, int n),
                         void *ctx, int n);
