/* ts-latency-chart.c: live stacked bars of per-stage latency, one bar per token.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <adwaita.h>
#include <math.h>

#include "ts-latency-chart.h"

#define BAR_MIN_WIDTH 6.0
#define BAR_MAX_WIDTH 16.0
#define BAR_GAP 2.0
#define LEGEND_ROW 18.0
#define SUMMARY_HEIGHT 34.0
#define AXIS_WIDTH 64.0

typedef struct {
  TsTokenTimings timings;
  char *text;
} Bar;

struct _TsLatencyChart
{
  GtkWidget parent_instance;

  Bar *bars;                /* ring of TS_LATENCY_CHART_CAPACITY */
  guint head;               /* index of the oldest bar */
  guint n_bars;
  guint draw_tick;          /* pending frame callback, 0 when none */
  int hover;                /* bar under the pointer, -1 when none */
  TsLatencyChart *peer;     /* weak: the other pane's chart, whose scale this one shares */
};

G_DEFINE_FINAL_TYPE (TsLatencyChart, ts_latency_chart, GTK_TYPE_WIDGET)

enum {
  PROP_0,
  PROP_N_BARS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* GNOME palette: a darker shade on light backgrounds, a lighter one on dark. */
static const char *const stage_colors[TS_N_STAGES][2] = {
  [TS_STAGE_FORWARD] = { "#3584e4", "#62a0ea" },
  [TS_STAGE_ENCRYPT] = { "#9141ac", "#c061cb" },
  [TS_STAGE_UPLOAD] = { "#e66100", "#ffa348" },
  [TS_STAGE_EVALUATE] = { "#c01c28", "#f66151" },
  [TS_STAGE_DOWNLOAD] = { "#c88800", "#f8e45c" },
  [TS_STAGE_DECRYPT] = { "#26a269", "#57e389" },
  [TS_STAGE_LORA_B] = { "#1a7f8e", "#6fd3e0" },
  [TS_STAGE_LM_HEAD] = { "#865e3c", "#cdab8f" },
  [TS_STAGE_SAMPLE] = { "#5e5c64", "#c0bfbc" },
};

void
ts_latency_chart_stage_color (TsStage stage, gboolean dark, GdkRGBA *out)
{
  g_return_if_fail (stage < TS_N_STAGES);
  gdk_rgba_parse (out, stage_colors[stage][dark ? 1 : 0]);
}

static Bar *
bar_at (TsLatencyChart *self, guint index)
{
  return &self->bars[(self->head + index) % TS_LATENCY_CHART_CAPACITY];
}

guint
ts_latency_chart_get_n_bars (TsLatencyChart *self)
{
  g_return_val_if_fail (TS_IS_LATENCY_CHART (self), 0);
  return self->n_bars;
}

const TsTokenTimings *
ts_latency_chart_get_bar (TsLatencyChart *self, guint index)
{
  g_return_val_if_fail (TS_IS_LATENCY_CHART (self), NULL);
  return index < self->n_bars ? &bar_at (self, index)->timings : NULL;
}

const char *
ts_latency_chart_get_bar_text (TsLatencyChart *self, guint index)
{
  g_return_val_if_fail (TS_IS_LATENCY_CHART (self), NULL);
  return index < self->n_bars ? bar_at (self, index)->text : NULL;
}

static int
compare_doubles (gconstpointer a, gconstpointer b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return (x > y) - (x < y);
}

double
ts_latency_chart_get_median_ms (TsLatencyChart *self, TsStage stage)
{
  g_autofree double *values = NULL;

  g_return_val_if_fail (TS_IS_LATENCY_CHART (self), 0);
  g_return_val_if_fail (stage < TS_N_STAGES, 0);
  if (self->n_bars == 0)
    return 0;
  values = g_new (double, self->n_bars);
  for (guint i = 0; i < self->n_bars; i++)
    values[i] = bar_at (self, i)->timings.ms[stage];
  qsort (values, self->n_bars, sizeof (double), compare_doubles);
  if (self->n_bars % 2 == 1)
    return values[self->n_bars / 2];
  return (values[self->n_bars / 2 - 1] + values[self->n_bars / 2]) / 2;
}

static void
update_accessible_description (TsLatencyChart *self)
{
  g_autoptr (GString) text = g_string_new (NULL);

  g_string_printf (text, g_dngettext (NULL, "%u token", "%u tokens", self->n_bars), self->n_bars);
  for (int s = 0; s < TS_N_STAGES && self->n_bars > 0; s++)
    g_string_append_printf (text, _(", %s median %.2f ms"), ts_stage_name (s),
                            ts_latency_chart_get_median_ms (self, s));
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_DESCRIPTION,
                                  text->str, -1);
}

static gboolean
draw_tick_cb (GtkWidget *widget, GdkFrameClock *clock, gpointer data)
{
  TsLatencyChart *self = TS_LATENCY_CHART (widget);

  self->draw_tick = 0;
  update_accessible_description (self);
  gtk_widget_queue_draw (widget);
  if (self->peer != NULL)   /* the shared scale may have grown */
    gtk_widget_queue_draw (GTK_WIDGET (self->peer));
  return G_SOURCE_REMOVE;
}

/* One redraw per frame, however many bars arrived since the last. */
static void
schedule_draw (TsLatencyChart *self)
{
  if (self->draw_tick == 0)
    self->draw_tick = gtk_widget_add_tick_callback (GTK_WIDGET (self), draw_tick_cb, NULL, NULL);
}

void
ts_latency_chart_append (TsLatencyChart *self, const TsTokenTimings *timings, const char *text)
{
  Bar *bar;

  g_return_if_fail (TS_IS_LATENCY_CHART (self));
  g_return_if_fail (timings != NULL);
  if (self->n_bars == TS_LATENCY_CHART_CAPACITY)
    {
      g_free (bar_at (self, 0)->text);
      self->head = (self->head + 1) % TS_LATENCY_CHART_CAPACITY;
      self->n_bars--;
    }
  bar = bar_at (self, self->n_bars++);
  bar->timings = *timings;
  bar->text = g_strdup (text != NULL ? text : "");
  schedule_draw (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_BARS]);
}

void
ts_latency_chart_clear (TsLatencyChart *self)
{
  g_return_if_fail (TS_IS_LATENCY_CHART (self));
  for (guint i = 0; i < self->n_bars; i++)
    g_clear_pointer (&bar_at (self, i)->text, g_free);
  self->head = 0;
  self->n_bars = 0;
  self->hover = -1;
  schedule_draw (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_N_BARS]);
}

/* ------------------------------------------------------------------------ */
/* Drawing                                                                    */

typedef struct {
  double width, height;
  double legend_h;
  double plot_x, plot_y, plot_w, plot_h;
  double bar_w;
  guint first, count;       /* bars shown */
  double max_ms;            /* top of the scale; taller bars are clipped */
  gboolean dark;
  GdkRGBA fg;
} Frame;

static double text_width (TsLatencyChart *self, const char *text);

/* The tallest bar from @first on. The first token carries the whole
 * prompt: it would flatten the others, so it does not set the scale (its
 * bar is clipped). */
static double
own_scale_ms (TsLatencyChart *self, guint first)
{
  double max_ms = 0;

  for (guint i = first; i < self->n_bars; i++)
    if (i > 0 || self->n_bars == 1)
      max_ms = MAX (max_ms, ts_token_timings_total_ms (&bar_at (self, i)->timings));
  return max_ms;
}

/* Whether any bar spends time in @stage: the legend lists only those (the
 * plaintext pane has no encryption stages). */
static gboolean
stage_used (TsLatencyChart *self, int stage)
{
  for (guint i = 0; i < self->n_bars; i++)
    if (bar_at (self, i)->timings.ms[stage] > 0)
      return TRUE;
  return self->n_bars == 0;
}

/* Legend entries flow onto as many rows as the width needs. */
static guint
legend_rows (TsLatencyChart *self, double width)
{
  double x = AXIS_WIDTH;
  guint rows = 1;

  for (int s = 0; s < TS_N_STAGES; s++)
    {
      double w = 13 + text_width (self, ts_stage_name (s)) + 10;

      if (x + w > width && x > AXIS_WIDTH)
        rows++, x = AXIS_WIDTH;
      x += w;
    }
  return rows;
}

static void
frame_init (TsLatencyChart *self, Frame *f, double width, double height)
{
  guint fit;

  f->width = width;
  f->height = height;
  f->legend_h = legend_rows (self, width) * LEGEND_ROW + 4;
  f->plot_x = AXIS_WIDTH;
  f->plot_y = f->legend_h + 4;
  f->plot_w = MAX (width - AXIS_WIDTH - 8, 1);
  f->plot_h = MAX (height - f->legend_h - SUMMARY_HEIGHT - 8, 1);
  /* Few tokens get wider bars; many scroll, the newest staying in view. */
  f->bar_w = CLAMP (f->plot_w / MAX (self->n_bars, 1) - BAR_GAP, BAR_MIN_WIDTH, BAR_MAX_WIDTH);
  fit = MAX ((guint) (f->plot_w / (f->bar_w + BAR_GAP)), 1);
  f->count = MIN (self->n_bars, fit);
  f->first = self->n_bars - f->count;
  /* one scale for both panes' charts, so their bars compare at a glance */
  f->max_ms = ts_latency_chart_get_scale_ms (self);
  f->dark = adw_style_manager_get_dark (adw_style_manager_get_default ());
  gtk_style_context_get_color (gtk_widget_get_style_context (GTK_WIDGET (self)), &f->fg);
}

static void
draw_text (TsLatencyChart *self, GtkSnapshot *snapshot, const char *text, double x, double y,
           const GdkRGBA *color)
{
  g_autoptr (PangoLayout) layout = gtk_widget_create_pango_layout (GTK_WIDGET (self), text);

  gtk_snapshot_save (snapshot);
  gtk_snapshot_translate (snapshot, &GRAPHENE_POINT_INIT ((float) x, (float) y));
  gtk_snapshot_append_layout (snapshot, layout, color);
  gtk_snapshot_restore (snapshot);
}

static double
text_width (TsLatencyChart *self, const char *text)
{
  g_autoptr (PangoLayout) layout = gtk_widget_create_pango_layout (GTK_WIDGET (self), text);
  int w, h;

  pango_layout_get_pixel_size (layout, &w, &h);
  return w;
}

static void
draw_legend (TsLatencyChart *self, GtkSnapshot *snapshot, const Frame *f)
{
  double x = f->plot_x, y = 1;

  for (int s = 0; s < TS_N_STAGES; s++)
    {
      double w = 13 + text_width (self, ts_stage_name (s)) + 10;
      GdkRGBA color;

      /* the rows are sized for every stage (the layout does not jump when
       * the first bar arrives); only the stages this chart has are drawn */
      if (!stage_used (self, s))
        continue;
      if (x + w > f->width && x > f->plot_x)
        x = f->plot_x, y += LEGEND_ROW;
      ts_latency_chart_stage_color (s, f->dark, &color);
      gtk_snapshot_append_color (snapshot, &color,
                                 &GRAPHENE_RECT_INIT ((float) x, (float) y + 4, 10, 10));
      draw_text (self, snapshot, ts_stage_name (s), x + 13, y, &f->fg);
      x += w;
    }
}

static void
draw_bars (TsLatencyChart *self, GtkSnapshot *snapshot, const Frame *f)
{
  double scale = f->max_ms > 0 ? f->plot_h / f->max_ms : 0;

  for (guint i = 0; i < f->count; i++)
    {
      const TsTokenTimings *t = &bar_at (self, f->first + i)->timings;
      double x = f->plot_x + i * (f->bar_w + BAR_GAP);
      double y = f->plot_y + f->plot_h;

      for (int s = 0; s < TS_N_STAGES; s++)
        {
          double h = t->ms[s] * scale;
          GdkRGBA color;

          if (h <= 0 || y <= f->plot_y)
            continue;
          h = MIN (h, y - f->plot_y);
          ts_latency_chart_stage_color (s, f->dark, &color);
          if (self->hover >= 0 && (guint) self->hover != f->first + i)
            color.alpha = 0.55f;
          y -= h;
          gtk_snapshot_append_color (snapshot, &color,
                                     &GRAPHENE_RECT_INIT ((float) x, (float) y, (float) f->bar_w,
                                                          (float) MAX (h, 0.5)));
        }
      /* A clipped bar gets a cap in the text colour. */
      if (ts_token_timings_total_ms (t) > f->max_ms * 1.0001)
        gtk_snapshot_append_color (snapshot, &f->fg,
                                   &GRAPHENE_RECT_INIT ((float) x, (float) f->plot_y - 3,
                                                        (float) f->bar_w, 2));
    }
}

static void
draw_axes (TsLatencyChart *self, GtkSnapshot *snapshot, const Frame *f)
{
  GdkRGBA dim = f->fg;
  g_autofree char *top = g_strdup_printf (_("%.1f ms"), f->max_ms);

  dim.alpha = 0.25f;
  gtk_snapshot_append_color (snapshot, &dim,
                             &GRAPHENE_RECT_INIT ((float) f->plot_x, (float) (f->plot_y + f->plot_h),
                                                  (float) f->plot_w, 1));
  dim.alpha = 0.7f;
  draw_text (self, snapshot, top, 2, f->plot_y, &dim);
}

static void
draw_summary (TsLatencyChart *self, GtkSnapshot *snapshot, const Frame *f)
{
  g_autoptr (GString) text = g_string_new (_("Median ms:"));
  g_autoptr (PangoLayout) layout = NULL;
  GdkRGBA dim = f->fg;

  for (int s = 0; s < TS_N_STAGES; s++)
    {
      double ms = ts_latency_chart_get_median_ms (self, s);

      if (ms > 0)
        g_string_append_printf (text, "  %s %.2f", ts_stage_name (s), ms);
    }
  layout = gtk_widget_create_pango_layout (GTK_WIDGET (self),
                                           self->n_bars > 0 ? text->str : _("No tokens yet"));
  pango_layout_set_width (layout, (int) (f->plot_w * PANGO_SCALE));
  pango_layout_set_wrap (layout, PANGO_WRAP_WORD);
  dim.alpha = 0.8f;
  gtk_snapshot_save (snapshot);
  gtk_snapshot_translate (snapshot, &GRAPHENE_POINT_INIT ((float) f->plot_x,
                                                          (float) (f->height - SUMMARY_HEIGHT + 2)));
  gtk_snapshot_append_layout (snapshot, layout, &dim);
  gtk_snapshot_restore (snapshot);
}

static void
draw_chart (TsLatencyChart *self, GtkSnapshot *snapshot, double width, double height)
{
  Frame f;

  frame_init (self, &f, width, height);
  gtk_snapshot_push_clip (snapshot, &GRAPHENE_RECT_INIT (0, 0, (float) width, (float) height));
  draw_legend (self, snapshot, &f);
  draw_axes (self, snapshot, &f);
  draw_bars (self, snapshot, &f);
  draw_summary (self, snapshot, &f);
  gtk_snapshot_pop (snapshot);
}

static void
ts_latency_chart_snapshot (GtkWidget *widget, GtkSnapshot *snapshot)
{
  draw_chart (TS_LATENCY_CHART (widget), snapshot, gtk_widget_get_width (widget),
              gtk_widget_get_height (widget));
}

static void
ts_latency_chart_measure (GtkWidget *widget, GtkOrientation orientation, int for_size,
                          int *minimum, int *natural, int *min_baseline, int *nat_baseline)
{
  if (orientation == GTK_ORIENTATION_HORIZONTAL)
    *minimum = 160, *natural = 480;
  else
    *minimum = 180, *natural = 220;
}

/* ------------------------------------------------------------------------ */
/* Hover                                                                      */

static int
bar_at_x (TsLatencyChart *self, double x)
{
  Frame f;
  int i;

  frame_init (self, &f, gtk_widget_get_width (GTK_WIDGET (self)),
              gtk_widget_get_height (GTK_WIDGET (self)));
  if (x < f.plot_x)
    return -1;
  i = (int) ((x - f.plot_x) / (f.bar_w + BAR_GAP));
  return i < (int) f.count ? (int) f.first + i : -1;
}

static void
motion_cb (GtkEventControllerMotion *motion, double x, double y, TsLatencyChart *self)
{
  int hover = bar_at_x (self, x);

  if (hover != self->hover)
    {
      self->hover = hover;
      schedule_draw (self);
    }
}

static void
leave_cb (GtkEventControllerMotion *motion, TsLatencyChart *self)
{
  self->hover = -1;
  schedule_draw (self);
}

static gboolean
query_tooltip_cb (GtkWidget *widget, int x, int y, gboolean keyboard, GtkTooltip *tooltip,
                  gpointer data)
{
  TsLatencyChart *self = TS_LATENCY_CHART (widget);
  int index = bar_at_x (self, x);
  g_autoptr (GString) text = NULL;
  const Bar *bar;

  if (index < 0)
    return FALSE;
  bar = bar_at (self, (guint) index);
  text = g_string_new (NULL);
  g_string_printf (text, _("Token %d: “%s”"), index + 1, bar->text);
  for (int s = 0; s < TS_N_STAGES; s++)
    g_string_append_printf (text, "\n%s: %.3f ms", ts_stage_name (s), bar->timings.ms[s]);
  g_string_append_printf (text, _("\nTotal: %.3f ms"), ts_token_timings_total_ms (&bar->timings));
  gtk_tooltip_set_text (tooltip, text->str);
  return TRUE;
}

/* ------------------------------------------------------------------------ */
/* Export                                                                     */

char *
ts_latency_chart_to_csv (TsLatencyChart *self)
{
  GString *csv = g_string_new ("token,text");

  g_return_val_if_fail (TS_IS_LATENCY_CHART (self), NULL);
  for (int s = 0; s < TS_N_STAGES; s++)
    g_string_append_printf (csv, ",%s_ms", ts_stage_name (s));
  g_string_append (csv, ",total_ms,bytes_up,bytes_down\n");
  for (guint i = 0; i < self->n_bars; i++)
    {
      const Bar *bar = bar_at (self, i);
      g_autofree char *quoted = NULL;
      g_auto (GStrv) parts = g_strsplit (bar->text, "\"", -1);

      quoted = g_strjoinv ("\"\"", parts);
      g_string_append_printf (csv, "%u,\"%s\"", i + 1, quoted);
      for (int s = 0; s < TS_N_STAGES; s++)
        g_string_append_printf (csv, ",%.4f", bar->timings.ms[s]);
      g_string_append_printf (csv, ",%.4f,%" G_GUINT64_FORMAT ",%" G_GUINT64_FORMAT "\n",
                              ts_token_timings_total_ms (&bar->timings), bar->timings.bytes_up,
                              bar->timings.bytes_down);
    }
  return g_string_free (csv, FALSE);
}

gboolean
ts_latency_chart_save_csv (TsLatencyChart *self, GFile *file, GError **error)
{
  g_autofree char *csv = ts_latency_chart_to_csv (self);

  return g_file_replace_contents (file, csv, strlen (csv), NULL, FALSE, G_FILE_CREATE_NONE,
                                  NULL, NULL, error);
}

gboolean
ts_latency_chart_save_png (TsLatencyChart *self, GFile *file, GError **error)
{
  int width = gtk_widget_get_width (GTK_WIDGET (self));
  int height = gtk_widget_get_height (GTK_WIDGET (self));
  g_autoptr (GtkSnapshot) snapshot = gtk_snapshot_new ();
  g_autoptr (GskRenderNode) node = NULL;
  g_autoptr (GskRenderer) renderer = gsk_cairo_renderer_new ();
  g_autoptr (GdkTexture) texture = NULL;
  g_autoptr (GBytes) png = NULL;
  GdkRGBA background;

  if (width <= 1 || height <= 1)
    width = 800, height = 240;
  /* A plain background so the PNG reads well outside the app. */
  gdk_rgba_parse (&background,
                  adw_style_manager_get_dark (adw_style_manager_get_default ()) ? "#242424" : "#ffffff");
  gtk_snapshot_append_color (snapshot, &background, &GRAPHENE_RECT_INIT (0, 0, width, height));
  draw_chart (self, snapshot, width, height);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  if (!gsk_renderer_realize (renderer, NULL, error))
    return FALSE;
  texture = gsk_renderer_render_texture (renderer, node,
                                         &GRAPHENE_RECT_INIT (0, 0, width, height));
  gsk_renderer_unrealize (renderer);
  png = gdk_texture_save_to_png_bytes (texture);
  return g_file_replace_contents (file, g_bytes_get_data (png, NULL), g_bytes_get_size (png),
                                  NULL, FALSE, G_FILE_CREATE_NONE, NULL, NULL, error);
}

/* ------------------------------------------------------------------------ */

static void
dark_changed_cb (TsLatencyChart *self)
{
  schedule_draw (self);
}

static void
ts_latency_chart_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsLatencyChart *self = TS_LATENCY_CHART (object);

  switch (prop_id)
    {
    case PROP_N_BARS:
      g_value_set_uint (value, self->n_bars);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_latency_chart_finalize (GObject *object)
{
  TsLatencyChart *self = TS_LATENCY_CHART (object);

  if (self->peer != NULL)
    g_object_remove_weak_pointer (G_OBJECT (self->peer), (gpointer *) &self->peer);
  for (guint i = 0; i < self->n_bars; i++)
    g_free (bar_at (self, i)->text);
  g_free (self->bars);
  G_OBJECT_CLASS (ts_latency_chart_parent_class)->finalize (object);
}

static void
ts_latency_chart_class_init (TsLatencyChartClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_latency_chart_get_property;
  object_class->finalize = ts_latency_chart_finalize;
  widget_class->snapshot = ts_latency_chart_snapshot;
  widget_class->measure = ts_latency_chart_measure;

  properties[PROP_N_BARS] =
    g_param_spec_uint ("n-bars", NULL, NULL, 0, TS_LATENCY_CHART_CAPACITY, 0,
                       G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_css_name (widget_class, "latency-chart");
  gtk_widget_class_set_accessible_role (widget_class, GTK_ACCESSIBLE_ROLE_IMG);
}

static void
ts_latency_chart_init (TsLatencyChart *self)
{
  GtkEventController *motion = gtk_event_controller_motion_new ();

  self->bars = g_new0 (Bar, TS_LATENCY_CHART_CAPACITY);
  self->hover = -1;
  g_signal_connect (motion, "motion", G_CALLBACK (motion_cb), self);
  g_signal_connect (motion, "leave", G_CALLBACK (leave_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), motion);
  gtk_widget_set_has_tooltip (GTK_WIDGET (self), TRUE);
  g_signal_connect (self, "query-tooltip", G_CALLBACK (query_tooltip_cb), NULL);
  g_signal_connect_object (adw_style_manager_get_default (), "notify::dark",
                           G_CALLBACK (dark_changed_cb), self, G_CONNECT_SWAPPED);
  gtk_accessible_update_property (GTK_ACCESSIBLE (self), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Per-token latency by stage"), -1);
}

void
ts_latency_chart_share_scale (TsLatencyChart *self, TsLatencyChart *peer)
{
  g_return_if_fail (TS_IS_LATENCY_CHART (self) && TS_IS_LATENCY_CHART (peer));
  if (self->peer != NULL)
    g_object_remove_weak_pointer (G_OBJECT (self->peer), (gpointer *) &self->peer);
  self->peer = peer;
  g_object_add_weak_pointer (G_OBJECT (peer), (gpointer *) &self->peer);
}

double
ts_latency_chart_get_scale_ms (TsLatencyChart *self)
{
  g_return_val_if_fail (TS_IS_LATENCY_CHART (self), 0);
  return MAX (own_scale_ms (self, 0), self->peer != NULL ? own_scale_ms (self->peer, 0) : 0);
}

gboolean
ts_latency_chart_get_stage_listed (TsLatencyChart *self, TsStage stage)
{
  g_return_val_if_fail (TS_IS_LATENCY_CHART (self), FALSE);
  return stage_used (self, stage);
}

GtkWidget *
ts_latency_chart_new (void)
{
  return g_object_new (TS_TYPE_LATENCY_CHART, NULL);
}
