/* ts-cuda-runtime.c: the one GPU probe of the process, cached.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "ts-cuda-runtime.h"
#include "ts-config.h"

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool probe_ok;
static char probe_why[160];

/* The driver library first: without it the CUDA runtime only says "CUDA
 * driver version is insufficient", which reads as an old driver to someone
 * who has none (and contradicted the benchmark page's probe). */
bool
ts_cuda_runtime_driver_present (void)
{
  void *lib = dlopen ("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);

  if (lib == NULL)
    return false;
  dlclose (lib);
  return true;
}

static void
probe (void)
{
#if TS_HAVE_CUDA
  int count = 0;
  char reason[120] = "";
  if (!ts_cuda_runtime_driver_present ())
    {
      probe_ok = false;
      snprintf (probe_why, sizeof probe_why, "no usable NVIDIA GPU (the NVIDIA driver library "
                "libcuda.so.1 is not installed or not visible to this process)");
      return;
    }
  probe_ok = ts_cuda_runtime_query (&count, reason, sizeof reason);
  if (!probe_ok)
    snprintf (probe_why, sizeof probe_why, "no usable NVIDIA GPU (%s)", reason);
#else
  probe_ok = false;
  snprintf (probe_why, sizeof probe_why, "this build has no CUDA kernels");
#endif
}

bool
ts_cuda_runtime_available (char *why, size_t why_len)
{
  pthread_once (&probe_once, probe);
  if (!probe_ok && why != NULL && why_len > 0)
    snprintf (why, why_len, "%s", probe_why);
  return probe_ok;
}

bool
ts_cuda_runtime_built (void)
{
  return TS_HAVE_CUDA;
}

