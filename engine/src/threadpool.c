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
 * job fully claimed and goes back to waiting.
 *
 * The mutex and condition variables are touched only when a thread sleeps:
 * a sleeper announces itself (sleeping_workers, caller_sleeps) before it
 * checks its condition a last time, and the other side makes the condition
 * true before it reads the announcement, both in sequentially consistent
 * order, so one of the two sees the other. Taking the mutex on every job,
 * as the caller publishing and a worker finishing did at the same moment,
 * made the two threads collide on it (a fifth of the pool's futex calls in
 * a 0.5B model's decode with two threads). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "threadpool.h"

/* Polling before a thread sleeps: long enough to bridge the gap between
 * consecutive matrix-vector products of one decode step. Counted in time,
 * not in pauses: a pause takes 44 cycles on a 5th-generation Xeon and about
 * 140 on the CPUs this was first tuned on, and 1000 of them (15 µs there)
 * let the workers of a 0.5B model's decode sleep and be woken about 150
 * times a token (two threads, eight interleaved runs: 67.9 % of the
 * read-bandwidth ceiling at the median; polling 100 µs, 74.9 %). But a
 * thread that polls long burns the CPU time the scheduler would give it
 * back on waking: with another process on one of the cores, polling
 * workers are preempted in the middle of their rows and the caller waits
 * for them (two threads beside a busy loop: 10-20 % slower). A worker
 * preempted in the middle of its indices shows as a
 * caller that waits long for the job's last index (work is claimed a little
 * at a time, so otherwise the wait is at most one index's): after two
 * such waits within STALLS_APART_NS the pool polls briefly for a while, and
 * its workers sleep, and are woken ahead of the other process, as before.
 * One stall alone is no sign: a hypervisor takes a virtual CPU away for a
 * few milliseconds about once a second on a shared machine. */
#define SPIN_LONG_NS 100000
#define SPIN_SHORT_NS 15000
/* pauses between two looks at the clock (about 1 µs) */
#define SPIN_CLOCK_EVERY 32
/* a caller's wait for the last index this long, and four times as long as
 * its own indices took: a worker was preempted */
#define STRAGGLER_NS 500000
#define STRAGGLER_INDICES 4
/* two stalls this close: another process shares the cores */
#define STALLS_APART_NS 100000000
/* how long the pool polls briefly after that */
#define CONTENDED_FOR_NS 250000000

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
  atomic_int sleeping_workers; /* workers waiting on wake (under mutex) */
  _Atomic int64_t contended_until; /* monotonic ns: poll briefly until then */
  _Atomic int64_t last_stall;      /* monotonic ns of the last straggler wait */
  atomic_bool caller_sleeps;   /* the caller waits on finished (under mutex) */

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

static int64_t
monotonic_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (int64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A caller waited long for a worker's last index. */
static void
note_stall (LmThreadPool *pool)
{
  int64_t now = monotonic_ns ();
  int64_t last = atomic_exchange_explicit (&pool->last_stall, now, memory_order_relaxed);
  if (last != 0 && now - last < STALLS_APART_NS)
    atomic_store_explicit (&pool->contended_until, now + CONTENDED_FOR_NS, memory_order_relaxed);
}

/* Whether a poll that began at *@start (0: not yet) should go on after
 * @polls pauses. */
static bool
keep_spinning (LmThreadPool *pool, int64_t *start, int polls)
{
  if (polls % SPIN_CLOCK_EVERY != 0)
    return true;
  int64_t now = monotonic_ns ();
  if (*start == 0)
    *start = now;
  bool contended = now < atomic_load_explicit (&pool->contended_until, memory_order_relaxed);
  return now - *start < (contended ? SPIN_SHORT_NS : SPIN_LONG_NS);
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
  if (count > 0 && atomic_fetch_add (&pool->done, count) == n - count
      && atomic_load (&pool->caller_sleeps))
    {
      pthread_mutex_lock (&pool->mutex);
      pthread_cond_signal (&pool->finished);
      pthread_mutex_unlock (&pool->mutex);
    }
}

/* Claims and runs indices of job @gen until none is left. The indices run
 * are counted once at the end: jobs of many small indices then cost one
 * shared-line update per index (the claim), not two. */
static int
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
  return ran;
}

/* Waits until the published generation differs from @seen or the pool stops. */
static uint32_t
wait_for_job (LmThreadPool *pool, uint32_t seen)
{
  uint32_t gen;
  int64_t start = 0;
  for (int spin = 0; keep_spinning (pool, &start, spin); spin++)
    {
      gen = generation_of (atomic_load_explicit (&pool->claim, memory_order_acquire));
      if (gen != seen || atomic_load (&pool->stop))
        return gen;
      cpu_relax ();
    }
  pthread_mutex_lock (&pool->mutex);
  atomic_fetch_add (&pool->sleeping_workers, 1);
  while ((gen = generation_of (atomic_load (&pool->claim))) == seen && !atomic_load (&pool->stop))
    pthread_cond_wait (&pool->wake, &pool->mutex);
  atomic_fetch_sub (&pool->sleeping_workers, 1);
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

bool
lm_thread_pool_polls_briefly (const LmThreadPool *pool)
{
  return pool != NULL
         && monotonic_ns () < atomic_load_explicit (&((LmThreadPool *) pool)->contended_until,
                                                    memory_order_relaxed);
}

int
lm_thread_pool_size (const LmThreadPool *pool)
{
  return pool ? pool->n_threads : 1;
}

/* Waits for the job's last index; @own_ns: how long the caller's own
 * indices of it took each (0: it ran none). */
static void
wait_until_finished (LmThreadPool *pool, int n, int64_t own_ns)
{
  int64_t start = 0, straggler = STRAGGLER_INDICES * own_ns;
  if (straggler < STRAGGLER_NS)
    straggler = STRAGGLER_NS;
  for (int spin = 0; keep_spinning (pool, &start, spin); spin++)
    {
      if (atomic_load_explicit (&pool->done, memory_order_acquire) == n)
        {
          if (start != 0 && monotonic_ns () - start > straggler)
            note_stall (pool);
          return;
        }
      cpu_relax ();
    }
  pthread_mutex_lock (&pool->mutex);
  atomic_store (&pool->caller_sleeps, true);
  while (atomic_load (&pool->done) != n)
    pthread_cond_wait (&pool->finished, &pool->mutex);
  atomic_store (&pool->caller_sleeps, false);
  pthread_mutex_unlock (&pool->mutex);
  if (monotonic_ns () - start > straggler)
    note_stall (pool);
}

/* Runs the caller's share of job @gen, then waits for the rest. */
static void
run_and_wait (LmThreadPool *pool, uint32_t gen, int n)
{
  int64_t t0 = monotonic_ns ();
  int ran = run_indices (pool, gen);
  wait_until_finished (pool, n, ran > 0 ? (monotonic_ns () - t0) / ran : 0);
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
  atomic_store (&pool->claim, (uint64_t) gen << 32);
  if (atomic_load (&pool->sleeping_workers) > 0)
    {
      pthread_mutex_lock (&pool->mutex);
      pthread_cond_broadcast (&pool->wake);
      pthread_mutex_unlock (&pool->mutex);
    }
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
  run_and_wait (pool, gen, n);
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
      run_and_wait (pool, pool->started_gen, n);
    }
  pool->started_n = 0;
  pthread_mutex_unlock (&pool->run_lock);
}
