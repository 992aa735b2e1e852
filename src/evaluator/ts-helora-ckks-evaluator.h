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

/* A TsHeloraEvaluatorOpenStackFunc. @user_data: the LmModel * the adapters
 * are loaded and stacked for; NULL refuses (TS_HELORA_ERROR_UNAVAILABLE),
 * since stacking goes through the engine. A's row norms, and so the
 * adapter-private mode's sensitivity, are the stacked A's. */
TsHeloraEvaluator *ts_helora_ckks_evaluator_open_stack (const char *const *paths,
                                                        const float *weights, guint n,
                                                        const char *params_id,
                                                        gpointer user_data, GError **error);

/* For the adapter-private mode: the context of a CKKS evaluator (NULL for
 * any other evaluator), and module @index's plan at the scale split
 * @scales with its largest row norm of A (NULL when out of range). The
 * plain plans are encoded when the evaluator opens; the private ones at
 * their first use (from a copy of A the evaluator keeps), then shared by
 * every connection. Borrowed: valid while @evaluator lives. Thread-safe. */
const CkksContext *ts_helora_ckks_evaluator_context (TsHeloraEvaluator *evaluator);
const CkksHeloraPlan *ts_helora_ckks_evaluator_plan (TsHeloraEvaluator *evaluator, guint index,
                                                     CkksHeloraScales scales,
                                                     double *a_row_norm, GError **error);

/* The products of one module of a CKKS evaluator: @in (parsed from the
 * request) into @out (serialised as the results). */
typedef gboolean (*TsHeloraCkksProductsFunc) (const CkksHeloraPlan *plan, double a_row_norm,
                                              CkksCiphertext *const *in, gsize n_in,
                                              CkksCiphertext *const *out, gsize n_out,
                                              gpointer data, GError **error);

/* An evaluate of module @index on its @scales plan with @products in place
 * of the plain ct x pt (the evaluator's own evaluate is this with the plain
 * split and ckks_helora_evaluate). */
gboolean ts_helora_ckks_evaluator_run (TsHeloraEvaluator *evaluator, guint index,
                                       CkksHeloraScales scales, GPtrArray *cts,
                                       GPtrArray *results, TsHeloraCkksProductsFunc products,
                                       gpointer data, GError **error);

G_END_DECLS
