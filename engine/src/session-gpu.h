/* session-gpu.h: the GPU half of a session, as the CPU code sees it.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Implemented in engine/src/cuda (lm-cuda-session.c, lm-cuda-forward.c); in a
 * build without CUDA, lm-gpu.c answers every call with "not available". A
 * GPU session runs the embedding and layers 0 .. gpu_layers-1 on the device
 * and, when that is every layer, the LM head too; the CPU code runs the rest
 * on the host buffers of the session as before.
 */
#pragma once

#include "session-private.h"

typedef struct LmGpuSession LmGpuSession;

/* Uploads the model's weights for the first @n_layers layers (shared with
 * the model's other GPU sessions; with every layer also the LM head) after
 * checking that they and this session's device buffers fit in free GPU
 * memory, then allocates those buffers (KV cache, recurrent state, scratch)
 * and sets s->gpu and s->gpu_layers (@n_layers, 0 or more than the model
 * has: all). On failure s->gpu stays NULL and *@error_out says why. */
LmStatus lm_gpu_session_new (LmSession *s, uint32_t n_layers, char **error_out);
void lm_gpu_session_free (LmGpuSession *gpu);

/* Runs @n tokens (checked: inside the vocabulary) at s->pos through the GPU
 * layers. With every layer on the GPU it also computes the LM head: the
 * logits of every row into @logits_all (if non-NULL) and of the last one
 * into s->logits, and the pool sum of s->pool_sum. Otherwise the residual
 * rows are left in s->x for the CPU layers. Does not advance s->pos. */
LmStatus lm_gpu_forward (LmSession *s, const int32_t *tokens, uint32_t n, float *logits_all);
/* Forgets the sequence: clears the recurrent state on the device. */
void lm_gpu_session_reset (LmGpuSession *gpu);
/* The session's adapter (s->lora, possibly NULL) was replaced: copies its A
 * and B to the device (scale folded into B). */
LmStatus lm_gpu_session_set_lora (LmSession *s);
/* The session's hooks changed: a recorded decode graph no longer applies. */
void lm_gpu_session_invalidate (LmGpuSession *gpu);
/* Device bytes of the model's shared weights and of this session. */
void lm_gpu_session_memory (const LmGpuSession *gpu, size_t *model_bytes, size_t *session_bytes);
/* True once a decode step has been recorded as a CUDA graph (tests). */
bool lm_gpu_session_graph_recorded (const LmGpuSession *gpu);
/* The recorded decode step's graphs: 1 without LoRA hooks, one more per
 * hooked module (tests). */
size_t lm_gpu_session_graph_segments (const LmGpuSession *gpu);
