/* lm-cuda.h: the runtime's NVIDIA GPU backend (internal, C-callable).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Built only when meson finds nvcc (TS_HAVE_CUDA); the CPU code reaches it
 * through lm-gpu.c, which answers "no GPU" in builds without CUDA.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True if at least one CUDA device is usable; otherwise *why says why
 * (no driver, no device). Thread-safe. */
bool lm_cuda_probe (int *device_count, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
