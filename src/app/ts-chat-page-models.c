/* ts-chat-page-models.c: the chat page's model and adapter pickers, loading and exports.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-chat-page-private.h"
#include "ts-adapter-stack.h"
#include "ts-config.h"
#include "ts-models-catalog.h"
#include "ts-models-files.h"
#include "ts-models-installed.h"

char *
ts_chat_page_find_demo_file (const char *name)
{
  const char *dirs[] = { g_getenv ("TENSAFE_DEMO_DIR"), TS_PKGDATADIR "/demo", TS_DEMO_SOURCE_DIR };

  for (gsize i = 0; i < G_N_ELEMENTS (dirs); i++)
    {
      g_autofree char *path = NULL;

      if (dirs[i] == NULL)
        continue;
      path = g_build_filename (dirs[i], name, NULL);
      if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
        return g_steal_pointer (&path);
    }
  return NULL;
}

static gboolean
is_demo (const char *path, const char *name)
{
  g_autofree char *demo = ts_chat_page_find_demo_file (name);

  return path != NULL && demo != NULL && g_str_equal (path, demo);
}

static char *
display_name (const char *path)
{
  g_autofree char *base = g_path_get_basename (path);
  char *dot = g_str_has_suffix (base, ".gguf") ? strrchr (base, '.') : NULL;

  if (dot != NULL)
    *dot = '\0';
  return g_steal_pointer (&base);
}

static char *
adapter_name (const char *path)
{
  return is_demo (path, TS_DEMO_ADAPTER) ? g_strdup (_("Demo Adapter")) : display_name (path);
}

/* "name", "a ×0.70 + b ×0.30" for a stack, or "no adapter". */
char *
_ts_chat_page_adapter_display_name (TsChatPage *self)
{
  guint n = self->model != NULL ? ts_generation_model_get_n_adapters (self->model) : 0;
  g_autoptr (GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autofree float *weights = g_new (float, MAX (n, 1));

  if (self->adapter_path == NULL)
    return g_strdup (_("no adapter"));
  /* Switched to another adapter on the loaded model: that one alone. */
  if (!self->adapter_is_own)
    return adapter_name (self->adapter_path);
  for (guint i = 0; i < n; i++)
    g_ptr_array_add (names, adapter_name (ts_generation_model_get_nth_adapter (self->model, i,
                                                                                &weights[i])));
  if (n < 2 && (n == 0 || weights[0] == 1.0f))
    return adapter_name (self->adapter_path);
  return ts_adapter_stack_describe ((const char *const *) names->pdata, weights, n);
}

const char *
_ts_chat_page_request_adapter (TsChatPage *self)
{
  return self->adapter_is_own ? NULL : self->adapter_path;
}

/* "Automatic" while every turn is routed, else the adapter that answers. */
static void
update_adapter_label (TsChatPage *self)
{
  gboolean automatic = self->routing != NULL && self->adapter_override[0] == '\0';
  g_autofree char *adapter = _ts_chat_page_adapter_display_name (self);
  g_autofree char *tooltip = NULL;

  gtk_menu_button_set_label (self->adapter_button, automatic ? _("Automatic") : adapter);
  if (automatic)
    tooltip = g_strdup_printf (_("Each turn is routed to the installed adapter that fits it "
                                 "best; %s answers when none does"), adapter);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->adapter_button), tooltip);
}

void
_ts_chat_page_update_subtitles (TsChatPage *self)
{
  g_autofree char *model = self->model_path != NULL ? display_name (self->model_path) : NULL;
  g_autofree char *evaluator = _ts_chat_page_describe_evaluator (self);
  g_autofree char *he = NULL;
  const char *plain;

  if (is_demo (self->model_path, TS_DEMO_MODEL))
    plain = _("Demo model: tiny and random, so its text is gibberish");
  else
    plain = model != NULL ? model : _("No model");
  he = g_strdup_printf ("%s · %s", evaluator, plain);
  ts_chat_pane_set_subtitle (self->plain_pane, plain);
  ts_chat_pane_set_subtitle (self->he_pane, he);
  gtk_menu_button_set_label (self->model_button,
                             is_demo (self->model_path, TS_DEMO_MODEL) ? _("Demo Model")
                             : model != NULL ? model : _("Choose Model"));
  update_adapter_label (self);
}

/* What a load or an adapter switch was asked for, until it is done. It
 * holds no reference on the page: a page dropped mid-load cancels it, and
 * then the callbacks return before touching the page. */
typedef struct {
  TsChatPage *self;
  char *model_path;
  char *adapter_path;            /* the first adapter, or NULL */
} Load;

static void
load_free (Load *load)
{
  g_free (load->model_path);
  g_free (load->adapter_path);
  g_free (load);
}

static void build_model_menu (TsChatPage *self);

/* @model is the loaded one, or (an adapter switch) the page's own: the
 * adapter is then no longer the one the model was loaded with. */
static void
loaded (TsChatPage *self, TsGenerationModel *model, const Load *load)
{
  self->adapter_is_own = model != self->model;
  if (model == self->model)
    ts_generation_model_unref (model);
  else
    {
      g_clear_pointer (&self->model, ts_generation_model_unref);
      self->model = model;
      g_free (self->model_path);
      self->model_path = g_strdup (load->model_path);
    }
  g_free (self->adapter_path);
  self->adapter_path = g_strdup (load->adapter_path);
  _ts_chat_page_market_set_adapter (self, self->adapter_path);
  _ts_chat_page_update_subtitles (self);
  _ts_chat_page_update_actions (self);
  _ts_chat_page_routing_refresh (self);
  build_model_menu (self);
  /* ready: typing goes to the prompt at once (not after a dozen Tabs) */
  gtk_widget_grab_focus (GTK_WIDGET (self->prompt_entry));
}

static void
load_done_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  Load *load = data;
  g_autoptr (GError) error = NULL;
  TsGenerationModel *model = ts_generation_model_load_stack_finish (result, &error);

  if (model != NULL)
    loaded (load->self, model, load);
  else if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    _ts_chat_page_error (load->self, error->message);
  load_free (load);
}

static void
switch_done_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  Load *load = data;
  g_autoptr (GError) error = NULL;

  if (ts_generation_model_load_lora_finish (result, &error))
    loaded (load->self, ts_generation_model_ref (load->self->model), load);
  else if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    _ts_chat_page_error (load->self, error->message);
  load_free (load);
}

void
_ts_chat_page_load_model (TsChatPage *self, const char *model_path, const char *adapter_path)
{
  _ts_chat_page_load_stack (self, model_path, &adapter_path, NULL, adapter_path != NULL ? 1 : 0);
}

void
ts_chat_page_load_model (TsChatPage *self, const char *model_path, const char *adapter_path)
{
  g_return_if_fail (TS_IS_CHAT_PAGE (self));
  g_return_if_fail (model_path != NULL);

  _ts_chat_page_load_model (self, model_path, adapter_path);
}

void
_ts_chat_page_load_stack (TsChatPage *self, const char *model_path,
                          const char *const *adapter_paths, const float *weights, guint n)
{
  Load *load;

  if (model_path == NULL)
    {
      _ts_chat_page_toast (self, _("No model: choose a GGUF file"));
      return;
    }
  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  self->load_cancellable = g_cancellable_new ();
  load = g_new0 (Load, 1);
  load->self = self;
  load->model_path = g_strdup (model_path);
  load->adapter_path = g_strdup (n > 0 ? adapter_paths[0] : NULL);
  /* One adapter on the model already loaded: a switch, not a reload. The
   * model stays the same, read once into its cache. */
  if (self->model != NULL && g_strcmp0 (model_path, self->model_path) == 0 && n == 1
      && (weights == NULL || weights[0] == 1.0f))
    {
      ts_generation_model_load_lora_async (self->model, adapter_paths[0], self->load_cancellable,
                                           switch_done_cb, load);
      return;
    }
  ts_generation_model_load_stack_async (model_path, adapter_paths, weights, n,
                                        self->load_cancellable, load_done_cb, load);
}

/* ------------------------------------------------------------------------ */
/* Pickers                                                                    */

/* The installed adapters: marketplace installs and folders with a
 * metadata.json (ts_chat_router_find()). */
GPtrArray *
_ts_chat_page_list_adapters (TsChatPage *self)
{
  GPtrArray *out = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  g_autofree char *demo = ts_chat_page_find_demo_file (TS_DEMO_ADAPTER);
  g_autofree char *dir = _ts_chat_page_adapters_dir ();
  g_autoptr (GPtrArray) list = ts_chat_router_find (dir);

  if (demo != NULL)
    g_ptr_array_add (out, g_strdupv ((char *[]) { (char *) _("Demo Adapter"), demo, NULL }));
  for (guint i = 0; i < list->len; i++)
    {
      TsRoutableAdapter *a = g_ptr_array_index (list, i);
      g_autofree char *label = a->version != NULL ? g_strdup_printf ("%s %s", a->id, a->version)
                                                  : g_strdup (a->id);

      g_ptr_array_add (out, g_strdupv ((char *[]) { label, a->path, NULL }));
    }
  return out;
}

/* "Automatic" while routing is possible, the demo adapter, each installed
 * adapter, then "Open…" and "Stack…". */
void
_ts_chat_page_rebuild_adapter_menu (TsChatPage *self)
{
  g_autoptr (GMenu) menu = g_menu_new ();
  g_autoptr (GMenu) installed = g_menu_new ();
  g_autoptr (GMenu) other = g_menu_new ();
  g_autoptr (GPtrArray) list = _ts_chat_page_list_adapters (self);

  if (self->routing != NULL)
    {
      g_autoptr (GMenu) routing = g_menu_new ();
      g_autoptr (GMenuItem) item = g_menu_item_new (_("Automatic"), NULL);

      g_menu_item_set_action_and_target (item, "chat.route-adapter", "s", "");
      g_menu_append_item (routing, item);
      g_menu_append_section (menu, _("Every Turn"), G_MENU_MODEL (routing));
    }

  for (guint i = 0; i < list->len; i++)
    {
      char **adapter = g_ptr_array_index (list, i);
      g_autoptr (GMenuItem) item = g_menu_item_new (adapter[0], NULL);

      g_menu_item_set_action_and_target (item, "chat.use-adapter", "s", adapter[1]);
      g_menu_append_item (installed, item);
    }
  g_menu_append (other, _("Open Adapter File…"), "chat.open-adapter");
  g_menu_append (other, _("Stack Adapters…"), "chat.stack-adapters");
  g_menu_append_section (menu, _("Installed Adapters"), G_MENU_MODEL (installed));
  g_menu_append_section (menu, NULL, G_MENU_MODEL (other));
  gtk_menu_button_set_menu_model (self->adapter_button, G_MENU_MODEL (menu));
}

/* The models of the models folder (src/models): downloaded or imported. */
static GMenu *
installed_models_section (void)
{
  GMenu *section = g_menu_new ();
  g_autofree char *dir = ts_models_dir ();
  g_autoptr (TsModelCatalog) catalog = ts_model_catalog_load (NULL, NULL);
  g_autoptr (TsModelIndex) index = ts_model_index_load (dir, NULL);
  g_autoptr (GArray) states = NULL;

  if (catalog == NULL || index == NULL)
    return section;
  states = ts_models_list (catalog, index, dir);
  for (guint i = 0; i < states->len; i++)
    {
      const TsModelState *state = &g_array_index (states, TsModelState, i);
      g_autofree char *path = g_build_filename (dir, state->file, NULL);
      g_autoptr (GMenuItem) item = NULL;

      if (!state->installed)
        continue;
      item = g_menu_item_new (state->name, NULL);
      g_menu_item_set_action_and_target (item, "chat.use-model", "s", path);
      g_menu_append_item (section, item);
    }
  return section;
}

static void
build_model_menu (TsChatPage *self)
{
  g_autoptr (GMenu) menu = g_menu_new ();
  g_autoptr (GMenu) installed = installed_models_section ();
  g_autoptr (GMenu) other = g_menu_new ();

  g_menu_append_section (menu, _("Installed Models"), G_MENU_MODEL (installed));
  g_menu_append (other, _("Demo Model"), "chat.use-demo");
  g_menu_append (other, _("Open Model File…"), "chat.open-model");
  g_menu_append (other, _("Models…"), "win.models");
  g_menu_append_section (menu, NULL, G_MENU_MODEL (other));
  gtk_menu_button_set_menu_model (self->model_button, G_MENU_MODEL (menu));
}

static void
use_model_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  _ts_chat_page_load_model (TS_CHAT_PAGE (widget), g_variant_get_string (param, NULL), NULL);
}

static void
use_demo_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  g_autofree char *model = ts_chat_page_find_demo_file (TS_DEMO_MODEL);
  g_autofree char *adapter = ts_chat_page_find_demo_file (TS_DEMO_ADAPTER);

  _ts_chat_page_load_model (self, model, adapter);
}

static void
use_adapter_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);

  _ts_chat_page_adapter_picked (self, g_variant_get_string (param, NULL));
  _ts_chat_page_load_model (self, self->model_path, g_variant_get_string (param, NULL));
}

typedef void (*FileChosen) (TsChatPage *self, GFile *file);

static void
file_response_cb (GtkNativeDialog *dialog, int response, TsChatPage *self)
{
  FileChosen chosen = g_object_get_data (G_OBJECT (dialog), "ts-chosen");
  g_autoptr (GFile) file = NULL;

  if (response == GTK_RESPONSE_ACCEPT)
    file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
  if (file != NULL)
    chosen (self, file);
  gtk_native_dialog_destroy (dialog);
  g_object_unref (dialog);
  g_object_unref (self);
}

/* A portal-friendly file chooser; @pattern filters opened files. */
static void
choose_file (TsChatPage *self, const char *title, GtkFileChooserAction action,
             const char *pattern, const char *suggested, FileChosen chosen)
{
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  GtkFileChooserNative *dialog =
    gtk_file_chooser_native_new (title, GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, action,
                                 NULL, NULL);

  if (pattern != NULL)
    {
      g_autoptr (GtkFileFilter) filter = gtk_file_filter_new ();

      gtk_file_filter_set_name (filter, _("GGUF files"));
      gtk_file_filter_add_pattern (filter, pattern);
      gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
    }
  if (suggested != NULL)
    gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), suggested);
  gtk_native_dialog_set_modal (GTK_NATIVE_DIALOG (dialog), TRUE);
  g_object_set_data (G_OBJECT (dialog), "ts-chosen", chosen);
  g_signal_connect (dialog, "response", G_CALLBACK (file_response_cb), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
model_chosen (TsChatPage *self, GFile *file)
{
  g_autofree char *path = g_file_get_path (file);

  /* The current adapter may not fit another model: start without one. */
  _ts_chat_page_load_model (self, path, NULL);
}

static void
adapter_chosen (TsChatPage *self, GFile *file)
{
  g_autofree char *path = g_file_get_path (file);

  _ts_chat_page_adapter_picked (self, path);
  _ts_chat_page_load_model (self, self->model_path, path);
}

static void
open_model_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  choose_file (TS_CHAT_PAGE (widget), _("Open Model"), GTK_FILE_CHOOSER_ACTION_OPEN, "*.gguf",
               NULL, model_chosen);
}

static void
open_adapter_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  choose_file (TS_CHAT_PAGE (widget), _("Open Adapter"), GTK_FILE_CHOOSER_ACTION_OPEN, "*.gguf",
               NULL, adapter_chosen);
}

/* ------------------------------------------------------------------------ */
/* Exports                                                                    */

char *
ts_chat_page_runs_csv (TsChatPage *self)
{
  GString *csv = g_string_new (NULL);

  for (int he = 0; he <= 1; he++)
    {
      g_autofree char *one = ts_latency_chart_to_csv (ts_chat_pane_get_chart (ts_chat_page_get_pane (self, he)));
      g_auto (GStrv) lines = g_strsplit (one, "\n", -1);

      for (guint i = he ? 1 : 0; lines[i] != NULL && *lines[i] != '\0'; i++)
        g_string_append_printf (csv, "%s,%s\n", i == 0 ? "pane" : he ? "he" : "plain", lines[i]);
    }
  return g_string_free (csv, FALSE);
}

static void
csv_chosen (TsChatPage *self, GFile *file)
{
  g_autofree char *csv = ts_chat_page_runs_csv (self);
  g_autoptr (GError) error = NULL;

  if (!g_file_replace_contents (file, csv, strlen (csv), NULL, FALSE, G_FILE_CREATE_NONE, NULL,
                                NULL, &error))
    _ts_chat_page_error (self, error->message);
}

static void
save_chart_png (TsChatPane *pane, TsChatPage *self, GFile *file)
{
  g_autoptr (GError) error = NULL;

  if (!ts_latency_chart_save_png (ts_chat_pane_get_chart (pane), file, &error))
    _ts_chat_page_error (self, error->message);
}

static void
png_chosen (TsChatPage *self, GFile *file)
{
  save_chart_png (self->he_pane, self, file);
}

static void
plain_png_chosen (TsChatPage *self, GFile *file)
{
  save_chart_png (self->plain_pane, self, file);
}

static void
export_csv_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  choose_file (TS_CHAT_PAGE (widget), _("Export Run as CSV"), GTK_FILE_CHOOSER_ACTION_SAVE,
               NULL, "tensafe-run.csv", csv_chosen);
}

static void
export_png_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  choose_file (TS_CHAT_PAGE (widget), _("Export HE-LoRA Chart as PNG"),
               GTK_FILE_CHOOSER_ACTION_SAVE, NULL, "tensafe-latency.png", png_chosen);
}

static void
export_plain_png_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  choose_file (TS_CHAT_PAGE (widget), _("Export Plaintext Chart as PNG"),
               GTK_FILE_CHOOSER_ACTION_SAVE, NULL, "tensafe-latency-plain.png", plain_png_chosen);
}

void
_ts_chat_page_models_class_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "chat.use-demo", NULL, use_demo_action);
  gtk_widget_class_install_action (widget_class, "chat.use-model", "s", use_model_action);
  gtk_widget_class_install_action (widget_class, "chat.use-adapter", "s", use_adapter_action);
  gtk_widget_class_install_action (widget_class, "chat.open-model", NULL, open_model_action);
  gtk_widget_class_install_action (widget_class, "chat.open-adapter", NULL, open_adapter_action);
  gtk_widget_class_install_action (widget_class, "chat.export-csv", NULL, export_csv_action);
  gtk_widget_class_install_action (widget_class, "chat.export-png", NULL, export_png_action);
  gtk_widget_class_install_action (widget_class, "chat.export-plain-png", NULL,
                                   export_plain_png_action);
}


void
_ts_chat_page_models_init (TsChatPage *self)
{
  build_model_menu (self);
  _ts_chat_page_rebuild_adapter_menu (self);
  /* Adapters installed from the marketplace meanwhile show up when the
   * page is shown again. */
  g_signal_connect (self, "map", G_CALLBACK (_ts_chat_page_rebuild_adapter_menu), NULL);
  g_signal_connect (self, "map", G_CALLBACK (build_model_menu), NULL);
  g_signal_connect (self, "map", G_CALLBACK (_ts_chat_page_update_subtitles), NULL);
  use_demo_action (GTK_WIDGET (self), NULL, NULL);
}
