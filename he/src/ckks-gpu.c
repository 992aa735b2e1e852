/* ckks-gpu.c: the CKKS engine's view of the process-wide GPU probe.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-gpu.h"
#include "ts-cuda-runtime.h"

bool
ckks_gpu_available (char *why, size_t why_len)
{
  return ts_cuda_runtime_available (why, why_len);
}

bool
ckks_gpu_built (void)
{
  return ts_cuda_runtime_built ();
}

bool
ckks_gpu_driver_present (void)
{
  return ts_cuda_runtime_driver_present ();
}
