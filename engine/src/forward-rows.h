/* forward-rows.h: several matrix-vector products of one decode step in one pool job.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Decode multiplies one token by many small matrices (q/k/v, the selected
 * experts, ...). Running them as one job of row tiles saves a pool round trip
 * per matrix and converts a shared input to 8-bit blocks once. Each output row
 * is the same single dot product lm_matvec computes, so results are identical.
 */
#pragma once

#include "session-private.h"

#define LM_ROWS_MAX_ITEMS 32

typedef struct {
  const LmWeight *w;
  uint32_t mat;         /* matrix of a 3-D expert weight */
  const float *x;       /* w->n_in inputs */
  float *y;             /* w->n_out outputs */
} LmRowsItem;

/* y = W·x for every item (any number; run LM_ROWS_MAX_ITEMS at a time). */
void lm_rows_run (LmSession *s, const LmRowsItem *items, uint32_t n_items);
/* Bytes of activation scratch a session needs for inputs of up to @max_n_in. */
size_t lm_rows_scratch_bytes (size_t max_n_in);
