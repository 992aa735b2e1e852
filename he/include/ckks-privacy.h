/* ckks-privacy.h: adapter-private HE-LoRA results (evaluator side, no secret key).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The plain HE-LoRA evaluation hands the key holder far more than u = A·h:
 * the result's c1 is the client's own c1 times the plaintext of A (so c1
 * divided by the known input c1 IS the encoded A), and every decrypted slot
 * is one product h_j·A_ij. Three layers, applied to the B results of
 * ckks_helora_evaluate before they leave the evaluator (see docs/security.md):
 *
 *  1. Re-randomisation with noise flooding: result += Enc_pk(0) whose error
 *     is uniform in [-2^f, 2^f), f = lambda_s + log2 B_comp, B_comp =
 *     21 sqrt(N) 2^pt_bits the bound on the coefficients of the evaluation's
 *     own error e·pt_A (e: CBD(21) encryption error, pt_A's slots at most
 *     2^pt_bits in total over the chunks: 2^24 in private layouts, whose h
 *     carries the other 72 bits of the result's 2^96, see ckks-helora.h).
 *     c1 becomes fresh RLWE; the part of the decryption the key holder can
 *     read is statistically (c 2^-lambda_s) independent of how the result
 *     was made. Zero encryptions are independent of the token: make them
 *     ahead of time (ckks_privacy_zero_new), spend one per result.
 *  2. Zero-sum masks: result.c0 += a uniform polynomial mod Q whose NTT
 *     values sum to zero within each of the 2c blocks of L' values. Those
 *     block sums are exactly what the segment sums depend on (the trace
 *     decryption reads nothing else), so every segment sum is unchanged
 *     while everything else in the decryption -- each slot, each product
 *     h_j·A_ij -- is uniformly random. Needs c <= 64 (trace layouts).
 *  3. Differential privacy: Gaussian noise added to each segment sum, in the
 *     units of the ciphertext (u / max|h|: the client normalises h so that
 *     every slot is at most 1); calibrate it with ts-privacy-accountant.
 *
 * Ownership: ckks_privacy_zero_new's ciphertext belongs to the caller.
 * Thread-safety: no shared state; each call draws its own randomness from
 * OpenSSL's CSPRNG; outputs must not be shared between concurrent calls.
 */
#pragma once

#include <stddef.h>

#include "ckks-helora.h"

#ifdef __cplusplus
extern "C" {
#endif

struct CkksPublicKey;

/* The statistical security the product recommends and uses by default. */
#define CKKS_PRIVACY_DEFAULT_LAMBDA 40
/* Largest lambda_s any call takes. */
#define CKKS_PRIVACY_MAX_LAMBDA 100
/* A flood must stay this many bits below a result's 2^96 scale. */
#define CKKS_PRIVACY_MARGIN_BITS 12

/* log2 of the flooding bound 2^f for @lambda_s bits of statistical
 * security (0: re-randomisation only, the usual encryption error). */
double ckks_privacy_flood_bits (const CkksHeloraLayout *layout, unsigned lambda_s);

/* The largest lambda_s @layout holds: its flood stays
 * CKKS_PRIVACY_MARGIN_BITS below the result's scale (beyond, u keeps no
 * useful precision) and fits the modulus with a full-scale result. Private
 * layouts (CKKS_HELORA_SCALES_PRIVACY) hold 49 at N = 8192 and 48 at
 * N = 16384, plain ones 25 and 24. */
unsigned ckks_privacy_max_lambda (const CkksHeloraLayout *layout);

/* Predicted standard deviation of the flooding error in one segment sum, in
 * ciphertext units (u / max|h|), for a result whose scale is @result_scale. */
double ckks_privacy_flood_stddev (const CkksHeloraLayout *layout, unsigned lambda_s,
                                  double result_scale);

/* An encryption of zero under @pk at the layout's limb count, flooded for
 * @lambda_s (CKKS_ERR_SCALE above ckks_privacy_max_lambda). */
CkksStatus ckks_privacy_zero_new (const CkksHeloraLayout *layout,
                                  const struct CkksPublicKey *pk, unsigned lambda_s,
                                  CkksCiphertext **out);

/* result += zero (c0 and c1; an encryption of zero has no scale to match).
 * @zero must be at @result's limb count. */
CkksStatus ckks_privacy_add_zero (CkksCiphertext *result, const CkksCiphertext *zero);

/* Adds a fresh zero-sum mask to each of the @n_outputs results (B). */
CkksStatus ckks_privacy_mask (const CkksHeloraLayout *layout,
                              CkksCiphertext *const *outputs, size_t n_outputs);

/* Adds noise[i] (r values, ciphertext units) to segment sum i, at each
 * result's own scale: a polynomial on the trace coefficients only (c <= 64),
 * whose NTT values are constant on each block -- no FFT, no NTT. */
CkksStatus ckks_privacy_add_segment_noise (const CkksHeloraLayout *layout,
                                           CkksCiphertext *const *outputs,
                                           size_t n_outputs, const double *noise);

/* Everything the private mode adds that does not depend on the token, made
 * ahead of time: a flooded encryption of zero (as ckks_privacy_zero_new) with
 * a zero-sum mask already in its c0. One pad per result, never reused. */
CkksStatus ckks_privacy_pad_new (const CkksHeloraLayout *layout,
                                 const struct CkksPublicKey *pk, unsigned lambda_s,
                                 CkksCiphertext **out);

/* Turns a pad into its compact form, for ckks_helora_evaluate_compact_padded
 * only: c0 reduced to its 2c NTT block sums (stored at each block's start,
 * as a compact result holds them; the mask sums to zero there, so only the
 * flooded zero remains), c1 unchanged. The online step then reads c1 alone. */
CkksStatus ckks_privacy_pad_compact (const CkksHeloraLayout *layout, CkksCiphertext *pad);

/* A compact pad made directly (ckks-privacy-pad.c): the same distribution
 * of what a compact result shows as ckks_privacy_pad_new followed by
 * ckks_privacy_pad_compact, for about half the work -- c1 = a u + e1 in
 * full, c0 as its 2c block sums, e0 and the flood drawn at the 2c trace
 * coefficients only, no mask (a compact result holds nothing the mask
 * would hide). Two NTTs per limb. For ckks_helora_evaluate_compact_padded
 * and ckks_privacy_apply on compact results only. CKKS_ERR_SCALE above
 * ckks_privacy_max_lambda, CKKS_ERR_UNSUPPORTED for layouts without trace
 * decryption. */
CkksStatus ckks_privacy_compact_pad_new (const CkksHeloraLayout *layout,
                                         const struct CkksPublicKey *pk, unsigned lambda_s,
                                         CkksCiphertext **out);

/* The online step, one pass over each result: outputs[b] += pads[b] (NULL:
 * no pads) and @noise (r values as in ckks_privacy_add_segment_noise; NULL:
 * none). Also takes compact (trace-only) results, from
 * ckks_helora_result_deserialize_into or a compact evaluation: their c0
 * gets the block sums of the pad's c0 (no mask needed: the key holder reads
 * block sums only), their c1 the pad's c1. */
CkksStatus ckks_privacy_apply (const CkksHeloraLayout *layout, CkksCiphertext *const *outputs,
                               size_t n_outputs, CkksCiphertext *const *pads,
                               const double *noise);

/* The DP noise for results that already hold a pad (from
 * ckks_helora_evaluate_padded with masked pads, or _compact_padded): same
 * segment sums as ckks_privacy_apply's noise, and the same distribution of
 * everything else -- full results thanks to the mask, compact ones because
 * they hold nothing but the block sums -- but it touches 2c values per
 * limb, not all of c0. Never on full results without a mask (the noise
 * would then show outside the trace). */
CkksStatus ckks_privacy_add_noise_masked (const CkksHeloraLayout *layout,
                                          CkksCiphertext *const *outputs, size_t n_outputs,
                                          const double *noise);

/* @n samples of N(0, sigma^2) from OpenSSL's CSPRNG (Box-Muller on 53-bit
 * uniforms). */
CkksStatus ckks_privacy_gaussian (double sigma, double *out, size_t n);

#ifdef __cplusplus
}
#endif
