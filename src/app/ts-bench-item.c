/* ts-bench-item.c: one benchmark configuration's result as a list item (for GtkColumnView).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-bench-item.h"

struct _TsBenchItem
{
  GObject parent_instance;

  GPtrArray *results;
  const TsBenchResult *result;
};

G_DEFINE_FINAL_TYPE (TsBenchItem, ts_bench_item, G_TYPE_OBJECT)

static void
ts_bench_item_finalize (GObject *object)
{
  TsBenchItem *self = TS_BENCH_ITEM (object);

  g_ptr_array_unref (self->results);
  G_OBJECT_CLASS (ts_bench_item_parent_class)->finalize (object);
}

static void
ts_bench_item_class_init (TsBenchItemClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = ts_bench_item_finalize;
}

static void
ts_bench_item_init (TsBenchItem *self)
{
}

TsBenchItem *
ts_bench_item_new (GPtrArray *results, const TsBenchResult *result)
{
  TsBenchItem *self = g_object_new (TS_TYPE_BENCH_ITEM, NULL);

  self->results = g_ptr_array_ref (results);
  self->result = result;
  return self;
}

const TsBenchResult *
ts_bench_item_get_result (TsBenchItem *self)
{
  g_return_val_if_fail (TS_IS_BENCH_ITEM (self), NULL);
  return self->result;
}

static char *
mode_label (const TsBenchResult *r)
{
  /* Translators: %s is a CKKS parameter set: fast, default or wide. */
  if (r->mode == TS_HELORA_MODE_LOCAL)
    return g_strdup_printf (_("HE local · %s"), r->preset);
  /* Translators: the adapter-private mode of the remote evaluator; %s is a
   * CKKS parameter set: fast, default or wide. */
  if (r->mode == TS_HELORA_MODE_REMOTE && r->private_mode)
    return g_strdup_printf (_("HE remote · private · %s"), r->preset);
  /* Translators: %s is a CKKS parameter set: fast, default or wide. */
  if (r->mode == TS_HELORA_MODE_REMOTE)
    return g_strdup_printf (_("HE remote · %s"), r->preset);
  return g_strdup (_("Plaintext"));
}

char *
ts_bench_result_label (const TsBenchResult *r)
{
  g_autofree char *mode = mode_label (r);

  /* Translators: %s is a configuration, e.g. “HE local · fast”; the row
   * ran with random attention and FFN adapters stacked on the adapter. */
  return r->stacked ? g_strdup_printf (_("%s · stack"), mode) : g_steal_pointer (&mode);
}

double
ts_bench_result_total_ms (const TsBenchResult *r)
{
  double total = 0;

  for (int s = 0; s < TS_N_STAGES; s++)
    total += ts_timing_series_median_ms (r->series, (TsStage) s);
  return total;
}

char *
ts_bench_item_format (TsBenchItem *self, const char *column)
{
  const TsBenchResult *r = self->result;
  TsStage stage;

  if (g_str_equal (column, "label"))
    return ts_bench_result_label (r);
  if (g_str_equal (column, "rank"))
    return g_strdup_printf ("%u", r->rank);
  if (g_str_equal (column, "tokens-per-s"))
    return g_strdup_printf ("%.2f", r->tokens_per_s);
  if (g_str_equal (column, "total"))
    return g_strdup_printf ("%.2f", ts_bench_result_total_ms (r));
  if (g_str_equal (column, "he-per-module"))
    return r->mode == TS_HELORA_MODE_PLAIN ? g_strdup ("–")
                                           : g_strdup_printf ("%.3f", r->he_ms_per_module);
  if (g_str_equal (column, "bytes"))
    return r->n_tokens > 0 ? g_format_size ((r->bytes_up + r->bytes_down) / r->n_tokens)
                           : g_strdup ("–");
  if (g_str_equal (column, "error"))
    return r->mode == TS_HELORA_MODE_PLAIN ? g_strdup ("–")
                                           : g_strdup_printf ("%.1e", r->max_abs_delta_error);
  if (ts_stage_from_name (column, &stage))
    return g_strdup_printf ("%.3f", ts_timing_series_median_ms (r->series, stage));
  return g_strdup ("");
}
