/* lm-cuda-rt.cu: the CUDA runtime calls of the GPU backend, for its C code.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <cuda_runtime.h>
#include <stdio.h>

#include "lm-cuda-rt.h"

static thread_local char last_error[160];

/* Records @err (and clears the runtime's last error) unless it is success. */
static LmStatus
check (cudaError_t err, const char *what)
{
  if (err == cudaSuccess)
    return LM_OK;
  snprintf (last_error, sizeof last_error, "%s: %s", what, cudaGetErrorString (err));
  cudaGetLastError ();
  return LM_ERR_DEVICE;
}

extern "C" const char *
lm_cuda_rt_error (void)
{
  return last_error;
}

extern "C" LmStatus
lm_cuda_rt_malloc (void **out, size_t bytes)
{
  *out = NULL;
  return check (cudaMalloc (out, bytes ? bytes : 1), "cudaMalloc");
}

extern "C" void
lm_cuda_rt_free (void *p)
{
  if (p != NULL)
    check (cudaFree (p), "cudaFree");
}

extern "C" LmStatus
lm_cuda_rt_host_alloc (void **out, size_t bytes)
{
  *out = NULL;
  return check (cudaMallocHost (out, bytes ? bytes : 1), "cudaMallocHost");
}

extern "C" void
lm_cuda_rt_host_free (void *p)
{
  if (p != NULL)
    check (cudaFreeHost (p), "cudaFreeHost");
}

extern "C" LmStatus
lm_cuda_rt_host_register (void *p, size_t bytes)
{
  return check (cudaHostRegister (p, bytes, cudaHostRegisterDefault), "cudaHostRegister");
}

extern "C" void
lm_cuda_rt_host_unregister (void *p)
{
  if (p != NULL)
    check (cudaHostUnregister (p), "cudaHostUnregister");
}

extern "C" LmStatus
lm_cuda_rt_mem_info (size_t *free_bytes, size_t *total_bytes)
{
  *free_bytes = *total_bytes = 0;
  return check (cudaMemGetInfo (free_bytes, total_bytes), "cudaMemGetInfo");
}

extern "C" LmStatus
lm_cuda_rt_stream_new (LmCudaStream *out)
{
  cudaStream_t stream = NULL;
  LmStatus st = check (cudaStreamCreateWithFlags (&stream, cudaStreamNonBlocking),
                       "cudaStreamCreate");
  *out = stream;
  return st;
}

extern "C" void
lm_cuda_rt_stream_free (LmCudaStream stream)
{
  if (stream != NULL)
    check (cudaStreamDestroy (stream), "cudaStreamDestroy");
}

extern "C" LmStatus
lm_cuda_rt_sync (LmCudaStream stream)
{
  return check (cudaStreamSynchronize (stream), "cudaStreamSynchronize");
}

extern "C" LmStatus
lm_cuda_rt_copy (LmCudaStream stream, void *dst, const void *src, size_t bytes)
{
  if (bytes == 0)
    return LM_OK;
  return check (cudaMemcpyAsync (dst, src, bytes, cudaMemcpyDefault, stream), "cudaMemcpyAsync");
}

extern "C" LmStatus
lm_cuda_rt_upload (void *dst, const void *src, size_t bytes)
{
  if (bytes == 0)
    return LM_OK;
  return check (cudaMemcpy (dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
}

extern "C" LmStatus
lm_cuda_rt_memset (LmCudaStream stream, void *dst, int value, size_t bytes)
{
  if (bytes == 0)
    return LM_OK;
  return check (cudaMemsetAsync (dst, value, bytes, stream), "cudaMemsetAsync");
}

extern "C" LmStatus
lm_cuda_rt_event_new (LmCudaEvent *out)
{
  cudaEvent_t event = NULL;
  LmStatus st = check (cudaEventCreateWithFlags (&event, cudaEventDisableTiming),
                       "cudaEventCreate");
  *out = event;
  return st;
}

extern "C" void
lm_cuda_rt_event_free (LmCudaEvent event)
{
  if (event != NULL)
    check (cudaEventDestroy (event), "cudaEventDestroy");
}

extern "C" LmStatus
lm_cuda_rt_after (LmCudaStream waiter, LmCudaStream done, LmCudaEvent event)
{
  LmStatus st = check (cudaEventRecord (event, done), "cudaEventRecord");
  return st != LM_OK ? st : check (cudaStreamWaitEvent (waiter, event, 0), "cudaStreamWaitEvent");
}

extern "C" LmStatus
lm_cuda_rt_capture_begin (LmCudaStream stream)
{
  return check (cudaStreamBeginCapture (stream, cudaStreamCaptureModeThreadLocal),
                "cudaStreamBeginCapture");
}

extern "C" LmStatus
lm_cuda_rt_capture_end (LmCudaStream stream, LmCudaGraph *out)
{
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  *out = NULL;
  LmStatus st = check (cudaStreamEndCapture (stream, &graph), "cudaStreamEndCapture");
  if (st == LM_OK)
    st = check (cudaGraphInstantiate (&exec, graph, 0), "cudaGraphInstantiate");
  if (graph != NULL)
    cudaGraphDestroy (graph);
  *out = st == LM_OK ? exec : NULL;
  return st;
}

extern "C" LmStatus
lm_cuda_rt_graph_launch (LmCudaGraph graph, LmCudaStream stream)
{
  return check (cudaGraphLaunch (graph, stream), "cudaGraphLaunch");
}

extern "C" void
lm_cuda_rt_graph_free (LmCudaGraph graph)
{
  if (graph != NULL)
    check (cudaGraphExecDestroy (graph), "cudaGraphExecDestroy");
}
