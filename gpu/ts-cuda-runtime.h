/* ts-cuda-runtime.h: whether the CUDA runtime finds a usable GPU (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One probe shared by libtensafe-he and libtensafe-engine (which know
 * nothing of each other): each wraps it in its own API (ckks_gpu_available,
 * lm_gpu_available), so both always give the same answer.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True if this build has CUDA kernels and a usable NVIDIA GPU is present.
 * Otherwise, if @why is non-NULL, it receives one sentence saying why not
 * (built without CUDA, no driver, no device). Probes once per process;
 * thread-safe. */
bool ts_cuda_runtime_available (char *why, size_t why_len);

/* True if this build has CUDA kernels, whether or not a GPU is present. */
bool ts_cuda_runtime_built (void);

/* True if the NVIDIA driver library (libcuda.so.1) can be loaded, in any
 * build: without it the computer has no NVIDIA GPU this process can see. */
bool ts_cuda_runtime_driver_present (void);

/* The CUDA runtime's own answer (ts-cuda-runtime-query.cu, CUDA builds only). */
bool ts_cuda_runtime_query (int *device_count, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
