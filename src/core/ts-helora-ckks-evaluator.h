/* ts-helora-ckks-evaluator.h: the CKKS implementation of the evaluator interface.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Holds an adapter's packed plaintexts and computes ct × pt; links no
 * secret-key code, so the server can use it.
 */
#pragma once

#include "ckks-helora.h"
#include "ts-helora-evaluator.h"

G_BEGIN_DECLS

/* A TsHeloraEvaluatorOpenFunc. @user_data: an LmModel * (borrowed, outliving
 * the evaluators) to load adapters through the engine (GGUF and PEFT, shapes
 * checked against the model), or NULL to read GGUF adapters on their own. */
TsHeloraEvaluator *ts_helora_ckks_evaluator_open (const char *path, const char *params_id,
                                                  gpointer user_data, GError **error);

/* For the adapter-private mode: the context of a CKKS evaluator (NULL for
 * any other evaluator), and module @index's plan with its largest row norm
 * of A (NULL when out of range). Borrowed: valid while @evaluator lives. */
const CkksContext *ts_helora_ckks_evaluator_context (TsHeloraEvaluator *evaluator);
const CkksHeloraPlan *ts_helora_ckks_evaluator_plan (TsHeloraEvaluator *evaluator, guint index,
                                                     double *a_row_norm);

G_END_DECLS
