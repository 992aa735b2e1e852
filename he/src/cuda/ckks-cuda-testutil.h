/* ckks-cuda-testutil.h: device memory and timing for the kernel tests and
 * the kernel benchmark (internal; C-callable without the CUDA headers).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Synchronous and simple on purpose: tests and benchmarks only. Errors are
 * CKKS_ERR_DEVICE (with the CUDA error's text from ckks_cuda_test_error).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "ckks-status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* @words uint64_t of device memory (zeroed); NULL on failure. */
uint64_t *ckks_cuda_test_alloc (size_t words);
void ckks_cuda_test_free (uint64_t *device);
CkksStatus ckks_cuda_test_upload (uint64_t *device, const uint64_t *host, size_t words);
CkksStatus ckks_cuda_test_download (uint64_t *host, const uint64_t *device, size_t words);
/* Waits for the default stream; reports a kernel's failure. */
CkksStatus ckks_cuda_test_sync (void);
/* The text of the last CUDA error seen by these helpers. */
const char *ckks_cuda_test_error (void);

/* Events around work on the default stream: elapsed microseconds between
 * ckks_cuda_test_timer_start and ckks_cuda_test_timer_stop (which waits). */
typedef struct CkksCudaTestTimer CkksCudaTestTimer;
CkksCudaTestTimer *ckks_cuda_test_timer_new (void);
void ckks_cuda_test_timer_free (CkksCudaTestTimer *timer);
void ckks_cuda_test_timer_start (CkksCudaTestTimer *timer);
double ckks_cuda_test_timer_stop_us (CkksCudaTestTimer *timer);

/* Name of device 0, for reports. */
const char *ckks_cuda_test_device_name (void);

#ifdef __cplusplus
}
#endif
