/* lm-cuda-gpu.h: the device copies of a model and of a session (GPU backend).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "lm-cuda-rt.h"
#include "session-gpu.h"

/* A model's weights on the device, in their GGUF block form. Mirrors of the
 * host structures whose every pointer is a device pointer. Created by the
 * first GPU session of a model and freed with the last (model->gpu_lock). */
typedef struct LmGpuModel {
  uint32_t refs;
  uint32_t n_layers;        /* layers 0 .. n_layers-1 are on the device */
  bool has_head;            /* output_norm and output are */
  LmLayer *layers;          /* [n_layer] */
  void **layer_mem;         /* [n_layer] one allocation per layer */
  LmWeight tok_embd, output;
  const float *output_norm;
  void *embd_mem, *head_mem;
  size_t bytes;
} LmGpuModel;

/* Makes sure layers 0 .. @n_layers-1 (and the head if @head) are on the
 * device, checking first that they and @extra_bytes more fit in free GPU
 * memory; takes a reference. */
LmStatus lm_gpu_model_acquire (LmModel *model, uint32_t n_layers, bool head, size_t extra_bytes,
                               LmGpuModel **out, char **error_out);
void lm_gpu_model_release (LmModel *model);

/* Bytes of device memory the weights of layer @il take (with alignment). */
size_t lm_gpu_layer_bytes (const LmModel *model, uint32_t il);

/* Pinned host memory for what the decode graph copies in and out. */
typedef struct {
  int32_t token;
  uint32_t pos;
} LmGpuIo;

/* A recorded part of the decode step: after its graph, the host calls the
 * hook of LoRA module @module (-1: none, the last segment) on rows @x. */
typedef struct {
  LmCudaGraph graph;
  int32_t module;
  const float *x;
} LmGpuSegment;

struct LmGpuSession {
  LmModel *model;                  /* whose device copy dm is (a reference) */
  LmGpuModel *dm;
  LmCudaStream stream;
  /* TENSAFE_CUDA_BRANCHES=1: the stream of a layer's second branch, and the
   * events that fork it from the stream and join it back; else NULL. */
  LmCudaStream side;
  LmCudaEvent fork_event, join_event;
  uint32_t n_layers;
  bool head;
  void *mem;                       /* every device buffer below, one allocation */
  size_t bytes;
  int32_t *tokens;                 /* [nb] */
  uint32_t *pos;                   /* [1] the first position of the batch */
  float *kv_k, *kv_v;              /* [full GPU layers][n_ctx][kv_dim] */
  float *conv_state, *ssm_state;   /* [linear GPU layers][K-1][C], [..][Hv][S][S] */
  size_t conv_count, ssm_count;    /* floats of each */
  float *x, *h, *o;                /* [nb][E] */
  float *a1, *a2, *a3, *a4, *ab;   /* as the host scratch */
  float *router, *sel_w;           /* [nb][n_expert], [nb][k] */
  int32_t *sel;                    /* [nb][k] */
  int32_t *rows_x, *rows_y;        /* [nb * k] expert row lists (prefill) */
  float *moe_g, *moe_u;            /* [nb * k][n_ff_exp] */
  float *moe_y;                    /* [nb * k][E] */
  float *logits;                   /* [nb][n_vocab] */
  float *attn_scratch;             /* split attention of a decode step */
  /* Host side: pinned io, logits and residual row of a decode step; the
   * expert row lists being built. */
  void *host_mem;
  LmGpuIo *io;
  float *h_logits, *h_x;
  float *registered;               /* s->logits when page-locked for h_logits */
  int32_t *h_rows;                 /* [3][nb * k]: choice, rows of x, rows of y */
  uint32_t *h_first;               /* [2 * n_expert + 1]: per expert first row, fill */
  /* LoRA: per module A and scale*B on the device, u and B·u scratch, and
   * the host copy of h for hooks. */
  void *lora_mem;
  const float **lora_a, **lora_b;  /* [n_modules] */
  float *lora_u, *lora_y;
  float *lora_h;                   /* host [nb][max d_in] */
  size_t lora_bytes;
  /* The recorded decode step: one graph, or with LoRA hooks the launches
   * between two hooks as one graph each (lm-cuda-forward.c). */
  LmGpuSegment *segments;
  size_t n_segments;
  bool graph_failed;
  bool recording;                  /* a hook ends the segment being captured */
};
