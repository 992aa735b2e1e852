/* threadpool.c: pthreads pool with a spin-then-sleep hand-off and indices claimed per job.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A job is published as (generation, next index) in one 64-bit word; threads
 * claim indices with a compare-and-swap that only succeeds within the job they
 * read, and the caller returns once every index has finished. Like a seqlock,
 * the word is first set to a closed state of the new generation, then the
 * job's fields are written, then the word opens: a thread that read fields of
 * a newer job than its word necessarily fails its compare-and-swap. It never waits
 * for a worker that has not started (or was descheduled before claiming), so a
 * busy machine cannot hold a job hostage; a worker that arrives late finds the
 * job fully claimed and goes back to waiting. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "threadpool.h"

/* About 50 µs of polling before a thread sleeps: long enough to bridge the
 * gap between consecutive matrix-vector products of one decode step. */
#define SPIN_ITERATIONS 1000

struct LmThreadPool {
  int n_threads;              /* caller included */
  pthread_t *workers;         /* n_threads - 1 */
  pthread_mutex_t run_lock;   /* one job at a time */
  pthread_mutex_t mutex;      /* guards the sleeps below */
  pthread_cond_t wake;        /* a new job (or stop) was published */
  pthread_cond_t finished;    /* the last index of the job finished */

  /* the job, written only while the claim word is closed */
  _Atomic (LmThreadPoolFn) fn;
  _Atomic (void *) ctx;
  atomic_int n;
  _Atomic uint64_t claim;     /* generation << 32 | next index to claim */
  atomic_int done;            /* indices finished in the current job */
  atomic_bool stop;

  /* a job started and not yet finished (run_lock held in between) */
  uint32_t started_gen;
  int started_n;
  LmThreadPoolFn started_fn;  /* with one thread: run by finish */
  void *started_ctx;
};

static inline void
cpu_relax (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause ();
#endif
}

#define CLOSED 0xffffffffu     /* index of a claim word being set up */

static inline uint32_t
generation_of (uint64_t claim)
{
  return (uint32_t) (claim >> 32);
}

/* Adds @count finished indices of a job of @n; the one that completes it
 * wakes the caller if it sleeps. */
static void
finish_indices (LmThreadPool *pool, int count, int n)
{
  if (count > 0 && atomic_fetch_add_explicit (&pool->done, count, memory_order_acq_rel) == n - count)
    {
      pthread_mutex_lock (&pool->mutex);
      pthread_cond_signal (&pool->finished);
      pthread_mutex_unlock (&pool->mutex);
    }
}

/* Claims and runs indices of job @gen until none is left. The indices run
 * are counted once at the end: jobs of many small indices then cost one
 * shared-line update per index (the claim), not two. */
static void
run_indices (LmThreadPool *pool, uint32_t gen)
{
  int ran = 0, n = 0;
  for (;;)
    {
      uint64_t c = atomic_load_explicit (&pool->claim, memory_order_acquire);
      if (generation_of (c) != gen)
        break;
      uint32_t index = (uint32_t) c;
      if (index == CLOSED)   /* the caller is writing the job: a few stores */
        {
          sched_yield ();
          continue;
        }
      int job_n = atomic_load_explicit (&pool->n, memory_order_relaxed);
      LmThreadPoolFn fn = atomic_load_explicit (&pool->fn, memory_order_relaxed);
      void *ctx = atomic_load_explicit (&pool->ctx, memory_order_relaxed);
      /* pairs with the release fence of the caller: if these were a newer
       * job's fields, the compare-and-swap below sees the newer word */
      atomic_thread_fence (memory_order_acquire);
      if (index >= (uint32_t) job_n)
        break;
      if (!atomic_compare_exchange_weak_explicit (&pool->claim, &c, c + 1, memory_order_acq_rel,
                                                  memory_order_relaxed))
        continue;
      n = job_n;   /* a successful claim proves these fields are job @gen's */
      fn (ctx, (int) index, n);
      ran++;
    }
  finish_indices (pool, ran, n);
}

/* Waits until the published generation differs from @seen or the pool stops. */
static uint32_t
wait_for_job (LmThreadPool *pool, uint32_t seen)
{
  uint32_t gen;
  for (int spin = 0; spin < SPIN_ITERATIONS; spin++)
    {
      gen = generation_of (atomic_load_explicit (&pool->claim, memory_order_acquire));
      if (gen != seen || atomic_load (&pool->stop))
        return gen;
      cpu_relax ();
    }
  pthread_mutex_lock (&pool->mutex);
  while ((gen = generation_of (atomic_load_explicit (&pool->claim, memory_order_acquire))) == seen
         && !atomic_load (&pool->stop))
    pthread_cond_wait (&pool->wake, &pool->mutex);
  pthread_mutex_unlock (&pool->mutex);
  return gen;
}

static void *
worker_main (void *data)
{
  LmThreadPool *pool = data;
  uint32_t seen = 0;   /* the generation a new pool starts at */

  for (;;)
    {
      seen = wait_for_job (pool, seen);
      if (atomic_load (&pool->stop))
        return NULL;
      run_indices (pool, seen);
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
  pthread_cond_init (&pool->finished, NULL);
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
  pthread_cond_destroy (&pool->finished);
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
wait_until_finished (LmThreadPool *pool, int n)
{
  for (int spin = 0; spin < SPIN_ITERATIONS; spin++)
    {
      if (atomic_load_explicit (&pool->done, memory_order_acquire) == n)
        return;
      cpu_relax ();
    }
  pthread_mutex_lock (&pool->mutex);
  while (atomic_load_explicit (&pool->done, memory_order_acquire) != n)
    pthread_cond_wait (&pool->finished, &pool->mutex);
  pthread_mutex_unlock (&pool->mutex);
}

/* Publishes fn over [0, n) to the workers and returns its generation;
 * run_lock must be held. */
static uint32_t
publish (LmThreadPool *pool, LmThreadPoolFn fn, void *ctx, int n)
{
  uint32_t gen = generation_of (atomic_load (&pool->claim)) + 1;
  atomic_store_explicit (&pool->claim, (uint64_t) gen << 32 | CLOSED, memory_order_relaxed);
  atomic_thread_fence (memory_order_release);
  atomic_store_explicit (&pool->fn, fn, memory_order_relaxed);
  atomic_store_explicit (&pool->ctx, ctx, memory_order_relaxed);
  atomic_store_explicit (&pool->n, n, memory_order_relaxed);
  atomic_store_explicit (&pool->done, 0, memory_order_relaxed);
  pthread_mutex_lock (&pool->mutex);
  atomic_store_explicit (&pool->claim, (uint64_t) gen << 32, memory_order_release);
  pthread_cond_broadcast (&pool->wake);
  pthread_mutex_unlock (&pool->mutex);
  return gen;
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
  uint32_t gen = publish (pool, fn, ctx, n);
  run_indices (pool, gen);
  wait_until_finished (pool, n);
  pthread_mutex_unlock (&pool->run_lock);
}

void
lm_thread_pool_start (LmThreadPool *pool, LmThreadPoolFn fn, void *ctx, int n)
{
  if (!pool)
    return;
  pthread_mutex_lock (&pool->run_lock);
  pool->started_n = n > 0 ? n : 0;
  pool->started_fn = fn;
  pool->started_ctx = ctx;
  /* a lone index goes to a worker too: the caller is busy meanwhile */
  if (pool->started_n > 0 && pool->n_threads > 1)
    pool->started_gen = publish (pool, fn, ctx, n);
}

void
lm_thread_pool_finish (LmThreadPool *pool)
{
  if (!pool)
    return;
  int n = pool->started_n;
  if (n > 0 && pool->n_threads == 1)
    for (int i = 0; i < n; i++)
      pool->started_fn (pool->started_ctx, i, n);
  else if (n > 0)
    {
      run_indices (pool, pool->started_gen);
      wait_until_finished (pool, n);
    }
  pool->started_n = 0;
  pthread_mutex_unlock (&pool->run_lock);
}
