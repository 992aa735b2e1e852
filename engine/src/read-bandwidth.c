/* read-bandwidth.c: timed passes of several threads summing a buffer beyond the caches.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "read-bandwidth.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "threadpool.h"

/* 64 bytes, one cache line: plain C that any x86-64 compiles to 16-byte or
 * wider loads, far more than one core needs to keep up with memory. */
typedef uint64_t Line __attribute__ ((vector_size (64)));

typedef struct {
  const Line *lines;
  size_t n_lines;
  Line *sums;          /* one per thread, kept so that the reads stay */
} ReadJob;

/* Bytes ahead of the reads that each line is prefetched: one page, so that
 * the next page's misses start before the hardware prefetcher (which stops
 * at page boundaries) would. Without it two threads read about 36-40 GB/s
 * here, with it 50-60: the decode kernels prefetch the same way, and the
 * ceiling must not be lower than what they can reach. */
#define PREFETCH_BYTES 4096
/* The alignment that lets the kernel back the buffer with huge pages. */
#define HUGE_PAGE (2u << 20)

/* Thread @index of @n sums its contiguous share of the buffer; four
 * independent sums keep several lines in flight. */
static void
read_share (void *ctx, int index, int n)
{
  ReadJob *job = ctx;
  size_t begin = job->n_lines * (size_t) index / (size_t) n;
  size_t end = job->n_lines * (size_t) (index + 1) / (size_t) n;
  Line a = { 0 }, b = { 0 }, c = { 0 }, d = { 0 };
  size_t i = begin;
  for (; i + 4 <= end; i += 4)
    {
      for (int k = 0; k < 4; k++)
        __builtin_prefetch ((const char *) &job->lines[i + k] + PREFETCH_BYTES, 0, 1);
      a += job->lines[i];
      b += job->lines[i + 1];
      c += job->lines[i + 2];
      d += job->lines[i + 3];
    }
  for (; i < end; i++)
    a += job->lines[i];
  job->sums[index] = a + b + c + d;
}

static double
seconds (clockid_t clock)
{
  struct timespec ts;
  clock_gettime (clock, &ts);
  return (double) ts.tv_sec + ts.tv_nsec * 1e-9;
}

LmStatus
lm_read_bandwidth (size_t mib, int passes, int n_threads, clockid_t clock, double *bytes_per_s)
{
  if (mib < LM_READ_BANDWIDTH_MIN_MIB || mib > LM_READ_BANDWIDTH_MAX_MIB || passes < 1
      || n_threads < 1 || bytes_per_s == NULL)
    return LM_ERR_INVALID_ARGUMENT;
  size_t bytes = mib << 20;
  ReadJob job = { .n_lines = bytes / sizeof (Line) };
  size_t alloc_bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
  Line *lines = aligned_alloc (HUGE_PAGE, alloc_bytes);
  job.sums = aligned_alloc (sizeof (Line), (size_t) n_threads * sizeof (Line));
  LmThreadPool *pool = n_threads > 1 ? lm_thread_pool_new (n_threads) : NULL;
  LmStatus st = LM_OK;
  if (lines == NULL || job.sums == NULL || (n_threads > 1 && pool == NULL))
    st = LM_ERR_NO_MEMORY;
  else
    {
      /* Huge pages where the system has them: the rate is then memory's,
       * not the page walks'. */
      madvise (lines, alloc_bytes, MADV_HUGEPAGE);
      memset (lines, 1, bytes);   /* real pages, not the shared zero page */
      job.lines = lines;
      double best = 0;
      for (int p = 0; p < passes; p++)
        {
          double t0 = seconds (clock);
          lm_thread_pool_run (pool, read_share, &job, n_threads);
          double t = seconds (clock) - t0;
          if (t > 0 && (double) bytes / t > best)
            best = (double) bytes / t;
        }
      *bytes_per_s = best;
    }
  lm_thread_pool_free (pool);
  free (job.sums);
  free (lines);
  return st;
}
