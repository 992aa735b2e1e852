/* ckks-gpu.h: whether the CKKS engine's GPU backend can run in this process.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True if this build has the CUDA kernels and a usable NVIDIA GPU is
 * present. Otherwise, if @why is non-NULL, it receives one sentence saying
 * why not (built without CUDA, no driver, no device), for the caller to log
 * once. Probes the driver once per process; thread-safe. */
bool ckks_gpu_available (char *why, size_t why_len);

/* True if this build has the CUDA kernels (whether or not a GPU is present). */
bool ckks_gpu_built (void);

/* True if an NVIDIA driver is installed (libcuda.so.1 loads), in any build:
 * false on a computer with no NVIDIA GPU to speak of. */
bool ckks_gpu_driver_present (void);

#ifdef __cplusplus
}
#endif
