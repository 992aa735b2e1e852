/* ts-timings.h: per-token stage timings of the HE-LoRA pipeline (DESIGN.md §2).
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * The stage names here are the ones the CLI's JSON, the server's metrics and
 * the GUI's legend use. Plain values: a TsTimingSeries is not thread-safe,
 * each generation thread keeps its own.
 */
#pragma once

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

typedef enum {
  TS_STAGE_FORWARD,
  TS_STAGE_ENCRYPT,
  TS_STAGE_UPLOAD,
  TS_STAGE_EVALUATE,
  TS_STAGE_DOWNLOAD,
  TS_STAGE_DECRYPT,
  TS_STAGE_LORA_B,
  TS_STAGE_LM_HEAD,
  TS_STAGE_SAMPLE,
  TS_N_STAGES
} TsStage;

/* One token: milliseconds per stage and ciphertext bytes each way. */
typedef struct {
  double ms[TS_N_STAGES];
  guint64 bytes_up;
  guint64 bytes_down;
} TsTokenTimings;

/* Returns "forward", "encrypt", ... (static), or NULL when out of range. */
const char *ts_stage_name (TsStage stage);
/* Looks up @name; returns FALSE when it is not a stage name. */
gboolean ts_stage_from_name (const char *name, TsStage *out);

/* Milliseconds from a monotonic clock with sub-microsecond resolution. */
double ts_now_ms (void);

/* Adds every stage and byte count of @t into @acc. */
void ts_token_timings_add (TsTokenTimings *acc, const TsTokenTimings *t);
double ts_token_timings_total_ms (const TsTokenTimings *t);

typedef struct _TsTimingSeries TsTimingSeries;

TsTimingSeries *ts_timing_series_new (void);
void ts_timing_series_free (TsTimingSeries *series);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsTimingSeries, ts_timing_series_free)

void ts_timing_series_append (TsTimingSeries *series, const TsTokenTimings *t);
guint ts_timing_series_len (const TsTimingSeries *series);
const TsTokenTimings *ts_timing_series_get (const TsTimingSeries *series, guint index);
/* The median of @n values (0 when none); sorts them in place. */
double ts_median (double *values, guint n);
/* Median over tokens of one stage's milliseconds (0 when empty). */
double ts_timing_series_median_ms (const TsTimingSeries *series, TsStage stage);
/* Sum over tokens of every stage and byte count. */
TsTokenTimings ts_timing_series_sum (const TsTimingSeries *series);

/* Adds a member "median_ms": {"forward": …, …} to the object being built. */
void ts_timing_series_build_medians (const TsTimingSeries *series, JsonBuilder *builder);

G_END_DECLS
