/* ts-bench-summary.c: benchmark rounds folded into one row per configuration.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>

#include "ts-bench-summary.h"

static gboolean
same_config (const TsBenchResult *a, const TsBenchResult *b)
{
  return a->rank == b->rank && g_strcmp0 (a->label, b->label) == 0;
}

/* Whether a result before @index ran the configuration of the one at @index. */
static gboolean
seen_before (GPtrArray *results, guint index)
{
  for (guint i = 0; i < index; i++)
    if (same_config (g_ptr_array_index (results, i), g_ptr_array_index (results, index)))
      return TRUE;
  return FALSE;
}

/* Appends the HE milliseconds per module of every token of @r (encrypt …
 * decrypt, the stages TsHeloraStats.he_ms adds up). */
static void
append_token_ms (const TsBenchResult *r, GArray *out)
{
  if (r->mode == TS_HELORA_MODE_PLAIN || r->n_modules == 0)
    return;
  for (guint k = 0; k < ts_timing_series_len (r->series); k++)
    {
      const TsTokenTimings *t = ts_timing_series_get (r->series, k);
      double ms = 0;

      for (TsStage s = TS_STAGE_ENCRYPT; s <= TS_STAGE_DECRYPT; s++)
        ms += t->ms[s];
      ms /= r->n_modules;
      g_array_append_val (out, ms);
    }
}

static double
median_of (GArray *values)
{
  return ts_median ((double *) values->data, values->len);
}

/* The row of the configuration first run by the result at @index. */
static TsBenchSummaryRow
summarise_one (GPtrArray *results, guint index)
{
  const TsBenchResult *first = g_ptr_array_index (results, index);
  TsBenchSummaryRow row = { .first = first, .pads_known = first->private_mode,
                            .overhead = NAN, .overhead_token_median = NAN };
  g_autoptr (GArray) he = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) tokens = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) rate = g_array_new (FALSE, FALSE, sizeof (double));
  g_autoptr (GArray) pad_cpu = g_array_new (FALSE, FALSE, sizeof (double));

  for (guint i = index; i < results->len; i++)
    {
      const TsBenchResult *r = g_ptr_array_index (results, i);
      double cpu = r->pads_per_module * r->pad_ms;

      if (!same_config (r, first))
        continue;
      row.n_rounds++;
      g_array_append_val (he, r->he_ms_per_module);
      g_array_append_val (rate, r->tokens_per_s);
      append_token_ms (r, tokens);
      row.pads_known = row.pads_known && r->pads_known;
      row.pads_inline += r->pads_inline;
      row.pads_from_pool += r->pads_from_pool;
      row.pads_refilled += r->pads_refilled;
      g_array_append_val (pad_cpu, cpu);
    }
  row.he_ms_per_module = median_of (he);
  row.he_ms_token_median = median_of (tokens);
  row.tokens_per_s = median_of (rate);
  if (row.pads_known)
    row.pad_cpu_ms_per_module = median_of (pad_cpu);
  else
    row.pads_inline = row.pads_from_pool = row.pads_refilled = 0;
  return row;
}

/* The plain remote row of @row's rank and preset, or NULL. */
static const TsBenchSummaryRow *
plain_remote_for (GArray *rows, const TsBenchSummaryRow *row)
{
  for (guint i = 0; i < rows->len; i++)
    {
      const TsBenchSummaryRow *other = &g_array_index (rows, TsBenchSummaryRow, i);
      const TsBenchResult *o = other->first;

      if (o->mode == TS_HELORA_MODE_REMOTE && !o->private_mode && o->rank == row->first->rank
          && g_strcmp0 (o->preset, row->first->preset) == 0)
        return other;
    }
  return NULL;
}

GArray *
ts_bench_summarise (GPtrArray *results)
{
  g_return_val_if_fail (results != NULL, NULL);

  GArray *rows = g_array_new (FALSE, FALSE, sizeof (TsBenchSummaryRow));

  for (guint i = 0; i < results->len; i++)
    if (!seen_before (results, i))
      {
        TsBenchSummaryRow row = summarise_one (results, i);
        g_array_append_val (rows, row);
      }
  for (guint i = 0; i < rows->len; i++)
    {
      TsBenchSummaryRow *row = &g_array_index (rows, TsBenchSummaryRow, i);
      const TsBenchSummaryRow *plain = row->first->private_mode ? plain_remote_for (rows, row) : NULL;

      if (plain == NULL || plain->he_ms_per_module <= 0 || plain->he_ms_token_median <= 0)
        continue;
      row->overhead = row->he_ms_per_module / plain->he_ms_per_module - 1.0;
      row->overhead_token_median = row->he_ms_token_median / plain->he_ms_token_median - 1.0;
    }
  return rows;
}
