/* lm-gpu.c: the one probe for the runtime's GPU backend, cached for the process.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <pthread.h>
#include <stdio.h>

#include "lm-gpu.h"
#include "ts-config.h"

#if TS_HAVE_CUDA
#include "lm-cuda.h"
#endif

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static bool probe_ok;
static char probe_why[160];

static void
probe (void)
{
#if TS_HAVE_CUDA
  int count = 0;
  char reason[120] = "";
  probe_ok = lm_cuda_probe (&count, reason, sizeof reason);
  if (!probe_ok)
    snprintf (probe_why, sizeof probe_why, "no usable NVIDIA GPU (%s)", reason);
#else
  probe_ok = false;
  snprintf (probe_why, sizeof probe_why, "this build has no CUDA kernels");
#endif
}

bool
lm_gpu_available (char *why, size_t why_len)
{
  pthread_once (&probe_once, probe);
  if (!probe_ok && why != NULL && why_len > 0)
    snprintf (why, why_len, "%s", probe_why);
  return probe_ok;
}

bool
lm_gpu_built (void)
{
  return TS_HAVE_CUDA;
}

#if !TS_HAVE_CUDA
/* Without CUDA in the build a session never gets a GPU half (session-gpu.h):
 * lm_gpu_session_new() explains why and nothing else is ever reached with
 * a GPU session. */
#include "session-gpu.h"

LmStatus
lm_gpu_session_new (LmSession *s, uint32_t n_layers, char **error_out)
{
  (void) s;
  (void) n_layers;
  return lm_fail (error_out, LM_ERR_DEVICE, "this build has no CUDA kernels");
}

void
lm_gpu_session_free (LmGpuSession *gpu)
{
  (void) gpu;
}

LmStatus
lm_gpu_forward (LmSession *s, const int32_t *tokens, uint32_t n, float *logits_all)
{
  (void) s;
  (void) tokens;
  (void) n;
  (void) logits_all;
  return LM_ERR_DEVICE;
}

void
lm_gpu_session_reset (LmGpuSession *gpu)
{
  (void) gpu;
}

LmStatus
lm_gpu_session_set_lora (LmSession *s)
{
  (void) s;
  return LM_OK;
}

void
lm_gpu_session_invalidate (LmGpuSession *gpu)
{
  (void) gpu;
}

void
lm_gpu_session_memory (const LmGpuSession *gpu, size_t *model_bytes, size_t *session_bytes)
{
  (void) gpu;
  *model_bytes = *session_bytes = 0;
}
#endif
