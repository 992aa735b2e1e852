/* test-bench.c: the benchmark page runs the golden model to completion, fills the
 * table and the chart, exports, and stops when asked; it benches the
 * adapter-private mode against a real tensafe-he-server, and a random stack.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <adwaita.h>
#include <glib/gstdio.h>

#include "gui-evaluator.h"
#include "gui-test-util.h"
#include "ts-application.h"
#include "ts-bench-export.h"
#include "ts-bench-item.h"
#include "ts-bench-page-private.h"
#include "ts-chat-page.h"
#include "ts-test-util.h"

#define GOLDEN_DIR "qwen35/tiny-qwen35moe-f32/"

typedef struct {
  GtkWindow *window;
  TsBenchPage *page;
} Fixture;

/* The application's settings, which the page and the preferences share. */
static TsSettings *
app_settings (void)
{
  return ts_application_get_settings (TS_APPLICATION (g_application_get_default ()));
}

static GSettings *
app_gsettings (void)
{
  return ts_settings_get_gsettings (app_settings ());
}

/* A page as the window makes it: on the application's settings. */
static TsBenchPage *
bench_page_new (void)
{
  return g_object_new (TS_TYPE_BENCH_PAGE, "settings", app_settings (), NULL);
}

static void
fixture_setup (Fixture *f, gconstpointer data)
{
  g_autofree char *model = ts_test_data_path (GOLDEN_DIR "tiny-qwen35moe-f32.gguf");
  g_autofree char *lora = ts_test_data_path (GOLDEN_DIR "lora/tiny-qwen35moe-lora-f32.gguf");
  const char *const *presets = data;

  f->window = GTK_WINDOW (gtk_window_new ());
  f->page = TS_BENCH_PAGE (bench_page_new ());
  gtk_window_set_child (f->window, GTK_WIDGET (f->page));
  gtk_window_present (f->window);
  _ts_bench_page_set_inputs (f->page, model, lora, 3, presets);
}

static void
fixture_teardown (Fixture *f, gconstpointer data)
{
  gtk_window_destroy (f->window);
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static gboolean
finished (gpointer page)
{
  return !_ts_bench_page_get_running (page);
}

static void
wait_for_run (TsBenchPage *page)
{
  gui_wait_until (finished, page, 60, "the benchmark to finish");
}

static const char *const fast_only[] = { "fast", NULL };

static void
test_run_fills_table (Fixture *f, gconstpointer data)
{
  GListModel *rows = _ts_bench_page_get_results_model (f->page);
  g_autoptr (TsBenchItem) plain = NULL, local = NULL;
  g_autofree char *plain_label = NULL, *local_label = NULL, *encrypt = NULL;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL));
  g_assert_true (_ts_bench_page_get_running (f->page));
  wait_for_run (f->page);
  g_assert_null (_ts_bench_page_get_last_toast (f->page));

  /* Plaintext, then HE local with the fast preset. */
  g_assert_cmpuint (g_list_model_get_n_items (rows), ==, 2);
  g_assert_cmpuint (ts_bench_chart_get_n_bars (_ts_bench_page_get_chart (f->page)), ==, 2);
  plain = g_list_model_get_item (rows, 0);
  local = g_list_model_get_item (rows, 1);
  plain_label = ts_bench_item_format (plain, "label");
  local_label = ts_bench_item_format (local, "label");
  g_assert_cmpstr (plain_label, ==, "Plaintext");
  g_assert_cmpstr (local_label, ==, "HE local · fast");
  g_assert_cmpuint (ts_bench_item_get_result (plain)->n_tokens, ==, 3);
  g_assert_cmpuint (ts_bench_item_get_result (local)->n_tokens, ==, 3);
  encrypt = ts_bench_item_format (local, "encrypt");
  g_assert_cmpfloat (g_ascii_strtod (encrypt, NULL), >, 0.0);
  /* Both configurations generate the same greedy tokens. */
  g_assert_cmpmem (ts_bench_item_get_result (plain)->tokens->data, 3 * 4,
                   ts_bench_item_get_result (local)->tokens->data, 3 * 4);
}

static void
test_export (Fixture *f, gconstpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("ts-bench-XXXXXX", &error);
  g_autofree char *csv_path = g_build_filename (dir, "bench.csv", NULL);
  g_autofree char *json_path = g_build_filename (dir, "bench.json", NULL);
  g_autofree char *csv = NULL, *json = NULL;

  g_assert_false (_ts_bench_page_export_to (f->page, csv_path, "csv", &error));
  g_clear_error (&error);
  gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL);
  wait_for_run (f->page);
  g_assert_true (_ts_bench_page_export_to (f->page, csv_path, "csv", &error));
  g_assert_true (_ts_bench_page_export_to (f->page, json_path, "json", &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (csv_path, &csv, NULL, NULL));
  g_assert_true (g_file_get_contents (json_path, &json, NULL, NULL));
  g_assert_true (g_str_has_prefix (csv, "configuration,mode,preset,rank,tokens,decode_tok_s,"));
  g_assert_nonnull (strstr (csv, "\n\"plaintext\",plain,,"));
  g_assert_nonnull (strstr (csv, "\n\"HE local · fast\",local,fast,"));
  g_assert_nonnull (strstr (json, "\"decode_tok_s\""));
  g_unlink (csv_path);
  g_unlink (json_path);
  g_rmdir (dir);
}

/* Many tokens on every preset: the stop button ends it early, before any
 * configuration finished, so the table stays empty. */
static void
test_cancel (Fixture *f, gconstpointer data)
{
  GtkSpinButton *tokens = GTK_SPIN_BUTTON (gtk_widget_get_template_child (
    GTK_WIDGET (f->page), TS_TYPE_BENCH_PAGE, "tokens_spin"));

  gtk_spin_button_set_value (tokens, 1000);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.cancel", NULL));
  wait_for_run (f->page);
  g_assert_cmpstr (_ts_bench_page_get_last_toast (f->page), ==, "Benchmark stopped");
  g_assert_cmpuint (g_list_model_get_n_items (_ts_bench_page_get_results_model (f->page)), ==, 0);
  /* And it can run again afterwards. */
  gtk_spin_button_set_value (tokens, 2);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL));
  wait_for_run (f->page);
  g_assert_cmpuint (g_list_model_get_n_items (_ts_bench_page_get_results_model (f->page)), >, 0);
}

static GtkWidget *
template_child (TsBenchPage *page, const char *id)
{
  return GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (page), TS_TYPE_BENCH_PAGE, id));
}

/* Where @widget is in its window, once the window has laid it out. */
static graphene_rect_t
bounds_in_window (GtkWidget *widget)
{
  graphene_rect_t bounds;
  gint64 until = g_get_monotonic_time () + G_USEC_PER_SEC / 4;

  /* A few frames: what changed has been measured and allocated. */
  while (g_get_monotonic_time () < until)
    g_main_context_iteration (NULL, FALSE);
  g_assert_true (gtk_widget_compute_bounds (widget, GTK_WIDGET (gtk_widget_get_root (widget)), &bounds));
  return bounds;
}

static void
scroll_to_end (GtkWidget *widget)
{
  GtkScrolledWindow *scroller = GTK_SCROLLED_WINDOW (gtk_widget_get_ancestor (widget, GTK_TYPE_SCROLLED_WINDOW));
  GtkAdjustment *adj = gtk_scrolled_window_get_vadjustment (scroller);

  bounds_in_window (widget);
  g_assert_cmpfloat (gtk_adjustment_get_upper (adj), >, gtk_adjustment_get_page_size (adj));
  gtk_adjustment_set_value (adj, gtk_adjustment_get_upper (adj) - gtk_adjustment_get_page_size (adj));
}

static void
assert_same_place (const graphene_rect_t *a, const graphene_rect_t *b)
{
  g_assert_cmpfloat (a->origin.x, ==, b->origin.x);
  g_assert_cmpfloat (a->origin.y, ==, b->origin.y);
  g_assert_cmpfloat (a->size.width, ==, b->size.width);
  g_assert_cmpfloat (a->size.height, ==, b->size.height);
}

static gboolean
second_row_running (gpointer page)
{
  const char *text = gtk_progress_bar_get_text (GTK_PROGRESS_BAR (template_child (page, "progress_bar")));

  return !_ts_bench_page_get_running (page) || strstr (text, "HE local") != NULL;
}

/* Stopped while the second configuration runs: the first one's row stays,
 * and the page says the run was stopped. While it runs, the Run button
 * stays where it was, at its size, though the page was scrolled to the
 * previous run's rows. */
static void
test_stop_keeps_rows (Fixture *f, gconstpointer data)
{
  GListModel *rows = _ts_bench_page_get_results_model (f->page);
  GtkWidget *button = template_child (f->page, "run_button");
  GtkProgressBar *progress = GTK_PROGRESS_BAR (template_child (f->page, "progress_bar"));
  GtkSpinButton *tokens = GTK_SPIN_BUTTON (template_child (f->page, "tokens_spin"));
  g_autoptr (TsBenchItem) first = NULL;
  g_autofree char *label = NULL;
  graphene_rect_t idle, running;

  /* A window shorter than the page, scrolled to its end (where the
   * results are): the page must not get shorter under the pointer. */
  gtk_window_set_default_size (f->window, 1000, 600);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL));
  wait_for_run (f->page);
  g_assert_cmpuint (g_list_model_get_n_items (rows), ==, 2);
  scroll_to_end (button);
  idle = bounds_in_window (button);

  gtk_spin_button_set_value (tokens, 1000);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL));
  running = bounds_in_window (button);
  g_assert_true (_ts_bench_page_get_running (f->page));
  assert_same_place (&idle, &running);
  gui_wait_until (second_row_running, f->page, 60, "the second configuration to start");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.cancel", NULL));
  wait_for_run (f->page);

  g_assert_cmpstr (_ts_bench_page_get_last_toast (f->page), ==, "Benchmark stopped");
  g_assert_nonnull (strstr (gtk_progress_bar_get_text (progress), "Stopped"));
  g_assert_cmpuint (g_list_model_get_n_items (rows), ==, 1);
  first = g_list_model_get_item (rows, 0);
  label = ts_bench_item_format (first, "label");
  g_assert_cmpstr (label, ==, "Plaintext");
  g_assert_cmpuint (ts_bench_item_get_result (first)->n_tokens, ==, 1000);
  g_assert_cmpuint (ts_bench_chart_get_n_bars (_ts_bench_page_get_chart (f->page)), ==, 1);
}

/* Two ranks, each with plaintext and HE local. */
static void
test_ranks (Fixture *f, gconstpointer data)
{
  GListModel *rows = _ts_bench_page_get_results_model (f->page);
  g_autoptr (TsBenchItem) last = NULL;

  _ts_bench_page_set_ranks (f->page, "x");
  gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL);
  g_assert_false (_ts_bench_page_get_running (f->page));
  g_assert_cmpstr (_ts_bench_page_get_last_toast (f->page), ==, "“x” is not a rank between 1 and 4096");

  _ts_bench_page_set_ranks (f->page, "1, 3");
  gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL);
  wait_for_run (f->page);
  g_assert_cmpuint (g_list_model_get_n_items (rows), ==, 4);
  g_assert_cmpuint (ts_bench_chart_get_n_bars (_ts_bench_page_get_chart (f->page)), ==, 4);
  last = g_list_model_get_item (rows, 3);
  g_assert_cmpuint (ts_bench_item_get_result (last)->rank, ==, 3);
  g_assert_cmpint (ts_bench_item_get_result (last)->mode, ==, TS_HELORA_MODE_LOCAL);
}

/* The row of the first result in the given mode and privacy, transfer full. */
static TsBenchItem *
find_row (GListModel *rows, TsHeloraMode mode, gboolean private_mode)
{
  for (guint i = 0; i < g_list_model_get_n_items (rows); i++)
    {
      g_autoptr (TsBenchItem) item = g_list_model_get_item (rows, i);
      const TsBenchResult *r = ts_bench_item_get_result (item);

      if (r->mode == mode && r->private_mode == private_mode)
        return g_steal_pointer (&item);
    }
  return NULL;
}

static char *
export_text (TsBenchPage *page, const char *format)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("ts-bench-XXXXXX", &error);
  g_autofree char *path = g_build_filename (dir, "bench", NULL);
  char *text = NULL;

  g_assert_no_error (error);
  g_assert_true (_ts_bench_page_export_to (page, path, format, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  g_unlink (path);
  g_rmdir (dir);
  return text;
}

/* The adapter-private switch adds a private remote row, served by a real
 * evaluator over the demo adapter. */
static void
test_private_remote (Fixture *f, gconstpointer data)
{
  GSettings *settings = app_gsettings ();
  g_autofree char *model = ts_chat_page_find_demo_file ("tiny-qwen35moe-f32.gguf");
  g_autofree char *dir = gui_evaluator_demo_dir ();
  g_autofree char *adapter = g_build_filename (dir, "tiny-qwen35moe-lora-f32.gguf", NULL);
  const char *args[] = { "--model", model, "--threads", "1", NULL };
  GListModel *rows = _ts_bench_page_get_results_model (f->page);
  g_autoptr (TsBenchItem) private = NULL;
  g_autofree char *label = NULL, *he = NULL, *csv = NULL;
  GuiEvaluator server = { 0 };

  gui_evaluator_start (&server, dir, args);
  g_settings_set_string (settings, "evaluator-url", server.ws_url);
  _ts_bench_page_set_inputs (f->page, model, adapter, 2, fast_only);
  _ts_bench_page_set_modes (f->page, FALSE, TRUE, FALSE);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL));
  wait_for_run (f->page);
  g_assert_null (_ts_bench_page_get_last_toast (f->page));

  /* Plaintext, HE local, HE remote private: no plain remote row. */
  g_assert_cmpuint (g_list_model_get_n_items (rows), ==, 3);
  g_assert_null (find_row (rows, TS_HELORA_MODE_REMOTE, FALSE));
  private = find_row (rows, TS_HELORA_MODE_REMOTE, TRUE);
  g_assert_nonnull (private);
  label = ts_bench_item_format (private, "label");
  g_assert_cmpstr (label, ==, "HE remote · private · fast");
  he = ts_bench_item_format (private, "he-per-module");
  g_assert_cmpfloat (g_ascii_strtod (he, NULL), >, 0.0);
  g_assert_cmpfloat (ts_bench_item_get_result (private)->he_ms_per_module, >, 0.0);
  g_assert_cmpuint (ts_bench_item_get_result (private)->n_tokens, ==, 2);
  g_test_message ("private: %s HE ms/module", he);
  csv = export_text (f->page, "csv");
  g_assert_nonnull (strstr (csv, "\n\"HE remote private · fast\",remote-private,fast,"));

  g_settings_reset (settings, "evaluator-url");
  gui_evaluator_clear (&server);
  ts_test_remove_tree (dir);
}

/* The stack switch puts random attention and FFN adapters on the given
 * one: more modules, still one encryption per distinct h. */
static void
test_stack (Fixture *f, gconstpointer data)
{
  GListModel *rows = _ts_bench_page_get_results_model (f->page);
  g_autoptr (TsBenchItem) single = NULL, stacked = NULL, stacked_plain = NULL;
  g_autofree char *label = NULL, *plain_label = NULL, *csv = NULL;
  const TsBenchResult *r;

  gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL);
  wait_for_run (f->page);
  single = find_row (rows, TS_HELORA_MODE_LOCAL, FALSE);
  g_assert_nonnull (single);
  g_assert_false (ts_bench_item_get_result (single)->stacked);

  _ts_bench_page_set_modes (f->page, FALSE, FALSE, TRUE);
  gtk_widget_activate_action (GTK_WIDGET (f->page), "bench.run", NULL);
  wait_for_run (f->page);
  g_assert_null (_ts_bench_page_get_last_toast (f->page));
  g_assert_cmpuint (g_list_model_get_n_items (rows), ==, 2);
  stacked_plain = find_row (rows, TS_HELORA_MODE_PLAIN, FALSE);
  stacked = find_row (rows, TS_HELORA_MODE_LOCAL, FALSE);
  plain_label = ts_bench_item_format (stacked_plain, "label");
  label = ts_bench_item_format (stacked, "label");
  g_assert_cmpstr (plain_label, ==, "Plaintext · stack");
  g_assert_cmpstr (label, ==, "HE local · fast · stack");
  r = ts_bench_item_get_result (stacked);
  g_assert_true (r->stacked);
  g_assert_cmpuint (r->n_modules, >, ts_bench_item_get_result (single)->n_modules);
  g_assert_cmpuint (r->n_inputs, >, 0);
  g_test_message ("stack: %u modules (adapter alone %u), %u distinct inputs", r->n_modules,
                  ts_bench_item_get_result (single)->n_modules, r->n_inputs);
  g_assert_cmpfloat (ts_bench_result_encryptions_per_token (r), ==, (double) r->n_inputs);
  csv = export_text (f->page, "csv");
  g_assert_nonnull (strstr (csv, "\n\"HE local · fast · stack\",local,fast,"));
}

/* A first run needs no choice: the demo model and adapter are preselected. */
static void
test_demo_by_default (void)
{
  GSettings *settings = app_gsettings ();
  TsBenchPage *page;
  AdwActionRow *model_row;

  g_settings_reset (settings, "bench-model");
  g_settings_reset (settings, "bench-adapter");
  page = g_object_ref_sink (bench_page_new ());
  model_row = ADW_ACTION_ROW (gtk_widget_get_template_child (GTK_WIDGET (page), TS_TYPE_BENCH_PAGE,
                                                             "model_row"));
  g_assert_true (g_str_has_suffix (adw_action_row_get_subtitle (model_row),
                                   "/demo/tiny-qwen35moe-f32.gguf"));
  g_assert_true (g_file_test (adw_action_row_get_subtitle (model_row), G_FILE_TEST_IS_REGULAR));
  g_assert_finalize_object (page);
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

/* The remote row follows the evaluator address in the preferences. */
static void
test_remote_row (void)
{
  GSettings *settings = app_gsettings ();
  TsBenchPage *page = g_object_ref_sink (bench_page_new ());
  GtkWidget *row = GTK_WIDGET (gtk_widget_get_template_child (GTK_WIDGET (page), TS_TYPE_BENCH_PAGE,
                                                              "remote_row"));
  GtkWidget *private_row = GTK_WIDGET (gtk_widget_get_template_child (
    GTK_WIDGET (page), TS_TYPE_BENCH_PAGE, "private_row"));

  g_settings_set_string (settings, "evaluator-url", "");
  g_assert_false (gtk_widget_get_sensitive (row));
  /* The adapter-private mode is the remote evaluator's too. */
  g_assert_false (gtk_widget_get_sensitive (private_row));
  g_settings_set_string (settings, "evaluator-url", "ws://127.0.0.1:9/v1/helora");
  g_assert_true (gtk_widget_get_sensitive (row));
  g_assert_cmpstr (adw_action_row_get_subtitle (ADW_ACTION_ROW (row)), ==, "ws://127.0.0.1:9/v1/helora");
  g_assert_true (gtk_widget_get_sensitive (private_row));
  g_settings_reset (settings, "evaluator-url");
  g_assert_finalize_object (page);
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

static void
test_needs_model (void)
{
  TsBenchPage *page = g_object_ref_sink (bench_page_new ());
  const char *none[] = { NULL };

  _ts_bench_page_set_inputs (page, "", "", 3, none);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (page), "bench.run", NULL));
  g_assert_false (_ts_bench_page_get_running (page));
  g_assert_cmpstr (_ts_bench_page_get_last_toast (page), ==, "Choose a model and an adapter first");
  g_assert_finalize_object (page);
  while (g_main_context_iteration (NULL, FALSE))
    ;
}

int
main (int argc, char **argv)
{
  g_autoptr (TsApplication) app = NULL;

  /* Software GL drivers keep allocations LeakSanitizer reports; the cairo
   * renderer draws the same widgets without them. */
  g_setenv ("GSK_RENDERER", "cairo", FALSE);
  g_test_init (&argc, &argv, NULL);
  if (!gtk_init_check ())
    {
      return gui_run_without_display ("/bench/no-display");
    }
  adw_init ();
  /* The page reads its settings through the default application. */
  app = ts_application_new (G_APPLICATION_NON_UNIQUE);
  g_assert_true (g_application_register (G_APPLICATION (app), NULL, NULL));
#define ADD(path, func) \
  g_test_add ("/bench/" path, Fixture, fast_only, fixture_setup, func, fixture_teardown)
  ADD ("run-fills-table", test_run_fills_table);
  ADD ("export", test_export);
  ADD ("cancel", test_cancel);
  ADD ("stop-keeps-rows", test_stop_keeps_rows);
  ADD ("ranks", test_ranks);
  ADD ("private-remote", test_private_remote);
  ADD ("stack", test_stack);
#undef ADD
  g_test_add_func ("/bench/demo-by-default", test_demo_by_default);
  g_test_add_func ("/bench/needs-model", test_needs_model);
  g_test_add_func ("/bench/remote-row", test_remote_row);
  return g_test_run ();
}
