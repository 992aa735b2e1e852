/* session-private.h: a session's state and scratch, shared by the forward files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "forward-kern.h"
#include "model-private.h"

/* Observer of the residual stream, for tests: @which is 0 after the mixer half
 * of layer @layer, 1 after its FFN half, 2 for the final-normed rows. */
typedef void (*LmDebugFunc) (void *user_data, uint32_t layer, int which, uint32_t pos0,
                             uint32_t n_tokens, const float *x);

typedef struct {
  LmLoraHookFunc fn;
  void *user_data;
  LmLoraDeviceHookFunc device_fn;   /* GPU layers of a GPU session */
  void *device_data;
  LmLoraBeginFunc begin_fn;         /* before the product, overlapping it */
  void *begin_data;
} LmHookSlot;

struct LmSession {
  const LmModel *model;
  LmThreadPool *pool;
  bool owns_pool;
  const LmKernels *kernels;
  LmActMode act_mode;
  uint32_t n_ctx, n_batch, pos;
  bool broken;             /* a forward call failed midway: state needs a replay */
  int32_t *history;        /* [n_ctx] tokens fed so far */

  /* Sequence state. */
  float *kv_k, *kv_v;      /* [n_full][n_ctx][kv_dim] */
  float *conv_state;       /* [n_linear][K-1][conv_dim], oldest row first */
  float *ssm_state;        /* [n_linear][Hv][S][S] */

  /* Scratch, n_batch rows each. */
  float *x, *h, *o;        /* [nb][E] residual, normed input, half output */
  float *a1, *a2, *a3, *a4;/* [nb][w1..w4] layer intermediates */
  size_t w1, w2, w3, w4;
  float *ab;               /* [nb][2*Hv] alpha then beta */
  float *rope;             /* [nb][n_rot] cos/sin pairs */
  float *router;           /* [nb][n_expert] */
  int32_t *sel;            /* [nb][k] selected experts */
  float *sel_w;            /* [nb][k] their weights */
  float *moe_y;            /* [nb][k][E] per-slot expert outputs */
  float *moe_gu;           /* decode: [2][k+1][max expert width] gate, up */
  int32_t *gather;         /* [nb] (token * k + slot) of one expert's rows */
  float *logits;           /* [n_vocab] logits after the last token */
  float *attn_scratch;     /* lm_attend scratch of each pool worker, for any position */
  size_t attn_scratch_floats;   /* per worker */
  uint8_t *act_buf;        /* 8-bit activation blocks of a fused decode step */

  /* LoRA. */
  const LmLora *lora;
  int32_t *module_slot;    /* [n_layer][LM_N_MODULE_KINDS] -> module index or -1 */
  LmHookSlot *hooks;       /* [n_modules] */
  float *lora_u, *lora_y;  /* [nb][max rank], [nb][max d_out] */
  size_t lora_bytes;       /* what the attached adapter added to memory_bytes */

  LmTimings timings;
  double excluded_ms;      /* time inside the current forward not counted as forward */
  size_t memory_bytes;

  LmAbortFunc abort_fn;
  void *abort_data;

  /* lm_session_mean_hidden(): per-dimension sums of the final-norm rows of
   * the call in progress (borrowed; NULL otherwise). */
  double *pool_sum;
  /* lm_session_prefill(): a chunk before the last, whose last-row logits
   * the next chunk overwrites (the CPU head skips them). */
  bool logits_unused;

  LmDebugFunc debug_fn;
  void *debug_data;

  /* GPU backend (session-gpu.h): NULL on the CPU. Layers 0 .. gpu_layers-1
   * run on the device, the others on the host buffers above. */
  struct LmGpuSession *gpu;
  uint32_t gpu_layers;
  char *backend_note;      /* why an LM_BACKEND_AUTO session runs on the CPU */
};

/* Runs @n tokens (n <= n_batch) at positions pos .. pos+n-1 through the model
 * and advances pos. Logits: all rows into @logits_all if non-NULL, the last
 * row into session->logits. */
LmStatus lm_forward_batch (LmSession *s, const int32_t *tokens, uint32_t n,
                           float *logits_all);

/* y[n][w->n_out] = W·x (matrix @mat of a 3-D weight) on the session's pool. */
void lm_linear (LmSession *s, const LmWeight *w, uint32_t mat, const float *x, uint32_t n,
                float *y);
/* A projection of module @kind of @layer: W·x plus the LoRA delta if one is attached. */
LmStatus lm_project (LmSession *s, uint32_t layer, LmModuleKind kind, const LmWeight *w,
                     const float *x, uint32_t n, float *y);

/* Several projections of the same input @x: one fused pool job in decode. */
typedef struct {
  LmModuleKind kind;
  const LmWeight *w;
  float *y;
} LmProj;
LmStatus lm_project_many (LmSession *s, uint32_t layer, const LmProj *projs, uint32_t n_projs,
                          const float *x, uint32_t n);
/* Adds the LoRA delta of module @kind of @layer to y, if the session's adapter has one. */
LmStatus lm_project_lora (LmSession *s, uint32_t layer, LmModuleKind kind, const float *x,
                          uint32_t n, float *y);

/* Adds the final-norm rows of the @n residual rows in s->x to s->pool_sum
 * (lm_session_mean_hidden()); uses s->h. */
void lm_pool_hidden (LmSession *s, uint32_t n);

LmStatus lm_forward_full_attention (LmSession *s, uint32_t il, uint32_t n);
LmStatus lm_forward_linear_attention (LmSession *s, uint32_t il, uint32_t n);
LmStatus lm_forward_ffn (LmSession *s, uint32_t il, uint32_t n);

/* Test-only: observe the residual stream. */
void lm_session_set_debug (LmSession *s, LmDebugFunc fn, void *user_data);
