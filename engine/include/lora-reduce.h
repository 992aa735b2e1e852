/* lora-reduce.h: optimal low-rank approximation of one LoRA module's product.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * For M = scale_in · B · A (B: d_out × r, A: r × d_in) the Eckart–Young
 * optimal rank-R approximation is computed without forming M: thin
 * Householder QR of A^T = Q_A R_A and B = Q_B R_B (double precision), the
 * small core C = scale_in · R_B · R_A^T, its SVD C = U Σ V^T by one-sided
 * Jacobi, and M ≈ (Q_B U_R) Σ_R (Q_A V_R)^T. The singular values are split
 * evenly between the new factors, and divided by @scale_out so that
 * scale_out · B' · A' is the approximation.
 *
 * Ownership: outputs are malloc'ed and belong to the caller (free()).
 * Thread-safety: pure functions, no shared state.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t rank_in;      /* r */
  uint32_t rank_out;     /* min(R, r, d_in, d_out) */
  double energy_total;   /* ‖scale_in·B·A‖_F² = Σ σ_i² */
  double energy_kept;    /* Σ_{i<rank_out} σ_i² */
  double sigma_max;      /* σ_1 (0 for a zero product) */
} LmLoraReduceInfo;

/* Singular values of scale · B · A in decreasing order into @sigma
 * (min(r, d_in, d_out) values; the rest of r entries are zeroed). */
LmStatus lm_lora_singular_values (uint32_t r, uint32_t d_in, uint32_t d_out, const float *a,
                                  const float *b, double scale, double *sigma);

/* The rank-@rank factors: *a_out (rank_out × d_in, row-major) and *b_out
 * (d_out × rank_out) with scale_out · B'·A' ≈ scale_in · B·A, optimal in the
 * Frobenius and spectral norms. @scale_out: a function of the output rank
 * (the factor the adapter's loader will apply), so that modules of smaller
 * rank keep the right effective factor; NULL means 1. */
typedef double (*LmLoraScaleFunc) (uint32_t rank_out, void *user_data);
LmStatus lm_lora_reduce_module (uint32_t r, uint32_t d_in, uint32_t d_out, const float *a,
                                const float *b, double scale_in, uint32_t rank,
                                LmLoraScaleFunc scale_out, void *user_data,
                                float **a_out, float **b_out, LmLoraReduceInfo *info);

#ifdef __cplusplus
}
#endif
