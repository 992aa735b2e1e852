/* ts-helora-privacy.h: the evaluator's adapter-private mode for one client.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Glue between the CKKS layers (he/include/ckks-privacy.h), the privacy accountant
 * (ts-privacy-accountant.h) and an evaluator: after ckks_helora_evaluate()
 * and before the results are serialised, the evaluator calls
 * ts_helora_privacy_protect() on them. That charges the client's DP budget
 * (if DP is on), then adds to every result one pad -- a flooded encryption
 * of zero under the client's public key with a zero-sum mask -- and the
 * Gaussian noise, in one pass. Pads do not depend on the token: keep a pool
 * filled off the answer's path (ts_helora_privacy_prefill(), or
 * ts_helora_privacy_refill_one() from a refill thread); an empty pool
 * makes them inline (correct, a public-key encryption's worth slower per
 * result, counted by ts_helora_privacy_take_counts()). What each layer
 * protects and costs: docs/security.md.
 *
 * Ownership: the object keeps pointers to @pk and @accountant (both must
 * outlive it) and owns its pads. Thread-safety: every function may be called
 * from any thread; the pool is locked, the CKKS work runs unlocked.
 */
#pragma once

#include <glib.h>

#include "ckks.h"
#include "ts-privacy-accountant.h"

G_BEGIN_DECLS

typedef struct {
  guint lambda_s;          /* flooding: statistical security bits
                            * (CKKS_PRIVACY_DEFAULT_LAMBDA = 40 recommended) */
  gboolean dp;             /* add Gaussian noise to every segment sum */
  double rho_per_answer;   /* zCDP cost of one module answer when dp (sets sigma) */
  double h_bound;          /* ||h / max|h|||_2 bound the sensitivity assumes; 0: sqrt(d) */
  gboolean compact;        /* pool compact pads (ckks_privacy_compact_pad_new): for
                            * ts_helora_privacy_evaluate (.., compact TRUE) only,
                            * half the bytes to read online, half the work to make */
} TsHeloraPrivacyConfig;

typedef struct TsHeloraPrivacy TsHeloraPrivacy;

/* NULL with an error for an invalid configuration. @accountant may be NULL
 * only when @config->dp is off. */
TsHeloraPrivacy *ts_helora_privacy_new (const TsHeloraPrivacyConfig *config,
                                        const CkksPublicKey *pk,
                                        TsPrivacyAccountant *accountant,
                                        const char *client_id, GError **error);
void ts_helora_privacy_free (TsHeloraPrivacy *priv);

/* Makes pads for @layout until @count are pooled. */
gboolean ts_helora_privacy_prefill (TsHeloraPrivacy *priv, const CkksHeloraLayout *layout,
                                    guint count, GError **error);
/* Makes one pad for @layout if fewer than @count are pooled (*made says
 * whether it did): the unit of work of a refill thread. */
gboolean ts_helora_privacy_refill_one (TsHeloraPrivacy *priv, const CkksHeloraLayout *layout,
                                       guint count, gboolean *made, GError **error);
guint ts_helora_privacy_pooled (TsHeloraPrivacy *priv, const CkksHeloraLayout *layout);
/* Pads answers took from the pools and pads they had to make inline (pool
 * empty) since the last call. */
void ts_helora_privacy_take_counts (TsHeloraPrivacy *priv, guint64 *from_pool,
                                    guint64 *made_inline);

/* Protects the @n_outputs results of one evaluation of a module whose A has
 * largest row norm @a_row_norm (ts_privacy_sensitivity (a, r, d, 1.0)).
 * FALSE with TS_PRIVACY_ERROR_BUDGET when the client's budget is spent: the
 * results are then untouched and must not be sent (answer with an error). */
gboolean ts_helora_privacy_protect (TsHeloraPrivacy *priv, const CkksHeloraLayout *layout,
                                    double a_row_norm, CkksCiphertext *const *outputs,
                                    gsize n_outputs, GError **error);

/* The same protection fused into the evaluation (the fast path): charges
 * the budget, then evaluates @plan with the pads as the accumulators of the
 * output write (ckks_helora_evaluate_padded, or _compact_padded when
 * @compact) and adds the DP noise to the block sums only. Errors as
 * ts_helora_privacy_protect (on a budget refusal nothing is evaluated). */
gboolean ts_helora_privacy_evaluate (TsHeloraPrivacy *priv, const CkksHeloraPlan *plan,
                                     double a_row_norm, CkksCiphertext *const *inputs,
                                     gsize n_inputs, CkksCiphertext *const *outputs,
                                     gsize n_outputs, gboolean compact, GError **error);

/* The noise standard deviation used for a module (ciphertext units, 0 when
 * DP is off). */
double ts_helora_privacy_sigma (TsHeloraPrivacy *priv, const CkksHeloraLayout *layout,
                                double a_row_norm);

G_END_DECLS
