/* ts-chat-page-stack.c: the "Stack Adapters" dialog: several adapters active at once, with weights.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One row per adapter the chat knows (the demo adapter, each installed one,
 * and any adapter file loaded now): a check to include it and its weight.
 * Applying loads the stack on a worker (_ts_chat_page_load_stack()); both
 * panes then use it, the HE pane encrypting each h its modules share once.
 */
#include <glib/gi18n.h>

#include "ts-chat-page-private.h"

#define STACK_MAX_WEIGHT 4.0
#define STACK_WEIGHT_STEP 0.05

typedef struct {
  TsChatPage *page;              /* a reference */
  GPtrArray *paths;              /* of char*: one per row */
  GPtrArray *checks;             /* of GtkCheckButton*, borrowed from the dialog */
  GPtrArray *weights;            /* of GtkSpinButton*, borrowed */
} StackDialog;

static void
stack_dialog_free (StackDialog *d)
{
  g_object_unref (d->page);
  g_ptr_array_unref (d->paths);
  g_ptr_array_unref (d->checks);
  g_ptr_array_unref (d->weights);
  g_free (d);
}

static void
stack_dialog_notify (gpointer data, GClosure *closure)
{
  stack_dialog_free (data);
}

/* The weight @path has in the current adapters, or 0 when it is not in
 * them: the model's own stack, or the one adapter switched to on it. */
static double
current_weight (TsChatPage *self, const char *path)
{
  guint n = ts_chat_session_get_n_adapters (self->session);

  for (guint i = 0; i < n; i++)
    {
      float weight = 0;

      if (g_strcmp0 (ts_chat_session_get_nth_adapter (self->session, i, &weight), path) == 0)
        return weight;
    }
  return 0;
}

static void
check_toggled_cb (GtkCheckButton *check, GtkWidget *weight)
{
  gtk_widget_set_sensitive (weight, gtk_check_button_get_active (check));
}

static void
add_row (StackDialog *d, GtkListBox *list, const char *label, const char *path)
{
  GtkWidget *row = adw_action_row_new ();
  GtkWidget *check = gtk_check_button_new ();
  GtkWidget *weight = gtk_spin_button_new_with_range (STACK_WEIGHT_STEP, STACK_MAX_WEIGHT,
                                                      STACK_WEIGHT_STEP);
  double current = current_weight (d->page, path);
  g_autofree char *file = g_filename_display_basename (path);

  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), label);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), file);
  gtk_spin_button_set_digits (GTK_SPIN_BUTTON (weight), 2);
  gtk_spin_button_set_value (GTK_SPIN_BUTTON (weight), current > 0 ? current : 1.0);
  gtk_widget_set_valign (weight, GTK_ALIGN_CENTER);
  gtk_widget_set_valign (check, GTK_ALIGN_CENTER);
  gtk_widget_set_tooltip_text (weight, _("Weight of this adapter's change"));
  gtk_accessible_update_property (GTK_ACCESSIBLE (weight), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("Weight"), -1);
  gtk_check_button_set_active (GTK_CHECK_BUTTON (check), current > 0);
  gtk_widget_set_sensitive (weight, current > 0);
  g_signal_connect (check, "toggled", G_CALLBACK (check_toggled_cb), weight);
  adw_action_row_add_prefix (ADW_ACTION_ROW (row), check);
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), weight);
  adw_action_row_set_activatable_widget (ADW_ACTION_ROW (row), check);
  gtk_list_box_append (list, row);
  g_ptr_array_add (d->paths, g_strdup (path));
  g_ptr_array_add (d->checks, check);
  g_ptr_array_add (d->weights, weight);
}

static gboolean
has_path (StackDialog *d, const char *path)
{
  for (guint i = 0; i < d->paths->len; i++)
    if (g_strcmp0 (g_ptr_array_index (d->paths, i), path) == 0)
      return TRUE;
  return FALSE;
}

/* A row for @path, named after its file, unless it has one already. */
static void
add_if_unknown (StackDialog *d, GtkListBox *list, const char *path)
{
  g_autofree char *name = NULL;

  if (path == NULL || has_path (d, path))
    return;
  name = g_filename_display_basename (path);
  add_row (d, list, name, path);
}

/* The known adapters, then those of the loaded stack that are not among them
 * (files opened by hand). */
static GtkWidget *
build_list (StackDialog *d)
{
  GtkWidget *list = gtk_list_box_new ();
  g_autoptr (GPtrArray) known = _ts_chat_page_list_adapters (d->page);
  guint n = ts_chat_session_get_n_adapters (d->page->session);

  gtk_list_box_set_selection_mode (GTK_LIST_BOX (list), GTK_SELECTION_NONE);
  gtk_widget_add_css_class (list, "boxed-list");
  for (guint i = 0; i < known->len; i++)
    {
      char **adapter = g_ptr_array_index (known, i);

      add_row (d, GTK_LIST_BOX (list), adapter[0], adapter[1]);
    }
  for (guint i = 0; i < n; i++)
    add_if_unknown (d, GTK_LIST_BOX (list),
                    ts_chat_session_get_nth_adapter (d->page->session, i, NULL));
  return list;
}

static void
response_cb (AdwMessageDialog *dialog, const char *response, StackDialog *d)
{
  g_autoptr (GPtrArray) paths = g_ptr_array_new ();
  g_autoptr (GArray) weights = g_array_new (FALSE, FALSE, sizeof (float));

  if (g_strcmp0 (response, "apply") != 0)
    return;
  for (guint i = 0; i < d->paths->len; i++)
    {
      float weight = (float) gtk_spin_button_get_value (g_ptr_array_index (d->weights, i));

      if (!gtk_check_button_get_active (g_ptr_array_index (d->checks, i)))
        continue;
      g_ptr_array_add (paths, g_ptr_array_index (d->paths, i));
      g_array_append_val (weights, weight);
    }
  if (paths->len > 0)
    _ts_chat_page_stack_picked (d->page, (const char *const *) paths->pdata,
                                (const float *) weights->data, paths->len);
  _ts_chat_page_load_stack (d->page, ts_chat_session_get_model_path (d->page->session),
                            (const char *const *) paths->pdata, (const float *) weights->data,
                            paths->len);
}

static void
stack_adapters_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsChatPage *self = TS_CHAT_PAGE (widget);
  GtkRoot *root = gtk_widget_get_root (widget);
  StackDialog *d = g_new0 (StackDialog, 1);
  GtkWidget *dialog;

  d->page = g_object_ref (self);
  d->paths = g_ptr_array_new_with_free_func (g_free);
  d->checks = g_ptr_array_new ();
  d->weights = g_ptr_array_new ();
  dialog = adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                   _("Stack Adapters"),
                                   _("The checked adapters are applied together, each change "
                                     "scaled by its weight. Under encryption, modules that read "
                                     "the same hidden state share one ciphertext."));
  adw_message_dialog_set_extra_child (ADW_MESSAGE_DIALOG (dialog), build_list (d));
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog), "cancel", _("_Cancel"),
                                    "apply", _("_Apply"), NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog), "apply",
                                              ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog), "apply");
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog), "cancel");
  g_signal_connect_data (dialog, "response", G_CALLBACK (response_cb), d,
                         stack_dialog_notify, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

void
_ts_chat_page_stack_class_init (GtkWidgetClass *widget_class)
{
  gtk_widget_class_install_action (widget_class, "chat.stack-adapters", NULL,
                                   stack_adapters_action);
}
