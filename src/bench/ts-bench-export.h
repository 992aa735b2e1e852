/* ts-bench-export.h: benchmark results as CSV and JSON, for the app's export and the CLI.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One format for every front end: the app's "Export" and `tensafe-cli bench
 * helora --json` write the same fields (docs/benchmarks.md). Per-token
 * values (bytes, encryptions) are over the decode steps. Pure functions of
 * the results; the returned strings are the caller's to g_free().
 */
#pragma once

#include "ts-bench-runner.h"

G_BEGIN_DECLS

/* "plain", "local", "remote", "remote-private" or "remote-private-warm" (static). */
const char *ts_bench_result_mode_name (const TsBenchResult *result);

/* @total (bytes or encryptions over the decode steps) per generated token,
 * rounded down, as the CLI has always printed bytes; and encryptions per token. */
guint64 ts_bench_result_per_token (const TsBenchResult *result, guint64 total);
double ts_bench_result_encryptions_per_token (const TsBenchResult *result);

/* A header, then one line per configuration: label, mode, preset, rank,
 * tokens, decode tokens/s, HE ms per adapted module, median ms per stage,
 * bytes each way per token, modules, distinct inputs, encryptions per
 * token, max |Δ_he − Δ_plain|. */
char *ts_bench_results_to_csv (GPtrArray *results);
/* An array, one object per configuration: {"label", "mode", "preset",
 * "rank", "tokens", "decode_tok_s", "he_ms_per_module", "median_ms":
 * {stage: ms}, "bytes_up", "bytes_down" (per token), "modules",
 * "distinct_inputs", "encryptions_per_token", "max_abs_delta_error",
 * "round", "pads": null or {"from_pool", "made_inline", "ready_at_start", "refilled_during", "per_module",
 * "refill_ms_per_pad", "cpu_ms_per_module", "wait_ms"}}. */
char *ts_bench_results_to_json (GPtrArray *results);

/* The app's JSON export: what was measured, where and when, around the
 * results: {"tensafe_version", "date" (ISO 8601, UTC), "machine": {"cpu",
 * "cores", "memory_bytes", "os"}, "model", "adapter" (file names; null when
 * none), "results": ts_bench_results_to_json()'s array}. */
char *ts_bench_results_to_json_document (GPtrArray *results, const char *model_path,
                                         const char *adapter_path);

G_END_DECLS
