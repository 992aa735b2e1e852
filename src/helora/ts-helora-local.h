/* ts-helora-local.h: the in-process HE-LoRA evaluator: packed plaintexts and a worker pool.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Holds the adapter's packed plaintexts (A) and nothing else: no key. Local
 * mode of the session hands it ciphertexts directly (no serialisation).
 * Modules are added before the first evaluate; evaluate may then be called
 * from any thread (one call runs at a time).
 */
#pragma once

#include <glib.h>

#include "ckks-helora.h"
#include "threadpool.h"

G_BEGIN_DECLS

typedef struct _TsHeloraLocal TsHeloraLocal;

/* @ctx must outlive the evaluator. @n_threads: worker threads (0: 1). */
TsHeloraLocal *ts_helora_local_new (const CkksContext *ctx, guint n_threads, GError **error);
void ts_helora_local_free (TsHeloraLocal *self);

/* Encodes A (@r x @d, row-major) once, with the complex packing where the
 * layout allows it (half the results of the real one); returns the
 * module's index. */
gboolean ts_helora_local_add_module (TsHeloraLocal *self, guint d, guint r, const float *a,
                                     guint *index, GError **error);
/* The layout module @index's results decrypt with (owned by the evaluator). */
const CkksHeloraLayout *ts_helora_local_module_layout (TsHeloraLocal *self, guint index);

/* What the caller does with results as they come: @ready runs on the
 * thread that evaluated result @b of module @modules[@i], right after it
 * (while it is in that core's cache), with the time the evaluation took on
 * @now_ms's clock. @results has B entries, of which only @results[@b]
 * holds this result (compact where the layout has a compact form: good
 * for ckks_helora_decrypt_part only); it is reused for the next result
 * once @ready returns. A status other than CKKS_OK fails the call. */
typedef struct {
  double (*now_ms) (gpointer user_data);
  CkksStatus (*ready) (guint i, guint b, CkksCiphertext *const *results, guint n_results,
                       double eval_ms, gpointer user_data);
  gpointer user_data;
} TsHeloraLocalResults;

/* Evaluates modules @modules[0..@n) on the same encrypted h (@inputs) and
 * hands every result to @results->ready. The threads take the call's
 * results one at a time (whoever is free), so one module's results are
 * shared out too: those of @threads when given (the engine's pool, idle
 * while its LoRA hook runs: no thread of ours then competes with it for
 * the cores, and none has to be woken) and at least as many as the
 * evaluator's own and the caller, else those. The call returns when every result is done, without waiting for
 * a thread that found none. Calls are serialised. */
gboolean ts_helora_local_evaluate (TsHeloraLocal *self, const guint *modules, guint n,
                                   CkksCiphertext *const *inputs,
                                   const TsHeloraLocalResults *results, LmThreadPool *threads,
                                   GError **error);

G_END_DECLS
