/* ts-bench-adapter.h: an adapter resized to another LoRA rank, for rank sweeps.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Benchmarks measure how the encrypted path scales with the rank r. Given an
 * adapter, this writes a GGUF LoRA whose every module has rank @rank: the
 * first @rank rows of A and columns of B when smaller, the original ones
 * followed by zeros when larger (the zero rows add nothing, so a padded
 * adapter computes the very same Δ). The per-module scale is kept.
 * Blocking; safe from any thread.
 */
#pragma once

#include <gio/gio.h>

#include "lm.h"

G_BEGIN_DECLS

gboolean ts_bench_write_adapter_rank (const LmLora *lora, guint rank, const char *path,
                                      GError **error);

G_END_DECLS
