/* threadpool.c: pthreads pool with a spin-then-sleep hand-off and dynamic indices.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "threadpool.h"

/* About 50 µs of polling before a worker goes to sleep: long enough to bridge
 * the gap between consecutive matrix-vector products of one decode step. */
#define SPIN_ITERATIONS 1000

struct LmThreadPool {
  int n_threads;            /* caller included */
  pthread_t *workers;       /* n_threads - 1 */
  pthread_mutex_t run_lock; /* one job at a time */
  pthread_mutex_t mutex;    /* guards the sleeps below */
  pthread_cond_t wake;      /* a new job (or stop) was published */
  pthread_cond_t done;      /* the last worker left the job */

  LmThreadPoolFn fn;
  void *ctx;
  int n;
  atomic_int next;          /* next index to claim */
  atomic_int busy;          /* workers not yet done with the current job */
  atomic_uint generation;   /* bumped for every job; release-publishes fn/ctx/n */
  atomic_bool stop;
};

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

static void
run_indices (LmThreadPool *pool)
{
  int i;
  while ((i = atomic_fetch_add_explicit (&pool->next, 1, memory_order_relaxed)) < pool->n)
    pool->fn (pool->ctx, i, pool->n);
}

/* Waits until the generation differs from @seen or the pool stops. */
static unsigned
wait_for_job (LmThreadPool *pool, unsigned seen)
{
  for (int spin = 0; spin < SPIN_ITERATIONS; spin++)
    {
      unsigned gen = atomic_load_explicit (&pool->generation, memory_order_acquire);
      if (gen != seen || atomic_load (&pool->stop))
        return gen;
      cpu_relax ();
    }
  pthread_mutex_lock (&pool->mutex);
  unsigned gen;
  while ((gen = atomic_load_explicit (&pool->generation, memory_order_acquire)) == seen
         && !atomic_load (&pool->stop))
    pthread_cond_wait (&pool->wake, &pool->mutex);
  pthread_mutex_unlock (&pool->mutex);
  return gen;
}

static void *
worker_main (void *data)
{
  LmThreadPool *pool = data;
  unsigned seen = 0;   /* the generation a new pool starts at: no job is missed */

  for (;;)
    {
      seen = wait_for_job (pool, seen);
      if (atomic_load (&pool->stop))
        return NULL;
      run_indices (pool);
      if (atomic_fetch_sub_explicit (&pool->busy, 1, memory_order_acq_rel) == 1)
        {
          pthread_mutex_lock (&pool->mutex);
          pthread_cond_signal (&pool->done);
          pthread_mutex_unlock (&pool->mutex);
        }
    }
}

static int
available_cores (void)
{
  cpu_set_t set;
  if (sched_getaffinity (0, sizeof set, &set) == 0 && CPU_COUNT (&set) > 0)
    return CPU_COUNT (&set);
  long n = sysconf (_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int) n : 1;
}

LmThreadPool *
lm_thread_pool_new (int n_threads)
{
  if (n_threads < 0)
    return NULL;
  if (n_threads == 0)
    n_threads = available_cores ();

  LmThreadPool *pool = calloc (1, sizeof *pool);
  if (!pool)
    return NULL;
  pool->n_threads = n_threads;
  pool->workers = calloc ((size_t) n_threads, sizeof *pool->workers);
  if (!pool->workers)
    {
      free (pool);
      return NULL;
    }
  pthread_mutex_init (&pool->run_lock, NULL);
  pthread_mutex_init (&pool->mutex, NULL);
  pthread_cond_init (&pool->wake, NULL);
  pthread_cond_init (&pool->done, NULL);
  for (int t = 0; t < n_threads - 1; t++)
    if (pthread_create (&pool->workers[t], NULL, worker_main, pool) != 0)
      {
        pool->n_threads = t + 1;   /* join only those that started */
        lm_thread_pool_free (pool);
        return NULL;
      }
  return pool;
}

void
lm_thread_pool_free (LmThreadPool *pool)
{
  if (!pool)
    return;
  pthread_mutex_lock (&pool->mutex);
  atomic_store (&pool->stop, true);
  pthread_cond_broadcast (&pool->wake);
  pthread_mutex_unlock (&pool->mutex);
  for (int t = 0; t < pool->n_threads - 1; t++)
    pthread_join (pool->workers[t], NULL);
  pthread_cond_destroy (&pool->done);
  pthread_cond_destroy (&pool->wake);
  pthread_mutex_destroy (&pool->mutex);
  pthread_mutex_destroy (&pool->run_lock);
  free (pool->workers);
  free (pool);
}

int
lm_thread_pool_size (const LmThreadPool *pool)
{
  return pool ? pool->n_threads : 1;
}

static void
wait_for_workers (LmThreadPool *pool)
{
  for (int spin = 0; spin < SPIN_ITERATIONS; spin++)
    {
      if (atomic_load_explicit (&pool->busy, memory_order_acquire) == 0)
        return;
      cpu_relax ();
    }
  pthread_mutex_lock (&pool->mutex);
  while (atomic_load_explicit (&pool->busy, memory_order_acquire) > 0)
    pthread_cond_wait (&pool->done, &pool->mutex);
  pthread_mutex_unlock (&pool->mutex);
}

void
lm_thread_pool_run (LmThreadPool *pool, LmThreadPoolFn fn, void *ctx, int n)
{
  if (n <= 0)
    return;
  if (!pool || pool->n_threads == 1 || n == 1)
    {
      for (int i = 0; i < n; i++)
        fn (ctx, i, n);
      return;
    }

  pthread_mutex_lock (&pool->run_lock);
  pool->fn = fn;
  pool->ctx = ctx;
  pool->n = n;
  atomic_store_explicit (&pool->next, 0, memory_order_relaxed);
  atomic_store_explicit (&pool->busy, pool->n_threads - 1, memory_order_relaxed);
  pthread_mutex_lock (&pool->mutex);
  atomic_fetch_add_explicit (&pool->generation, 1, memory_order_release);
  pthread_cond_broadcast (&pool->wake);
  pthread_mutex_unlock (&pool->mutex);

  run_indices (pool);
  wait_for_workers (pool);
  pthread_mutex_unlock (&pool->run_lock);
}
