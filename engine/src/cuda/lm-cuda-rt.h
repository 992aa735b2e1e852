/* lm-cuda-rt.h: the few CUDA runtime calls the GPU backend's C code makes.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Thin wrappers so that the orchestration (lm-cuda-model.c, lm-cuda-session.c,
 * lm-cuda-forward.c) is plain C and needs no CUDA headers. Every function
 * returns LM_OK or LM_ERR_DEVICE; after LM_ERR_DEVICE, lm_cuda_rt_error()
 * names the CUDA error (per thread). All on device 0.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"   /* LmStatus */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *LmCudaStream;
typedef struct CUgraphExec_st *LmCudaGraph;
typedef struct CUevent_st *LmCudaEvent;

/* The last CUDA error this thread saw in these wrappers ("" if none). */
const char *lm_cuda_rt_error (void);

LmStatus lm_cuda_rt_malloc (void **out, size_t bytes);
void lm_cuda_rt_free (void *p);
/* Page-locked host memory (for copies a CUDA graph replays). */
LmStatus lm_cuda_rt_host_alloc (void **out, size_t bytes);
void lm_cuda_rt_host_free (void *p);
/* Page-locks existing host memory (so that a recorded copy may target it). */
LmStatus lm_cuda_rt_host_register (void *p, size_t bytes);
void lm_cuda_rt_host_unregister (void *p);
LmStatus lm_cuda_rt_mem_info (size_t *free_bytes, size_t *total_bytes);

LmStatus lm_cuda_rt_stream_new (LmCudaStream *out);
void lm_cuda_rt_stream_free (LmCudaStream stream);
LmStatus lm_cuda_rt_sync (LmCudaStream stream);
/* Copies between any host or device memory (unified addressing). */
LmStatus lm_cuda_rt_copy (LmCudaStream stream, void *dst, const void *src, size_t bytes);
/* Synchronous copy, for the one-time weight upload. */
LmStatus lm_cuda_rt_upload (void *dst, const void *src, size_t bytes);
LmStatus lm_cuda_rt_memset (LmCudaStream stream, void *dst, int value, size_t bytes);

/* An event without timing, to order two streams. */
LmStatus lm_cuda_rt_event_new (LmCudaEvent *out);
void lm_cuda_rt_event_free (LmCudaEvent event);
/* Work enqueued on @waiter from now on runs after everything enqueued on
 * @done so far (@event records that point). Inside a capture of @done it
 * draws @waiter into the capture (a fork); from a drawn-in stream back to
 * the capturing one, it is the join that must come before the capture ends. */
LmStatus lm_cuda_rt_after (LmCudaStream waiter, LmCudaStream done, LmCudaEvent event);

/* Records everything enqueued on @stream between begin and end into a graph
 * (nothing runs meanwhile); end instantiates it. On failure the stream is out
 * of capture mode again and *out is NULL. */
LmStatus lm_cuda_rt_capture_begin (LmCudaStream stream);
LmStatus lm_cuda_rt_capture_end (LmCudaStream stream, LmCudaGraph *out);
LmStatus lm_cuda_rt_graph_launch (LmCudaGraph graph, LmCudaStream stream);
void lm_cuda_rt_graph_free (LmCudaGraph graph);

#ifdef __cplusplus
}
#endif
