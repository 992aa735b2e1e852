/* forward-pool.c: independent work items spread over the thread pool.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "forward-kern.h"

typedef struct {
  LmItemFunc fn;
  void *ctx;
  uint32_t n_items;
} ForJob;

/* One pool index per item: threads claim items as they get free, so a thread
 * that wakes late or loses its core for a while does fewer of them instead of
 * holding up the rest (a fixed i, i+n, ... split waits for the slowest).
 * Each item runs exactly once and its arithmetic is the same whoever runs it. */
static void
run_item (void *ctx, int index, int n)
{
  (void) n;
  const ForJob *job = ctx;
  job->fn (job->ctx, (uint32_t) index);
}

void
lm_parallel_for (LmThreadPool *pool, uint32_t n_items, LmItemFunc fn, void *ctx)
{
  ForJob job = { fn, ctx, n_items };
  int workers = pool != NULL ? lm_thread_pool_size (pool) : 1;
  if (workers <= 1 || n_items <= 1)
    {
      for (uint32_t item = 0; item < n_items; item++)
        fn (ctx, item);
      return;
    }
  lm_thread_pool_run (pool, run_item, &job, (int) n_items);
}
