/* ts-bench-runner-private.h: what the benchmark loads once for all its configurations.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Internals shared by ts-bench-runner.c, ts-bench-runner-task.c and ts-bench-load.c.
 */
#pragma once

#include "lm.h"
#include "ts-bench-runner.h"

G_BEGIN_DECLS

/* What a stacked adapter is made of, for a remote evaluator to stack the
 * same files: the adapter itself first (weight 1), then the others. */
typedef struct {
  GPtrArray *paths;          /* of char * */
  GArray *weights;           /* of float */
  char *random_dir;          /* a temporary folder of random members, or NULL */
} TsBenchStack;

typedef struct {
  LmModel *model;
  LmLora *lora;              /* the adapter as given, with any stack on it */
  TsBenchStack stack;
  int32_t *prompt;
  size_t n_prompt;
  guint rank;                /* largest rank among its modules */
} TsBenchLoaded;

/* Loads the model, the adapter (written first for make_rank, stacked
 * when asked) and the prompt; on failure @l holds what was loaded so far. */
gboolean _ts_bench_load (const TsBenchOptions *options, TsBenchLoaded *l, GError **error);
/* Frees what _ts_bench_load() made and deletes temporary random members. */
void _ts_bench_loaded_clear (TsBenchLoaded *l);
/* ts_bench_run() into @results, which keeps the rows that finished when
 * the run fails or is cancelled part way. */
gboolean _ts_bench_run_into (const TsBenchOptions *options, TsBenchProgressFunc progress,
                             gpointer user_data, GPtrArray *results, GCancellable *cancellable,
                             GError **error);
/* Whether any configuration runs on a remote evaluator. */
gboolean _ts_bench_has_remote_config (const TsBenchOptions *options);
/* Sets @error to "@what: @msg" (or the status' message) and frees @msg; FALSE. */
gboolean _ts_bench_engine_failed (GError **error, const char *what, LmStatus st, char *msg);

G_END_DECLS
