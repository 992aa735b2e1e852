/* ts-bench-page.c: the benchmark page.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-bench-page.h"
#include "ts-config.h"
#include "ts-gpu.h"

struct _TsBenchPage
{
  AdwBin parent_instance;

  AdwActionRow *cpu_row;
  AdwActionRow *gpu_row;
  AdwActionRow *kernels_row;
  GCancellable *cancellable;
};

G_DEFINE_FINAL_TYPE (TsBenchPage, ts_bench_page, ADW_TYPE_BIN)

static void
gpu_probe_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsGpuInfo) info = NULL;
  g_autoptr (GError) error = NULL;
  g_autofree char *text = NULL;
  TsBenchPage *self;

  info = ts_gpu_probe_finish (result, &error);
  if (info == NULL)
    return;  /* Cancelled: the page is gone. */

  self = TS_BENCH_PAGE (user_data);
  text = ts_gpu_info_describe (info);
  adw_action_row_set_subtitle (self->gpu_row, text);
}

static void
ts_bench_page_dispose (GObject *object)
{
  TsBenchPage *self = TS_BENCH_PAGE (object);

  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  gtk_widget_dispose_template (GTK_WIDGET (self), TS_TYPE_BENCH_PAGE);
  G_OBJECT_CLASS (ts_bench_page_parent_class)->dispose (object);
}

static void
ts_bench_page_class_init (TsBenchPageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = ts_bench_page_dispose;

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-bench-page.ui");
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, cpu_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, gpu_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, kernels_row);
}

static void
ts_bench_page_init (TsBenchPage *self)
{
  g_autofree char *cpu = ts_cpu_features_describe ();

  gtk_widget_init_template (GTK_WIDGET (self));

  adw_action_row_set_subtitle (self->cpu_row, cpu);
  adw_action_row_set_subtitle (self->kernels_row,
                               TS_HAVE_CUDA ? _("Built with CUDA kernels")
                                            : _("Built without CUDA kernels"));
  adw_action_row_set_subtitle (self->gpu_row, _("Probing…"));

  self->cancellable = g_cancellable_new ();
  ts_gpu_probe_async (self->cancellable, gpu_probe_cb, self);
}

const char *
ts_bench_page_get_gpu_summary (TsBenchPage *self)
{
  g_return_val_if_fail (TS_IS_BENCH_PAGE (self), NULL);
  return adw_action_row_get_subtitle (self->gpu_row);
}
