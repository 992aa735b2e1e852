/* lora-write.h: rank-reduces a LoRA adapter file into a new one of the same format.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Reads an adapter without a model: a llama.cpp GGUF LoRA file, or a PEFT
 * folder (adapter_config.json + adapter_model.safetensors). Every module
 * (pair lora_a/lora_b, or lora_A/lora_B) is replaced by its optimal
 * rank-min(R, r) approximation (lora-reduce.h), and the result is written in
 * the input's format: GGUF keeps every key of the input (adapter.lora.alpha
 * becomes the new rank, or stays 0), tensors become F32 (F16 when every
 * input factor is F16); PEFT keeps every key of adapter_config.json but r
 * and lora_alpha (the new rank) and writes each tensor in its input dtype
 * when that is F16 or BF16, else F32 (so a lower rank is a smaller file),
 * in the file's own (Hugging Face) order: a permutation of A's
 * columns or B's rows commutes with the factorisation, so the loader's
 * value-head reordering applies unchanged. The product each module adds,
 * factor · B·A, is approximated, whatever the old and new factors.
 *
 * Outputs are written to a temporary name and renamed (a failed or cancelled
 * run leaves no half file). Thread-safety: no shared state.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lora-reduce.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called once per module in file order, after it was reduced (so it also
 * serves as progress): @name is the module's tensor stem ("blk.0.ssm_out" or
 * "base_model.model...layers.0.linear_attn.out_proj"). Return true to go on;
 * false stops the reduction with LM_ERR_CANCELLED before anything is written. */
typedef bool (*LmLoraReduceReportFunc) (const char *name, const LmLoraReduceInfo *info,
                                        void *user_data);

/* @in: a GGUF file or a PEFT folder (or a folder standing for its one GGUF
 * file, as lm_lora_load() reads it); @out: a file or folder (created) of the
 * same kind. @rank >= 1. */
LmStatus lm_lora_reduce_file (const char *in, const char *out, uint32_t rank,
                              LmLoraReduceReportFunc report, void *user_data,
                              char **error_out);

/* An adapter's shape, read from its headers (no tensor data is decoded). */
typedef struct {
  bool peft;             /* a PEFT folder; else a GGUF file */
  uint32_t n_modules;    /* lora_a/lora_A tensors: the reports a reduction makes */
  uint32_t rank_min;     /* smallest and largest module rank */
  uint32_t rank_max;
  uint64_t dims_total;   /* Σ over modules of d_in + d_out: a rank-R copy holds at
                            most 4·R·dims_total bytes of F32 factors */
} LmLoraShape;

/* Fills @out for the adapter @path (a GGUF file or a PEFT folder, as for
 * lm_lora_reduce_file()). LM_ERR_IO, LM_ERR_FORMAT or LM_ERR_SHAPE with a
 * message when it cannot be read or is not a LoRA adapter. */
LmStatus lm_lora_probe_file (const char *path, LmLoraShape *out, char **error_out);

#ifdef __cplusplus
}
#endif
