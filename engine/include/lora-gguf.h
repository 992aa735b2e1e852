/* lora-gguf.h: the reader and the writer of llama.cpp-style GGUF LoRA adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * An adapter holds, for every weight BASE it adapts ("blk.3.attn_k.weight"),
 * the tensors BASE.lora_a (rank rows of d_in) and BASE.lora_b (d_out rows of
 * rank), and the keys general.type = "adapter", adapter.type = "lora",
 * adapter.lora.alpha (absent or 0: factor 1, else alpha / rank) and usually
 * general.architecture. Every part of the tree that reads or writes such a
 * file goes through here: the engine's loader (lm_lora_load), its rank
 * reduction and probe (lora-write.h), the evaluator, which reads the A
 * matrices without a model, and the writers of stacked, synthetic and
 * resized adapters.
 *
 * Thread-safety: no shared state; an LmLoraGguf is not to be used by two
 * threads at once.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One adapted weight: its two tensors, shapes checked against each other. */
typedef struct {
  const char *name;                /* BASE, without ".lora_a" */
  uint32_t rank, d_in, d_out;
  const GgufTensorInfo *a, *b;     /* into the file, any supported type */
} LmLoraGgufPair;

typedef struct LmLoraGguf LmLoraGguf;

/* Opens @path and pairs its tensors, in the order of the lora_a tensors.
 * Every lora_a needs its lora_b (LM_ERR_FORMAT), 2-D with a matching rank
 * of 1..65536 (LM_ERR_SHAPE); other tensors are skipped. A file with no
 * pair at all opens with none: what that means is the caller's to say.
 * Messages as lm_gguf_open(). */
LmStatus lm_lora_gguf_open (const char *path, LmLoraGguf **out, char **error_out);
/* LM_ERR_FORMAT unless every tensor belongs to a pair ('unexpected tensor',
 * or a lora_b without lora_a); @path is for the message. */
LmStatus lm_lora_gguf_check_only_pairs (const LmLoraGguf *adapter, const char *path,
                                        char **error_out);
void lm_lora_gguf_close (LmLoraGguf *adapter);
/* The file itself, for its keys. */
const GgufFile *lm_lora_gguf_file (const LmLoraGguf *adapter);
/* adapter.lora.alpha, 0 when absent. */
float lm_lora_gguf_alpha (const LmLoraGguf *adapter);
size_t lm_lora_gguf_n_pairs (const LmLoraGguf *adapter);
const LmLoraGgufPair *lm_lora_gguf_pair (const LmLoraGguf *adapter, size_t index);
/* The pair's matrices as new f32 buffers (free()): @a rank x d_in, @b
 * d_out x rank; either may be NULL to skip it. LM_ERR_FORMAT when a tensor
 * does not decode (on error nothing is returned). */
LmStatus lm_lora_gguf_pair_f32 (const LmLoraGgufPair *pair, float **a, float **b);

/* One module to write: the tensors NAME.lora_a and NAME.lora_b (F32, or F16
 * with LmLoraGgufKeys.half). */
typedef struct {
  const char *name;
  uint32_t rank, d_in, d_out;
  const float *a;                  /* rank x d_in */
  const float *b;                  /* d_out x rank */
} LmLoraGgufModule;

/* The keys of a file to write. */
typedef struct {
  /* NULL: the standard keys, general.architecture first unless @arch is
   * NULL. Else every key of this file (its alignment too). */
  const GgufFile *copy_from;
  const char *arch;
  float alpha;                     /* adapter.lora.alpha, in either case */
  bool half;                       /* tensors in F16 (an F16 input stays F16
                                      and half the size); else F32 */
} LmLoraGgufKeys;

/* Writes @path (directly: a caller that needs atomicity writes a temporary
 * name and renames it) with @keys and, per module in order, its lora_a and
 * lora_b. */
LmStatus lm_lora_gguf_write (const char *path, const LmLoraGgufKeys *keys,
                             const LmLoraGgufModule *modules, size_t n_modules,
                             char **error_out);

#ifdef __cplusplus
}
#endif
