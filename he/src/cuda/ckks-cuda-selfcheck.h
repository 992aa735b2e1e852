/* ckks-cuda-selfcheck.h: host-side evidence for the CUDA kernels (internal).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * No GPU needed: each check runs the kernels' own __host__ __device__ code
 * (modular arithmetic, butterfly schedules, per-coefficient work) on the
 * host, for every block, thread and stage of a launch in the order the
 * kernels' barriers impose, and compares the result bit for bit with the CPU
 * backend on random inputs drawn from @seed. Each returns true on success;
 * otherwise false and one sentence in @why saying what differed. Built only
 * with CUDA (TS_HAVE_CUDA). Thread-safe; allocates its own scratch memory.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckks-params.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The ckks-cuda-arith.cuh helpers against ckks-modarith.h on random and
 * edge values, for primes of 20 to 61 bits. */
bool ckks_cuda_selfcheck_arith (uint64_t seed, char *why, size_t why_len);

/* The fused and the per-stage NTT schedules of N = 2^log_n (any context's
 * ring degree): every shared-memory slot touched once per stage and every
 * coefficient loaded and stored once per phase, and the emulated forward
 * and inverse transforms of every limb of @ctx equal to
 * ckks_ntt_forward_limb / ckks_ntt_inverse_limb. */
bool ckks_cuda_selfcheck_ntt (const CkksContext *ctx, uint64_t seed, char *why,
                              size_t why_len);

/* mul_plain_accumulate's per-coefficient code over every coefficient, with
 * n_in inputs and n_out outputs over all limbs of @ctx, with or without
 * pads, against the CPU's fully reduced products and sums. */
bool ckks_cuda_selfcheck_mul_plain_accumulate (const CkksContext *ctx, uint64_t seed,
                                               uint32_t n_in, uint32_t n_out,
                                               bool with_add, char *why, size_t why_len);

/* The rescale launch sequence (inverse NTT of the last limb, lift, forward
 * NTT, finish), emulated, against ckks_rescale on a random ciphertext of
 * @n_limbs limbs (2 .. limbs of @ctx). */
bool ckks_cuda_selfcheck_rescale (const CkksContext *ctx, uint64_t seed, uint32_t n_limbs,
                                  char *why, size_t why_len);

#ifdef __cplusplus
}
#endif
