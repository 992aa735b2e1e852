/* ckks-helora-private.h: HE-LoRA layout internals shared by plan and client.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-helora.h"
#include "ckks-objects.h"

/* Functionals are precomputed while c <= this (c * N doubles of memory);
 * above it decryption decodes with the FFT and sums the slots. */
#define CKKS_HELORA_MAX_FUNCTIONALS 16
#define CKKS_HELORA_CT_SCALE 0x1p48
#define CKKS_HELORA_PT_SCALE 0x1p48

struct CkksHeloraLayout {
  const CkksContext *ctx;
  size_t d, r;
  size_t chunks;          /* K */
  size_t chunk_len;       /* L */
  size_t copies;          /* c */
  size_t n_outputs;       /* B */
  uint32_t limbs;
  /* copies * N: segment t's sum of real slot parts = sum_k f[t][k] m_k / scale */
  double *functional;
};
