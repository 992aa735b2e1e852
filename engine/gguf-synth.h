/* gguf-synth.h: synthetic Qwen3.5 test models (seeded random weights) as GGUF.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Writes every key and tensor of FORMAT.md for qwen35 / qwen35moe, with a
 * byte-level BPE vocabulary (256 byte tokens, seeded synthetic merges, the 26
 * Qwen special tokens at the end) unless one is copied from another GGUF.
 * The same options and seed always give the same file, whatever the thread
 * count: every weight row draws from its own generator stream.
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

typedef enum { LM_SYNTH_QWEN35, LM_SYNTH_QWEN35MOE } LmSynthArch;
typedef enum { LM_SYNTH_TINY, LM_SYNTH_BENCH } LmSynthPreset;
typedef enum { LM_SYNTH_F32, LM_SYNTH_F16, LM_SYNTH_Q8_0, LM_SYNTH_Q4_K_M } LmSynthType;

typedef struct {
  uint32_t n_vocab, n_embd, n_layer, n_ctx;
  uint32_t n_head, n_head_kv, head_dim, n_rot;
  uint32_t ssm_state, ssm_groups, ssm_heads, conv_kernel;   /* S, Hk, Hv, K */
  uint32_t n_ff;                                            /* qwen35 */
  uint32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;   /* qwen35moe */
  uint32_t full_attn_interval;
  float rope_base, rms_eps;
} LmSynthHparams;

typedef struct {
  LmSynthArch arch;
  LmSynthPreset preset;
  LmSynthType type;
  uint64_t seed;
  int threads;                    /* 0: all online CPUs */
  const GgufFile *vocab_from;     /* optional: copy tokenizer.ggml.* from here */
} LmSynthOptions;

/* The shapes of a preset. tiny: E 256, 4 layers, 4/2 heads of 64 (16 rotary),
 * linear 2 key / 4 value heads of 64, 8 experts top-2 of 256 (dense FFN 512),
 * vocab 1024. bench: Qwen3.5-35B-A3B's layer shapes (E 2048, 16/2 heads of 256,
 * 64 rotary, linear 16 key / 32 value heads of 128, 256 experts top-8 of 512,
 * shared expert 512, dense FFN 6144, vocab 248320) with 4 layers (3 linear, 1 full). */
LmSynthHparams lm_synth_hparams (LmSynthArch arch, LmSynthPreset preset);

/* Storage type of tensor @name (row length @ne0, in layer @layer or -1) for
 * @type, following llama.cpp's choices (Q4_K_M: Q6_K for output.weight and
 * for ffn_down / attn_v in the layers it gives more bits; Q8_0 attn_qkv / attn_k /
 * attn_v and Q5_K attn_output with 8 experts). Norms, ssm_a, ssm_dt.bias,
 * ssm_conv1d and the routers stay F32. A K-quant whose row length is not a
 * multiple of 256 falls back to Q8_0. */
LmTensorType lm_synth_tensor_type (LmSynthType type, const LmSynthHparams *hp, const char *name,
                                   uint64_t ne0, int layer);

LmStatus lm_synth_write (const LmSynthOptions *options, const char *path, char **error_out);

#ifdef __cplusplus
}
#endif
