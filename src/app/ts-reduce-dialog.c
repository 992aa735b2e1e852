/* ts-reduce-dialog.c: the "Reduce Rank" dialog: a lower-rank copy of an installed adapter.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-adapter-reduce.h"
#include "ts-file-chooser.h"
#include "ts-market-format.h"
#include "ts-market-install.h"
#include "ts-reduce-dialog-private.h"
#include "ts-toast.h"

struct _TsReduceDialog
{
  AdwWindow parent_instance;

  char *source;             /* the adapter's folder (or GGUF file) */
  char *source_id;          /* its folder name: the default name's stem */
  char *adapters_dir;       /* the store */
  char *location;           /* where the new folder goes */
  TsMarketAdapter *catalogue;
  LmLoraShape shape;
  gboolean name_edited;     /* the user typed a name: the rank no longer renames */
  gboolean setting_name;
  GCancellable *cancellable;
  TsAdapterReduction *result;
  gboolean disposed;        /* late callbacks must not touch the template's widgets */
  GPtrArray *module_rows;

  AdwToastOverlay *toast_overlay;
  AdwWindowTitle *window_title;
  GtkWidget *cancel_button;
  GtkWidget *reduce_button;
  GtkWidget *done_button;
  GtkStack *stack;
  AdwActionRow *rank_row;
  GtkSpinButton *rank_spin;
  AdwEntryRow *name_row;
  AdwActionRow *location_row;
  GtkLabel *hint_label;
  GtkLabel *error_label;
  GtkLabel *running_label;
  GtkProgressBar *progress_bar;
  GtkLabel *done_label;
  AdwActionRow *energy_row;
  AdwActionRow *size_row;
  AdwActionRow *path_row;
  GtkWidget *use_button;
  AdwPreferencesGroup *modules_group;
  AdwStatusPage *problem_page;
};

G_DEFINE_FINAL_TYPE (TsReduceDialog, ts_reduce_dialog, ADW_TYPE_WINDOW)

enum {
  SIGNAL_REDUCED,
  SIGNAL_USE_IN_CHAT,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

/* The response of the "replace?" question that goes ahead. */
#define RESPONSE_REPLACE "replace"

static char *
format_percent (double fraction)
{
  /* Translators: a percentage with two decimals, e.g. "97.41 %". */
  return g_strdup_printf (_("%.2f %%"), 100.0 * fraction);
}

static const char *
new_name (TsReduceDialog *self)
{
  return gtk_editable_get_text (GTK_EDITABLE (self->name_row));
}

static guint
new_rank (TsReduceDialog *self)
{
  return (guint) gtk_spin_button_get_value_as_int (self->rank_spin);
}

static char *
target_path (TsReduceDialog *self)
{
  return g_build_filename (self->location, new_name (self), NULL);
}

static gboolean
same_folder (const char *a, const char *b)
{
  g_autofree char *ca = g_canonicalize_filename (a, NULL);
  g_autofree char *cb = g_canonicalize_filename (b, NULL);

  return g_str_equal (ca, cb);
}

/* ---- the setup page ------------------------------------------------------ */

/* What the name leads to, and whether it can be used: one place decides. */
static void
update_setup (TsReduceDialog *self)
{
  const char *name = new_name (self);
  gboolean valid = ts_market_name_is_safe (name);
  gboolean setup = g_str_equal (gtk_stack_get_visible_child_name (self->stack), "setup");
  g_autofree char *target = target_path (self);
  g_autofree char *hint = NULL;

  if (!valid)
    hint = g_strdup (_("A name uses letters, digits, “.”, “_”, “+” and “-”, and does not start "
                       "with “.” or “-”."));
  else if (same_folder (target, self->source))
    {
      valid = FALSE;
      hint = g_strdup (_("That is the adapter being reduced: choose another name."));
    }
  else if (g_file_test (target, G_FILE_TEST_EXISTS))
    /* Translators: %s is a folder path. */
    hint = g_strdup_printf (_("%s exists already: you will be asked before it is replaced."),
                            target);
  else
    /* Translators: %s is a folder path. */
    hint = g_strdup_printf (_("The new adapter is saved as %s."), target);
  gtk_label_set_text (self->hint_label, hint);
  if (valid)
    gtk_widget_remove_css_class (GTK_WIDGET (self->name_row), "error");
  else
    gtk_widget_add_css_class (GTK_WIDGET (self->name_row), "error");
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "reduce.start", setup && valid);
}

static void
show_page (TsReduceDialog *self, const char *page)
{
  gboolean setup = g_str_equal (page, "setup");
  gboolean running = g_str_equal (page, "running");

  gtk_stack_set_visible_child_name (self->stack, page);
  gtk_widget_set_visible (self->cancel_button, setup || running);
  gtk_widget_set_visible (self->reduce_button, setup || running);
  gtk_widget_set_visible (self->done_button, !setup && !running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "reduce.choose-location", setup);
  update_setup (self);
}

static void
show_error (TsReduceDialog *self, const char *message)
{
  gtk_label_set_text (self->error_label, message ? message : "");
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), message != NULL);
}

static void
set_default_name (TsReduceDialog *self)
{
  g_autofree char *name = g_strdup_printf ("%s-r%u", self->source_id, new_rank (self));

  self->setting_name = TRUE;
  gtk_editable_set_text (GTK_EDITABLE (self->name_row), name);
  self->setting_name = FALSE;
}

static void
rank_changed_cb (TsReduceDialog *self)
{
  if (!self->name_edited)
    set_default_name (self);
}

static void
name_changed_cb (TsReduceDialog *self)
{
  if (!self->setting_name)
    self->name_edited = TRUE;
  show_error (self, NULL);
  update_setup (self);
}

void
_ts_reduce_dialog_set_location (TsReduceDialog *self, const char *folder)
{
  g_free (self->location);
  self->location = g_strdup (folder);
  adw_action_row_set_subtitle (self->location_row, folder);
  show_error (self, NULL);
  update_setup (self);
}

static void
location_chosen (GtkWidget *owner, const char *path, gpointer user_data)
{
  if (path != NULL)
    _ts_reduce_dialog_set_location (TS_REDUCE_DIALOG (owner), path);
}

static void
choose_location_action (GtkWidget *widget, const char *name, GVariant *param)
{
  ts_file_chooser_run (widget, GTK_FILE_CHOOSER_ACTION_SELECT_FOLDER,
                       _("Save the Reduced Adapter In"), _("_Select"), NULL, NULL,
                       location_chosen, NULL);
}

/* ---- the run --------------------------------------------------------------- */

/* On the main thread (ts_adapter_reduce_async()). */
static void
progress_cb (guint done, guint total, const char *module, gpointer user_data)
{
  TsReduceDialog *self = user_data;
  g_autofree char *text = NULL;

  if (self->disposed || self->cancellable == NULL)
    return;
  /* Translators: reduction progress, e.g. "Module 3 of 12: blk.1.attn_output". */
  text = g_strdup_printf (_("Module %u of %u: %s"), done, total, module);
  gtk_progress_bar_set_fraction (self->progress_bar, total > 0 ? (double) done / total : 0.0);
  gtk_progress_bar_set_text (self->progress_bar, text);
}

/* A message for people, in their language, from the core's error codes. */
static char *
explain (TsReduceDialog *self, const GError *error)
{
  if (error->domain != G_IO_ERROR)
    return g_strdup_printf (_("Could not reduce the adapter: %s"), error->message);
  switch (error->code)
    {
    case G_IO_ERROR_NO_SPACE:
      /* Translators: %s is a folder path. */
      return g_strdup_printf (_("There is not enough free space in %s for the reduced adapter."),
                              self->location);
    case G_IO_ERROR_INVALID_DATA:
      return g_strdup_printf (_("The adapter cannot be read: %s"), error->message);
    case G_IO_ERROR_EXISTS:
      return g_strdup_printf (_("“%s” appeared in %s meanwhile; nothing was replaced."),
                              new_name (self), self->location);
    case G_IO_ERROR_INVALID_ARGUMENT:
      return g_strdup_printf (_("Cannot reduce the adapter: %s"), error->message);
    case G_IO_ERROR_PERMISSION_DENIED:
      /* Translators: %s is a folder path. */
      return g_strdup_printf (_("The reduced adapter cannot be saved in %s: you are not "
                                "allowed to write there."), self->location);
    case G_IO_ERROR_READ_ONLY:
      /* Translators: %s is a folder path. */
      return g_strdup_printf (_("The reduced adapter cannot be saved in %s: the disk is "
                                "read-only."), self->location);
    case G_IO_ERROR_NOT_DIRECTORY:
      /* Translators: %s is a folder path. */
      return g_strdup_printf (_("The reduced adapter cannot be saved in %s: part of that path "
                                "is a file, not a folder."), self->location);
    default:
      /* Translators: %1$s is a folder path, %2$s what went wrong. */
      return g_strdup_printf (_("The reduced adapter cannot be saved in %1$s: %2$s"),
                              self->location, error->message);
    }
}

static GtkWidget *
module_row_new (const TsReducedModule *m)
{
  GtkWidget *row = adw_action_row_new ();
  double frac = m->energy_total > 0.0 ? m->energy_kept / m->energy_total : 1.0;
  g_autofree char *percent = format_percent (frac);
  /* Translators: a module's rank before and after, e.g. "Rank 8 → 4". */
  g_autofree char *ranks = g_strdup_printf (_("Rank %u → %u"), m->rank_in, m->rank_out);
  GtkWidget *label = gtk_label_new (percent);

  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), m->name);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), ranks);
  gtk_widget_add_css_class (label, "numeric");
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), label);
  return row;
}

static void
show_modules (TsReduceDialog *self, const TsAdapterReduction *red)
{
  for (guint i = 0; i < self->module_rows->len; i++)
    adw_preferences_group_remove (self->modules_group, g_ptr_array_index (self->module_rows, i));
  g_ptr_array_set_size (self->module_rows, 0);
  for (guint i = 0; i < red->modules->len; i++)
    {
      GtkWidget *row = module_row_new (&g_array_index (red->modules, TsReducedModule, i));

      adw_preferences_group_add (self->modules_group, row);
      g_ptr_array_add (self->module_rows, row);
    }
}

static void
show_result (TsReduceDialog *self, const TsAdapterReduction *red)
{
  g_autofree char *min = format_percent (red->retained_min);
  g_autofree char *mean = format_percent (red->retained_mean);
  g_autofree char *total = format_percent (red->retained_total);
  g_autofree char *in = g_format_size ((guint64) red->bytes_in);
  g_autofree char *out = g_format_size ((guint64) red->bytes_out);
  g_autofree char *saved = g_format_size ((guint64) MAX (red->bytes_in - red->bytes_out, 0));
  g_autofree char *title = NULL, *energy = NULL, *size = NULL;

  /* Translators: %1$s is the new adapter's name, %2$u its rank. */
  title = g_strdup_printf (_("“%1$s” is ready, at rank %2$u"), red->id, red->rank_out);
  /* Translators: shares of the squared Frobenius norm, e.g. "Smallest 93.10 %, mean 97.41 %
   * per module; 97.80 % in all". */
  energy = g_strdup_printf (_("Smallest %1$s, mean %2$s per module; %3$s in all"), min, mean,
                            total);
  if (red->bytes_out < red->bytes_in)
    /* Translators: file sizes, e.g. "33.8 kB → 17.4 kB, 16.4 kB saved". */
    size = g_strdup_printf (_("%1$s → %2$s, %3$s saved"), in, out, saved);
  else
    size = g_strdup_printf (_("%1$s → %2$s"), in, out);
  gtk_label_set_text (self->done_label, title);
  adw_action_row_set_subtitle (self->energy_row, energy);
  adw_action_row_set_subtitle (self->size_row, size);
  adw_action_row_set_subtitle (self->path_row, red->path);
  /* Only the store's adapters are listed in the chat. */
  gtk_widget_set_visible (self->use_button, same_folder (self->location, self->adapters_dir));
  show_modules (self, red);
  show_page (self, "done");
}

static void
reduce_done_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsReduceDialog) self = user_data;   /* run()'s reference */
  g_autoptr (GError) error = NULL;
  TsAdapterReduction *red = ts_adapter_reduce_finish (result, &error);

  if (self->disposed)
    {
      g_clear_pointer (&red, ts_adapter_reduction_free);
      return;
    }
  g_clear_object (&self->cancellable);
  if (red != NULL)
    {
      g_clear_pointer (&self->result, ts_adapter_reduction_free);
      self->result = red;
      show_result (self, red);
      g_signal_emit (self, signals[SIGNAL_REDUCED], 0, red->id, red->path);
      return;
    }
  show_page (self, "setup");
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    {
      ts_toast_show (GTK_WIDGET (self->stack), _("Cancelled: nothing was written"));
      return;
    }
  {
    g_autofree char *message = explain (self, error);

    show_error (self, message);
  }
}

static void
run (TsReduceDialog *self, gboolean replace)
{
  const char *source_name = self->catalogue ? self->catalogue->name : self->source_id;
  /* Translators: the reduced adapter's display name, e.g. "Pirate talk, rank 4". */
  g_autofree char *name = g_strdup_printf (_("%1$s, rank %2$u"), source_name, new_rank (self));
  g_autofree char *keyring_path = ts_market_keyring_path ();
  TsAdapterReduceRequest request = {
    .source = self->source, .dest_dir = self->location, .id = new_name (self), .name = name,
    .rank = new_rank (self), .replace = replace, .keyring_path = keyring_path,
    .catalogue = self->catalogue,
  };
  g_autofree char *label = NULL;

  self->cancellable = g_cancellable_new ();
  show_error (self, NULL);
  /* Translators: %1$s is an adapter's name, %2$u the new rank. */
  label = g_strdup_printf (_("Reducing “%1$s” to rank %2$u…"), source_name, request.rank);
  gtk_label_set_text (self->running_label, label);
  gtk_progress_bar_set_fraction (self->progress_bar, 0.0);
  gtk_progress_bar_set_text (self->progress_bar, _("Checking the adapter…"));
  show_page (self, "running");
  ts_adapter_reduce_async (&request, progress_cb, self, self->cancellable, reduce_done_cb,
                           g_object_ref (self));
}

static void
replace_response_cb (AdwMessageDialog *dialog, const char *response, gpointer user_data)
{
  TsReduceDialog *self = TS_REDUCE_DIALOG (user_data);

  /* The dialog may answer again as it closes (its close response): the
   * first answer is the user's, and it holds the one reference. */
  g_signal_handlers_disconnect_by_func (dialog, replace_response_cb, user_data);
  if (!self->disposed && g_strcmp0 (response, RESPONSE_REPLACE) == 0)
    run (self, TRUE);
  g_object_unref (self);
}

/* Never replaces an adapter without asking. */
static void
ask_replace (TsReduceDialog *self)
{
  g_autofree char *heading = g_strdup_printf (_("Replace “%s”?"), new_name (self));
  /* Translators: %s is a folder path. */
  g_autofree char *body = g_strdup_printf (_("%s already holds an adapter of that name. "
                                             "Replacing it deletes that adapter."),
                                           self->location);
  GtkWidget *dialog = adw_message_dialog_new (GTK_WINDOW (self), heading, body);

  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _("_Cancel"),
                                    RESPONSE_REPLACE, _("_Replace"), NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), RESPONSE_REPLACE,
                                              ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_signal_connect (dialog, "response", G_CALLBACK (replace_response_cb), g_object_ref (self));
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
start_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsReduceDialog *self = TS_REDUCE_DIALOG (widget);
  g_autofree char *target = target_path (self);

  if (self->cancellable != NULL)
    return;
  if (g_file_test (target, G_FILE_TEST_EXISTS))
    ask_replace (self);
  else
    run (self, FALSE);
}

static void
cancel_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsReduceDialog *self = TS_REDUCE_DIALOG (widget);

  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  else
    gtk_window_close (GTK_WINDOW (self));
}

static void
use_in_chat_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsReduceDialog *self = TS_REDUCE_DIALOG (widget);

  if (self->result == NULL)
    return;
  g_signal_emit (self, signals[SIGNAL_USE_IN_CHAT], 0, self->result->id, self->result->path);
  gtk_window_close (GTK_WINDOW (self));
}

/* Closing the dialog stops a run: its staging folder is removed. */
static gboolean
ts_reduce_dialog_close_request (GtkWindow *window)
{
  g_cancellable_cancel (TS_REDUCE_DIALOG (window)->cancellable);
  return GTK_WINDOW_CLASS (ts_reduce_dialog_parent_class)->close_request (window);
}

/* ---- set-up ---------------------------------------------------------------- */

static void
show_problem (TsReduceDialog *self, const char *description)
{
  adw_status_page_set_description (self->problem_page, description);
  show_page (self, "problem");
}

/* Reads the adapter's shape and sets the rank's bounds: 1 … rank − 1. */
static void
load_source (TsReduceDialog *self)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *subtitle = NULL;
  guint upper;

  if (!ts_adapter_probe (self->source, &self->shape, &error))
    {
      g_autofree char *message = g_strdup_printf (_("The adapter cannot be read: %s"),
                                                   error->message);
      show_problem (self, message);
      return;
    }
  if (self->shape.rank_max < 2)
    {
      show_problem (self, _("Its rank is 1 already: there is nothing to reduce."));
      return;
    }
  upper = self->shape.rank_max - 1;
  if (self->shape.rank_min == self->shape.rank_max)
    /* Translators: the adapter's rank and its number of modules. */
    subtitle = g_strdup_printf (ngettext ("Now rank %1$u, in %2$u module",
                                          "Now rank %1$u, in %2$u modules",
                                          self->shape.n_modules),
                                self->shape.rank_max, self->shape.n_modules);
  else
    /* Translators: the smallest and largest module rank, and the number of modules. */
    subtitle = g_strdup_printf (ngettext ("Now rank %1$u to %2$u, in %3$u module",
                                          "Now rank %1$u to %2$u, in %3$u modules",
                                          self->shape.n_modules),
                                self->shape.rank_min, self->shape.rank_max,
                                self->shape.n_modules);
  adw_action_row_set_subtitle (self->rank_row, subtitle);
  gtk_spin_button_set_range (self->rank_spin, 1, upper);
  gtk_spin_button_set_value (self->rank_spin, MAX (1, self->shape.rank_max / 2));
  set_default_name (self);
  show_page (self, "setup");
}

static void
ts_reduce_dialog_dispose (GObject *object)
{
  TsReduceDialog *self = TS_REDUCE_DIALOG (object);

  self->disposed = TRUE;
  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  gtk_widget_dispose_template (GTK_WIDGET (self), TS_TYPE_REDUCE_DIALOG);
  G_OBJECT_CLASS (ts_reduce_dialog_parent_class)->dispose (object);
}

static void
ts_reduce_dialog_finalize (GObject *object)
{
  TsReduceDialog *self = TS_REDUCE_DIALOG (object);

  g_free (self->source);
  g_free (self->source_id);
  g_free (self->adapters_dir);
  g_free (self->location);
  g_clear_pointer (&self->catalogue, ts_market_adapter_unref);
  g_clear_pointer (&self->result, ts_adapter_reduction_free);
  g_clear_pointer (&self->module_rows, g_ptr_array_unref);
  G_OBJECT_CLASS (ts_reduce_dialog_parent_class)->finalize (object);
}

static void
ts_reduce_dialog_class_init (TsReduceDialogClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  object_class->dispose = ts_reduce_dialog_dispose;
  object_class->finalize = ts_reduce_dialog_finalize;
  window_class->close_request = ts_reduce_dialog_close_request;

  signals[SIGNAL_REDUCED] =
    g_signal_new ("reduced", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                  G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);
  signals[SIGNAL_USE_IN_CHAT] =
    g_signal_new ("use-in-chat", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                  NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-reduce-dialog.ui");
#define BIND(name) gtk_widget_class_bind_template_child (widget_class, TsReduceDialog, name)
  BIND (toast_overlay);
  BIND (window_title);
  BIND (cancel_button);
  BIND (reduce_button);
  BIND (done_button);
  BIND (stack);
  BIND (rank_row);
  BIND (rank_spin);
  BIND (name_row);
  BIND (location_row);
  BIND (hint_label);
  BIND (error_label);
  BIND (running_label);
  BIND (progress_bar);
  BIND (done_label);
  BIND (energy_row);
  BIND (size_row);
  BIND (path_row);
  BIND (use_button);
  BIND (modules_group);
  BIND (problem_page);
#undef BIND

  gtk_widget_class_install_action (widget_class, "reduce.start", NULL, start_action);
  gtk_widget_class_install_action (widget_class, "reduce.cancel", NULL, cancel_action);
  gtk_widget_class_install_action (widget_class, "reduce.choose-location", NULL,
                                   choose_location_action);
  gtk_widget_class_install_action (widget_class, "reduce.use-in-chat", NULL, use_in_chat_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "reduce.cancel", NULL);
}

static void
ts_reduce_dialog_init (TsReduceDialog *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->module_rows = g_ptr_array_new ();
  g_signal_connect_swapped (self->rank_spin, "value-changed", G_CALLBACK (rank_changed_cb),
                            self);
  g_signal_connect_swapped (self->name_row, "changed", G_CALLBACK (name_changed_cb), self);
}

TsReduceDialog *
ts_reduce_dialog_present (GtkWidget *parent, const char *source, const char *adapters_dir,
                          TsMarketAdapter *catalogue)
{
  GtkRoot *root = parent ? gtk_widget_get_root (parent) : NULL;
  TsReduceDialog *self;
  g_autofree char *base = NULL;

  g_return_val_if_fail (source != NULL && adapters_dir != NULL, NULL);

  self = g_object_new (TS_TYPE_REDUCE_DIALOG, "transient-for",
                       GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, NULL);
  base = g_path_get_basename (source);
  if (g_str_has_suffix (base, ".gguf"))
    base[strlen (base) - 5] = '\0';
  self->source = g_strdup (source);
  self->source_id = g_steal_pointer (&base);
  self->adapters_dir = g_strdup (adapters_dir);
  self->catalogue = catalogue ? ts_market_adapter_ref (catalogue) : NULL;
  adw_window_title_set_subtitle (self->window_title,
                                 catalogue ? catalogue->name : self->source_id);
  _ts_reduce_dialog_set_location (self, adapters_dir);
  load_source (self);
  gtk_window_present (GTK_WINDOW (self));
  return self;
}

gboolean
ts_reduce_dialog_get_busy (TsReduceDialog *self)
{
  g_return_val_if_fail (TS_IS_REDUCE_DIALOG (self), FALSE);
  return self->cancellable != NULL;
}

/* For tests. */

GtkSpinButton *
_ts_reduce_dialog_get_rank_spin (TsReduceDialog *self)
{
  return self->rank_spin;
}

GtkEditable *
_ts_reduce_dialog_get_name_entry (TsReduceDialog *self)
{
  return GTK_EDITABLE (self->name_row);
}

const char *
_ts_reduce_dialog_get_page (TsReduceDialog *self)
{
  return gtk_stack_get_visible_child_name (self->stack);
}

const char *
_ts_reduce_dialog_get_error (TsReduceDialog *self)
{
  return gtk_widget_get_visible (GTK_WIDGET (self->error_label))
           ? gtk_label_get_text (self->error_label) : NULL;
}

const TsAdapterReduction *
_ts_reduce_dialog_get_result (TsReduceDialog *self)
{
  return self->result;
}

GtkWidget *
_ts_reduce_dialog_get_modules_group (TsReduceDialog *self)
{
  return GTK_WIDGET (self->modules_group);
}
