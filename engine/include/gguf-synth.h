/* gguf-synth.h: synthetic Qwen3.5 test models (seeded random weights) as GGUF.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Writes every key and tensor of FORMAT.md for qwen35 / qwen35moe, with a
 * byte-level BPE vocabulary (256 byte tokens, seeded synthetic merges, the 26
 * Qwen special tokens at the end) unless one is copied from another GGUF.
 * The same options and seed always give the same file, whatever the thread
 * count: every weight row draws from its own generator stream.
 *
 * The tensor data is generated and written in chunks of about 16 MiB, so a
 * model of any size needs only a few chunks of memory; the file is written
 * under a temporary name next to the target and renamed when complete.
 *
 * Thread-safety: reentrant; lm_synth_write() uses its own worker threads.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "gguf.h"
#include "lm.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The same values as LmArch. */
typedef enum {
  LM_SYNTH_QWEN35 = LM_ARCH_QWEN35, LM_SYNTH_QWEN35MOE = LM_ARCH_QWEN35MOE,
  LM_SYNTH_QWEN2 = LM_ARCH_QWEN2, LM_SYNTH_QWEN3 = LM_ARCH_QWEN3,
  LM_SYNTH_QWEN3MOE = LM_ARCH_QWEN3MOE,
} LmSynthArch;
typedef enum { LM_SYNTH_TINY, LM_SYNTH_BENCH, LM_SYNTH_FULL } LmSynthPreset;
typedef enum {
  LM_SYNTH_F32, LM_SYNTH_F16, LM_SYNTH_Q8_0, LM_SYNTH_Q4_K_M,
  LM_SYNTH_Q4_0, LM_SYNTH_Q5_0,   /* every matrix in that type, as llama-quantize's pure types */
} LmSynthType;

typedef struct {
  uint32_t n_vocab, n_embd, n_layer, n_ctx;
  uint32_t n_head, n_head_kv, head_dim, n_rot;
  uint32_t ssm_state, ssm_groups, ssm_heads, conv_kernel;   /* S, Hk, Hv, K */
  uint32_t n_ff;                                            /* dense */
  uint32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;   /* MoE; shexp 0: none */
  uint32_t full_attn_interval;                              /* 1: no DeltaNet layers */
  float rope_base, rms_eps;
} LmSynthHparams;

/* Called on the writing thread after every chunk with the tensor bytes
 * written so far and in all; returning false stops the write
 * (LM_ERR_CANCELLED, nothing left behind). */
typedef bool (*LmSynthProgress) (uint64_t done, uint64_t total, void *user_data);

typedef struct {
  LmSynthArch arch;
  LmSynthPreset preset;
  LmSynthType type;
  uint64_t seed;
  int threads;                    /* 0: all online CPUs */
  const GgufFile *vocab_from;     /* optional: copy tokenizer.ggml.* from here */
  uint32_t n_layer;               /* 0: the preset's; else only this many layers
                                   * (for timing a part of a large preset) */
  bool overwrite;                 /* replace an existing file at the path */
  LmSynthProgress progress;       /* optional */
  void *progress_data;
} LmSynthOptions;

/* One tensor of a synthetic model as it is stored. */
typedef struct {
  char name[64];
  LmTensorType type;
  uint32_t n_dims;
  uint64_t ne[3];
  uint64_t n_bytes;
} LmSynthTensorInfo;

/* What lm_synth_write() would write, without writing it. */
typedef struct {
  LmSynthHparams hp;
  LmSynthTensorInfo *tensors;     /* owned; freed by lm_synth_plan_clear() */
  size_t n_tensors;
  uint64_t n_params;              /* weights over all tensors */
  uint64_t header_bytes;          /* header, metadata and tensor infos, padded */
  uint64_t file_bytes;            /* the exact size of the file */
  /* Weight bytes one decoded token reads, counted as lm_model_decode_bytes()
   * does: every non-expert matrix (routers and shared expert included),
   * n_expert_used of n_expert experts per MoE layer, the LM head and one
   * embedding row; norms and other vectors left out. */
  uint64_t decode_bytes;
} LmSynthPlan;

/* The shapes of a preset. tiny: E 256, 4 layers, 4/2 heads of 64 (16 rotary),
 * linear 2 key / 4 value heads of 64, 8 experts top-2 of 256 (dense FFN 512),
 * vocab 1024. bench: Qwen3.5-35B-A3B's layer shapes (E 2048, 16/2 heads of 256,
 * 64 rotary, linear 16 key / 32 value heads of 128, 256 experts top-8 of 512,
 * shared expert 512, dense FFN 6144, vocab 248320) with 4 layers (3 linear, 1 full).
 * full: the same with all 40 layers of Qwen3.5-35B-A3B (30 linear, 10 full;
 * its MTP block left out).
 * qwen2, qwen3, qwen3moe have only attention layers with full rotary
 * embedding (tiny: the same sizes otherwise; bench and full: Qwen3-30B-A3B's
 * shapes, E 2048, 32/4 heads of 128, 128 experts top-8 of 768, vocab 151936,
 * dense FFN 6144, 4 resp. 48 layers). The full preset exists for the MoE
 * architectures only. */
LmSynthHparams lm_synth_hparams (LmSynthArch arch, LmSynthPreset preset);

/* Storage type of tensor @name (row length @ne0, in layer @layer or -1) for
 * @type, following llama.cpp's choices (Q4_K_M: Q6_K for output.weight and
 * for ffn_down / attn_v in the layers it gives more bits; Q8_0 attn_qkv / attn_k /
 * attn_v and Q5_K attn_output with 8 experts). Norms, ssm_a, ssm_dt.bias,
 * ssm_conv1d and the routers stay F32. A K-quant whose row length is not a
 * multiple of 256 falls back to Q8_0. */
LmTensorType lm_synth_tensor_type (LmSynthType type, const LmSynthHparams *hp, const char *name,
                                   uint64_t ne0, int layer);

/* Fills @plan (clear it with lm_synth_plan_clear()). Fails with
 * LM_ERR_UNSUPPORTED for an arch / preset pair that has no shape. */
LmStatus lm_synth_plan (const LmSynthOptions *options, LmSynthPlan *plan, char **error_out);
void lm_synth_plan_clear (LmSynthPlan *plan);

/* Writes the model to @path. Fails without writing when @path exists and
 * options->overwrite is false, or when its file system has less free space
 * than the file needs; on any failure no file is left at @path (an existing
 * one is kept). */
LmStatus lm_synth_write (const LmSynthOptions *options, const char *path, char **error_out);

#ifdef __cplusplus
}
#endif
