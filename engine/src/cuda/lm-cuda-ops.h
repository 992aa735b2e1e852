/* lm-cuda-ops.h: the layer operations of every Qwen architecture on an NVIDIA
 * GPU (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The device counterparts of forward-ops.h, forward-attn.c,
 * forward-deltanet.c, forward-ffn.c and sampler.c, on f32 device memory,
 * each matching its CPU function within float rounding (same formulas, same
 * order of the sequential parts; reductions may be ordered differently).
 *
 * Positions come from device memory (@pos: the position of the batch's first
 * token, pos[0]) so that a decode step captured into a CUDA graph replays at
 * the next position without being captured again.
 *
 * Launches are asynchronous on @stream (a cudaStream_t; NULL: the default
 * stream) and allocate nothing. They return LM_ERR_INVALID_ARGUMENT for
 * shapes they cannot run (a head dimension or state size above the limits
 * below) and LM_ERR_DEVICE when the launch fails. No state is kept.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"   /* LmStatus */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CUstream_st *LmCudaStream;

#define LM_CUDA_MAX_HEAD_DIM 512
#define LM_CUDA_MAX_STATE 256

/* ---- element-wise and per-row ---- */

/* y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w for @n_rows rows of @width values;
 * row r of x at x + r * x_stride, of y at y + r * y_stride (y may be x). */
LmStatus lm_cuda_rms_norm (LmCudaStream stream, const float *x, size_t x_stride,
                           const float *w, float eps, uint32_t n_rows, uint32_t width,
                           float *y, size_t y_stride);
/* The residual add and the next norm in one launch: x[r] += o[r], then
 * y[r] = RMSNorm(x[r]) * w as lm_cuda_rms_norm (rows of @width floats,
 * packed; y must not overlap x or o). */
LmStatus lm_cuda_add_rms_norm (LmCudaStream stream, float *x, const float *o, const float *w,
                               float eps, uint32_t n_rows, uint32_t width, float *y);
/* x[r] /= max(||x[r]||, eps) in place, rows as above. */
LmStatus lm_cuda_l2_norm (LmCudaStream stream, float *x, size_t x_stride, float eps,
                          uint32_t n_rows, uint32_t width);
/* x[i] += y[i]. */
LmStatus lm_cuda_add (LmCudaStream stream, float *x, const float *y, size_t n);
/* x[r][i] += row[i] for @n_rows rows of @width values, x[r] at x + r * width
 * (a bias added to every token's projection). */
LmStatus lm_cuda_add_rows (LmCudaStream stream, float *x, const float *row, uint32_t n_rows,
                           uint32_t width);
/* gate[i] = SiLU(gate[i]) * up[i]. */
LmStatus lm_cuda_swiglu (LmCudaStream stream, float *gate, const float *up, size_t n);

/* ---- embedding ---- */

/* x[t] = row tokens[t] of the table (n_vocab rows of @width values of
 * @type, as in the file), dequantised, for t < n; tokens in device memory.
 * A token outside [0, n_vocab) gives a zero row and sets *bad (device
 * memory, may be NULL) to 1. */
LmStatus lm_cuda_embed (LmCudaStream stream, LmTensorType type, const void *table,
                        uint32_t n_vocab, uint32_t width, const int32_t *tokens, uint32_t n,
                        float *x, int32_t *bad);

/* ---- full attention (forward-attn.c) ---- */

/* Partial interleaved M-RoPE (FORMAT.md 3.4) on the first n_rot dims of
 * every head (sections all zero: plain NEOX, every pair follows the
 * position): head h of token t at x + t * token_stride + h * head_stride,
 * token t at position pos[0] + t. */
LmStatus lm_cuda_rope (LmCudaStream stream, float *x, size_t token_stride,
                       size_t head_stride, uint32_t n_heads, uint32_t n_tokens,
                       const uint32_t *pos, uint32_t n_rot, float base,
                       const int32_t sections[4]);
/* Appends k and v rows ([n][kv_dim] each) to the caches ([n_ctx][kv_dim])
 * at positions pos[0] .. pos[0] + n - 1 (the caller keeps them below n_ctx:
 * the device cannot check). */
LmStatus lm_cuda_kv_append (LmCudaStream stream, const float *k, const float *v,
                            uint32_t kv_dim, uint32_t n, const uint32_t *pos,
                            float *k_cache, float *v_cache);
/* Causal attention: q holds per token and query head the query, followed
 * by its output gate when @gated (q[t][h][head_dim], or [2 * head_dim]);
 * token t attends to cache positions 0 .. pos[0] + t; query head h reads kv
 * head h / (n_head / n_head_kv); out[t][h][head_dim] =
 * softmax(q K^T / sqrt(head_dim)) V, times sigmoid(gate) when @gated. */
LmStatus lm_cuda_attention (LmCudaStream stream, const float *q, bool gated,
                            const float *k_cache, const float *v_cache, uint32_t n_head,
                            uint32_t n_head_kv, uint32_t head_dim, uint32_t n,
                            const uint32_t *pos, uint32_t n_ctx, float *out);
/* The same, with the positions split into chunks that run in parallel and
 * a final combine (flash-decoding): the form for decode, where the one above
 * has only n_head_kv blocks. @scratch: lm_cuda_attention_scratch_floats()
 * floats of device memory, for this call only (one per stream). The chunks
 * depend only on n_ctx, so a captured graph replays at any position.
 * Limits: head_dim <= LM_CUDA_MAX_HEAD_DIM, n_head / n_head_kv <= 64. */
size_t lm_cuda_attention_scratch_floats (uint32_t n_head, uint32_t head_dim, uint32_t n,
                                         uint32_t n_ctx);
LmStatus lm_cuda_attention_split (LmCudaStream stream, const float *q, bool gated,
                                  const float *k_cache, const float *v_cache, uint32_t n_head,
                                  uint32_t n_head_kv, uint32_t head_dim, uint32_t n,
                                  const uint32_t *pos, uint32_t n_ctx, float *scratch,
                                  float *out);

/* ---- Gated DeltaNet (forward-deltanet.c) ---- */

/* out[t][c] = SiLU(sum_j w[c][j] * in[t - (K-1) + j][c]) with the K-1 rows
 * before the batch taken from @state ([K-1][C], oldest first), which then
 * advances by n rows. in, out: [n][C]. */
LmStatus lm_cuda_causal_conv (LmCudaStream stream, const float *in, const float *w,
                              uint32_t K, uint32_t C, uint32_t n, float *state,
                              float *out);

typedef struct {
  uint32_t n_heads;      /* Hv: value heads */
  uint32_t n_groups;     /* key/query heads; value head j reads group j % n_groups */
  uint32_t state;        /* S: key and value head size */
  float eps;             /* of the L2 norms of q, k and the gated RMSNorm */
  const float *ssm_a;    /* [Hv] */
  const float *dt_bias;  /* [Hv] */
  const float *norm;     /* [S] gated RMSNorm weight */
} LmCudaDeltaShape;

/* The delta rule over n tokens, one value head per block, sequential in t
 * exactly as the CPU: u[t] = (q groups, k groups, v heads) after the conv
 * (q, k L2-normalised here, in place in u; S <= LM_CUDA_MAX_STATE, the
 * state in registers up to 128), z[t][Hv*S] the output gate, alpha/beta[t][Hv]
 * the raw projections (row stride ab_stride floats); state [Hv][S][S]
 * updated in place; out[t][Hv*S] = RMSNorm(o) * SiLU(z). */
LmStatus lm_cuda_delta_rule (LmCudaStream stream, const LmCudaDeltaShape *shape, float *u,
                             size_t u_stride, const float *z, const float *alpha,
                             const float *beta, size_t ab_stride, uint32_t n,
                             float *state, float *out);

/* ---- mixture of experts (forward-ffn.c) ---- */

/* Per token: softmax over n_expert logits, the k most probable (ties: lower
 * index), their probabilities renormalised to sum 1: sel[t][k], w[t][k]. */
LmStatus lm_cuda_moe_route (LmCudaStream stream, const float *logits, uint32_t n,
                            uint32_t n_expert, uint32_t k, int32_t *sel, float *w);
/* o[t] = sum_j w[t][j] * y[t][j] + sigmoid(gate_inp . h[t]) * o[t]: the routed
 * outputs y[t][k][E] and the shared expert's output already in o[t][E].
 * Without a shared expert (@gate_inp NULL; h is not read) o[t] is the sum of
 * the routed outputs alone. */
LmStatus lm_cuda_moe_combine (LmCudaStream stream, const float *y, const float *w,
                              const float *gate_inp, const float *h, uint32_t n, uint32_t k,
                              uint32_t width, float *o);

/* ---- sampling (sampler.c) ---- */

/* The token of largest logit (lowest index on ties) into *token (device). */
LmStatus lm_cuda_argmax (LmCudaStream stream, const float *logits, uint32_t n_vocab,
                         int32_t *token);

/* Greedy or sampled, as lm_sampler_sample() with the same parameters
 * (sampler.h): repetition penalty over history[0 .. history_state[0]) (device
 * memory; history may be NULL without a penalty), top-k, top-p, min-p,
 * temperature, then the draw with the uniform number *u (device memory, in
 * [0, 1), e.g. lm_rng_uniform() of the session's generator written before
 * each replay). Writes the token id to *token (device). @scratch:
 * lm_cuda_sample_scratch_bytes(n_vocab) bytes of device memory. Top-k up to
 * LM_CUDA_SAMPLE_MAX_CAND takes a fast path; larger ones, and top-p / min-p
 * without top-k, sort the whole vocabulary (slower, same tokens). */
#define LM_CUDA_SAMPLE_MAX_CAND 1024
typedef struct {
  float temperature;       /* <= 0: greedy */
  int32_t top_k;           /* <= 0: off */
  float top_p;             /* >= 1: off */
  float min_p;             /* <= 0: off */
  float repeat_penalty;    /* 1: off */
} LmCudaSampleParams;
/* 0 when the CUDA runtime cannot answer (no usable device). */
size_t lm_cuda_sample_scratch_bytes (uint32_t n_vocab);
LmStatus lm_cuda_sample (LmCudaStream stream, const LmCudaSampleParams *params,
                         const float *logits, uint32_t n_vocab, const int32_t *history,
                         const int32_t *history_state, const double *u, void *scratch,
                         int32_t *token);
/* lm_sampler_accept() on the device: *token joins the ring history
 * ([repeat_last_n] ids) whose history_state is {count, next slot}, both
 * starting at 0. */
LmStatus lm_cuda_sample_accept (LmCudaStream stream, const int32_t *token, uint32_t n_vocab,
                                int32_t repeat_last_n, int32_t *history,
                                int32_t *history_state);

#ifdef __cplusplus
}
#endif
