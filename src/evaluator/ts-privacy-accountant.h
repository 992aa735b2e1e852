/* ts-privacy-accountant.h: per-client differential-privacy budget for adapter-private HE-LoRA.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The evaluator adds Gaussian noise N(0, sigma^2) to every segment sum it
 * returns (ckks_privacy_add_segment_noise). What is protected is the
 * adapter: two adapters are neighbours when one row A_i differs (zeroed in
 * one of them), so one token's answer u = A·h has l2 sensitivity
 * Delta = max_i ||A_i||_2 · H, where H bounds ||h||_2 in the units the
 * evaluator sees (the client divides h by max|h|, so H <= sqrt(d) for a
 * client that follows the protocol; the evaluator cannot check it under
 * encryption -- a client sending larger h just gets proportionally less
 * protection per query, see docs/security.md).
 *
 * One token costs rho = Delta^2 / (2 sigma^2) in zero-concentrated DP; rho
 * adds up over tokens and modules (sequential composition), and the
 * accountant reports (epsilon, delta) with epsilon = rho + 2 sqrt(rho
 * ln(1/delta)) (Bun & Steinke 2016, Prop. 1.3). A charge that would take a
 * client past its epsilon budget is refused and nothing is spent.
 *
 * Ownership: the accountant owns its per-client table; save and load it
 * (ts_privacy_accountant_save/_load) so that a restart does not reset
 * anyone's budget.
 * Thread-safety: every function may be called from any thread.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

#define TS_PRIVACY_ERROR (ts_privacy_error_quark ())
GQuark ts_privacy_error_quark (void);

typedef enum {
  TS_PRIVACY_ERROR_INVALID,     /* a non-finite or non-positive parameter */
  TS_PRIVACY_ERROR_BUDGET,      /* the charge would exceed the client's budget */
} TsPrivacyError;

typedef struct TsPrivacyAccountant TsPrivacyAccountant;

/* rho of one Gaussian release with l2 @sensitivity and noise @sigma. */
double ts_privacy_rho (double sensitivity, double sigma);
/* The sigma that makes one release cost @rho. */
double ts_privacy_sigma (double sensitivity, double rho);
/* epsilon of rho-zCDP at @delta. */
double ts_privacy_epsilon (double rho, double delta);
/* The largest rho whose epsilon at @delta is @epsilon (inverse of the above). */
double ts_privacy_rho_for_epsilon (double epsilon, double delta);
/* max_i ||A_i||_2 · @h_bound for A (@r x @d floats, row-major). */
double ts_privacy_sensitivity (const float *a, size_t r, size_t d, double h_bound);

/* Budget (@epsilon, @delta) per client; NULL for invalid values. */
TsPrivacyAccountant *ts_privacy_accountant_new (double epsilon, double delta);
void ts_privacy_accountant_free (TsPrivacyAccountant *acc);

/* Spends @rho for @client, or refuses (TS_PRIVACY_ERROR_BUDGET) leaving the
 * spent amount unchanged. */
gboolean ts_privacy_accountant_charge (TsPrivacyAccountant *acc, const char *client, double rho,
                                       GError **error);
/* rho and epsilon spent so far by @client (0 for an unknown client). */
void ts_privacy_accountant_spent (TsPrivacyAccountant *acc, const char *client, double *rho,
                                  double *epsilon);
/* The budget the accountant was made with. */
void ts_privacy_accountant_budget (TsPrivacyAccountant *acc, double *epsilon, double *delta);
/* How many more releases of @rho each @client can afford. */
guint64 ts_privacy_accountant_remaining (TsPrivacyAccountant *acc, const char *client,
                                         double rho);

/* Writes every client's spent rho to @path atomically (one "rho<TAB>id"
 * line each, the id C-escaped). */
gboolean ts_privacy_accountant_save (TsPrivacyAccountant *acc, const char *path, GError **error);
/* Adds the amounts in @path (as written by _save) to the table; a missing
 * file is not an error (nothing spent yet), a malformed one is. */
gboolean ts_privacy_accountant_load (TsPrivacyAccountant *acc, const char *path, GError **error);

G_END_DECLS
