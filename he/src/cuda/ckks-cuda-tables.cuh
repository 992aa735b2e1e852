/* ckks-cuda-tables.cuh: what a CkksCudaTables holds (internal to he/src/cuda).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-cuda-ntt.cuh"

extern "C" {
#include "ckks-internal.h"
}

/* Everything the kernels need of a context, by value except the twiddle
 * tables, which view points at (device or host memory). */
typedef struct {
  CkksCudaNttView view;
  uint64_t ratio_lo[CKKS_MAX_MODULI], ratio_hi[CKKS_MAX_MODULI];  /* floor(2^128/q) */
  /* garner[i][j] = q_j^-1 mod q_i (j != i; rescale uses j > i) and its
   * 64-bit Shoup companion */
  uint64_t garner[CKKS_MAX_MODULI][CKKS_MAX_MODULI];
  uint64_t garner_shoup[CKKS_MAX_MODULI][CKKS_MAX_MODULI];
} CkksCuTableData;

struct CkksCudaTables {
  CkksCuTableData data;        /* view's pointers are into device_words */
  uint64_t *device_words;      /* 4 * limbs * N words, one allocation */
};

/* Builds the constants of @ctx with 64-bit Shoup companions (whatever the
 * context's backend) in host memory: *words (4 * limbs * N, free with
 * ckks_free) holds psi, psi_shoup, ipsi, ipsi_shoup, and out->view points
 * into it. */
CkksStatus ckks_cu_table_data_build (const CkksContext *ctx, CkksCuTableData *out,
                                     uint64_t **words);

/* Rescale of limbs [0, n_limbs) at @data (polynomials @stride apart):
 * the fused transform's inputs and constants for limb @i. */
static inline CkksCuRescaleIo
ckks_cu_rescale_io (const CkksCuTableData &d, uint64_t *data, uint32_t n_limbs, size_t stride,
                    uint32_t i)
{
  const uint32_t l = n_limbs - 1;
  const size_t n = (size_t) 1 << d.view.log_n;
  CkksCuRescaleIo io = {};
  io.last = data + l * n;
  io.last_stride = stride;
  io.dest = data + i * n;
  io.dest_stride = stride;
  io.q_last = d.view.q[l];
  io.ratio_lo = d.ratio_lo[i];
  io.ratio_hi = d.ratio_hi[i];
  io.inv = d.garner[i][l];
  io.inv_shoup = d.garner_shoup[i][l];
  return io;
}
