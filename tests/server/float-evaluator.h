/* float-evaluator.h: a test-only evaluator whose "ciphertexts" are float vectors.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Exercises the server's plumbing (framing, pool, errors, many clients)
 * independently of the CKKS engine. Adapter files hold lines
 * "module NAME D R SEED [DELAY_MS]"; A[i][j] = float_adapter_weight().
 * Parameter id "float-test" with hash SHA-256("float-test-params").
 */
#pragma once

#include "ts-helora-evaluator.h"

G_BEGIN_DECLS

#define FLOAT_PARAMS_ID "float-test"

TsHeloraEvaluator *float_evaluator_open (const char *path, const char *params_id,
                                         gpointer user_data, GError **error);
void float_params_sha256 (guint8 out[TS_HELORA_HASH_SIZE]);
float float_adapter_weight (guint seed, guint d, guint i, guint j);

G_END_DECLS
