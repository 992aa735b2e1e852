/* forward-kern.h: the kernel entry points the forward pass uses, in one place.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdint.h>

#include "kernels.h"
#include "quant.h"
#include "threadpool.h"

/* Runs fn(ctx, item) for every item in [0, n_items) on @pool; each item is run
 * exactly once and items must be independent, so results do not depend on the
 * number of threads. */
typedef void (*LmItemFunc) (void *ctx, uint32_t item);
void lm_parallel_for (LmThreadPool *pool, uint32_t n_items, LmItemFunc fn, void *ctx);
