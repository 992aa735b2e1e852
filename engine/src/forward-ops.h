/* forward-ops.h: element-wise and per-row primitives of the Qwen3.5 layers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdint.h>

#include "kernels.h"

/* y = x / sqrt(mean(x^2) + eps) * w over @n values (y may alias x). */
void lm_rms_norm (const float *x, const float *w, float eps, uint32_t n, float *y);
/* x = x / max(||x||, eps), in place. */
void lm_l2_norm (float *x, float eps, uint32_t n);
/* x / (1 + e^-x) with libm's expf: the scalar SiLU of the DeltaNet layers
 * (lm_swiglu's, vectorised, takes the exponential of expf-poly.h). */
float lm_silu (float x);
float lm_sigmoid (float x);
float lm_softplus (float x);
/* x += y over @n values. */
void lm_add (float *x, const float *y, uint32_t n);

/* y = b*y + a*x over @n values (vectorised; y must not alias x). */
void lm_scale_axpy (float *restrict y, float b, float a, const float *restrict x, uint32_t n);

/* Rotation table of one position for partial interleaved M-RoPE (FORMAT.md 3.4):
 * @cs gets n_rot/2 (cos, sin) pairs. */
void lm_rope_table (uint32_t pos, uint32_t n_rot, float base, const int32_t sections[4],
                    float *cs);
/* Rotates the first n_rot dims of one head (NEOX pairs (i, i + n_rot/2)). */
void lm_rope_apply (float *x, uint32_t n_rot, const float *cs);

/* ---- layer pieces, as pure functions (also the references of engine/src/cuda) ---- */

/* Causal softmax attention of one query head (FORMAT.md 3.3) over @n_pos
 * cached positions (rows of @kvd floats at k_cache, v_cache, already offset
 * to the kv head), as lm_attend computes it (kernels.h), then the sigmoid
 * output gate where @gate is non-NULL: out[hd]. hd <= 1024. out is NaN when
 * the scratch (n_pos + hd floats per lane) cannot be allocated. */
void lm_attend_head (const LmKernels *kernels, const float *q, const float *gate,
                     const float *k_cache, const float *v_cache, uint32_t kvd, uint32_t n_pos,
                     uint32_t hd, float *out);

/* The causal depthwise conv of the DeltaNet layer then SiLU: out[t][c] for
 * n rows of C channels of @in, with the K-1 previous rows in @conv_state
 * ([K-1][C], oldest first), which then advances by n rows. */
void lm_causal_conv (const float *in, const float *w, uint32_t K, uint32_t C, uint32_t n,
                     float *conv_state, float *out);

/* One delta-rule step of one head: M = exp(g) M; M += beta (v - M k) k^T;
 * o = M q / sqrt(S) (M: S x S, row r the value index, column the key index;
 * @decay = exp(g)). @mk is S floats of scratch. */
void lm_delta_step (const LmKernels *kernels, float *M, const float *q, const float *k,
                    const float *v, float decay, float beta, uint32_t S, float *mk, float *o);

/* MoE routing of one token: softmax over all experts, the k most probable
 * (ties: lower index), their probabilities renormalised to sum 1. */
void lm_route_token (const float *logits, uint32_t n_expert, uint32_t k, int32_t *sel,
                     float *w);
