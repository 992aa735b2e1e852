/* lm-cuda-launch.cuh: launching the runtime's kernels with programmatic
 * dependent launch (PDL, compute capability 9.0 and later).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Why: a decode step is a chain of some twenty small kernels per layer,
 * each reading well under a megabyte. Launched one after the other, every
 * kernel pays the block dispatch and its first DRAM round trip after the
 * previous one has ended. With PDL the next kernel is dispatched while the
 * current one runs, reads its weights (which no kernel writes) and then
 * waits for the current one to finish.
 *
 * The contract, for every kernel launched by lmc_launch: it calls
 * lmc_wait_previous() before it reads or writes any memory that another
 * kernel of the stream writes or reads (activations, caches, states,
 * expert choices); only constant data (weights, tables) may be touched
 * before. lmc_wait_previous() returns once the previous kernel has
 * finished and its writes are visible, and then lets the next kernel be
 * dispatched: so at most one kernel runs ahead, waiting. Where the device
 * or the environment (TENSAFE_CUDA_PDL=0) rules PDL out, and on the legacy
 * default stream (NULL), lmc_launch is an ordinary launch and the wait
 * returns at once: the order is the stream's order in either case.
 *
 * Only for .cu files; thread-safe (the one decision is made once).
 */
#pragma once

#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"

static __device__ __forceinline__ void
lmc_wait_previous (void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile ("griddepcontrol.wait;" ::: "memory");
  asm volatile ("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/* Whether launches carry the PDL attribute: a device of compute capability
 * 9.0 or later (the current device when first asked), unless
 * TENSAFE_CUDA_PDL=0 (to measure without it). */
inline bool
lmc_pdl_enabled (void)
{
  static const bool enabled = [] () {
    const char *env = getenv ("TENSAFE_CUDA_PDL");
    if (env != nullptr && strcmp (env, "0") == 0)
      return false;
    int device = 0, major = 0;
    if (cudaGetDevice (&device) != cudaSuccess
        || cudaDeviceGetAttribute (&major, cudaDevAttrComputeCapabilityMajor, device)
             != cudaSuccess)
      {
        cudaGetLastError ();
        return false;
      }
    return major >= 9;
  }();
  return enabled;
}

/* kernel<<<grid, block, smem, stream>>> (args...), dispatched early where
 * PDL is enabled; the kernel must keep the contract above. */
template <typename... Params, typename... Args>
static inline cudaError_t
lmc_launch (void (*kernel) (Params...), dim3 grid, dim3 block, size_t smem,
            cudaStream_t stream, Args &&...args)
{
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  /* not on the legacy default stream, whose implicit barriers PDL would
   * not keep */
  config.numAttrs = stream != nullptr && lmc_pdl_enabled () ? 1 : 0;
  return cudaLaunchKernelEx (&config, kernel, static_cast<Args &&> (args)...);
}

/* The status of an lmc_launch: LM_ERR_DEVICE if it or an earlier launch
 * failed (the error is cleared). */
static inline LmStatus
lmc_launched (cudaError_t launch)
{
  cudaError_t last = cudaGetLastError ();
  return launch == cudaSuccess && last == cudaSuccess ? LM_OK : LM_ERR_DEVICE;
}
