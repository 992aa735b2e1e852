/* ts-cuda-runtime.c: the one GPU probe of the process, cached.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <pthread.h>
#include <stdio.h>

#include "ts-cuda-runtime.h"
#include "ts-config.h"

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool probe_ok;
static char probe_why[160];

static void
probe (void)
{
#if TS_HAVE_CUDA
  int count = 0;
  char reason[120] = "";
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

