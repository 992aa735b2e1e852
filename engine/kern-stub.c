/* kern-stub.c: temporary f32-only stand-ins for the kernel library.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "kern-stub.h"

size_t
lm_row_bytes (LmTensorType type, int64_t n)
{
  return type == LM_TYPE_F32 ? (size_t) n * 4 : 0;
}

LmStatus
lm_dequantize_row (LmTensorType type, const void *src, float *dst, int64_t n)
{
  if (type != LM_TYPE_F32)
    return LM_ERR_UNSUPPORTED;
  memcpy (dst, src, (size_t) n * 4);
  return LM_OK;
}

void
lm_matvec (LmThreadPool *pool, LmTensorType type, const void *w, int64_t n_in,
           int64_t n_out, const float *x, float *y)
{
  const float *wf = w;
  for (int64_t o = 0; o < n_out; o++)
    {
      float s = 0;
      for (int64_t i = 0; i < n_in; i++)
        s += wf[o * n_in + i] * x[i];
      y[o] = s;
    }
}

void
lm_matmul (LmThreadPool *pool, LmTensorType type, const void *w, int64_t n_in,
           int64_t n_out, const float *x, int64_t n_tok, float *y)
{
  for (int64_t t = 0; t < n_tok; t++)
    lm_matvec (pool, type, w, n_in, n_out, x + t * n_in, y + t * n_out);
}

LmThreadPool *
lm_thread_pool_new (int n)
{
  static int dummy;
  return (LmThreadPool *) &dummy;
}

void
lm_thread_pool_free (LmThreadPool *pool)
{
}

int
lm_thread_pool_size (const LmThreadPool *pool)
{
  return 1;
}

void
lm_thread_pool_run (LmThreadPool *pool, void (*fn) (void *ctx, int i, int n),
                    void *ctx, int n)
{
  for (int i = 0; i < n; i++)
    fn (ctx, i, n);
}
