/* ts-conversation-settings-dialog.c: a conversation's system prompt and sampling settings.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-conversation-settings-dialog-private.h"

G_DEFINE_FINAL_TYPE (TsConversationSettingsDialog, ts_conversation_settings_dialog, ADW_TYPE_WINDOW)

enum {
  SIGNAL_SAVED,
  SIGNAL_MAKE_DEFAULT,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static char *
system_text (TsConversationSettingsDialog *self)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (self->system_view);
  GtkTextIter start, end;

  gtk_text_buffer_get_bounds (buffer, &start, &end);
  return gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
}

/* The presets' labels, then "Custom" (the last item). */
static void
fill_presets (TsConversationSettingsDialog *self)
{
  g_autoptr (GtkStringList) labels = gtk_string_list_new (NULL);
  guint n;
  const TsSystemPromptPreset *presets = ts_system_prompt_presets (&n);

  for (guint i = 0; i < n; i++)
    gtk_string_list_append (labels, gettext (presets[i].label));
  gtk_string_list_append (labels, _("Custom"));
  adw_combo_row_set_model (self->preset_row, G_LIST_MODEL (labels));
}

static void
validate (TsConversationSettingsDialog *self)
{
  g_autoptr (TsConversationSettings) s = ts_conversation_settings_dialog_get_settings (self);
  g_autoptr (GError) error = NULL;
  gboolean ok = ts_conversation_settings_validate (s, self->model_context, &error);

  g_clear_pointer (&self->error, g_free);
  if (!ok)
    self->error = g_strdup (error->message);
  gtk_label_set_text (self->error_label, ok ? "" : error->message);
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), !ok);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "settings.save", ok);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "settings.make-default", ok);
}

/* Editing the text picks the preset it now is, or "Custom". */
static void
system_changed_cb (TsConversationSettingsDialog *self)
{
  g_autofree char *text = system_text (self);
  int preset = ts_system_prompt_preset_find (text);
  guint n;

  ts_system_prompt_presets (&n);
  if (!self->syncing_preset)
    {
      self->syncing_preset = TRUE;
      adw_combo_row_set_selected (self->preset_row, preset >= 0 ? (guint) preset : n);
      self->syncing_preset = FALSE;
    }
  validate (self);
}

/* Picking a preset puts its text in; "Custom" keeps the text. */
static void
preset_selected_cb (TsConversationSettingsDialog *self)
{
  guint n;
  const TsSystemPromptPreset *presets = ts_system_prompt_presets (&n);
  guint selected = adw_combo_row_get_selected (self->preset_row);

  if (self->syncing_preset || selected >= n)
    return;
  self->syncing_preset = TRUE;
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (self->system_view),
                            gettext (presets[selected].text), -1);
  self->syncing_preset = FALSE;
}

TsConversationSettings *
ts_conversation_settings_dialog_get_settings (TsConversationSettingsDialog *self)
{
  TsConversationSettings *s = ts_conversation_settings_new ();

  g_return_val_if_fail (TS_IS_CONVERSATION_SETTINGS_DIALOG (self), s);
  g_free (s->system_prompt);
  s->system_prompt = system_text (self);
  s->temperature = gtk_spin_button_get_value (self->temperature_spin);
  s->top_k = gtk_spin_button_get_value_as_int (self->top_k_spin);
  s->top_p = gtk_spin_button_get_value (self->top_p_spin);
  s->min_p = gtk_spin_button_get_value (self->min_p_spin);
  s->repeat_penalty = gtk_spin_button_get_value (self->repeat_spin);
  s->seed = gtk_switch_get_active (self->random_seed_switch)
            ? -1 : gtk_spin_button_get_value_as_int (self->seed_spin);
  s->context_length = (guint) gtk_spin_button_get_value_as_int (self->context_spin);
  return s;
}

void
ts_conversation_settings_dialog_set_settings (TsConversationSettingsDialog *self,
                                              const TsConversationSettings *s)
{
  g_return_if_fail (TS_IS_CONVERSATION_SETTINGS_DIALOG (self));
  g_return_if_fail (s != NULL);
  gtk_text_buffer_set_text (gtk_text_view_get_buffer (self->system_view), s->system_prompt, -1);
  /* Setting the same (empty) text emits nothing: the preset row is matched here. */
  system_changed_cb (self);
  gtk_spin_button_set_value (self->temperature_spin, s->temperature);
  gtk_spin_button_set_value (self->top_k_spin, s->top_k);
  gtk_spin_button_set_value (self->top_p_spin, s->top_p);
  gtk_spin_button_set_value (self->min_p_spin, s->min_p);
  gtk_spin_button_set_value (self->repeat_spin, s->repeat_penalty);
  gtk_switch_set_active (self->random_seed_switch, s->seed < 0);
  if (s->seed >= 0)
    gtk_spin_button_set_value (self->seed_spin, (double) s->seed);
  gtk_spin_button_set_value (self->context_spin, s->context_length);
  validate (self);
}

void
ts_conversation_settings_dialog_set_for_defaults (TsConversationSettingsDialog *self)
{
  g_return_if_fail (TS_IS_CONVERSATION_SETTINGS_DIALOG (self));
  gtk_window_set_title (GTK_WINDOW (self), _("New Conversations"));
  gtk_widget_set_visible (self->make_default_button, FALSE);
}

const char *
ts_conversation_settings_dialog_get_error (TsConversationSettingsDialog *self)
{
  g_return_val_if_fail (TS_IS_CONVERSATION_SETTINGS_DIALOG (self), NULL);
  return self->error;
}

static void
save_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsConversationSettingsDialog *self = TS_CONVERSATION_SETTINGS_DIALOG (widget);

  validate (self);
  if (self->error != NULL)
    return;
  g_signal_emit (self, signals[SIGNAL_SAVED], 0);
  gtk_window_close (GTK_WINDOW (self));
}

static void
reset_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsConversationSettingsDialog *self = TS_CONVERSATION_SETTINGS_DIALOG (widget);

  ts_conversation_settings_dialog_set_settings (self, self->defaults);
}

static void
make_default_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsConversationSettingsDialog *self = TS_CONVERSATION_SETTINGS_DIALOG (widget);

  validate (self);
  if (self->error != NULL)
    return;
  g_clear_pointer (&self->defaults, ts_conversation_settings_free);
  self->defaults = ts_conversation_settings_dialog_get_settings (self);
  g_signal_emit (self, signals[SIGNAL_MAKE_DEFAULT], 0);
}

static void
ts_conversation_settings_dialog_finalize (GObject *object)
{
  TsConversationSettingsDialog *self = TS_CONVERSATION_SETTINGS_DIALOG (object);

  ts_conversation_settings_free (self->defaults);
  g_free (self->error);
  G_OBJECT_CLASS (ts_conversation_settings_dialog_parent_class)->finalize (object);
}

#define BIND(name) \
  gtk_widget_class_bind_template_child (widget_class, TsConversationSettingsDialog, name)

static void
ts_conversation_settings_dialog_class_init (TsConversationSettingsDialogClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->finalize = ts_conversation_settings_dialog_finalize;
  signals[SIGNAL_SAVED] = g_signal_new ("saved", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0,
                                        NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIGNAL_MAKE_DEFAULT] = g_signal_new ("make-default", G_TYPE_FROM_CLASS (klass),
                                               G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                               G_TYPE_NONE, 0);
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-conversation-settings-dialog.ui");
  BIND (preset_row);
  BIND (system_view);
  BIND (temperature_spin);
  BIND (top_k_spin);
  BIND (top_p_spin);
  BIND (min_p_spin);
  BIND (repeat_spin);
  BIND (random_seed_switch);
  BIND (seed_spin);
  BIND (context_row);
  BIND (context_spin);
  BIND (context_adjustment);
  BIND (error_label);
  BIND (save_button);
  BIND (make_default_button);
  gtk_widget_class_install_action (widget_class, "settings.save", NULL, save_action);
  gtk_widget_class_install_action (widget_class, "settings.reset", NULL, reset_action);
  gtk_widget_class_install_action (widget_class, "settings.make-default", NULL,
                                   make_default_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "window.close", NULL);
}

static void
ts_conversation_settings_dialog_init (TsConversationSettingsDialog *self)
{
  GtkSpinButton *spins[7];

  gtk_widget_init_template (GTK_WIDGET (self));
  spins[0] = self->temperature_spin, spins[1] = self->top_k_spin, spins[2] = self->top_p_spin;
  spins[3] = self->min_p_spin, spins[4] = self->repeat_spin, spins[5] = self->seed_spin;
  spins[6] = self->context_spin;
  fill_presets (self);
  for (guint i = 0; i < G_N_ELEMENTS (spins); i++)
    g_signal_connect_swapped (spins[i], "value-changed", G_CALLBACK (validate), self);
  g_signal_connect_swapped (self->random_seed_switch, "notify::active", G_CALLBACK (validate), self);
  g_signal_connect_swapped (gtk_text_view_get_buffer (self->system_view), "changed",
                            G_CALLBACK (system_changed_cb), self);
  g_signal_connect_swapped (self->preset_row, "notify::selected", G_CALLBACK (preset_selected_cb),
                            self);
}

/* The context row says what 0 means on this model, and the spin button
 * stops at its length. */
static void
show_model_context (TsConversationSettingsDialog *self, guint model_context)
{
  g_autofree char *subtitle = NULL;

  self->model_context = model_context;
  if (model_context > 0)
    {
      gtk_adjustment_set_upper (self->context_adjustment, model_context);
      subtitle = g_strdup_printf (_("Tokens a reply may use, prompt and answer together: 0 is the "
                                    "model's own %u, or %d to %u. The oldest exchanges are left "
                                    "out when the conversation outgrows it."),
                                  model_context, TS_CONTEXT_MIN, model_context);
    }
  else
    subtitle = g_strdup_printf (_("Tokens a reply may use, prompt and answer together: 0 is the "
                                  "model's own, or at least %d. The oldest exchanges are left out "
                                  "when the conversation outgrows it."), TS_CONTEXT_MIN);
  adw_action_row_set_subtitle (self->context_row, subtitle);
}

TsConversationSettingsDialog *
ts_conversation_settings_dialog_new (GtkWindow *parent, const TsConversationSettings *current,
                                     const TsConversationSettings *defaults, guint model_context)
{
  TsConversationSettingsDialog *self = g_object_new (TS_TYPE_CONVERSATION_SETTINGS_DIALOG,
                                                     "transient-for", parent, NULL);

  g_return_val_if_fail (current != NULL && defaults != NULL, self);
  self->defaults = ts_conversation_settings_copy (defaults);
  show_model_context (self, model_context);
  ts_conversation_settings_dialog_set_settings (self, current);
  return self;
}
