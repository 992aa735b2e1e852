/* ts-timings.c: per-token stage timings, medians and their JSON form.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ts-timings.h"

static const char *const stage_names[TS_N_STAGES] = {
  [TS_STAGE_FORWARD] = "forward",
  [TS_STAGE_ENCRYPT] = "encrypt",
  [TS_STAGE_UPLOAD] = "upload",
  [TS_STAGE_EVALUATE] = "evaluate",
  [TS_STAGE_DOWNLOAD] = "download",
  [TS_STAGE_DECRYPT] = "decrypt",
  [TS_STAGE_LORA_B] = "lora_b",
  [TS_STAGE_LM_HEAD] = "lm_head",
  [TS_STAGE_SAMPLE] = "sample",
};

struct _TsTimingSeries {
  GArray *tokens;              /* of TsTokenTimings */
};

const char *
ts_stage_name (TsStage stage)
{
  if ((guint) stage >= TS_N_STAGES)
    return NULL;
  return stage_names[stage];
}

gboolean
ts_stage_from_name (const char *name, TsStage *out)
{
  g_return_val_if_fail (out != NULL, FALSE);

  for (guint i = 0; i < TS_N_STAGES && name != NULL; i++)
    if (strcmp (stage_names[i], name) == 0)
      {
        *out = (TsStage) i;
        return TRUE;
      }
  return FALSE;
}

double
ts_now_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

void
ts_token_timings_add (TsTokenTimings *acc, const TsTokenTimings *t)
{
  g_return_if_fail (acc != NULL && t != NULL);

  for (guint i = 0; i < TS_N_STAGES; i++)
    acc->ms[i] += t->ms[i];
  acc->bytes_up += t->bytes_up;
  acc->bytes_down += t->bytes_down;
}

double
ts_token_timings_total_ms (const TsTokenTimings *t)
{
  double total = 0;

  g_return_val_if_fail (t != NULL, 0.0);

  for (guint i = 0; i < TS_N_STAGES; i++)
    total += t->ms[i];
  return total;
}

TsTimingSeries *
ts_timing_series_new (void)
{
  TsTimingSeries *series = g_new0 (TsTimingSeries, 1);

  series->tokens = g_array_new (FALSE, TRUE, sizeof (TsTokenTimings));
  return series;
}

void
ts_timing_series_free (TsTimingSeries *series)
{
  if (series == NULL)
    return;
  g_array_unref (series->tokens);
  g_free (series);
}

void
ts_timing_series_append (TsTimingSeries *series, const TsTokenTimings *t)
{
  g_return_if_fail (series != NULL);

  g_array_append_vals (series->tokens, t, 1);
}

guint
ts_timing_series_len (const TsTimingSeries *series)
{
  g_return_val_if_fail (series != NULL, 0);

  return series->tokens->len;
}

const TsTokenTimings *
ts_timing_series_get (const TsTimingSeries *series, guint index)
{
  g_return_val_if_fail (index < series->tokens->len, NULL);
  return &g_array_index (series->tokens, TsTokenTimings, index);
}

static int
compare_doubles (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

double
ts_median (double *values, guint n)
{
  g_return_val_if_fail (values != NULL || n == 0, 0);

  if (n == 0)
    return 0;
  qsort (values, n, sizeof *values, compare_doubles);
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

double
ts_timing_series_median_ms (const TsTimingSeries *series, TsStage stage)
{
  guint n = series->tokens->len;
  g_autofree double *values = NULL;

  g_return_val_if_fail ((guint) stage < TS_N_STAGES, 0);
  values = g_new (double, MAX (n, 1));
  for (guint i = 0; i < n; i++)
    values[i] = g_array_index (series->tokens, TsTokenTimings, i).ms[stage];
  return ts_median (values, n);
}

TsTokenTimings
ts_timing_series_sum (const TsTimingSeries *series)
{
  g_return_val_if_fail (series != NULL, (TsTokenTimings) { 0 });

  TsTokenTimings sum = { { 0 } };

  for (guint i = 0; i < series->tokens->len; i++)
    ts_token_timings_add (&sum, &g_array_index (series->tokens, TsTokenTimings, i));
  return sum;
}

void
ts_timing_series_build_medians (const TsTimingSeries *series, JsonBuilder *builder)
{
  g_return_if_fail (series != NULL);

  json_builder_set_member_name (builder, "median_ms");
  json_builder_begin_object (builder);
  for (guint i = 0; i < TS_N_STAGES; i++)
    {
      json_builder_set_member_name (builder, stage_names[i]);
      json_builder_add_double_value (builder, ts_timing_series_median_ms (series, i));
    }
  json_builder_end_object (builder);
}
