/* lm-cuda-host-check.h: the kernels' per-element arithmetic run on the host.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The __host__ __device__ functions of lm-cuda-math.h, and host replays of
 * the reduction orders the kernels use (lanes, threads per row), exported so
 * that a test without a GPU can compare them with the CPU functions
 * (tests/engine/test-cuda-math.c). No state; thread-safe. Built only with
 * CUDA (TS_HAVE_CUDA).
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

float lm_cuda_host_silu (float x);
/* swiglu_kernel's gate * up for one element. */
float lm_cuda_host_swiglu (float gate, float up);
float lm_cuda_host_sigmoid (float x);
float lm_cuda_host_softplus (float x);

/* The table of lm_rope_table(), entry by entry as rope_kernel computes it. */
void lm_cuda_host_rope_table (uint32_t pos, uint32_t n_rot, float base, const int32_t sections[4],
                              float *cs);
/* rope_kernel's rotation of one head with that table. */
void lm_cuda_host_rope_apply (float *x, uint32_t n_rot, const float *cs);

/* The RMSNorm / L2 scale from a double sum of squares. */
float lm_cuda_host_rms_scale (double sum_sq, uint32_t n, float eps);
float lm_cuda_host_l2_scale (double sum_sq, float eps);

/* One delta-rule step of one head as delta_kernel does it: every row's M k
 * and M q summed over the threads of the row (4 interleaved column sets),
 * k.q over 32 lanes. M: S x S, updated; o: S. */
void lm_cuda_host_delta_step (float *M, const float *q, const float *k, const float *v,
                              float decay, float beta, uint32_t S, float *o);
/* exp(ssm_a * softplus(alpha + dt_bias)). */
float lm_cuda_host_delta_decay (float ssm_a, float alpha, float dt_bias);

/* moe_route_kernel's selection: 32 lanes scanning strided, then the
 * butterfly of shuffles, k rounds; the weights from the lanes' partial sums. */
void lm_cuda_host_route (const float *logits, uint32_t n_expert, uint32_t k, int32_t *sel,
                         float *w);

/* argmax_kernel's order over @n_threads threads scanning strided, then a
 * butterfly per warp and a scan over the warps. */
int32_t lm_cuda_host_argmax (const float *logits, uint32_t n, uint32_t n_threads);

/* Whether lm_hd_float_key orders a and b as the numbers (a < b <=> key(a) < key(b)). */
bool lm_cuda_host_key_orders (float a, float b);

/* attn_kernel's arithmetic for one query head, as lm_attend_head() is
 * called: scores over 32 lanes, tiles of LM_ATTN_TILE positions with a
 * running maximum; with @n_ctx 0 one block covers the n_pos positions
 * (lm_cuda_attention), else the chunks of a cache of n_ctx and the combine
 * of attn_combine_kernel (lm_cuda_attention_split). @gate NULL: ungated. */
void lm_cuda_host_attend (const float *q, const float *gate, const float *k_cache,
                          const float *v_cache, uint32_t kvd, uint32_t n_pos, uint32_t hd,
                          uint32_t n_ctx, float *out);

/* moe_combine_kernel for one token: the gate's dot product over
 * LM_COMBINE_THREADS threads (lanes, then warps), the weighted routed
 * outputs y[k][width], and the shared expert's output already in o (not
 * read when @gate_inp is NULL: no shared expert). */
void lm_cuda_host_moe_combine (const float *y, const float *w, const float *gate_inp,
                               const float *h, uint32_t k, uint32_t width, float *o);

/* The split attention's schedule (lm_hd_attn_*): chunk count and size for
 * n_ctx, a chunk's positions for a token seeing n_pos, the chunks read. */
uint32_t lm_cuda_host_attn_splits (uint32_t n_ctx, uint32_t *chunk);
void lm_cuda_host_attn_range (uint32_t split, uint32_t chunk, uint32_t n_pos, uint32_t *start,
                              uint32_t *end);
uint32_t lm_cuda_host_attn_live (uint32_t n_pos, uint32_t chunk, uint32_t n_splits);

/* The delta rule's thread layout: threads per block, state columns per
 * thread, the column of slot i of thread part @part; threads per row. */
uint32_t lm_cuda_host_delta_threads (uint32_t S);
uint32_t lm_cuda_host_delta_columns (uint32_t S);
uint32_t lm_cuda_host_delta_column (uint32_t i, uint32_t part);
uint32_t lm_cuda_host_delta_row_threads (void);

/* select_best of the sampler replayed on the host with @n_threads threads:
 * the four radix passes, the compaction (ties by segment order), then the
 * candidates sorted best first: v[want], id[want]. vals without NaN. */
void lm_cuda_host_select (const float *vals, uint32_t n, uint32_t want, uint32_t n_threads,
                          float *v, int32_t *id);

/* lm_hd_sample_pick: the filters and the draw over sorted candidates. */
uint32_t lm_cuda_host_sample_pick (float top_p, float min_p, bool use_k, const float *v,
                                   const double *e1, const double *e2, uint32_t want, double z,
                                   double u);

/* sorted_sample_kernel replayed on the host with @n_threads threads: the
 * vocabulary ordered as the stable radix sort orders it, the segment sums
 * and their prefix (in thread order), the crossings and cut-offs of the
 * kernel. Returns the token for the uniform number @u. vals without NaN. */
int32_t lm_cuda_host_sorted_sample (const float *vals, uint32_t n, int32_t top_k, float top_p,
                                    float min_p, float temperature, double u, uint32_t n_threads);

/* The draw over the whole vocabulary in id order (no top-k, top-p or
 * min-p), as draw_all does it with @n_threads threads. */
int32_t lm_cuda_host_draw_all (const float *vals, uint32_t n, float temperature, double u,
                               uint32_t n_threads);

#ifdef __cplusplus
}
#endif
