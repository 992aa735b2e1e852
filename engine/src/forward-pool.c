/* forward-pool.c: independent work items spread over the thread pool.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "forward-kern.h"

typedef struct {
  LmItemFunc fn;
  void *ctx;
  uint32_t n_items;
} ForJob;

/* Worker @i of @n takes items i, i+n, i+2n, ...: each item runs exactly once
 * whatever the pool size, and each item's arithmetic is the same. */
static void
for_worker (void *ctx, int i, int n)
{
  const ForJob *job = ctx;
  for (uint32_t item = (uint32_t) i; item < job->n_items; item += (uint32_t) n)
    job->fn (job->ctx, item);
}

void
lm_parallel_for (LmThreadPool *pool, uint32_t n_items, LmItemFunc fn, void *ctx)
{
  ForJob job = { fn, ctx, n_items };
  int workers = pool != NULL ? lm_thread_pool_size (pool) : 1;
  if (workers <= 1 || n_items <= 1)
    {
      for_worker (&job, 0, 1);
      return;
    }
  if ((uint32_t) workers > n_items)
    workers = (int) n_items;
  lm_thread_pool_run (pool, for_worker, &job, workers);
}
