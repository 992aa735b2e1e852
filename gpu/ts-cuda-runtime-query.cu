/* ts-cuda-runtime-query.cu: asks the CUDA runtime for usable devices.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <cuda_runtime.h>
#include <stdio.h>

#include "ts-cuda-runtime.h"

extern "C" bool
ts_cuda_runtime_query (int *device_count, char *why, size_t why_len)
{
  int count = 0;
  cudaError_t err = cudaGetDeviceCount (&count);
  if (err != cudaSuccess || count == 0)
    {
      if (why_len > 0)
        snprintf (why, why_len, "%s", err != cudaSuccess ? cudaGetErrorString (err)
                                                          : "no CUDA device");
      /* Clears the sticky error so that a later query starts clean. */
      cudaGetLastError ();
      *device_count = 0;
      return false;
    }
  *device_count = count;
  return true;
}
