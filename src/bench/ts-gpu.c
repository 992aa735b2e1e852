/* ts-gpu.c: run-time probe of the CUDA driver and of the CPU's SIMD features.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <dlfcn.h>
#include <string.h>

#include "ckks.h"
#include "kernels.h"
#include "ts-gpu.h"

/* The few driver API entry points we need, declared here so the probe builds
 * without the CUDA headers. CUresult is an int; CUdevice is an int. */
typedef int (*CuInitFn) (unsigned int flags);
typedef int (*CuDriverGetVersionFn) (int *version);
typedef int (*CuDeviceGetCountFn) (int *count);
typedef int (*CuDeviceGetFn) (int *device, int ordinal);
typedef int (*CuDeviceGetNameFn) (char *name, int len, int device);
typedef int (*CuDeviceTotalMemFn) (size_t *bytes, int device);
typedef int (*CuDeviceGetAttributeFn) (int *value, int attribute, int device);
typedef int (*CuGetErrorNameFn) (int result, const char **name);

enum {
  CU_SUCCESS = 0,
  CU_ERROR_NO_DEVICE = 100,
  CU_ATTR_COMPUTE_CAPABILITY_MAJOR = 75,
  CU_ATTR_COMPUTE_CAPABILITY_MINOR = 76,
};

typedef struct {
  CuInitFn init;
  CuDriverGetVersionFn driver_get_version;
  CuDeviceGetCountFn device_get_count;
  CuDeviceGetFn device_get;
  CuDeviceGetNameFn device_get_name;
  CuDeviceTotalMemFn device_total_mem;
  CuDeviceGetAttributeFn device_get_attribute;
  CuGetErrorNameFn get_error_name;  /* optional */
} CudaDriver;

static TsGpuInfo *
gpu_info_new_without_gpu (char *reason)
{
  TsGpuInfo *info = g_new0 (TsGpuInfo, 1);

  info->reason = reason;
  return info;
}

/* What a person can do about the driver errors seen in practice. */
static const char *
cuda_error_hint (int result)
{
  switch (result)
    {
    case 34:  /* CUDA_ERROR_STUB_LIBRARY */
      return "the CUDA toolkit's stub library was loaded instead of the NVIDIA driver";
    case 35:  /* CUDA_ERROR_INSUFFICIENT_DRIVER */
      return "the NVIDIA driver is too old for this CUDA version";
    case 46:  /* CUDA_ERROR_DEVICE_UNAVAILABLE */
      return "the GPU is busy or in exclusive use by another process";
    case 999: /* CUDA_ERROR_UNKNOWN: typically missing /dev/nvidia* nodes */
      return "the GPU device nodes may be missing or not accessible";
    default:
      return NULL;
    }
}

static char *
cuda_error_text (const CudaDriver *cu, const char *call, int result)
{
  const char *name = NULL;
  const char *hint = cuda_error_hint (result);

  if (cu->get_error_name == NULL || cu->get_error_name (result, &name) != CU_SUCCESS)
    name = NULL;
  return g_strdup_printf ("the CUDA driver failed in %s with error %d (%s)%s%s",
                          call, result, name ? name : "unknown",
                          hint ? ": " : "", hint ? hint : "");
}

/* Resolves every required symbol; returns the first one missing, or NULL. */
static const char *
cuda_driver_bind (void *lib, CudaDriver *cu)
{
  static const struct { const char *symbol; gsize offset; } required[] = {
    { "cuInit", G_STRUCT_OFFSET (CudaDriver, init) },
    { "cuDriverGetVersion", G_STRUCT_OFFSET (CudaDriver, driver_get_version) },
    { "cuDeviceGetCount", G_STRUCT_OFFSET (CudaDriver, device_get_count) },
    { "cuDeviceGet", G_STRUCT_OFFSET (CudaDriver, device_get) },
    { "cuDeviceGetName", G_STRUCT_OFFSET (CudaDriver, device_get_name) },
    { "cuDeviceTotalMem_v2", G_STRUCT_OFFSET (CudaDriver, device_total_mem) },
    { "cuDeviceGetAttribute", G_STRUCT_OFFSET (CudaDriver, device_get_attribute) },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (required); i++)
    {
      void *fn = dlsym (lib, required[i].symbol);

      if (fn == NULL)
        return required[i].symbol;
      memcpy (G_STRUCT_MEMBER_P (cu, required[i].offset), &fn, sizeof fn);
    }
  cu->get_error_name = (CuGetErrorNameFn) (void (*) (void)) dlsym (lib, "cuGetErrorName");
  return NULL;
}

static gboolean
gpu_device_fill (const CudaDriver *cu, int ordinal, TsGpuDevice *dev, char **reason)
{
  char name[256] = "";
  size_t bytes = 0;
  int device = 0;
  const char *call;
  int r;

  if ((r = cu->device_get (&device, ordinal)) != CU_SUCCESS)
    call = "cuDeviceGet";
  else if ((r = cu->device_get_name (name, sizeof name - 1, device)) != CU_SUCCESS)
    call = "cuDeviceGetName";
  else if ((r = cu->device_total_mem (&bytes, device)) != CU_SUCCESS)
    call = "cuDeviceTotalMem";
  else if ((r = cu->device_get_attribute (&dev->cc_major, CU_ATTR_COMPUTE_CAPABILITY_MAJOR,
                                          device)) != CU_SUCCESS
           || (r = cu->device_get_attribute (&dev->cc_minor, CU_ATTR_COMPUTE_CAPABILITY_MINOR,
                                             device)) != CU_SUCCESS)
    call = "cuDeviceGetAttribute";
  else
    {
      dev->ordinal = ordinal;
      dev->name = g_strndup (name, sizeof name - 1);
      dev->total_memory = bytes;
      return TRUE;
    }

  *reason = cuda_error_text (cu, call, r);
  return FALSE;
}

/* Runs the driver once the library is bound; fills @info or sets its reason.
 * Returns whether cuInit() succeeded. */
static gboolean
gpu_probe_devices (const CudaDriver *cu, TsGpuInfo *info)
{
  int count = 0;
  int r;

  if ((r = cu->init (0)) != CU_SUCCESS)
    {
      info->reason = r == CU_ERROR_NO_DEVICE
        ? g_strdup ("the CUDA driver is installed but found no GPU")
        : cuda_error_text (cu, "cuInit", r);
      return FALSE;
    }
  if (cu->driver_get_version (&info->driver_version) != CU_SUCCESS)
    info->driver_version = 0;
  if ((r = cu->device_get_count (&count)) != CU_SUCCESS)
    {
      info->reason = cuda_error_text (cu, "cuDeviceGetCount", r);
      return TRUE;
    }
  if (count <= 0)
    {
      info->reason = g_strdup ("the CUDA driver found no GPU");
      return TRUE;
    }

  info->devices = g_new0 (TsGpuDevice, count);
  for (int i = 0; i < count; i++)
    {
      if (!gpu_device_fill (cu, i, &info->devices[info->n_devices], &info->reason))
        break;
      info->n_devices++;
    }
  /* A device that answered is usable even if a later one failed. */
  if (info->n_devices > 0)
    g_clear_pointer (&info->reason, g_free);
  return TRUE;
}

TsGpuInfo *
ts_gpu_probe_library (const char *library)
{
  CudaDriver cu = { 0 };
  const char *missing;
  TsGpuInfo *info;
  void *lib;

  g_return_val_if_fail (library != NULL, NULL);

  lib = dlopen (library, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL)
    return gpu_info_new_without_gpu (
      g_strdup_printf ("the NVIDIA driver library %s is not installed "
                       "(or not visible to this process)", library));

  if ((missing = cuda_driver_bind (lib, &cu)) != NULL)
    {
      info = gpu_info_new_without_gpu (
        g_strdup_printf ("%s is not a usable CUDA driver: symbol %s is missing",
                         library, missing));
      dlclose (lib);
      return info;
    }

  /* Keep the library loaded once cuInit() succeeded: the driver does not
   * support being unloaded then, and the engine uses it again later. A
   * library that failed to initialise goes, so a later probe starts afresh. */
  info = g_new0 (TsGpuInfo, 1);
  if (!gpu_probe_devices (&cu, info))
    dlclose (lib);
  return info;
}

TsGpuInfo *
ts_gpu_probe (void)
{
  return ts_gpu_probe_library ("libcuda.so.1");
}

static void
gpu_probe_thread (GTask *task, gpointer source, gpointer task_data, GCancellable *cancellable)
{
  g_task_return_pointer (task, ts_gpu_probe (), (GDestroyNotify) ts_gpu_info_free);
}

void
ts_gpu_probe_async (GCancellable *cancellable, GAsyncReadyCallback callback,
                    gpointer user_data)
{
  g_autoptr (GTask) task = g_task_new (NULL, cancellable, callback, user_data);

  g_task_set_source_tag (task, ts_gpu_probe_async);
  g_task_set_return_on_cancel (task, TRUE);
  g_task_run_in_thread (task, gpu_probe_thread);
}

TsGpuInfo *
ts_gpu_probe_finish (GAsyncResult *result, GError **error)
{
  g_return_val_if_fail (g_task_is_valid (result, NULL), NULL);
  return g_task_propagate_pointer (G_TASK (result), error);
}

void
ts_gpu_info_free (TsGpuInfo *info)
{
  if (info == NULL)
    return;
  for (guint i = 0; i < info->n_devices; i++)
    g_free (info->devices[i].name);
  g_free (info->devices);
  g_free (info->reason);
  g_free (info);
}

char *
ts_gpu_info_describe (const TsGpuInfo *info)
{
  GString *text = g_string_new (NULL);

  g_return_val_if_fail (info != NULL, NULL);

  if (info->n_devices == 0)
    g_string_append_printf (text, "No GPU: %s", info->reason);
  for (guint i = 0; i < info->n_devices; i++)
    {
      const TsGpuDevice *dev = &info->devices[i];

      g_string_append_printf (text, "%sGPU %d: %s, %.1f GiB, compute %d.%d",
                              i > 0 ? "\n" : "", dev->ordinal, dev->name,
                              dev->total_memory / (1024.0 * 1024.0 * 1024.0),
                              dev->cc_major, dev->cc_minor);
    }
  if (info->n_devices > 0 && info->driver_version > 0)
    g_string_append_printf (text, "\nCUDA driver %d.%d", info->driver_version / 1000,
                            info->driver_version % 1000 / 10);
  return g_string_free (text, FALSE);
}

char *
ts_cpu_features_describe (void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init ();
  return g_strdup_printf ("AVX2 %s, AVX-512F %s, AVX-512 IFMA %s",
                          __builtin_cpu_supports ("avx2") ? "yes" : "no",
                          __builtin_cpu_supports ("avx512f") ? "yes" : "no",
                          __builtin_cpu_supports ("avx512ifma") ? "yes" : "no");
#else
  return g_strdup ("no x86 SIMD (not an x86 CPU)");
#endif
}

char *
ts_cpu_kernels_describe (void)
{
  return g_strdup_printf ("CKKS %s, runtime %s", ckks_cpu_backend_name (),
                          lm_isa_name (lm_kernels_isa (lm_kernels_best ())));
}
