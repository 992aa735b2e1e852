/* lm-cuda-buffer.h: plain device buffers for tests and benchmarks (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Thin C wrappers of the CUDA runtime for code compiled without the CUDA
 * headers. Every call works on the current device and is synchronous.
 * Thread-safe as the CUDA runtime is. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* @bytes of device memory (256-byte aligned), filled from @init when it is
 * non-NULL, or NULL on failure. Free with lm_cuda_buffer_free. */
void *lm_cuda_buffer_new (size_t bytes, const void *init);
void lm_cuda_buffer_free (void *device);
/* Copies between host and device memory; false on a device error. */
bool lm_cuda_buffer_write (void *device, const void *host, size_t bytes);
bool lm_cuda_buffer_read (const void *device, void *host, size_t bytes);
/* Waits for all work on the device; false (and the error's text in @why,
 * when non-NULL) if any of it failed. */
bool lm_cuda_buffer_sync (char *why, size_t why_len);
/* GPU time on the default stream between lm_cuda_timer_start and
 * lm_cuda_timer_stop_ms (CUDA events). */
typedef struct LmCudaTimer LmCudaTimer;
LmCudaTimer *lm_cuda_timer_new (void);
void lm_cuda_timer_free (LmCudaTimer *timer);
void lm_cuda_timer_start (LmCudaTimer *timer);
/* Records the end point, waits for it, and returns the milliseconds since
 * the start point (negative on a device error). */
double lm_cuda_timer_stop_ms (LmCudaTimer *timer);

#ifdef __cplusplus
}
#endif
