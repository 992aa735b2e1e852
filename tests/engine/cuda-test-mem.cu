/* cuda-test-mem.cu: device memory and timing for the GPU tests (cuda-test-mem.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda-test-mem.h"

static void
check (cudaError_t err, const char *what)
{
  if (err != cudaSuccess)
    {
      fprintf (stderr, "CUDA error in %s: %s\n", what, cudaGetErrorString (err));
      abort ();
    }
}

extern "C" void *
ct_alloc (size_t bytes)
{
  void *p = NULL;
  check (cudaMalloc (&p, bytes > 0 ? bytes : 1), "cudaMalloc");
  check (cudaMemset (p, 0, bytes > 0 ? bytes : 1), "cudaMemset");
  return p;
}

extern "C" void *
ct_upload (const void *host, size_t bytes)
{
  void *p = ct_alloc (bytes);
  ct_copy_in (p, host, bytes);
  return p;
}

extern "C" void
ct_copy_in (void *dev, const void *host, size_t bytes)
{
  check (cudaMemcpy (dev, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the device");
}

extern "C" void
ct_download (void *host, const void *dev, size_t bytes)
{
  ct_sync ();
  check (cudaMemcpy (host, dev, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to the host");
}

extern "C" void
ct_free (void *dev)
{
  check (cudaFree (dev), "cudaFree");
}

extern "C" void
ct_sync (void)
{
  check (cudaGetLastError (), "a launch");
  check (cudaDeviceSynchronize (), "a kernel");
}

extern "C" double
ct_time_ms (void (*fn) (void *ctx), void *ctx, int reps)
{
  cudaEvent_t start, stop;
  check (cudaEventCreate (&start), "cudaEventCreate");
  check (cudaEventCreate (&stop), "cudaEventCreate");
  fn (ctx);
  ct_sync ();
  check (cudaEventRecord (start, 0), "cudaEventRecord");
  for (int i = 0; i < reps; i++)
    fn (ctx);
  check (cudaEventRecord (stop, 0), "cudaEventRecord");
  ct_sync ();
  float ms = 0.0f;
  check (cudaEventElapsedTime (&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy (start);
  cudaEventDestroy (stop);
  return ms / reps;
}

extern "C" void *
ct_stream_new (void)
{
  cudaStream_t s = NULL;
  check (cudaStreamCreateWithFlags (&s, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

extern "C" void
ct_stream_free (void *stream)
{
  check (cudaStreamDestroy ((cudaStream_t) stream), "cudaStreamDestroy");
}

extern "C" void *
ct_graph_capture (void *stream, CtStreamFunc fn, void *ctx)
{
  cudaStream_t s = (cudaStream_t) stream;
  cudaGraph_t graph = NULL;
  cudaGraphExec_t exec = NULL;
  check (cudaStreamBeginCapture (s, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
  fn (ctx, stream);
  check (cudaStreamEndCapture (s, &graph), "cudaStreamEndCapture");
  check (cudaGraphInstantiate (&exec, graph, 0), "cudaGraphInstantiate");
  check (cudaGraphDestroy (graph), "cudaGraphDestroy");
  return exec;
}

extern "C" void
ct_graph_launch (void *graph, void *stream)
{
  check (cudaGraphLaunch ((cudaGraphExec_t) graph, (cudaStream_t) stream), "cudaGraphLaunch");
  check (cudaStreamSynchronize ((cudaStream_t) stream), "the graph");
}

extern "C" void
ct_graph_free (void *graph)
{
  check (cudaGraphExecDestroy ((cudaGraphExec_t) graph), "cudaGraphExecDestroy");
}
