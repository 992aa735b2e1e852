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

/* One job of lm_rows_start(), owned by the caller until lm_rows_finish(). */
typedef struct {
  LmSession *s;
  const LmRowsItem *items;
  const void *act[LM_ROWS_MAX_ITEMS];
  uint32_t first_tile[LM_ROWS_MAX_ITEMS + 1];
  uint32_t n_items, tiles_per_task, n_tiles;
  bool alone;   /* one task: the caller's thread does it all */
} LmRowsJob;

/* Whether @items can run as one job started on the session's pool. */
bool lm_rows_fit_one_job (const LmSession *s, const LmRowsItem *items, uint32_t n_items);
/* lm_rows_run() in two halves (items that fit one job): start hands the
 * products to the pool's workers and returns, so the caller can do other
 * work meanwhile (not on the pool); finish takes part in what is left and
 * returns when every y is written. @items must live until finish. The
 * results are those of lm_rows_run(). */
void lm_rows_start (LmSession *s, LmRowsJob *job, const LmRowsItem *items, uint32_t n_items);
void lm_rows_finish (LmSession *s, LmRowsJob *job);
/* Bytes of activation scratch a session needs for inputs of up to @max_n_in. */
size_t lm_rows_scratch_bytes (size_t max_n_in);
