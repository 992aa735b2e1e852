/* ts-gpu.h: what this machine computes with: CUDA devices and CPU SIMD features.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The CUDA driver is loaded at run time (dlopen of libcuda.so.1), so a build
 * with CUDA runs unchanged on a machine without a GPU or a driver: the probe
 * then returns no devices and a reason a person can act on.
 *
 * Thread-safety: every function may be called from any thread. The probe
 * keeps the driver library loaded once cuInit() succeeded (unloading a
 * CUDA driver that was initialised is not supported by it).
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

typedef struct {
  int ordinal;             /* CUDA device ordinal, 0-based */
  char *name;              /* marketing name, e.g. "NVIDIA H100 80GB HBM3" */
  guint64 total_memory;    /* bytes */
  int cc_major;            /* compute capability, e.g. 9.0 */
  int cc_minor;
} TsGpuDevice;

typedef struct {
  int driver_version;      /* e.g. 12040 for CUDA 12.4; 0 when unknown */
  guint n_devices;
  TsGpuDevice *devices;    /* n_devices entries */
  char *reason;            /* why there is no usable GPU; NULL when n_devices > 0 */
} TsGpuInfo;

/* Probes the CUDA driver libcuda.so.1. Never fails: without a GPU the result
 * has n_devices == 0 and a non-empty reason. Free with ts_gpu_info_free(). */
TsGpuInfo *ts_gpu_probe (void);

/* Same, loading the driver from @library (a soname or a path); used by tests
 * to exercise the "driver missing" and "not a driver" paths. */
TsGpuInfo *ts_gpu_probe_library (const char *library);

/* Runs ts_gpu_probe() on a worker thread: initialising a CUDA driver can take
 * a noticeable time, which a GUI must not spend on its main thread. */
void ts_gpu_probe_async (GCancellable *cancellable, GAsyncReadyCallback callback,
                         gpointer user_data);

/* Returns the probe result (transfer full), or NULL with @error set when the
 * operation was cancelled. */
TsGpuInfo *ts_gpu_probe_finish (GAsyncResult *result, GError **error);

void ts_gpu_info_free (TsGpuInfo *info);

/* One line per device ("GPU 0: NAME, 80.0 GiB, compute 9.0") or
 * "No GPU: REASON". Newly allocated. */
char *ts_gpu_info_describe (const TsGpuInfo *info);

/* The CPU features the kernels dispatch on, as "AVX2 yes, AVX-512F no, ...".
 * Newly allocated. */
char *ts_cpu_features_describe (void);

/* The CPU kernels the two engines run on this machine, as "CKKS avx2,
 * runtime avx2" (what a benchmark's numbers depend on). Newly allocated. */
char *ts_cpu_kernels_describe (void);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsGpuInfo, ts_gpu_info_free)

G_END_DECLS
