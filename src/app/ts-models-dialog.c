/* ts-models-dialog.c: the Models window (ts-models-dialog.h).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-file-chooser.h"
#include "ts-models-async.h"
#include "ts-models-catalog.h"
#include "ts-models-dialog.h"
#include "ts-models-files.h"
#include "ts-models-installed.h"
#include "ts-toast.h"

/* One download or import (ts-models-async.h); its progress, posted to the
 * main thread, updates the counters, and a timer shows them. */
typedef struct {
  char *name;                    /* a download's model */
  char *path;                    /* an import's file */
  GCancellable *cancellable;
  gint64 done, total;
  double started_s;
  GtkProgressBar *bar;           /* the row's, while it is shown */
  guint tick;
  gboolean discard;              /* cancelled, not paused: nothing is kept */
} Work;

struct _TsModelsDialog {
  AdwWindow parent_instance;

  TsChatPage *chat_page;         /* weak */
  GtkListBox *list;
  GtkLabel *error_label;
  GtkButton *import_button;
  char *dir;
  TsModelCatalog *catalog;
  char *catalog_error;
  Work *work;                    /* NULL when idle */
  guint n_rows, n_installed;
  char *last_toast;
};

G_DEFINE_FINAL_TYPE (TsModelsDialog, ts_models_dialog, ADW_TYPE_WINDOW)

static void refresh (TsModelsDialog *self);
static void discard_download (TsModelsDialog *self, const char *name);

static void
show_error (TsModelsDialog *self, const char *message)
{
  gtk_label_set_text (self->error_label, message != NULL ? message : "");
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), message != NULL);
}

static void
show_toast (TsModelsDialog *self, const char *message)
{
  g_free (self->last_toast);
  self->last_toast = g_strdup (message);
  ts_toast_show (GTK_WIDGET (self), message);
}

/* ---- describing a model ---- */

static char *
describe (TsModelsDialog *self, const TsModelState *state)
{
  const TsModelEntry *e = state->entry;
  g_autofree char *size = state->bytes > 0 ? g_format_size ((guint64) state->bytes) : NULL;
  g_autofree char *ram = NULL;
  GString *text = g_string_new (state->architecture != NULL ? state->architecture : "?");

  if (e != NULL && e->parameters != NULL)
    g_string_append_printf (text, " · %s", e->parameters);
  if (e != NULL && e->quantisation != NULL)
    g_string_append_printf (text, " · %s", e->quantisation);
  if (size != NULL)
    g_string_append_printf (text, " · %s%s", e != NULL && e->bytes < 0 ? "~" : "", size);
  if (e != NULL && self->catalog != NULL)
    {
      ram = g_format_size ((guint64) ts_model_entry_ram_bytes (e, self->catalog->default_context));
      g_string_append_printf (text, _(" · needs %s of memory"), ram);
    }
  if (e == NULL)
    g_string_append (text, _(" · imported"));
  else if (!e->verified)
    g_string_append (text, _(" · unverified source"));
  return g_string_free (text, FALSE);
}

/* ---- the work ---- */

static void
work_free (Work *work)
{
  if (work->tick != 0)
    g_source_remove (work->tick);
  g_clear_object (&work->cancellable);
  g_free (work->name);
  g_free (work->path);
  g_free (work);
}

static void
progress_cb (const TsModelsProgress *progress, gpointer data)
{
  Work *work = TS_MODELS_DIALOG (data)->work;

  work->done = progress->done;
  work->total = progress->total;
}

/* "42 % · 3.1 MB/s · 2 minutes left" from the counters. */
static char *
progress_text (Work *work, double *fraction)
{
  double elapsed = g_get_monotonic_time () / 1e6 - work->started_s;
  gint64 done = work->done, total = work->total;
  g_autofree char *rate = NULL;

  *fraction = total > 0 ? CLAMP ((double) done / (double) total, 0, 1) : 0;
  if (elapsed < 0.5 || done <= 0)
    return g_strdup (_("Starting…"));
  rate = g_format_size ((guint64) (done / elapsed));
  if (total <= 0)
    return g_strdup_printf (_("%s/s"), rate);
  return g_strdup_printf (_("%.0f %% · %s/s · %.0f s left"), 100 * *fraction, rate,
                          (double) (total - done) / MAX (done / elapsed, 1.0));
}

static gboolean
tick_cb (gpointer data)
{
  Work *work = data;
  double fraction;
  g_autofree char *text = progress_text (work, &fraction);

  if (work->bar != NULL)
    {
      gtk_progress_bar_set_fraction (work->bar, fraction);
      gtk_progress_bar_set_text (work->bar, text);
    }
  return G_SOURCE_CONTINUE;
}

/* Holds the reference start_work() took: the window outlives its work. A
 * pause is a cancel that keeps the download (its row then offers Resume); a
 * cancel (Cancel) throws it away. */
static void
work_done (TsModelsDialog *self, char *done, GError *error)
{
  g_autofree char *text = NULL;
  g_autofree char *name = g_strdup (self->work->name);
  gboolean discard = self->work->discard;

  g_clear_pointer (&self->work, work_free);
  if (done == NULL && discard)
    discard_download (self, name);
  else if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    show_error (self, NULL);
  else if (error != NULL)
    show_error (self, error->message);
  else
    {
      show_error (self, NULL);
      text = g_strdup_printf (_("%s is installed"), name != NULL ? name : done);
      show_toast (self, text);
    }
  gtk_widget_set_sensitive (GTK_WIDGET (self->import_button), TRUE);
  refresh (self);
  g_object_unref (self);
}

static void
pull_done_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *done = ts_models_pull_finish (result, &error);

  work_done (data, done, error);
}

static void
import_done_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *done = ts_models_import_finish (result, &error);

  work_done (data, done, error);
}

static void
start_work (TsModelsDialog *self, const char *name, const char *path)
{
  Work *work;

  if (self->work != NULL)
    return;
  work = g_new0 (Work, 1);
  work->name = g_strdup (name);
  work->path = g_strdup (path);
  work->cancellable = g_cancellable_new ();
  work->total = -1;
  work->started_s = g_get_monotonic_time () / 1e6;
  work->tick = g_timeout_add (200, tick_cb, work);
  self->work = work;
  show_error (self, NULL);
  gtk_widget_set_sensitive (GTK_WIDGET (self->import_button), FALSE);
  if (path != NULL)
    ts_models_import_async (path, self->dir, NULL, progress_cb, self, work->cancellable,
                            import_done_cb, g_object_ref (self));
  else
    ts_models_pull_async (ts_model_catalog_find (self->catalog, name), self->dir, progress_cb,
                          self, work->cancellable, pull_done_cb, g_object_ref (self));
  refresh (self);
}

/* ---- actions ---- */

void
ts_models_dialog_download (TsModelsDialog *self, const char *name)
{
  g_return_if_fail (TS_IS_MODELS_DIALOG (self));
  if (self->catalog != NULL && ts_model_catalog_find (self->catalog, name) != NULL)
    start_work (self, name, NULL);
}

void
ts_models_dialog_import (TsModelsDialog *self, const char *path)
{
  g_return_if_fail (TS_IS_MODELS_DIALOG (self));
  start_work (self, NULL, path);
}

/* The download of @name that is running: NULL when none is. */
static Work *
running_download (TsModelsDialog *self, const char *name)
{
  if (self->work == NULL || self->work->name == NULL)
    return NULL;
  if (name != NULL && g_ascii_strcasecmp (self->work->name, name) != 0)
    return NULL;
  return self->work;
}

void
ts_models_dialog_pause (TsModelsDialog *self)
{
  Work *work;

  g_return_if_fail (TS_IS_MODELS_DIALOG (self));
  if ((work = running_download (self, NULL)) != NULL)
    g_cancellable_cancel (work->cancellable);
}

/* Deletes what an unfinished download of @name kept, and says so. */
static void
discard_download (TsModelsDialog *self, const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsModelIndex) index = ts_model_index_load (self->dir, &error);
  g_autofree TsModelState *state = NULL;   /* its strings point into index */

  if (index != NULL && self->catalog != NULL)
    state = ts_models_lookup (self->catalog, index, self->dir, name, &error);
  if (state == NULL || (state->partial && !ts_models_remove (state, self->dir, index, &error)))
    {
      show_error (self, error != NULL ? error->message : self->catalog_error);
      return;
    }
  show_error (self, NULL);
  show_toast (self, _("Download cancelled; nothing was kept"));
}

void
ts_models_dialog_cancel (TsModelsDialog *self, const char *name)
{
  Work *work;

  g_return_if_fail (TS_IS_MODELS_DIALOG (self));
  if ((work = running_download (self, name)) != NULL)
    {
      /* work_done() discards once the worker has let go of the files. */
      work->discard = TRUE;
      g_cancellable_cancel (work->cancellable);
      return;
    }
  discard_download (self, name);
  refresh (self);
}

void
ts_models_dialog_remove (TsModelsDialog *self, const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsModelIndex) index = ts_model_index_load (self->dir, &error);
  g_autofree TsModelState *state = NULL;   /* its strings point into index */

  g_return_if_fail (TS_IS_MODELS_DIALOG (self));
  if (index != NULL && self->catalog != NULL)
    state = ts_models_lookup (self->catalog, index, self->dir, name, &error);
  if (state == NULL || !ts_models_remove (state, self->dir, index, &error))
    show_error (self, error->message);
  refresh (self);
}

/* Bytes of memory the system can give without swapping (MemAvailable). */
static gint64
available_memory (void)
{
  g_autofree char *text = NULL;
  const char *line;

  if (!g_file_get_contents ("/proc/meminfo", &text, NULL, NULL)
      || (line = strstr (text, "MemAvailable:")) == NULL)
    return -1;
  return g_ascii_strtoll (line + strlen ("MemAvailable:"), NULL, 10) * 1024;
}

static void
load_in_chat (TsModelsDialog *self, const char *file)
{
  g_autofree char *path = g_build_filename (self->dir, file, NULL);

  if (self->chat_page != NULL)
    ts_chat_page_load_model (self->chat_page, path, NULL);
  gtk_window_close (GTK_WINDOW (self));
}

static void
memory_response_cb (AdwMessageDialog *dialog, const char *response, gpointer data)
{
  TsModelsDialog *self = TS_MODELS_DIALOG (data);
  const char *file = g_object_get_data (G_OBJECT (dialog), "model-file");

  if (g_strcmp0 (response, "load") == 0)
    load_in_chat (self, file);
}

void
ts_models_dialog_use (TsModelsDialog *self, const char *name)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsModelIndex) index = ts_model_index_load (self->dir, &error);
  g_autofree TsModelState *state = NULL;   /* its strings point into index */
  gint64 needed, available = available_memory ();
  GtkWidget *dialog;

  g_return_if_fail (TS_IS_MODELS_DIALOG (self));
  if (index != NULL && self->catalog != NULL)
    state = ts_models_lookup (self->catalog, index, self->dir, name, &error);
  if (state == NULL || !state->installed)
    {
      show_error (self, error != NULL ? error->message : _("The model is not installed"));
      return;
    }
  needed = state->entry != NULL
    ? ts_model_entry_ram_bytes (state->entry, self->catalog->default_context) : state->bytes;
  if (available < 0 || needed <= available)
    {
      load_in_chat (self, state->file);
      return;
    }
  dialog = adw_message_dialog_new (GTK_WINDOW (self), _("Not Enough Memory"), NULL);
  adw_message_dialog_format_body (ADW_MESSAGE_DIALOG (dialog),
                                  _("%s needs about %.1f GB of memory, and %.1f GB are available "
                                    "now. Loading it may make the computer swap or fail."),
                                  name, needed / 1e9, available / 1e9);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _("_Cancel"),
                                    "load", _("_Load Anyway"), NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "load",
                                              ADW_RESPONSE_DESTRUCTIVE);
  g_object_set_data_full (G_OBJECT (dialog), "model-file", g_strdup (state->file), g_free);
  g_signal_connect (dialog, "response", G_CALLBACK (memory_response_cb), self);
  gtk_window_present (GTK_WINDOW (dialog));
}

/* ---- buttons ---- */

static const char *
button_model (GtkWidget *button)
{
  return g_object_get_data (G_OBJECT (button), "model-name");
}

static void
download_clicked_cb (GtkWidget *button, TsModelsDialog *self)
{
  ts_models_dialog_download (self, button_model (button));
}

static void
use_clicked_cb (GtkWidget *button, TsModelsDialog *self)
{
  ts_models_dialog_use (self, button_model (button));
}

static void
pause_clicked_cb (GtkWidget *button, TsModelsDialog *self)
{
  ts_models_dialog_pause (self);
}

static void
cancel_clicked_cb (GtkWidget *button, TsModelsDialog *self)
{
  ts_models_dialog_cancel (self, button_model (button));
}

static void
remove_response_cb (AdwMessageDialog *dialog, const char *response, gpointer data)
{
  if (g_strcmp0 (response, "remove") == 0)
    ts_models_dialog_remove (TS_MODELS_DIALOG (data),
                             g_object_get_data (G_OBJECT (dialog), "model-name"));
}

static void
remove_clicked_cb (GtkWidget *button, TsModelsDialog *self)
{
  const char *name = button_model (button);
  GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self), _("Remove the Model?"), NULL);

  adw_message_dialog_format_body (ADW_MESSAGE_DIALOG (dialog),
                                  _("%s is deleted from the models folder. It can be downloaded "
                                    "or imported again."), name);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _("_Cancel"),
                                    "remove", _("_Remove"), NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "remove",
                                              ADW_RESPONSE_DESTRUCTIVE);
  g_object_set_data_full (G_OBJECT (dialog), "model-name", g_strdup (name), g_free);
  g_signal_connect (dialog, "response", G_CALLBACK (remove_response_cb), self);
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
import_chosen_cb (GtkWidget *owner, const char *path, gpointer data)
{
  if (path != NULL)
    ts_models_dialog_import (TS_MODELS_DIALOG (owner), path);
}

static void
import_clicked_cb (GtkWidget *button, TsModelsDialog *self)
{
  g_autoptr (GtkFileFilter) filter = gtk_file_filter_new ();

  gtk_file_filter_set_name (filter, _("GGUF models"));
  gtk_file_filter_add_pattern (filter, "*.gguf");
  ts_file_chooser_run (GTK_WIDGET (self), GTK_FILE_CHOOSER_ACTION_OPEN, _("Import a GGUF Model"),
                       _("_Import"), NULL, filter, import_chosen_cb, NULL);
}

static GtkWidget *
model_button (TsModelsDialog *self, const char *label, const char *name, GCallback callback,
              const char *style)
{
  GtkWidget *button = gtk_button_new_with_mnemonic (label);

  gtk_widget_set_valign (button, GTK_ALIGN_CENTER);
  if (style != NULL)
    gtk_widget_add_css_class (button, style);
  g_object_set_data_full (G_OBJECT (button), "model-name", g_strdup (name), g_free);
  g_signal_connect (button, "clicked", callback, self);
  return button;
}

/* ---- the list ---- */

static void
add_work_widgets (TsModelsDialog *self, AdwActionRow *row, const TsModelState *state)
{
  GtkWidget *bar = gtk_progress_bar_new ();

  gtk_progress_bar_set_show_text (GTK_PROGRESS_BAR (bar), TRUE);
  gtk_widget_set_valign (bar, GTK_ALIGN_CENTER);
  gtk_widget_set_size_request (bar, 200, -1);
  self->work->bar = GTK_PROGRESS_BAR (bar);
  tick_cb (self->work);
  g_object_set_data (G_OBJECT (row), "model-status", bar);
  adw_action_row_add_suffix (row, bar);
  adw_action_row_add_suffix (row, model_button (self, _("_Pause"), state->name,
                                                G_CALLBACK (pause_clicked_cb), NULL));
  adw_action_row_add_suffix (row, model_button (self, _("_Cancel"), state->name,
                                                G_CALLBACK (cancel_clicked_cb), NULL));
}

/* "Paused · 1.2 MB of 4.0 MB" */
static char *
paused_text (const TsModelState *state)
{
  g_autofree char *kept = g_format_size ((guint64) state->partial_bytes);
  g_autofree char *size = state->bytes > 0 ? g_format_size ((guint64) state->bytes) : NULL;

  if (size == NULL)
    return g_strdup_printf (_("Paused · %s kept"), kept);
  return g_strdup_printf (_("Paused · %s of %s"), kept, size);
}

static void
add_paused_widgets (TsModelsDialog *self, AdwActionRow *row, const TsModelState *state)
{
  g_autofree char *text = paused_text (state);
  GtkWidget *label = gtk_label_new (text);
  GtkWidget *resume = model_button (self, _("_Resume"), state->name,
                                    G_CALLBACK (download_clicked_cb), "suggested-action");

  gtk_widget_add_css_class (label, "dim-label");
  g_object_set_data (G_OBJECT (row), "model-status", label);
  adw_action_row_add_suffix (row, label);
  gtk_widget_set_sensitive (resume, self->work == NULL);
  adw_action_row_add_suffix (row, resume);
  adw_action_row_add_suffix (row, model_button (self, _("_Cancel"), state->name,
                                                G_CALLBACK (cancel_clicked_cb), NULL));
}

static GtkWidget *
model_row (TsModelsDialog *self, const TsModelState *state)
{
  GtkWidget *row = adw_action_row_new ();
  g_autofree char *subtitle = describe (self, state);
  gboolean working = self->work != NULL && g_strcmp0 (self->work->name, state->name) == 0;

  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), state->name);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
  g_object_set_data_full (G_OBJECT (row), "model-name", g_strdup (state->name), g_free);
  if (working)
    add_work_widgets (self, ADW_ACTION_ROW (row), state);
  else if (state->installed)
    {
      adw_action_row_add_suffix (ADW_ACTION_ROW (row),
                                 model_button (self, _("_Use"), state->name,
                                               G_CALLBACK (use_clicked_cb), "suggested-action"));
      adw_action_row_add_suffix (ADW_ACTION_ROW (row),
                                 model_button (self, _("_Remove"), state->name,
                                               G_CALLBACK (remove_clicked_cb), "destructive-action"));
    }
  else if (state->entry != NULL && state->partial)
    add_paused_widgets (self, ADW_ACTION_ROW (row), state);
  else if (state->entry != NULL)
    {
      GtkWidget *button = model_button (self, _("_Download"), state->name,
                                        G_CALLBACK (download_clicked_cb), NULL);

      gtk_widget_set_sensitive (button, self->work == NULL);
      adw_action_row_add_suffix (ADW_ACTION_ROW (row), button);
    }
  return row;
}

static void
refresh (TsModelsDialog *self)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsModelIndex) index = ts_model_index_load (self->dir, &error);
  g_autoptr (GArray) states = NULL;
  GtkWidget *child;

  if (self->work != NULL)
    self->work->bar = NULL;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->list))) != NULL)
    gtk_list_box_remove (self->list, child);
  self->n_rows = self->n_installed = 0;
  if (index == NULL || self->catalog == NULL)
    {
      show_error (self, index == NULL ? error->message : self->catalog_error);
      return;
    }
  states = ts_models_list (self->catalog, index, self->dir);
  for (guint i = 0; i < states->len; i++)
    {
      const TsModelState *state = &g_array_index (states, TsModelState, i);

      gtk_list_box_append (self->list, model_row (self, state));
      self->n_rows++;
      self->n_installed += state->installed ? 1 : 0;
    }
}

/* ---- the window ---- */

guint
ts_models_dialog_count_rows (TsModelsDialog *self)
{
  g_return_val_if_fail (TS_IS_MODELS_DIALOG (self), 0);
  return self->n_rows;
}

guint
ts_models_dialog_count_installed (TsModelsDialog *self)
{
  g_return_val_if_fail (TS_IS_MODELS_DIALOG (self), 0);
  return self->n_installed;
}

gboolean
ts_models_dialog_get_busy (TsModelsDialog *self)
{
  g_return_val_if_fail (TS_IS_MODELS_DIALOG (self), FALSE);
  return self->work != NULL;
}

const char *
ts_models_dialog_get_error (TsModelsDialog *self)
{
  g_return_val_if_fail (TS_IS_MODELS_DIALOG (self), NULL);
  return gtk_widget_get_visible (GTK_WIDGET (self->error_label))
         ? gtk_label_get_text (self->error_label) : NULL;
}

const char *
ts_models_dialog_get_last_toast (TsModelsDialog *self)
{
  g_return_val_if_fail (TS_IS_MODELS_DIALOG (self), NULL);
  return self->last_toast;
}

const char *
ts_models_dialog_get_row_status (TsModelsDialog *self, const char *name)
{
  g_return_val_if_fail (TS_IS_MODELS_DIALOG (self), NULL);
  for (GtkWidget *row = gtk_widget_get_first_child (GTK_WIDGET (self->list)); row != NULL;
       row = gtk_widget_get_next_sibling (row))
    {
      GtkWidget *status = g_object_get_data (G_OBJECT (row), "model-status");

      if (g_strcmp0 (g_object_get_data (G_OBJECT (row), "model-name"), name) != 0)
        continue;
      if (GTK_IS_PROGRESS_BAR (status))
        return gtk_progress_bar_get_text (GTK_PROGRESS_BAR (status));
      return status != NULL ? gtk_label_get_text (GTK_LABEL (status)) : NULL;
    }
  return NULL;
}

/* A running download pauses with the window (it resumes next time). */
static gboolean
close_request_cb (GtkWindow *window, gpointer data)
{
  TsModelsDialog *self = TS_MODELS_DIALOG (window);

  if (self->work != NULL)
    g_cancellable_cancel (self->work->cancellable);
  return FALSE;
}

static GtkWidget *
build_content (TsModelsDialog *self)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  GtkWidget *header = adw_header_bar_new ();
  GtkWidget *scroller = gtk_scrolled_window_new ();
  GtkWidget *clamp = adw_clamp_new ();
  GtkWidget *inner = gtk_box_new (GTK_ORIENTATION_VERTICAL, 12);
  GtkWidget *overlay = adw_toast_overlay_new ();

  self->import_button = GTK_BUTTON (gtk_button_new_with_mnemonic (_("_Import GGUF…")));
  g_signal_connect (self->import_button, "clicked", G_CALLBACK (import_clicked_cb), self);
  adw_header_bar_pack_start (ADW_HEADER_BAR (header), GTK_WIDGET (self->import_button));
  gtk_box_append (GTK_BOX (box), header);
  self->error_label = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_wrap (self->error_label, TRUE);
  gtk_label_set_xalign (self->error_label, 0);
  gtk_widget_add_css_class (GTK_WIDGET (self->error_label), "error");
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), FALSE);
  self->list = GTK_LIST_BOX (gtk_list_box_new ());
  gtk_list_box_set_selection_mode (self->list, GTK_SELECTION_NONE);
  gtk_widget_add_css_class (GTK_WIDGET (self->list), "boxed-list");
  gtk_box_append (GTK_BOX (inner), GTK_WIDGET (self->error_label));
  gtk_box_append (GTK_BOX (inner), GTK_WIDGET (self->list));
  gtk_widget_set_margin_top (inner, 12);
  gtk_widget_set_margin_bottom (inner, 12);
  gtk_widget_set_margin_start (inner, 12);
  gtk_widget_set_margin_end (inner, 12);
  adw_clamp_set_child (ADW_CLAMP (clamp), inner);
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), clamp);
  gtk_widget_set_vexpand (scroller, TRUE);
  gtk_box_append (GTK_BOX (box), scroller);
  adw_toast_overlay_set_child (ADW_TOAST_OVERLAY (overlay), box);
  return overlay;
}

static void
ts_models_dialog_dispose (GObject *object)
{
  TsModelsDialog *self = TS_MODELS_DIALOG (object);

  if (self->chat_page != NULL)
    g_object_remove_weak_pointer (G_OBJECT (self->chat_page), (gpointer *) &self->chat_page);
  self->chat_page = NULL;
  G_OBJECT_CLASS (ts_models_dialog_parent_class)->dispose (object);
}

static void
ts_models_dialog_finalize (GObject *object)
{
  TsModelsDialog *self = TS_MODELS_DIALOG (object);

  g_free (self->dir);
  g_free (self->catalog_error);
  g_free (self->last_toast);
  g_clear_pointer (&self->catalog, ts_model_catalog_free);
  G_OBJECT_CLASS (ts_models_dialog_parent_class)->finalize (object);
}

static void
ts_models_dialog_class_init (TsModelsDialogClass *klass)
{
  G_OBJECT_CLASS (klass)->dispose = ts_models_dialog_dispose;
  G_OBJECT_CLASS (klass)->finalize = ts_models_dialog_finalize;
}

static void
ts_models_dialog_init (TsModelsDialog *self)
{
  g_autoptr (GError) error = NULL;

  self->dir = ts_models_dir ();
  self->catalog = ts_model_catalog_load (NULL, &error);
  if (self->catalog == NULL)
    self->catalog_error = g_strdup (error->message);
  gtk_window_set_title (GTK_WINDOW (self), _("Models"));
  gtk_window_set_default_size (GTK_WINDOW (self), 720, 560);
  adw_window_set_content (ADW_WINDOW (self), build_content (self));
  g_signal_connect (self, "close-request", G_CALLBACK (close_request_cb), NULL);
  refresh (self);
}

TsModelsDialog *
ts_models_dialog_new (GtkWindow *parent, TsChatPage *chat_page)
{
  TsModelsDialog *self = g_object_new (TS_TYPE_MODELS_DIALOG, "modal", TRUE,
                                       "transient-for", parent, NULL);

  self->chat_page = chat_page;
  if (chat_page != NULL)
    g_object_add_weak_pointer (G_OBJECT (chat_page), (gpointer *) &self->chat_page);
  return self;
}
