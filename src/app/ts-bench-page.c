/* ts-bench-page.c: the benchmark page: plaintext vs HE-LoRA per stage, table, chart, export.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-bench-chart.h"
#include "ts-bench-item.h"
#include "ts-bench-export.h"
#include "ts-bench-page-private.h"
#include "ts-chat-page.h"
#include "ts-config.h"
#include "ts-file-chooser.h"
#include "ts-gpu.h"

struct _TsBenchPage
{
  AdwBin parent_instance;

  AdwToastOverlay *toast_overlay;
  AdwActionRow *model_row;
  AdwActionRow *adapter_row;
  GtkCheckButton *fast_check;
  GtkCheckButton *default_check;
  GtkCheckButton *wide_check;
  AdwEntryRow *ranks_row;
  AdwActionRow *remote_row;
  GtkSwitch *remote_switch;
  AdwActionRow *private_row;
  GtkSwitch *private_switch;
  GtkSwitch *stack_switch;
  GtkSpinButton *tokens_spin;
  GtkWidget *run_button;
  GtkProgressBar *progress_bar;
  GtkColumnView *results_view;
  TsBenchChart *chart;
  AdwActionRow *cpu_row;
  AdwActionRow *gpu_row;
  AdwActionRow *kernels_row;

  TsSettings *settings;         /* the application's, from construction on */
  GCancellable *cancellable;    /* the GPU probe */
  GCancellable *run_cancellable;  /* the running benchmark, or NULL */
  GListStore *store;            /* of TsBenchItem */
  GPtrArray *results;
  char *model_path;
  char *adapter_path;
  char *last_toast;
};

G_DEFINE_FINAL_TYPE (TsBenchPage, ts_bench_page, ADW_TYPE_BIN)

enum {
  PROP_0,
  PROP_SETTINGS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* Rank of the two random adapters the stack switch puts on the measured one
 * (ts-bench-stack.h); small enough for the tiny demo model. */
#define STACK_RANK 8

static void
show_toast (TsBenchPage *self, const char *text, guint timeout_s)
{
  AdwToast *t = adw_toast_new (text);

  g_free (self->last_toast);
  self->last_toast = g_strdup (text);
  adw_toast_set_timeout (t, timeout_s);
  adw_toast_overlay_add_toast (self->toast_overlay, t);
}

static void
toast (TsBenchPage *self, const char *text)
{
  show_toast (self, text, 5);
}

/* A failed run or export stays until dismissed: it is not a passing remark. */
static void
toast_error (TsBenchPage *self, const char *text)
{
  show_toast (self, text, 0);
}

/* The preset check boxes into @checks, in the order of ts_ckks_presets(),
 * which it returns. */
#define N_PRESET_CHECKS 3

static const TsCkksPreset *
preset_checks (TsBenchPage *self, GtkCheckButton *checks[N_PRESET_CHECKS])
{
  guint n;
  const TsCkksPreset *presets = ts_ckks_presets (&n);

  g_assert (n == N_PRESET_CHECKS);
  checks[0] = self->fast_check;
  checks[1] = self->default_check;
  checks[2] = self->wide_check;
  return presets;
}

/* ---- Inputs ----------------------------------------------------------- */

static void
show_path (AdwActionRow *row, const char *path)
{
  adw_action_row_set_subtitle (row, path != NULL && *path != '\0' ? path : _("None chosen"));
}

static void
update_actions (TsBenchPage *self)
{
  gboolean running = self->run_cancellable != NULL;

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "bench.run", !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "bench.cancel", running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "bench.export",
                                 !running && self->results != NULL);
}

static void
set_path (TsBenchPage *self, gboolean model, const char *path)
{
  g_free (model ? self->model_path : self->adapter_path);
  if (model)
    self->model_path = g_strdup (path);
  else
    self->adapter_path = g_strdup (path);
  show_path (model ? self->model_row : self->adapter_row, path);
  if (model)
    ts_settings_set_bench_model (self->settings, path);
  else
    ts_settings_set_bench_adapter (self->settings, path);
}

/* The remote evaluator rows follow the address in the preferences
 * (<binding>s in ts-bench-page.ui). */
static char *
evaluator_subtitle (gpointer unused, const char *url)
{
  return g_strdup (url != NULL && *url != '\0' ? url : _("No evaluator address set"));
}

static gboolean
has_text (gpointer unused, const char *text)
{
  return text != NULL && *text != '\0';
}

static void
load_paths (TsBenchPage *self)
{
  self->model_path = g_strdup (ts_settings_get_bench_model (self->settings));
  self->adapter_path = g_strdup (ts_settings_get_bench_adapter (self->settings));
  /* Until the user picks files: the demo model and adapter the chat page
   * also starts with, so a first run works out of the box. */
  if (self->model_path == NULL || *self->model_path == '\0')
    {
      g_free (self->model_path);
      g_free (self->adapter_path);
      self->model_path = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
      self->adapter_path = ts_chat_page_find_demo_file ("tiny-qwen35moe-lora-f32.gguf");
    }
  show_path (self->model_row, self->model_path);
  show_path (self->adapter_row, self->adapter_path);
}

static void
input_chosen_cb (GtkWidget *owner, const char *path, gpointer user_data)
{
  TsBenchPage *self = TS_BENCH_PAGE (owner);

  if (path == NULL)
    toast (self, _("Only local files can be benchmarked"));
  else
    set_path (self, user_data == self->model_row, path);
}

static void
choose_file (TsBenchPage *self, gboolean model)
{
  g_autoptr (GtkFileFilter) filter = gtk_file_filter_new ();

  gtk_file_filter_set_name (filter, _("GGUF files"));
  gtk_file_filter_add_suffix (filter, "gguf");
  ts_file_chooser_run (GTK_WIDGET (self), GTK_FILE_CHOOSER_ACTION_OPEN,
                       model ? _("Choose a Model") : _("Choose an Adapter"), _("_Open"), NULL,
                       filter, input_chosen_cb, model ? self->model_row : self->adapter_row);
}

/* ---- Running ---------------------------------------------------------- */

/* "8, 16,32" → ranks; empty text → NULL (the adapter's own rank). */
static GArray *
parse_ranks (const char *text, GError **error)
{
  g_auto (GStrv) parts = g_strsplit_set (text, ", ", -1);
  g_autoptr (GArray) ranks = g_array_new (FALSE, FALSE, sizeof (guint));

  for (guint i = 0; parts[i] != NULL; i++)
    {
      guint64 rank;

      if (*parts[i] == '\0')
        continue;
      if (!g_ascii_string_to_unsigned (parts[i], 10, 1, 4096, &rank, NULL))
        {
          g_set_error (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                       _("“%s” is not a rank between 1 and 4096"), parts[i]);
          return NULL;
        }
      g_array_append_val (ranks, rank);
    }
  return g_steal_pointer (&ranks);
}

static TsBenchOptions *
collect_options (TsBenchPage *self, GError **error)
{
  GtkCheckButton *checks[N_PRESET_CHECKS];
  const TsCkksPreset *presets = preset_checks (self, checks);
  const char *url = ts_settings_get_evaluator_url (self->settings);
  gboolean have_url = has_text (NULL, url);
  gboolean remote = gtk_switch_get_active (self->remote_switch) && have_url;
  gboolean private_mode = gtk_switch_get_active (self->private_switch) && have_url;
  g_autoptr (TsBenchOptions) options = NULL;
  g_autoptr (GArray) ranks = parse_ranks (gtk_editable_get_text (GTK_EDITABLE (self->ranks_row)),
                                          error);

  if (ranks == NULL)
    return NULL;
  if (self->model_path == NULL || *self->model_path == '\0'
      || self->adapter_path == NULL || *self->adapter_path == '\0')
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                           _("Choose a model and an adapter first"));
      return NULL;
    }
  options = ts_bench_options_new (self->model_path, self->adapter_path,
                                  (guint) gtk_spin_button_get_value_as_int (self->tokens_spin));
  options->n_threads = ts_settings_get_threads (self->settings);
  if (ranks->len > 0)
    options->ranks = g_steal_pointer (&ranks);
  if (gtk_switch_get_active (self->stack_switch))
    options->random_stack_rank = STACK_RANK;
  ts_bench_options_add (options, TS_HELORA_MODE_PLAIN, NULL, NULL);
  for (guint i = 0; i < N_PRESET_CHECKS; i++)
    if (gtk_check_button_get_active (checks[i]))
      {
        ts_bench_options_add (options, TS_HELORA_MODE_LOCAL, presets[i].name, NULL);
        if (remote)
          ts_bench_options_add (options, TS_HELORA_MODE_REMOTE, presets[i].name, url);
        /* λ_s 0: the library's default flooding (docs/security.md) */
        if (private_mode)
          ts_bench_options_add_private (options, presets[i].name, url, 0);
      }
  return g_steal_pointer (&options);
}

/* On the main thread (ts_bench_run_async()). */
static void
progress_cb (double fraction, const char *label, gpointer user_data)
{
  TsBenchPage *self = user_data;
  g_autofree char *text = NULL;

  if (self->run_cancellable == NULL || self->store == NULL)   /* done, or disposed */
    return;
  gtk_progress_bar_set_fraction (self->progress_bar, fraction);
  text = label != NULL ? g_strdup_printf (_("Running %s…"), label) : g_strdup (_("Done"));
  gtk_progress_bar_set_text (self->progress_bar, text);
}

static void
show_results (TsBenchPage *self, GPtrArray *results)
{
  g_clear_pointer (&self->results, g_ptr_array_unref);
  self->results = results;
  g_list_store_remove_all (self->store);
  for (guint i = 0; results != NULL && i < results->len; i++)
    {
      g_autoptr (TsBenchItem) item = ts_bench_item_new (results, g_ptr_array_index (results, i));
      g_list_store_append (self->store, item);
    }
  ts_bench_chart_set_results (self->chart, results);
}

/* The previous run's rows stay, dimmed, while a run goes on: the page
 * keeps its height, so nothing moves under the pointer (the Run and Stop
 * buttons above all). */
static void
show_running (TsBenchPage *self, gboolean running)
{
  gtk_widget_set_sensitive (GTK_WIDGET (self->results_view), !running);
  gtk_widget_set_sensitive (GTK_WIDGET (self->chart), !running);
}

/* A run that stopped or failed keeps the rows that had finished. */
static void
show_finished (TsBenchPage *self, GAsyncResult *result, const char *status)
{
  g_autoptr (GPtrArray) finished = ts_bench_run_get_finished (result);
  g_autofree char *text = NULL;

  if (finished->len == 0)
    {
      show_results (self, NULL);
      gtk_progress_bar_set_text (self->progress_bar, status);
      return;
    }
  text = g_strdup_printf (g_dngettext (NULL, "%s: %u configuration finished",
                                       "%s: %u configurations finished", finished->len),
                          status, finished->len);
  show_results (self, g_steal_pointer (&finished));
  gtk_progress_bar_set_text (self->progress_bar, text);
}

static void
run_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsBenchPage) self = user_data;   /* run_action()'s reference */
  g_autoptr (GError) error = NULL;
  GPtrArray *results = ts_bench_run_finish (result, &error);

  g_clear_object (&self->run_cancellable);
  if (self->store == NULL)
    {
      /* The page was disposed while the run finished. */
      g_clear_pointer (&results, g_ptr_array_unref);
      return;
    }
  show_running (self, FALSE);
  if (results != NULL)
    {
      show_results (self, results);
      gtk_progress_bar_set_fraction (self->progress_bar, 1.0);
      gtk_progress_bar_set_text (self->progress_bar, _("Done"));
    }
  else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      show_finished (self, result, _("Stopped"));
      toast (self, _("Benchmark stopped"));
    }
  else
    {
      g_autofree char *text = g_strdup_printf (_("Benchmark failed: %s"), error->message);
      show_finished (self, result, _("Failed"));
      toast_error (self, text);
    }
  update_actions (self);
}

static void
run_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsBenchPage *self = TS_BENCH_PAGE (widget);
  g_autoptr (GError) error = NULL;
  TsBenchOptions *options = collect_options (self, &error);

  if (options == NULL)
    {
      toast_error (self, error->message);
      return;
    }
  self->run_cancellable = g_cancellable_new ();
  show_running (self, TRUE);
  gtk_progress_bar_set_fraction (self->progress_bar, 0.0);
  gtk_progress_bar_set_text (self->progress_bar, _("Loading the model…"));
  ts_bench_run_async (options, progress_cb, self, self->run_cancellable, run_done_cb,
                      g_object_ref (self));
  update_actions (self);
}

static void
cancel_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsBenchPage *self = TS_BENCH_PAGE (widget);

  if (self->run_cancellable != NULL)
    g_cancellable_cancel (self->run_cancellable);
}

/* ---- Export ----------------------------------------------------------- */

gboolean
_ts_bench_page_export_to (TsBenchPage *self, const char *path, const char *format,
                          GError **error)
{
  g_autofree char *text = NULL;

  if (self->results == NULL)
    {
      g_set_error_literal (error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, _("Nothing to export yet"));
      return FALSE;
    }
  text = g_str_equal (format, "json")
    ? ts_bench_results_to_json_document (self->results, self->model_path, self->adapter_path)
    : ts_bench_results_to_csv (self->results);
  return g_file_set_contents (path, text, -1, error);
}

static void
export_chosen_cb (GtkWidget *owner, const char *path, gpointer user_data)
{
  TsBenchPage *self = TS_BENCH_PAGE (owner);
  const char *format = user_data;
  g_autoptr (GError) error = NULL;

  if (path == NULL)
    toast (self, _("Results can only be saved to a local file"));
  else if (!_ts_bench_page_export_to (self, path, format, &error))
    toast_error (self, error->message);
  else
    toast (self, _("Results exported"));
}

static void
export_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  /* Static strings: they outlive the dialog. */
  const char *format = g_str_equal (g_variant_get_string (param, NULL), "json") ? "json" : "csv";
  g_autofree char *name = g_strdup_printf ("tensafe-bench.%s", format);

  ts_file_chooser_run (widget, GTK_FILE_CHOOSER_ACTION_SAVE, _("Export Results"), _("_Export"),
                       name, NULL, export_chosen_cb, (gpointer) format);
}

static void
choose_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  choose_file (TS_BENCH_PAGE (widget), g_str_equal (action_name, "bench.choose-model"));
}

/* ---- Table ------------------------------------------------------------ */

static void
cell_setup_cb (GtkSignalListItemFactory *factory, GtkListItem *item)
{
  GtkWidget *label = gtk_label_new (NULL);

  gtk_label_set_xalign (GTK_LABEL (label), 1.0);
  gtk_widget_add_css_class (label, "numeric");
  gtk_list_item_set_child (item, label);
}

static void
cell_bind_cb (GtkSignalListItemFactory *factory, GtkListItem *item, const char *column)
{
  g_autofree char *text = ts_bench_item_format (gtk_list_item_get_item (item), column);
  GtkLabel *label = GTK_LABEL (gtk_list_item_get_child (item));

  /* Names read from the left, numbers line up on the right. */
  gtk_label_set_xalign (label, g_str_equal (column, "label") ? 0.0f : 1.0f);
  gtk_label_set_text (label, text);
}

static void
add_column (TsBenchPage *self, const char *title, const char *column)
{
  GtkListItemFactory *factory = gtk_signal_list_item_factory_new ();
  g_autoptr (GtkColumnViewColumn) view_column = NULL;

  g_signal_connect (factory, "setup", G_CALLBACK (cell_setup_cb), NULL);
  /* @column is a literal or a stage name: static strings. */
  g_signal_connect (factory, "bind", G_CALLBACK (cell_bind_cb), (gpointer) column);
  view_column = gtk_column_view_column_new (title, factory);
  gtk_column_view_column_set_expand (view_column, g_str_equal (column, "label"));
  gtk_column_view_append_column (self->results_view, view_column);
}

static void
setup_table (TsBenchPage *self)
{
  self->store = g_list_store_new (TS_TYPE_BENCH_ITEM);
  gtk_column_view_set_model (self->results_view,
                             GTK_SELECTION_MODEL (gtk_no_selection_new (
                               G_LIST_MODEL (g_object_ref (self->store)))));
  add_column (self, _("Configuration"), "label");
  add_column (self, _("Rank"), "rank");
  add_column (self, _("Tokens/s"), "tokens-per-s");
  add_column (self, _("ms/Token"), "total");
  add_column (self, _("HE ms/Module"), "he-per-module");
  for (int s = 0; s < TS_N_STAGES; s++)
    add_column (self, ts_stage_name ((TsStage) s), ts_stage_name ((TsStage) s));
  add_column (self, _("Ciphertext/Token"), "bytes");
  add_column (self, _("Max |Δ| Error"), "error");
}

/* ---- Devices ---------------------------------------------------------- */

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

/* ---- Test access ------------------------------------------------------ */

GListModel *
_ts_bench_page_get_results_model (TsBenchPage *self)
{
  return G_LIST_MODEL (self->store);
}

TsBenchChart *
_ts_bench_page_get_chart (TsBenchPage *self)
{
  return self->chart;
}

gboolean
_ts_bench_page_get_running (TsBenchPage *self)
{
  return self->run_cancellable != NULL;
}

const char *
_ts_bench_page_get_last_toast (TsBenchPage *self)
{
  return self->last_toast;
}

void
_ts_bench_page_set_ranks (TsBenchPage *self, const char *ranks)
{
  gtk_editable_set_text (GTK_EDITABLE (self->ranks_row), ranks);
}

void
_ts_bench_page_set_modes (TsBenchPage *self, gboolean remote, gboolean private_mode,
                          gboolean stack)
{
  gtk_switch_set_active (self->remote_switch, remote);
  gtk_switch_set_active (self->private_switch, private_mode);
  gtk_switch_set_active (self->stack_switch, stack);
}

void
_ts_bench_page_set_inputs (TsBenchPage *self, const char *model, const char *adapter,
                           guint n_tokens, const char *const *presets_on)
{
  GtkCheckButton *checks[N_PRESET_CHECKS];
  const TsCkksPreset *presets = preset_checks (self, checks);

  set_path (self, TRUE, model);
  set_path (self, FALSE, adapter);
  gtk_spin_button_set_value (self->tokens_spin, n_tokens);
  for (guint i = 0; i < N_PRESET_CHECKS; i++)
    gtk_check_button_set_active (checks[i], g_strv_contains (presets_on, presets[i].name));
}

/* ---- GObject ---------------------------------------------------------- */

GtkWidget *
ts_bench_page_new (TsSettings *settings)
{
  g_return_val_if_fail (TS_IS_SETTINGS (settings), NULL);
  return g_object_new (TS_TYPE_BENCH_PAGE, "settings", settings, NULL);
}

static void
ts_bench_page_constructed (GObject *object)
{
  TsBenchPage *self = TS_BENCH_PAGE (object);

  G_OBJECT_CLASS (ts_bench_page_parent_class)->constructed (object);
  g_return_if_fail (TS_IS_SETTINGS (self->settings));   /* required (ts-bench-page.h) */
  load_paths (self);
}

static void
ts_bench_page_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_SETTINGS:
      g_value_set_object (value, TS_BENCH_PAGE (object)->settings);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_bench_page_set_property (GObject *object, guint prop_id, const GValue *value,
                            GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_SETTINGS:
      TS_BENCH_PAGE (object)->settings = g_value_dup_object (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_bench_page_dispose (GObject *object)
{
  TsBenchPage *self = TS_BENCH_PAGE (object);

  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  if (self->run_cancellable != NULL)
    g_cancellable_cancel (self->run_cancellable);
  g_clear_object (&self->store);
  g_clear_pointer (&self->results, g_ptr_array_unref);
  g_clear_pointer (&self->model_path, g_free);
  g_clear_pointer (&self->adapter_path, g_free);
  g_clear_pointer (&self->last_toast, g_free);
  g_clear_object (&self->settings);
  /* AdwBin drops its child, the toast overlay, with everything in it. */
  G_OBJECT_CLASS (ts_bench_page_parent_class)->dispose (object);
}

static void
ts_bench_page_class_init (TsBenchPageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->constructed = ts_bench_page_constructed;
  object_class->dispose = ts_bench_page_dispose;
  object_class->get_property = ts_bench_page_get_property;
  object_class->set_property = ts_bench_page_set_property;
  properties[PROP_SETTINGS] =
    g_param_spec_object ("settings", NULL, NULL, TS_TYPE_SETTINGS,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  g_type_ensure (TS_TYPE_BENCH_CHART);
  g_type_ensure (TS_TYPE_SETTINGS);
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-bench-page.ui");
  gtk_widget_class_bind_template_callback (widget_class, evaluator_subtitle);
  gtk_widget_class_bind_template_callback (widget_class, has_text);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, model_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, adapter_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, fast_check);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, default_check);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, wide_check);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, ranks_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, remote_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, remote_switch);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, private_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, private_switch);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, stack_switch);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, tokens_spin);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, run_button);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, progress_bar);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, results_view);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, chart);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, cpu_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, gpu_row);
  gtk_widget_class_bind_template_child (widget_class, TsBenchPage, kernels_row);

  gtk_widget_class_install_action (widget_class, "bench.run", NULL, run_action);
  gtk_widget_class_install_action (widget_class, "bench.cancel", NULL, cancel_action);
  gtk_widget_class_install_action (widget_class, "bench.export", "s", export_action);
  gtk_widget_class_install_action (widget_class, "bench.choose-model", NULL, choose_action);
  gtk_widget_class_install_action (widget_class, "bench.choose-adapter", NULL, choose_action);
}

static void
ts_bench_page_init (TsBenchPage *self)
{
  g_autofree char *features = ts_cpu_features_describe ();
  g_autofree char *kernels = ts_cpu_kernels_describe ();
  /* the kernels in use decide what the numbers below mean */
  g_autofree char *cpu = g_strdup_printf ("%s\n%s", features, kernels);

  gtk_widget_init_template (GTK_WIDGET (self));

  adw_action_row_set_subtitle (self->cpu_row, cpu);
  adw_action_row_set_subtitle (self->kernels_row,
                               TS_HAVE_CUDA ? _("Built with CUDA kernels")
                                            : _("Built without CUDA kernels"));
  adw_action_row_set_subtitle (self->gpu_row, _("Probing…"));

  setup_table (self);
  update_actions (self);
  self->cancellable = g_cancellable_new ();
  ts_gpu_probe_async (self->cancellable, gpu_probe_cb, self);
}

const char *
ts_bench_page_get_gpu_summary (TsBenchPage *self)
{
  g_return_val_if_fail (TS_IS_BENCH_PAGE (self), NULL);
  return adw_action_row_get_subtitle (self->gpu_row);
}
