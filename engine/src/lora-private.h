/* lora-private.h: the adapter's module table and how sessions apply it.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "model-private.h"
#include "safetensors.h"

typedef struct LmSession LmSession;

struct LmLora {
  const LmModel *model;
  LmLoraModule *modules;
  size_t n_modules, cap_modules;
  uint32_t max_rank, max_d_out;
};

/* An empty adapter for @model. */
LmLora *lm_lora_new (const LmModel *model);
/* Parses "blk.N.STEM.weight" into a layer and module kind; false if unknown. */
bool lm_lora_parse_name (const char *name, size_t len, uint32_t *layer, LmModuleKind *kind);
/* Adds a module of @rank with copies of @a (rank x d_in) and @b (d_out x rank),
 * checking the shapes against the model's weight. */
LmStatus lm_lora_add (LmLora *lora, uint32_t layer, LmModuleKind kind, uint32_t rank,
                      uint32_t a_cols, uint32_t b_rows, const float *a, const float *b,
                      float scale, char **error_out);

/* y[n][d_out] += scale · B · (A · x) for module @index of the session's adapter,
 * through the session's hook for that module when one is set. */
LmStatus lm_lora_apply (LmSession *s, size_t index, const float *x, uint32_t n, float *y);
/* Whether module @index has a begin hook (and a hook to finish with). */
bool lm_lora_has_begin (const LmSession *s, size_t index);
/* Calls module @index's begin hook on one row @x (see LmLoraBeginFunc). */
LmStatus lm_lora_begin (LmSession *s, size_t index, const float *x);

/* Shared by the loaders and the adapter writers (lora-write*.c): */
/* The GGUF file a folder stands for: its one *.gguf file when it has no
 * adapter_config.json (how a GGUF adapter is installed from the marketplace),
 * as a new string (free()); NULL otherwise (a PEFT folder, or no such file). */
char *lm_lora_dir_gguf (const char *dir);
struct LmJson;
/* A PEFT folder's adapter_config.json (at most 1 MiB), parsed into @root
 * (lm_json_free()); @path (@path_size bytes) receives the file's path for
 * the caller's own messages. */
LmStatus lm_lora_read_config (const char *dir, char *path, size_t path_size,
                              struct LmJson **root, char **error_out);
/* One F32/F16/BF16 2-D safetensors tensor as a new f32 buffer (free()). */
LmStatus lm_lora_read_matrix (const SafetensorsTensor *t, uint32_t *rows, uint32_t *cols,
                              float **out);
