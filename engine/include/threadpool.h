/* threadpool.h: a small pthreads pool for data-parallel loops (matrix-vector work).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A pool of n threads is the calling thread plus n-1 workers. Workers poll
 * for about 100 µs after each job (decode issues many short jobs back to
 * back), then sleep on a condition variable; for a while after a worker
 * was preempted in the middle of a job (another process wants the cores)
 * they poll only briefly.
 *
 * Ownership: lm_thread_pool_new() returns a pool the caller frees with
 * lm_thread_pool_free() (which joins the workers).
 * Thread-safety: lm_thread_pool_run() may be called from several threads; jobs
 * are then run one after another. It must not be called from inside a job of
 * the same pool (that would deadlock).
 */
#pragma once

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct LmThreadPool LmThreadPool;

/* A job body: called once for every @index in [0, @n). Calls for different
 * indices may run concurrently on different threads. */
typedef void (*LmThreadPoolFn) (void *ctx, int index, int n);

/* Starts a pool of @n_threads threads including the caller; 0 = all cores this
 * process may run on. Returns NULL when threads cannot be created. */
LmThreadPool *lm_thread_pool_new (int n_threads);
/* Stops and joins the workers; NULL is ignored. */
void lm_thread_pool_free (LmThreadPool *pool);
/* Threads taking part in a job, the caller included; 1 for NULL. */
int lm_thread_pool_size (const LmThreadPool *pool);
/* Calls fn(ctx, i, n) for every i in [0, n) across the pool's threads and
 * returns when all calls are done. @pool NULL runs them on the caller. Which
 * thread runs which index is not fixed: jobs whose indices write disjoint
 * outputs get identical results for any pool size. */
void lm_thread_pool_run (LmThreadPool *pool, LmThreadPoolFn fn, void *ctx, int n);
/* The same in two halves, so that the caller can do other work while the
 * workers start on the job: start publishes it to the workers and returns
 * at once; finish has the caller take part in what is left and returns when
 * every index is done. Between the two the caller must not run another job
 * on @pool (other threads' jobs wait for finish). A pool of one thread runs
 * the whole job in finish. @pool must not be NULL (both ignore it: without
 * a pool, call the body yourself). */
void lm_thread_pool_start (LmThreadPool *pool, LmThreadPoolFn fn, void *ctx, int n);
void lm_thread_pool_finish (LmThreadPool *pool);
/* Whether the pool polls only briefly now, after a caller waited long for
 * a worker's last index (diagnostics, tests); FALSE for NULL. */
bool lm_thread_pool_polls_briefly (const LmThreadPool *pool);

#ifdef __cplusplus
}
#endif
