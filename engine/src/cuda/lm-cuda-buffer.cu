/* lm-cuda-buffer.cu: plain device buffers for tests and benchmarks.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "lm-cuda-buffer.h"

extern "C" void *
lm_cuda_buffer_new (size_t bytes, const void *init)
{
  void *p = nullptr;
  if (cudaMalloc (&p, bytes > 0 ? bytes : 1) != cudaSuccess)
    {
      cudaGetLastError ();
      return nullptr;
    }
  if (init != nullptr && bytes > 0 && cudaMemcpy (p, init, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
    {
      cudaFree (p);
      return nullptr;
    }
  return p;
}

extern "C" void
lm_cuda_buffer_free (void *device)
{
  if (device != nullptr)
    cudaFree (device);
}

extern "C" bool
lm_cuda_buffer_write (void *device, const void *host, size_t bytes)
{
  return cudaMemcpy (device, host, bytes, cudaMemcpyHostToDevice) == cudaSuccess;
}

extern "C" bool
lm_cuda_buffer_read (const void *device, void *host, size_t bytes)
{
  return cudaMemcpy (host, device, bytes, cudaMemcpyDeviceToHost) == cudaSuccess;
}

extern "C" bool
lm_cuda_buffer_sync (char *why, size_t why_len)
{
  cudaError_t err = cudaDeviceSynchronize ();
  if (err == cudaSuccess)
    err = cudaGetLastError ();
  if (err != cudaSuccess && why != nullptr && why_len > 0)
    snprintf (why, why_len, "%s", cudaGetErrorString (err));
  return err == cudaSuccess;
}

struct LmCudaTimer
{
  cudaEvent_t start, stop;
};

extern "C" LmCudaTimer *
lm_cuda_timer_new (void)
{
  LmCudaTimer *t = (LmCudaTimer *) calloc (1, sizeof *t);
  if (t == nullptr)
    return nullptr;
  if (cudaEventCreate (&t->start) != cudaSuccess || cudaEventCreate (&t->stop) != cudaSuccess)
    {
      free (t);
      return nullptr;
    }
  return t;
}

extern "C" void
lm_cuda_timer_free (LmCudaTimer *timer)
{
  if (timer == nullptr)
    return;
  cudaEventDestroy (timer->start);
  cudaEventDestroy (timer->stop);
  free (timer);
}

extern "C" void
lm_cuda_timer_start (LmCudaTimer *timer)
{
  cudaEventRecord (timer->start, 0);
}

extern "C" double
lm_cuda_timer_stop_ms (LmCudaTimer *timer)
{
  float ms = 0.0f;
  if (cudaEventRecord (timer->stop, 0) != cudaSuccess
      || cudaEventSynchronize (timer->stop) != cudaSuccess
      || cudaEventElapsedTime (&ms, timer->start, timer->stop) != cudaSuccess)
    return -1.0;
  return ms;
}
