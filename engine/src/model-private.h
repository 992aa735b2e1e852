/* model-private.h: the loaded model's weights as the forward pass sees them.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <pthread.h>

#include "gguf.h"
#include "lm.h"

/* A matrix y = W·x with W rows contiguous (ggml layout); for a 3-D expert
 * tensor, n_mat matrices @mat_stride bytes apart. */
typedef struct {
  const void *data;
  LmTensorType type;
  uint32_t n_in, n_out, n_mat;
  size_t mat_stride;
} LmWeight;

typedef struct {
  bool is_linear;
  uint32_t state_index;   /* index among linear (or full) layers */
  const float *attn_norm, *post_norm;
  /* full attention; the norms and biases are NULL where the architecture has none */
  LmWeight wq, wk, wv, wo;
  const float *q_norm, *k_norm;
  const float *bq, *bk, *bv;
  /* Gated DeltaNet */
  LmWeight wqkv, wgate, walpha, wbeta, wssm_out;
  const float *conv;      /* [conv_dim][K] */
  const float *dt_bias, *ssm_a, *ssm_norm;
  /* dense FFN */
  LmWeight ffn_gate, ffn_up, ffn_down;
  /* MoE */
  LmWeight router, exp_gate, exp_up, exp_down;
  const float *shexp_gate_inp;   /* NULL (and sh_* unbound) without a shared expert */
  LmWeight sh_gate, sh_up, sh_down;
} LmLayer;

struct LmModel {
  GgufFile *gguf;
  LmModelInfo info;
  uint32_t n_linear, n_full;
  LmWeight tok_embd, output;
  const float *output_norm;
  LmLayer *layers;
  size_t weight_bytes;
  /* GPU backend: the device copy of the weights (engine/src/cuda), created by the
   * model's first GPU session and freed with its last. A cache, so it may
   * change in a const model, under gpu_lock. */
  struct LmGpuModel *gpu;
  pthread_mutex_t gpu_lock;
  /* The dense weights' copy in huge pages (model-resident.c), or NULL;
   * made by the first session that computes on the CPU (a cache, so it may
   * change in a const model, under resident_lock and gpu_lock), from the
   * file opened at load (fd, path). */
  void *resident;
  size_t resident_bytes;
  bool resident_decided;
  pthread_mutex_t resident_lock;
  int fd;
  char *path;
};

/* The weights of @layer (an LmLayer *) that one decode step reads whole,
 * as an initialiser of an array of LM_LAYER_DENSE_COUNT pointers. */
#define LM_LAYER_DENSE_WEIGHTS(layer)                                                  \
  { &(layer)->wq, &(layer)->wk, &(layer)->wv, &(layer)->wo, &(layer)->wqkv,              \
    &(layer)->wgate, &(layer)->walpha, &(layer)->wbeta, &(layer)->wssm_out,             \
    &(layer)->ffn_gate, &(layer)->ffn_up, &(layer)->ffn_down, &(layer)->router,         \
    &(layer)->sh_gate, &(layer)->sh_up, &(layer)->sh_down }
#define LM_LAYER_DENSE_COUNT 16

/* A session is about to compute on the CPU with @model's weights: the
 * first call copies the dense weights (the output head and
 * LM_LAYER_DENSE_WEIGHTS of every layer) into anonymous memory in
 * transparent huge pages and points them there (model-resident.c); later
 * calls return at once. Nothing is copied where TENSAFE_WEIGHTS=mapped,
 * huge pages are off, or the copy would take more than half of the
 * available memory; an error only when the file cannot be read (the next
 * call tries again). Thread-safe; call it before the session computes, as
 * the weights' pointers move. */
LmStatus lm_model_host_weights_needed (const LmModel *model, char **error_out);
void lm_model_free_resident (LmModel *m);

/* Floats per token of attn_q's output: each head's query, followed by its
 * output gate in gated attention. */
static inline uint32_t
lm_q_stride (const LmModelInfo *info)
{
  return (info->attn_gated ? 2 : 1) * info->head_dim;
}

/* Derived sizes of the linear-attention layers. */
static inline uint32_t
lm_key_dim (const LmModelInfo *info)
{
  return info->ssm_state * info->ssm_groups;
}

static inline uint32_t
lm_value_dim (const LmModelInfo *info)
{
  return info->ssm_state * info->ssm_heads;
}

static inline uint32_t
lm_conv_dim (const LmModelInfo *info)
{
  return 2 * lm_key_dim (info) + lm_value_dim (info);
}

/* The weight of module @kind in @layer, or NULL if that layer has none. */
const LmWeight *lm_model_module_weight (const LmModel *model, uint32_t layer,
                                        LmModuleKind kind);

/* Formats a newly allocated message into *@error_out (if non-NULL), returns @status. */
LmStatus lm_fail (char **error_out, LmStatus status, const char *fmt, ...)
  __attribute__ ((format (printf, 3, 4)));
