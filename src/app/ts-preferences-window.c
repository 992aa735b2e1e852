/* ts-preferences-window.c: the preferences window, every row bound to a TsSettings property.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-config.h"
#include "ts-conversation-settings-dialog.h"
#include "ts-gpu.h"
#include "ts-preferences-window.h"
#include "ts-privacy-accountant.h"

struct _TsPreferencesWindow
{
  AdwPreferencesWindow parent_instance;

  AdwComboRow *mode_row;
  AdwEntryRow *url_row;
  AdwActionRow *private_row;
  GtkSwitch *private_switch;
  AdwActionRow *rho_row;
  GtkSpinButton *rho_spin;
  AdwActionRow *rho_preview_row;
  AdwComboRow *preset_row;
  GtkSpinButton *threads_spin;
  AdwActionRow *gpu_row;
  GtkSwitch *gpu_switch;
  AdwEntryRow *market_row;
  AdwComboRow *theme_row;
  AdwActionRow *conversation_row;

  TsSettings *settings;
  GCancellable *cancellable;
};

G_DEFINE_FINAL_TYPE (TsPreferencesWindow, ts_preferences_window, ADW_TYPE_PREFERENCES_WINDOW)

/* The combo rows list an enum's values in order: the selected row is the
 * value. */
static gboolean
enum_to_index (GBinding *binding, const GValue *from, GValue *to, gpointer user_data)
{
  g_value_set_uint (to, (guint) g_value_get_enum (from));
  return TRUE;
}

static gboolean
index_to_enum (GBinding *binding, const GValue *from, GValue *to, gpointer user_data)
{
  guint index = g_value_get_uint (from);
  g_autoptr (GEnumClass) klass = g_type_class_ref (G_VALUE_TYPE (to));

  if (g_enum_get_value (klass, (int) index) == NULL)
    return FALSE;
  g_value_set_enum (to, (int) index);
  return TRUE;
}

static void
bind_combo (TsSettings *settings, const char *key, AdwComboRow *row)
{
  g_object_bind_property_full (settings, key, row, "selected",
                               G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE,
                               enum_to_index, index_to_enum, NULL, NULL);
}

static void
bind (TsSettings *settings, const char *key, gpointer target, const char *property)
{
  g_object_bind_property (settings, key, target, property,
                          G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE);
}

/* "Automatic", then the presets (ts-settings.h), whose choices follow it. */
static void
fill_presets (AdwComboRow *row)
{
  g_autoptr (GtkStringList) list = gtk_string_list_new (NULL);
  guint n;
  const TsCkksPreset *presets = ts_ckks_presets (&n);

  gtk_string_list_append (list, _("Automatic"));
  for (guint i = 0; i < n; i++)
    {
      g_assert (presets[i].choice == i + 1);
      gtk_string_list_append (list, gettext (presets[i].label));
    }
  adw_combo_row_set_model (row, G_LIST_MODEL (list));
}

/* Greys the GPU switch out, with the probe's reason, when there is no GPU. */
static void
gpu_probe_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsGpuInfo) info = ts_gpu_probe_finish (result, NULL);
  g_autofree char *text = NULL;
  TsPreferencesWindow *self;

  if (info == NULL)
    return;  /* Cancelled: the window is gone. */
  self = TS_PREFERENCES_WINDOW (user_data);
  if (!TS_HAVE_CUDA)
    text = g_strdup (_("This build has no CUDA kernels"));
  else if (info->n_devices == 0)
    text = g_strdup (info->reason != NULL ? info->reason : _("No GPU was found"));
  else
    text = ts_gpu_info_describe (info);
  adw_action_row_set_subtitle (self->gpu_row, text);
  gtk_widget_set_sensitive (GTK_WIDGET (self->gpu_row), TS_HAVE_CUDA && info->n_devices > 0);
}

/* The budget the preview counts against. The evaluator's own budget is
 * known only once the chat has asked it (its pane then shows it); this is
 * a usual one, as the evaluator of the demo keeps. */
#define PREVIEW_EPSILON 5.0
#define PREVIEW_DELTA 1e-6

/* What a cost per answer means, counted by the evaluator's own accountant:
 * how much noise each answer gets and how many answers a budget lasts.
 * A cost above what one answer may spend is refused at the first answer,
 * so the preview says so and what the most is. */
static char *
privacy_preview_text (double rho)
{
  TsPrivacyAccountant *accountant;
  g_autofree char *count = NULL;
  guint64 answers;

  if (!(rho > 0.0))
    return g_strdup (_("No noise: answers are masked and flooded only, and no budget is spent."));
  accountant = ts_privacy_accountant_new (PREVIEW_EPSILON, PREVIEW_DELTA);
  answers = ts_privacy_accountant_remaining (accountant, "preview", rho);
  ts_privacy_accountant_free (accountant);
  if (answers == 0)
    return g_strdup_printf (_("Too high: with a budget of ε %g (δ %g) even the first answer "
                              "is refused. The most one answer may cost is %.4f."),
                            PREVIEW_EPSILON, PREVIEW_DELTA,
                            ts_privacy_rho_for_epsilon (PREVIEW_EPSILON, PREVIEW_DELTA));
  count = g_strdup_printf ("%" G_GUINT64_FORMAT, answers);
  return g_strdup_printf (g_dngettext (NULL,
                                       "Each answer gets noise of %.3g times the most one "
                                       "adapter row can change it. A budget of ε %g (δ %g) "
                                       "lasts %s answer; a token asks one per adapted module.",
                                       "Each answer gets noise of %.3g times the most one "
                                       "adapter row can change it. A budget of ε %g (δ %g) "
                                       "lasts %s answers; a token asks one per adapted module.",
                                       (gulong) MIN (answers, G_MAXULONG)),
                          ts_privacy_sigma (1.0, rho), PREVIEW_EPSILON, PREVIEW_DELTA, count);
}

static void
update_privacy_preview (TsPreferencesWindow *self)
{
  g_autofree char *text = privacy_preview_text (gtk_spin_button_get_value (self->rho_spin));

  adw_action_row_set_subtitle (self->rho_preview_row, text);
}

static void
defaults_saved_cb (TsConversationSettingsDialog *dialog, TsPreferencesWindow *self)
{
  g_autoptr (TsConversationSettings) s = ts_conversation_settings_dialog_get_settings (dialog);

  ts_settings_set_conversation_defaults (self->settings, s);
}

/* The conversation settings dialog over the defaults; its Reset shows the
 * built-in ones. */
static void
conversation_defaults_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsPreferencesWindow *self = TS_PREFERENCES_WINDOW (widget);
  g_autoptr (TsConversationSettings) current = ts_settings_get_conversation_defaults (self->settings);
  g_autoptr (TsConversationSettings) builtin = ts_conversation_settings_new ();
  TsConversationSettingsDialog *dialog;

  dialog = ts_conversation_settings_dialog_new (GTK_WINDOW (self), current, builtin, 0);
  ts_conversation_settings_dialog_set_for_defaults (dialog);
  g_signal_connect_object (dialog, "saved", G_CALLBACK (defaults_saved_cb), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

static gboolean
mode_is_remote (GBinding *binding, const GValue *from, GValue *to, gpointer user_data)
{
  g_value_set_boolean (to, g_value_get_uint (from) == TS_EVALUATOR_MODE_REMOTE);
  return TRUE;
}

static void
ts_preferences_window_bind (TsPreferencesWindow *self)
{
  TsSettings *settings = self->settings;

  bind_combo (settings, "evaluator-mode", self->mode_row);
  bind_combo (settings, "ckks-preset", self->preset_row);
  bind_combo (settings, "color-scheme", self->theme_row);
  bind (settings, "evaluator-url", self->url_row, "text");
  bind (settings, "marketplace-url", self->market_row, "text");
  bind (settings, "use-gpu", self->gpu_switch, "active");
  bind (settings, "threads", gtk_spin_button_get_adjustment (self->threads_spin), "value");
  bind (settings, "evaluator-private", self->private_switch, "active");
  bind (settings, "privacy-rho", gtk_spin_button_get_adjustment (self->rho_spin), "value");
  /* The address and the private mode only matter for the remote evaluator. */
  g_object_bind_property_full (self->mode_row, "selected", self->url_row, "sensitive",
                               G_BINDING_SYNC_CREATE, mode_is_remote, NULL, NULL, NULL);
  g_object_bind_property_full (self->mode_row, "selected", self->private_row, "sensitive",
                               G_BINDING_SYNC_CREATE, mode_is_remote, NULL, NULL, NULL);
  g_object_bind_property_full (self->mode_row, "selected", self->rho_row, "sensitive",
                               G_BINDING_SYNC_CREATE, mode_is_remote, NULL, NULL, NULL);
  g_object_bind_property_full (self->mode_row, "selected", self->rho_preview_row, "sensitive",
                               G_BINDING_SYNC_CREATE, mode_is_remote, NULL, NULL, NULL);
  g_signal_connect_object (gtk_spin_button_get_adjustment (self->rho_spin), "value-changed",
                           G_CALLBACK (update_privacy_preview), self, G_CONNECT_SWAPPED);
  update_privacy_preview (self);
}

static void
ts_preferences_window_dispose (GObject *object)
{
  TsPreferencesWindow *self = TS_PREFERENCES_WINDOW (object);

  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_clear_object (&self->settings);
  gtk_widget_dispose_template (GTK_WIDGET (self), TS_TYPE_PREFERENCES_WINDOW);
  G_OBJECT_CLASS (ts_preferences_window_parent_class)->dispose (object);
}

static void
ts_preferences_window_class_init (TsPreferencesWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = ts_preferences_window_dispose;

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-preferences-window.ui");
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, mode_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, url_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, private_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, private_switch);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, rho_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, rho_spin);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, rho_preview_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, preset_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, threads_spin);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, gpu_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, gpu_switch);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, market_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, theme_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, conversation_row);
  gtk_widget_class_install_action (widget_class, "prefs.conversation-defaults", NULL,
                                   conversation_defaults_action);
}

static void
ts_preferences_window_init (TsPreferencesWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  fill_presets (self->preset_row);

  adw_action_row_set_subtitle (self->gpu_row, _("Probing…"));
  gtk_widget_set_sensitive (GTK_WIDGET (self->gpu_row), FALSE);
  self->cancellable = g_cancellable_new ();
  ts_gpu_probe_async (self->cancellable, gpu_probe_cb, self);
}

TsPreferencesWindow *
ts_preferences_window_new (GtkWindow *parent, TsSettings *settings)
{
  TsPreferencesWindow *self;

  g_return_val_if_fail (TS_IS_SETTINGS (settings), NULL);

  /* Part of the parent's application, so quitting closes it too. */
  self = g_object_new (TS_TYPE_PREFERENCES_WINDOW, "transient-for", parent,
                       "application", parent ? gtk_window_get_application (parent) : NULL,
                       NULL);
  self->settings = g_object_ref (settings);
  ts_preferences_window_bind (self);
  return self;
}

static void
color_scheme_changed_cb (TsSettings *settings, GParamSpec *pspec, gpointer user_data)
{
  static const AdwColorScheme schemes[] = {
    [TS_COLOR_SCHEME_DEFAULT] = ADW_COLOR_SCHEME_DEFAULT,
    [TS_COLOR_SCHEME_LIGHT] = ADW_COLOR_SCHEME_FORCE_LIGHT,
    [TS_COLOR_SCHEME_DARK] = ADW_COLOR_SCHEME_FORCE_DARK,
  };

  adw_style_manager_set_color_scheme (adw_style_manager_get_default (),
                                      schemes[ts_settings_get_color_scheme (settings)]);
}

void
ts_preferences_follow_color_scheme (TsSettings *settings)
{
  g_return_if_fail (TS_IS_SETTINGS (settings));

  g_signal_connect (settings, "notify::color-scheme", G_CALLBACK (color_scheme_changed_cb),
                    NULL);
  color_scheme_changed_cb (settings, NULL, NULL);
}
