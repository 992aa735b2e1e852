/* ts-helora-adapter.h: the A matrices of a LoRA adapter, read without the base model.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * An evaluator needs only each module's A (r × d_in); it has no base model
 * to check shapes against. Reads llama.cpp GGUF LoRA files (every tensor type
 * the engine decodes). Results are plain values owned by the caller.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
  char *name;                  /* base tensor name, "blk.3.attn_output" */
  guint d_in;
  guint rank;
  float *a;                    /* rank × d_in, row-major */
} TsHeloraAdapterModule;

void ts_helora_adapter_module_free (TsHeloraAdapterModule *module);

/* Returns the modules (of TsHeloraAdapterModule *, freed with the array), or
 * NULL with TS_HELORA_ERROR_UNKNOWN_ADAPTER when the file is not a readable
 * GGUF LoRA adapter. */
GPtrArray *ts_helora_adapter_read (const char *path, GError **error);

struct LmModel;

/* Writes a seeded random rank-@rank GGUF LoRA adapter for @model on every
 * full-attention layer's projections named in @kinds ("attn_q", "attn_k",
 * "attn_v", "attn_output"; NULL: the output projection only, the benchmark's
 * adapter): |A| <= 0.1, |B| <= 0.02, alpha = rank (scale 1). */
gboolean ts_helora_adapter_write_synthetic (const struct LmModel *model, const char *path,
                                            guint rank, guint64 seed, const char *const *kinds,
                                            GError **error);

struct LmLora;

/* Writes @lora (made or loaded for @model) as a GGUF LoRA file that
 * lm_lora_load() reads back to the same products: every module's A and
 * scale·B in F32, alpha 0. Written under a hidden temporary name and
 * renamed, so a server watching the folder never sees half a file. */
gboolean ts_helora_adapter_write (const struct LmModel *model, const struct LmLora *lora,
                                  const char *path, GError **error);

G_END_DECLS
