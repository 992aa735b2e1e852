/* ckks-privacy-pad.h: compact pads from explicit draws (internal; tests).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ckks-helora-private.h"
#include "ckks-keys.h"

/* The draws of one pad: u ternary and e1 CBD(21), N each, and the error of
 * c0 (CBD(21) plus the flood) at the 2c trace coefficients L' kappa only:
 * the other coefficients of c0 never reach a compact result. */
typedef struct {
  const int8_t *u, *e1;
  const ckks_i128 *trace;      /* 2c values */
} CkksPadDraws;

/* @pad (trace-only, the layout's limbs) = the compact form of
 * (b u + NTT(e0 + flood), a u + NTT(e1)): c1 in full, c0 as its 2c block
 * sums, the sums of b u plus L' sum_kappa trace[kappa] x_beta^kappa.
 * @scratch: 2 N words. Deterministic: bit for bit what the full pad of the
 * same draws gives after ckks_privacy_pad_compact (without its mask, which
 * sums to zero there). */
void ckks_privacy_compact_pad_from (const CkksHeloraLayout *layout, const CkksPublicKey *pk,
                                    const CkksPadDraws *draws, CkksCiphertext *pad,
                                    uint64_t *scratch);
