/* gpu-emu.h: knobs of the host emulation of the engine/src/cuda device API
 * (gpu-emu.c; it also answers lm_gpu_available() with yes).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "gguf.h"   /* LmStatus */

/* What lm_cuda_rt_mem_info() reports as free (default 16 GiB). */
extern size_t gpu_emu_free_bytes;
/* Device and pinned allocations not yet freed. */
extern atomic_size_t gpu_emu_live_allocations;
/* Launches of recorded graphs (decode steps replayed). */
extern atomic_size_t gpu_emu_graph_launches;
/* Copies from device memory to host memory (pinned or pageable): what a
 * host round trip of h shows as. */
extern atomic_size_t gpu_emu_copies_to_host;

/* True when [@p, @p + @bytes) lies in one emulated device allocation
 * (lm_cuda_rt_malloc; pinned and registered host memory are not). */
bool gpu_emu_is_device (const void *p, size_t bytes);

/* What a device LoRA hook enqueues on the session's stream: @fn (@data)
 * runs in stream order, now, or at every replay when a graph is being
 * recorded, as a kernel launch would. LM_ERR_DEVICE for a NULL stream. */
typedef LmStatus (*GpuEmuWork) (void *data);
LmStatus gpu_emu_enqueue (void *stream, GpuEmuWork fn, void *data);
