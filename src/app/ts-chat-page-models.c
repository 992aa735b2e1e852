/* ts-chat-page-models.c: the chat page's model and adapter pickers, loading and exports.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-chat-page-private.h"
#include "ts-adapter-base.h"
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

/* "Automatic" while every turn is routed, else the adapter that answers. */
static void
update_adapter_label (TsChatPage *self)
{
  gboolean automatic = ts_chat_page_get_routing (self) && self->adapter_override[0] == '\0';
  const char *adapter = ts_chat_session_get_adapter_name (self->session);
  g_autofree char *tooltip = NULL;

  gtk_menu_button_set_label (self->adapter_button, automatic ? _("Automatic") : adapter);
  if (automatic)
    tooltip = g_strdup_printf (_("Each turn is routed to the installed adapter that fits it "
                                 "best; %s answers when none does"), adapter);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->adapter_button), tooltip);
}

/* The Thinking switch applies to models that think; for another one it
 * says why it does nothing (and keeps the choice for the next model). */
static void
update_thinking_switch (TsChatPage *self)
{
  TsGenerationModel *model = ts_chat_session_get_model (self->session);
  gboolean can_think = model == NULL || ts_generation_model_can_think (model);
  const char *model_name = ts_chat_session_get_model_name (self->session);
  g_autofree char *tooltip = NULL;

  if (can_think)
    tooltip = g_strdup (_("Models that think (Qwen3, Qwen3.5) think before they answer; the "
                          "thinking shows above the answer and closes when the answer starts. "
                          "Off: they answer at once"));
  else
    tooltip = g_strdup_printf (_("%s does not think before it answers: only models such as "
                                 "Qwen3 and Qwen3.5 do"),
                               model_name != NULL ? model_name : _("This model"));
  gtk_widget_set_sensitive (GTK_WIDGET (self->thinking_switch), can_think);
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->thinking_switch), tooltip);
}

void
_ts_chat_page_update_subtitles (TsChatPage *self)
{
  const char *model = ts_chat_session_get_model_name (self->session);
  gboolean demo = ts_chat_session_get_model_is_demo (self->session);
  g_autofree char *evaluator = _ts_chat_page_describe_evaluator (self);
  g_autofree char *he = NULL;
  const char *plain;

  if (demo)
    plain = _("Demo model: tiny and random, so its text is gibberish");
  else
    plain = model != NULL ? model : _("No model");
  he = g_strdup_printf ("%s · %s", evaluator, plain);
  ts_chat_pane_set_subtitle (self->plain_pane, plain);
  ts_chat_pane_set_subtitle (self->he_pane, he);
  gtk_menu_button_set_label (self->model_button,
                             demo ? _("Demo Model")
                             : model != NULL ? model : _("Choose Model"));
  update_adapter_label (self);
  update_thinking_switch (self);
}

static void build_model_menu (TsChatPage *self);

/* The next start loads this model and adapter again (the demo model is the
 * default anyway). A stack is not remembered: its adapters are. */
static void
remember_model (TsChatPage *self)
{
  TsChatSession *session = self->session;
  gboolean demo = ts_chat_session_get_model_is_demo (session);
  float weight = 1.0f;
  const char *adapter = ts_chat_session_get_n_adapters (session) == 1
                          ? ts_chat_session_get_nth_adapter (session, 0, &weight) : NULL;

  ts_settings_set_chat_model (self->settings,
                              demo ? NULL : ts_chat_session_get_model_path (session),
                              weight == 1.0f ? adapter : NULL);
}

/* The session has the new model or adapter (its notifications updated the
 * subtitles): the rest of the page follows. */
static void
loaded (TsChatPage *self)
{
  remember_model (self);
  _ts_chat_page_market_set_adapter (self, ts_chat_session_get_adapter_path (self->session));
  _ts_chat_page_update_actions (self);
  _ts_chat_page_routing_refresh (self);
  build_model_menu (self);
  /* ready: typing goes to the prompt at once (not after a dozen Tabs) */
  gtk_widget_grab_focus (GTK_WIDGET (self->prompt_view));
}

/* The installed model that the adapter at @adapter says it was made for
 * (metadata.json's or adapter_config.json's base model, matched to a
 * catalogue name or a file name), or NULL. */
static char *
installed_model_for (const char *adapter)
{
  g_autofree char *base = adapter != NULL ? ts_adapter_base_model (adapter) : NULL;
  g_autofree char *dir = ts_models_dir ();
  g_autoptr (TsModelCatalog) catalog = NULL;
  g_autoptr (TsModelIndex) index = NULL;
  g_autoptr (GArray) states = NULL;

  if (base == NULL || (catalog = ts_model_catalog_load (NULL, NULL)) == NULL
      || (index = ts_model_index_load (dir, NULL)) == NULL)
    return NULL;
  states = ts_models_list (catalog, index, dir);
  for (guint i = 0; i < states->len; i++)
    {
      const TsModelState *state = &g_array_index (states, TsModelState, i);
      g_autofree char *stem = g_strndup (state->file, strcspn (state->file, "."));

      if (state->installed && (g_strcmp0 (state->name, base) == 0 || g_strcmp0 (stem, base) == 0))
        return g_build_filename (dir, state->file, NULL);
    }
  return NULL;
}

/* A load failed: when the adapter was made for another model that is
 * installed, the error offers to load that one with it. */
static void
load_failed (TsChatPage *self, const GError *error)
{
  g_autofree char *model = installed_model_for (self->loading_adapter);

  if (model == NULL || g_strcmp0 (model, self->loading_model) == 0)
    {
      _ts_chat_page_error (self, error->message);
      return;
    }
  _ts_chat_page_error_with_remedy (self, error->message, _("Load That Model"),
                                   "chat.use-model-with-adapter",
                                   g_variant_new ("(ss)", model, self->loading_adapter));
}

/* @data is the page, without a reference: a page dropped mid-load cancels
 * it, and then this returns before touching the page. */
static void
load_done_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GError) error = NULL;

  if (ts_chat_session_load_finish (TS_CHAT_SESSION (source), result, &error))
    loaded (data);
  else if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    load_failed (data, error);
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
  if (model_path == NULL)
    {
      _ts_chat_page_toast (self, _("No model: choose a GGUF file"));
      return;
    }
  g_free (self->loading_model);
  g_free (self->loading_adapter);
  self->loading_model = g_strdup (model_path);
  self->loading_adapter = n == 1 ? g_strdup (adapter_paths[0]) : NULL;
  ts_chat_session_load_async (self->session, model_path, adapter_paths, weights, n,
                              self->load_cancellable, load_done_cb, self);
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

  if (ts_chat_page_get_routing (self))
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
use_model_with_adapter_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  const char *model = NULL, *adapter = NULL;

  g_variant_get (param, "(&s&s)", &model, &adapter);
  _ts_chat_page_load_model (TS_CHAT_PAGE (widget), model, adapter);
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
  _ts_chat_page_load_model (self, ts_chat_session_get_model_path (self->session),
                            g_variant_get_string (param, NULL));
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
  _ts_chat_page_load_model (self, ts_chat_session_get_model_path (self->session), path);
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
  gtk_widget_class_install_action (widget_class, "chat.use-model-with-adapter", "(ss)",
                                   use_model_with_adapter_action);
  gtk_widget_class_install_action (widget_class, "chat.use-adapter", "s", use_adapter_action);
  gtk_widget_class_install_action (widget_class, "chat.open-model", NULL, open_model_action);
  gtk_widget_class_install_action (widget_class, "chat.open-adapter", NULL, open_adapter_action);
  gtk_widget_class_install_action (widget_class, "chat.export-csv", NULL, export_csv_action);
  gtk_widget_class_install_action (widget_class, "chat.export-png", NULL, export_png_action);
  gtk_widget_class_install_action (widget_class, "chat.export-plain-png", NULL,
                                   export_plain_png_action);
}

/* The panes' kept sessions belong to the model that was loaded before:
 * its memory goes now, not at the next reply. */
static void
forget_kept_sessions (TsChatPage *self)
{
  ts_chat_pane_forget_session (self->plain_pane);
  ts_chat_pane_forget_session (self->he_pane);
}

void
_ts_chat_page_models_init (TsChatPage *self)
{
  g_autofree char *demo_model = ts_chat_page_find_demo_file (TS_DEMO_MODEL);
  g_autofree char *demo_adapter = ts_chat_page_find_demo_file (TS_DEMO_ADAPTER);

  self->session = ts_chat_session_new (demo_model, demo_adapter);
  self->load_cancellable = g_cancellable_new ();
  g_signal_connect_object (self->session, "notify::model-name",
                           G_CALLBACK (_ts_chat_page_update_subtitles), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->session, "notify::model-path",
                           G_CALLBACK (forget_kept_sessions), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->session, "notify::adapter-name",
                           G_CALLBACK (_ts_chat_page_update_subtitles), self, G_CONNECT_SWAPPED);
  build_model_menu (self);
  _ts_chat_page_rebuild_adapter_menu (self);
  /* Adapters installed from the marketplace meanwhile show up when the
   * page is shown again. */
  g_signal_connect (self, "map", G_CALLBACK (_ts_chat_page_rebuild_adapter_menu), NULL);
  g_signal_connect (self, "map", G_CALLBACK (build_model_menu), NULL);
  g_signal_connect (self, "map", G_CALLBACK (_ts_chat_page_update_subtitles), NULL);
  use_demo_action (GTK_WIDGET (self), NULL, NULL);
}
