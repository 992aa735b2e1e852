/* ts-helora-privacy-eval.h: one client's adapter-private evaluation on a CKKS evaluator.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * What a server connection (or the local session) holds after a hello that
 * asked for the adapter-private mode: the client's public key (owned), its
 * request (lambda_s, DP cost per answer, scale split) and a pad pool
 * (ts-helora-privacy.h).
 * Every evaluate goes through the fused path: pads in the evaluation's output
 * write, compact results, DP noise on the block sums, the budget charged
 * first. docs/security.md says what it protects.
 *
 * Ownership: reference counted; holds a reference on @evaluator; borrows
 * @accountant (must outlive it). Thread-safety: evaluate and prefill may run concurrently.
 */
#pragma once

#include "ts-helora-evaluator.h"
#include "ts-privacy-accountant.h"

G_BEGIN_DECLS

typedef struct TsHeloraPrivacyEval TsHeloraPrivacyEval;

/* From a private hello's request. TS_HELORA_ERROR_PARAMS when the key does
 * not parse under the evaluator's parameters
 * (ts_helora_privacy_eval_check_module checks lambda_s per module);
 * TS_HELORA_ERROR_UNAVAILABLE for an evaluator that is not CKKS or when DP
 * is asked with no @accountant. */
TsHeloraPrivacyEval *ts_helora_privacy_eval_new (TsHeloraEvaluator *evaluator,
                                                 const TsHeloraHello *hello,
                                                 TsPrivacyAccountant *accountant,
                                                 const char *client_id, GError **error);
TsHeloraPrivacyEval *ts_helora_privacy_eval_ref (TsHeloraPrivacyEval *pe);
void ts_helora_privacy_eval_unref (TsHeloraPrivacyEval *pe);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsHeloraPrivacyEval, ts_helora_privacy_eval_unref)

/* Whether the hello's lambda_s suits module @index: at least @min_lambda
 * (the server's floor) and at most what the module's layout holds
 * (ckks_privacy_max_lambda). TS_HELORA_ERROR_PARAMS with the reason
 * otherwise. Encodes the module's private plan if it is its first use. */
gboolean ts_helora_privacy_eval_check_module (TsHeloraPrivacyEval *pe, guint index,
                                              guint min_lambda, GError **error);

/* As ts_helora_evaluator_evaluate, privately. A spent budget is
 * TS_HELORA_ERROR_PRIVACY_BUDGET (nothing evaluated). */
gboolean ts_helora_privacy_eval_evaluate (TsHeloraPrivacyEval *pe, guint index, GPtrArray *cts,
                                          GPtrArray *results, GError **error);

/* Fills the pad pool of module @index up to @count answers' worth; for idle
 * time (slow: two NTTs per limb per pad). */
gboolean ts_helora_privacy_eval_prefill (TsHeloraPrivacyEval *pe, guint index, guint count,
                                         GError **error);
/* Makes one pad for module @index if fewer than @answers answers' worth are
 * pooled (*made says whether it did): a refill thread's unit of work. */
gboolean ts_helora_privacy_eval_refill_one (TsHeloraPrivacyEval *pe, guint index,
                                            guint answers, gboolean *made, GError **error);

/* The pad pool of one module. */
typedef struct {
  guint pooled;                /* pads ready */
  guint pads_per_answer;       /* B */
  gsize pad_bytes;             /* memory of one pad */
} TsHeloraPadPool;

/* FALSE for an unknown module. */
gboolean ts_helora_privacy_eval_pool (TsHeloraPrivacyEval *pe, guint index,
                                      TsHeloraPadPool *pool);
/* Pads the answers took from the pools, and made inline because a pool was
 * empty, since the last call. */
void ts_helora_privacy_eval_take_counts (TsHeloraPrivacyEval *pe, guint64 *from_pool,
                                         guint64 *made_inline);

G_END_DECLS
