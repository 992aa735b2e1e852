/* ts-bench-chart.c: bar chart of benchmark results: median ms per stage per configuration.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-bench-chart.h"
#include "ts-bench-item.h"

#define BAR_HEIGHT 22
#define BAR_GAP 14
#define LABEL_WIDTH 150
#define VALUE_WIDTH 170
#define LEGEND_HEIGHT 28
#define PAD 8

struct _TsBenchChart
{
  GtkWidget parent_instance;

  GPtrArray *results;
};

G_DEFINE_FINAL_TYPE (TsBenchChart, ts_bench_chart, GTK_TYPE_WIDGET)

/* One colour per stage, distinct in light and dark styles alike. */
static const GdkRGBA stage_colors[TS_N_STAGES] = {
  { 0.21, 0.52, 0.89, 1 },  /* forward: blue */
  { 0.90, 0.38, 0.00, 1 },  /* encrypt: orange */
  { 0.96, 0.76, 0.07, 1 },  /* upload: yellow */
  { 0.88, 0.11, 0.14, 1 },  /* evaluate: red */
  { 0.60, 0.76, 0.12, 1 },  /* download: lime */
  { 0.57, 0.25, 0.67, 1 },  /* decrypt: purple */
  { 0.15, 0.64, 0.41, 1 },  /* lora_b: green */
  { 0.39, 0.27, 0.17, 1 },  /* lm_head: brown */
  { 0.55, 0.55, 0.55, 1 },  /* sample: grey */
};

static double
max_total (TsBenchChart *self)
{
  double max = 0;

  for (guint i = 0; self->results != NULL && i < self->results->len; i++)
    max = MAX (max, ts_bench_result_total_ms (g_ptr_array_index (self->results, i)));
  return max;
}

static void
draw_text (GtkSnapshot *snapshot, GtkWidget *widget, const char *text, float x, float y,
           const GdkRGBA *color)
{
  g_autoptr (PangoLayout) layout = gtk_widget_create_pango_layout (widget, text);

  gtk_snapshot_save (snapshot);
  gtk_snapshot_translate (snapshot, &GRAPHENE_POINT_INIT (x, y));
  gtk_snapshot_append_layout (snapshot, layout, color);
  gtk_snapshot_restore (snapshot);
}

static void
draw_bar (TsBenchChart *self, GtkSnapshot *snapshot, const TsBenchResult *r, float y,
          float bar_width, double scale, const GdkRGBA *fg)
{
  GtkWidget *widget = GTK_WIDGET (self);
  g_autofree char *name = ts_bench_result_label (r);
  /* Translators: a benchmark configuration's name and the LoRA rank it ran at. */
  g_autofree char *label = g_strdup_printf (_("%s · r %u"), name, r->rank);
  g_autofree char *value = g_strdup_printf (_("%.1f ms · %.1f tokens/s"),
                                            ts_bench_result_total_ms (r), r->tokens_per_s);
  float x = LABEL_WIDTH;

  draw_text (snapshot, widget, label, PAD, y + 2, fg);
  for (int s = 0; s < TS_N_STAGES; s++)
    {
      float w = (float) (ts_timing_series_median_ms (r->series, (TsStage) s) * scale);

      if (w <= 0)
        continue;
      gtk_snapshot_append_color (snapshot, &stage_colors[s],
                                 &GRAPHENE_RECT_INIT (x, y, w, BAR_HEIGHT));
      x += w;
    }
  draw_text (snapshot, widget, value, LABEL_WIDTH + bar_width + PAD, y + 2, fg);
}

static void
draw_legend (TsBenchChart *self, GtkSnapshot *snapshot, float y, const GdkRGBA *fg)
{
  float x = PAD;

  for (int s = 0; s < TS_N_STAGES; s++)
    {
      g_autoptr (PangoLayout) layout =
        gtk_widget_create_pango_layout (GTK_WIDGET (self), ts_stage_name ((TsStage) s));
      int w, h;

      pango_layout_get_pixel_size (layout, &w, &h);
      gtk_snapshot_append_color (snapshot, &stage_colors[s],
                                 &GRAPHENE_RECT_INIT (x, y + 4, 12, 12));
      gtk_snapshot_save (snapshot);
      gtk_snapshot_translate (snapshot, &GRAPHENE_POINT_INIT (x + 16, y));
      gtk_snapshot_append_layout (snapshot, layout, fg);
      gtk_snapshot_restore (snapshot);
      x += 16 + w + 14;
    }
}

static void
ts_bench_chart_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  TsBenchChart *self = TS_BENCH_CHART (widget);
  float width = (float) gtk_widget_get_width (widget);
  float bar_width = MAX (40.0f, width - LABEL_WIDTH - VALUE_WIDTH);
  double max = max_total (self);
  double scale = max > 0 ? bar_width / max : 0;
  GdkRGBA fg;
  guint n = self->results != NULL ? self->results->len : 0;

  /* GTK 4.8 has no gtk_widget_get_color(). */
  gtk_style_context_get_color (gtk_widget_get_style_context (widget), &fg);
  for (guint i = 0; i < n; i++)
    draw_bar (self, snapshot, g_ptr_array_index (self->results, i),
              PAD + i * (BAR_HEIGHT + BAR_GAP), bar_width, scale, &fg);
  if (n > 0)
    draw_legend (self, snapshot, PAD + n * (BAR_HEIGHT + BAR_GAP), &fg);
}

static void
ts_bench_chart_measure (GtkWidget *widget, GtkOrientation orientation, int for_size,
                        int *minimum, int *natural, int *minimum_baseline, int *natural_baseline)
{
  TsBenchChart *self = TS_BENCH_CHART (widget);
  guint n = self->results != NULL ? self->results->len : 0;

  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    *minimum = *natural = LABEL_WIDTH + VALUE_WIDTH + 40;
  else
    *minimum = *natural = n > 0 ? (int) (2 * PAD + n * (BAR_HEIGHT + BAR_GAP) + LEGEND_HEIGHT) : 0;
}

static void
ts_bench_chart_finalize (GObject *object)
{
  TsBenchChart *self = TS_BENCH_CHART (object);

  g_clear_pointer (&self->results, g_ptr_array_unref);
  G_OBJECT_CLASS (ts_bench_chart_parent_class)->finalize (object);
}

static void
ts_bench_chart_class_init (TsBenchChartClass *klass)
{
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  G_OBJECT_CLASS (klass)->finalize = ts_bench_chart_finalize;
  widget_class->snapshot = ts_bench_chart_snapshot;
  widget_class->measure = ts_bench_chart_measure;
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
  gtk_widget_class_set_css_name (widget_class, "ts-bench-chart");
}

static void
ts_bench_chart_init (TsBenchChart *self)
{
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Median milliseconds per stage for each configuration"), -1);
}

GtkWidget *
ts_bench_chart_new (void)
{
  return g_object_new (TS_TYPE_BENCH_CHART, NULL);
}

void
ts_bench_chart_set_results (TsBenchChart *self, GPtrArray *results)
{
  g_return_if_fail (TS_IS_BENCH_CHART (self));

  if (results != NULL)
    g_ptr_array_ref (results);
  g_clear_pointer (&self->results, g_ptr_array_unref);
  self->results = results;
  gtk_widget_queue_resize (GTK_WIDGET (self));
}

guint
ts_bench_chart_get_n_bars (TsBenchChart *self)
{
  g_return_val_if_fail (TS_IS_BENCH_CHART (self), 0);
  return self->results != NULL ? self->results->len : 0;
}
