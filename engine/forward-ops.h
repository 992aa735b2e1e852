/* forward-ops.h: element-wise and per-row primitives of the Qwen3.5 layers.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdint.h>

/* y = x / sqrt(mean(x^2) + eps) * w over @n values (y may alias x). */
void lm_rms_norm (const float *x, const float *w, float eps, uint32_t n, float *y);
/* x = x / max(||x||, eps), in place. */
void lm_l2_norm (float *x, float eps, uint32_t n);
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
