/* read-bandwidth.h: how fast this machine's threads read memory, the ceiling of decode.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Decode of one token reads every weight it uses once, from memory far larger
 * than the caches, so its rate cannot exceed (read bandwidth) / (bytes per
 * token). Measuring the bandwidth in the same run as the decode, with the
 * same threads and the same clock, gives that ceiling on a machine whose
 * other load changes from minute to minute.
 */
#pragma once

#include <stddef.h>
#include <time.h>

#include "lm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Smallest and largest buffers lm_read_bandwidth() accepts, in MiB: below the
 * smallest, a large last-level cache would answer instead of memory. */
#define LM_READ_BANDWIDTH_MIN_MIB 64
#define LM_READ_BANDWIDTH_MAX_MIB 16384

/* Reads a fresh buffer of @mib MiB @passes times, split evenly over
 * @n_threads threads (the caller included), and sets *@bytes_per_s to the
 * fastest pass's bytes per second of @clock (CLOCK_MONOTONIC, or
 * CLOCK_PROCESS_CPUTIME_ID for bytes per second of the process's CPU time).
 * The buffer is written once before timing so that page faults stay out.
 * LM_ERR_INVALID_ARGUMENT for a size outside [LM_READ_BANDWIDTH_MIN_MIB,
 * LM_READ_BANDWIDTH_MAX_MIB], @passes or @n_threads below 1 or a NULL
 * output; LM_ERR_NO_MEMORY when the buffer or the threads cannot be had. */
LmStatus lm_read_bandwidth (size_t mib, int passes, int n_threads, clockid_t clock,
                            double *bytes_per_s);

#ifdef __cplusplus
}
#endif
