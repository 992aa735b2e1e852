/* ts-bench-runner.h: HE-LoRA benchmark: the same greedy generation per configuration, timed per stage.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Loads a model and an adapter once, then for each rank asked for (the
 * adapter resized, see ts-bench-adapter.h) and each configuration (plaintext
 * LoRA, HE-LoRA local with a CKKS preset, HE-LoRA remote) runs a fresh
 * session: prefill of a fixed prompt, then @n_tokens greedy decode steps,
 * each timed per stage (DESIGN.md §2) into a TsTimingSeries. Every
 * configuration sees the same prompt, so greedy texts match when the
 * encrypted path is exact enough.
 *
 * ts_bench_run() blocks (seconds to minutes): call it on a worker thread.
 * The progress callback runs on that thread. Cancelling @cancellable stops
 * between two tokens with G_IO_ERROR_CANCELLED.
 */
#pragma once

#include <gio/gio.h>

#include "ts-helora-session.h"
#include "ts-timings.h"

G_BEGIN_DECLS

typedef struct {
  TsHeloraMode mode;
  char *preset;              /* CKKS preset (local, remote); NULL for plain */
  char *remote_url;          /* remote only */
} TsBenchConfig;

typedef struct {
  char *model_path;
  char *adapter_path;        /* GGUF LoRA file or PEFT folder */
  char *prompt;              /* NULL: a fixed English sentence */
  GArray *prompt_tokens;     /* gint32 ids; overrides @prompt when set */
  guint n_tokens;            /* decode steps per configuration (>= 1) */
  guint n_threads;           /* 0: all cores */
  GArray *configs;           /* of TsBenchConfig */
  GArray *ranks;             /* guint LoRA ranks to sweep (ts-bench-adapter.h);
                                NULL or empty: the adapter's own rank */
} TsBenchOptions;

TsBenchOptions *ts_bench_options_new (const char *model_path, const char *adapter_path,
                                      guint n_tokens);
void ts_bench_options_free (TsBenchOptions *options);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsBenchOptions, ts_bench_options_free)
/* Appends a configuration (strings copied). */
void ts_bench_options_add (TsBenchOptions *options, TsHeloraMode mode, const char *preset,
                           const char *remote_url);

typedef struct {
  char *label;               /* "plaintext", "HE local · fast", … */
  TsHeloraMode mode;
  char *preset;
  guint rank;                /* largest rank among the adapter's modules */
  TsTimingSeries *series;    /* one entry per generated token */
  guint n_tokens;
  double decode_ms;          /* wall time of the decode steps */
  double tokens_per_s;
  double he_ms_per_module;   /* encrypt … decrypt per adapted module and token */
  guint64 bytes_up, bytes_down;
  double max_abs_delta_error;
  GArray *tokens;            /* gint32 generated ids */
} TsBenchResult;

void ts_bench_result_free (TsBenchResult *result);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsBenchResult, ts_bench_result_free)

/* (fraction in [0, 1], label of the running configuration, user data) */
typedef void (*TsBenchProgressFunc) (double fraction, const char *label, gpointer user_data);

/* Runs every configuration for every rank; a GPtrArray of TsBenchResult
 * (rank-major, configurations in order; free with g_ptr_array_unref), or NULL. */
GPtrArray *ts_bench_run (const TsBenchOptions *options, TsBenchProgressFunc progress,
                         gpointer user_data, GCancellable *cancellable, GError **error);

/* A header, then one line per configuration: label, mode, preset, rank,
 * tokens, decode tokens/s, HE ms per adapted module, median ms per stage,
 * bytes each way, max |Δ_he − Δ_plain|. */
char *ts_bench_results_to_csv (GPtrArray *results);
/* An array, one object per configuration: {"label", "mode", "preset",
 * "rank", "tokens", "decode_tok_s", "he_ms_per_module", "median_ms":
 * {stage: ms}, "bytes_up", "bytes_down", "max_abs_delta_error"} (the
 * fields `tensafe-cli bench helora --json` is specified to print). */
char *ts_bench_results_to_json (GPtrArray *results);

G_END_DECLS
