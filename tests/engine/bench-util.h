/* bench-util.h: random inputs shared by the benchmark programs (not tests).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One process-wide xorshift stream with a fixed start, so that every run of
 * a benchmark times the same data; not thread-safe. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"   /* LmTensorType */

/* The next value of the stream. */
uint64_t bench_next_random (void);

/* @bytes of random blocks of @type with small finite scales (quants random,
 * fp16 scales 0.01, F32 values in [0, 1), F16/BF16 near 1), malloc'd; NULL
 * if out of memory. */
uint8_t *bench_random_weights (LmTensorType type, size_t bytes);
