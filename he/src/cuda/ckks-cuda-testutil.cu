/* ckks-cuda-testutil.cu: device memory and event timing for tests and the
 * kernel benchmark.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <cuda_runtime.h>
#include <stdio.h>

#include "ckks-cuda-testutil.h"

static thread_local char last_error[160];

static CkksStatus
check (cudaError_t err)
{
  if (err == cudaSuccess)
    return CKKS_OK;
  snprintf (last_error, sizeof last_error, "%s", cudaGetErrorString (err));
  cudaGetLastError ();
  return CKKS_ERR_DEVICE;
}

extern "C" uint64_t *
ckks_cuda_test_alloc (size_t words)
{
  void *p = NULL;
  if (check (cudaMalloc (&p, words * sizeof (uint64_t))) != CKKS_OK)
    return NULL;
  if (check (cudaMemset (p, 0, words * sizeof (uint64_t))) != CKKS_OK)
    {
      cudaFree (p);
      return NULL;
    }
  return (uint64_t *) p;
}

extern "C" void
ckks_cuda_test_free (uint64_t *device)
{
  if (device)
    cudaFree (device);
}

extern "C" CkksStatus
ckks_cuda_test_upload (uint64_t *device, const uint64_t *host, size_t words)
{
  return check (cudaMemcpy (device, host, words * sizeof (uint64_t), cudaMemcpyHostToDevice));
}

extern "C" CkksStatus
ckks_cuda_test_download (uint64_t *host, const uint64_t *device, size_t words)
{
  return check (cudaMemcpy (host, device, words * sizeof (uint64_t), cudaMemcpyDeviceToHost));
}

extern "C" CkksStatus
ckks_cuda_test_sync (void)
{
  CkksStatus st = check (cudaDeviceSynchronize ());
  return st != CKKS_OK ? st : check (cudaGetLastError ());
}

extern "C" const char *
ckks_cuda_test_error (void)
{
  return last_error;
}

struct CkksCudaTestTimer {
  cudaEvent_t start, stop;
};

extern "C" CkksCudaTestTimer *
ckks_cuda_test_timer_new (void)
{
  CkksCudaTestTimer *t = new CkksCudaTestTimer ();
  if (check (cudaEventCreate (&t->start)) != CKKS_OK)
    {
      delete t;
      return NULL;
    }
  if (check (cudaEventCreate (&t->stop)) != CKKS_OK)
    {
      cudaEventDestroy (t->start);
      delete t;
      return NULL;
    }
  return t;
}

extern "C" void
ckks_cuda_test_timer_free (CkksCudaTestTimer *timer)
{
  if (!timer)
    return;
  cudaEventDestroy (timer->start);
  cudaEventDestroy (timer->stop);
  delete timer;
}

extern "C" void
ckks_cuda_test_timer_start (CkksCudaTestTimer *timer)
{
  cudaEventRecord (timer->start, 0);
}

extern "C" double
ckks_cuda_test_timer_stop_us (CkksCudaTestTimer *timer)
{
  float ms = 0;
  cudaEventRecord (timer->stop, 0);
  if (check (cudaEventSynchronize (timer->stop)) != CKKS_OK
      || check (cudaEventElapsedTime (&ms, timer->start, timer->stop)) != CKKS_OK)
    return -1;
  return ms * 1000.0;
}

extern "C" const char *
ckks_cuda_test_device_name (void)
{
  static thread_local char name[sizeof (cudaDeviceProp::name) + 64];
  cudaDeviceProp prop;
  if (check (cudaGetDeviceProperties (&prop, 0)) != CKKS_OK)
    return "unknown device";
  snprintf (name, sizeof name, "%s (sm_%d%d, %d SMs)", prop.name, prop.major, prop.minor,
            prop.multiProcessorCount);
  return name;
}
