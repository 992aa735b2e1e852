/* gpu-emu.h: knobs of the host emulation of the engine/cuda device API.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stddef.h>

/* What lm_cuda_rt_mem_info() reports as free (default 16 GiB). */
extern size_t gpu_emu_free_bytes;
/* Device and pinned allocations not yet freed. */
extern size_t gpu_emu_live_allocations;
