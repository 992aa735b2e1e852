/* lm-gpu-none.c: the GPU half of sessions in a build without CUDA.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A session never gets a GPU half (session-gpu.h) here: lm_gpu_session_new()
 * explains why, and nothing else is ever reached with a GPU session. Built
 * instead of engine/src/cuda when meson finds no nvcc.
 */
#include "session-gpu.h"

LmStatus
lm_gpu_session_new (LmSession *s, uint32_t n_layers, char **error_out)
{
  return lm_fail (error_out, LM_ERR_DEVICE, "this build has no CUDA kernels");
}

void
lm_gpu_session_free (LmGpuSession *gpu)
{
}

LmStatus
lm_gpu_forward (LmSession *s, const int32_t *tokens, uint32_t n, float *logits_all)
{
  return LM_ERR_DEVICE;
}

void
lm_gpu_session_reset (LmGpuSession *gpu)
{
}

LmStatus
lm_gpu_session_set_lora (LmSession *s)
{
  return LM_OK;
}

void
lm_gpu_session_invalidate (LmGpuSession *gpu)
{
}

void
lm_gpu_session_memory (const LmGpuSession *gpu, size_t *model_bytes, size_t *session_bytes)
{
  *model_bytes = *session_bytes = 0;
}

bool
lm_gpu_session_graph_recorded (const LmGpuSession *gpu)
{
  return false;
}

size_t
lm_gpu_session_graph_segments (const LmGpuSession *gpu)
{
  return 0;
}
