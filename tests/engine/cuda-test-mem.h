/* cuda-test-mem.h: device memory and timing for the GPU tests and benchmarks.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Thin wrappers of the CUDA runtime for C test programs; every failure
 * aborts the test with the CUDA error's text. Call only after
 * lm_gpu_available() said yes. */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A zeroed device buffer of @bytes; ct_free() releases it. */
void *ct_alloc (size_t bytes);
/* A device copy of @bytes at @host. */
void *ct_upload (const void *host, size_t bytes);
/* Copies @bytes of host memory to the device buffer @dev. */
void ct_copy_in (void *dev, const void *host, size_t bytes);
/* Waits for the device, then copies @bytes of @dev to @host. */
void ct_download (void *host, const void *dev, size_t bytes);
void ct_free (void *dev);
/* Waits for the device; aborts on an error of an earlier launch. */
void ct_sync (void);

/* Milliseconds per call of fn(ctx), averaged over @reps calls after one
 * warm-up call, measured with CUDA events on the default stream. */
double ct_time_ms (void (*fn) (void *ctx), void *ctx, int reps);

/* A stream of its own (graphs cannot capture the legacy default stream),
 * and graphs captured on it: fn(ctx, stream) issues the launches. */
typedef void (*CtStreamFunc) (void *ctx, void *stream);
void *ct_stream_new (void);
void ct_stream_free (void *stream);
void *ct_graph_capture (void *stream, CtStreamFunc fn, void *ctx);
void ct_graph_launch (void *graph, void *stream);
void ct_graph_free (void *graph);

#ifdef __cplusplus
}
#endif
