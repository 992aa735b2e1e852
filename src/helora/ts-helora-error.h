/* ts-helora-error.h: how far an HE-LoRA module's Δ is from the plaintext one.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The chat shows, for every encrypted token, max |Δ_he − Δ_plain| next to
 * max |Δ_plain|, where Δ = scale·B·u and Δ_plain's u is A·h in double. It
 * runs after every HE row, so it is written to cost a small fraction of the
 * HE work itself.
 *
 * Thread-safety: pure functions of their arguments.
 */
#pragma once

#include <glib.h>

#include "lm.h"

G_BEGIN_DECLS

typedef struct {
  double max_abs_error;   /* max over the outputs of |scale·B·(u − A·h)| */
  double max_abs_plain;   /* max over the outputs of |scale·B·(A·h)| */
} TsHeloraDeltaError;

/* Measures one row: @h holds module->d_in values, @u module->rank values
 * (the decrypted A·h). The products of A·h are summed in double. */
void ts_helora_delta_error (const LmLoraModule *module, const float *h, const float *u,
                            TsHeloraDeltaError *out);
/* The same in portable C, which CPUs without AVX2 run (for tests). */
void ts_helora_delta_error_portable (const LmLoraModule *module, const float *h, const float *u,
                                     TsHeloraDeltaError *out);

G_END_DECLS
