/* ts-bench-stack.h: the random adapters a benchmark stacks on the one it measures.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * To measure stacking (ts-adapter-stack.h) on any model, a benchmark stacks
 * two seeded random adapters on the given one: attention q/k/v on every
 * full-attention layer (modules that read one h per layer) and FFN gate/up
 * (the shared expert's on MoE models) on every layer. They are files,
 * because a remote evaluator stacks the files it serves: named
 * stack-attn-rR.gguf and stack-ffn-rR.gguf, the same values on every run.
 * Blocking; no shared state.
 */
#pragma once

#include <gio/gio.h>

#include "lm.h"

G_BEGIN_DECLS

#define TS_BENCH_STACK_N_MEMBERS 2

/* Fills @paths (free each with g_free) with the members' file names in
 * @dir, writing those not there yet; *@n_written counts the files written.
 * FALSE with @error when one cannot be made or written. */
gboolean ts_bench_stack_write_members (const LmModel *model, guint rank, const char *dir,
                                       char *paths[TS_BENCH_STACK_N_MEMBERS], guint *n_written,
                                       GError **error);

G_END_DECLS
