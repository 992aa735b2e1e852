/* ts-helora-ckks-evaluator.c: the CKKS evaluator (packed ct × pt products).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-helora-ckks-evaluator.h"

TsHeloraEvaluator *
ts_helora_ckks_evaluator_open (const char *path, const char *params_id,
                               gpointer user_data, GError **error)
{
  g_set_error (error, TS_HELORA_ERROR, TS_HELORA_ERROR_UNAVAILABLE,
               "This build has no CKKS engine to evaluate adapters with");
  return NULL;
}
