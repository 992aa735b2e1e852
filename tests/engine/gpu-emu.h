/* gpu-emu.h: knobs of the host emulation of the engine/cuda device API
 * (gpu-emu.c; it also answers lm_gpu_available() with yes).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdatomic.h>
#include <stddef.h>

/* What lm_cuda_rt_mem_info() reports as free (default 16 GiB). */
extern size_t gpu_emu_free_bytes;
/* Device and pinned allocations not yet freed. */
extern atomic_size_t gpu_emu_live_allocations;
/* Launches of recorded graphs (decode steps replayed). */
extern atomic_size_t gpu_emu_graph_launches;
