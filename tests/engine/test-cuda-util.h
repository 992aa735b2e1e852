/* test-cuda-util.h: random weights and double-precision references for the
 * tests of the GPU product kernels.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

/* The types the GPU kernels read, in test order. */
extern const LmTensorType cuda_test_types[13];
#define CUDA_TEST_N_TYPES 13

/* Whether the GPU multiplies @type with 8-bit activations in LM_CUDA_ACT_Q8
 * (as the CPU's native mode); the others keep f32 activations there. */
bool cuda_test_gpu_q8 (LmTensorType type);

/* Deterministic xorshift stream. */
uint64_t cuda_test_random (uint64_t *state);
/* A float in [-1, 1). */
float cuda_test_uniform (uint64_t *state);

/* @n_rows rows of @n_in values of @type (g_malloc, 16-byte aligned; free
 * with g_free): random quants and finite scales of mixed sign and size, so
 * products are finite. *bytes_out gets the size. */
uint8_t *cuda_test_weights (LmTensorType type, uint32_t n_in, uint32_t n_rows, uint64_t *state,
                            size_t *bytes_out);
/* @n random floats in [-1, 1) (g_malloc). */
float *cuda_test_floats (size_t n, uint64_t *state);

/* y_ref[o] = sum_i W[o][i] x[i] in double from lm_dequantize_row, and
 * mag[o] = sum_i |W[o][i] x[i]|. */
void cuda_test_reference (LmTensorType type, const uint8_t *w, uint32_t n_in, uint32_t n_out,
                          const float *x, double *y_ref, double *mag);
/* Asserts |y[o] - (base[o] + y_ref[o])| <= 2e-5 * mag[o] for o < n (base may be
 * NULL: zeros); @what names the case in the failure message. */
void cuda_test_assert_close (const char *what, const float *y, const float *base,
                             const double *y_ref, const double *mag, uint32_t n);
