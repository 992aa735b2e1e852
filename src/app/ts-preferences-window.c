/* ts-preferences-window.c: the preferences window, every row bound to GSettings.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-config.h"
#include "ts-gpu.h"
#include "ts-preferences-window.h"

struct _TsPreferencesWindow
{
  AdwPreferencesWindow parent_instance;

  AdwComboRow *mode_row;
  AdwEntryRow *url_row;
  AdwActionRow *private_row;
  GtkSwitch *private_switch;
  AdwActionRow *rho_row;
  GtkSpinButton *rho_spin;
  AdwComboRow *preset_row;
  GtkSpinButton *threads_spin;
  AdwActionRow *gpu_row;
  GtkSwitch *gpu_switch;
  AdwEntryRow *market_row;
  AdwComboRow *theme_row;

  GSettings *settings;
  GCancellable *cancellable;
};

G_DEFINE_FINAL_TYPE (TsPreferencesWindow, ts_preferences_window, ADW_TYPE_PREFERENCES_WINDOW)

/* Enum settings shown in combo rows, in the order of the rows' items. */
static const char *const mode_nicks[] = { "plain", "local", "remote", NULL };
static const char *const preset_nicks[] = { "auto", "n8192", "n16384", "n32768", NULL };
static const char *const scheme_nicks[] = { "default", "light", "dark", NULL };

static gboolean
nick_to_index (GValue *value, GVariant *variant, gpointer user_data)
{
  const char *const *nicks = user_data;
  const char *nick = g_variant_get_string (variant, NULL);

  for (guint i = 0; nicks[i] != NULL; i++)
    if (g_str_equal (nicks[i], nick))
      {
        g_value_set_uint (value, i);
        return TRUE;
      }
  return FALSE;
}

static GVariant *
index_to_nick (const GValue *value, const GVariantType *type, gpointer user_data)
{
  const char *const *nicks = user_data;
  guint index = g_value_get_uint (value);

  if (index >= g_strv_length ((char **) nicks))
    return NULL;
  return g_variant_new_string (nicks[index]);
}

static void
bind_combo (GSettings *settings, const char *key, AdwComboRow *row, const char *const *nicks)
{
  g_settings_bind_with_mapping (settings, key, row, "selected", G_SETTINGS_BIND_DEFAULT,
                                nick_to_index, index_to_nick, (gpointer) nicks, NULL);
}

static gboolean
int_to_double (GValue *value, GVariant *variant, gpointer user_data)
{
  g_value_set_double (value, g_variant_get_int32 (variant));
  return TRUE;
}

static GVariant *
double_to_int (const GValue *value, const GVariantType *type, gpointer user_data)
{
  return g_variant_new_int32 ((gint32) g_value_get_double (value));
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

static gboolean
mode_is_remote (GBinding *binding, const GValue *from, GValue *to, gpointer user_data)
{
  g_value_set_boolean (to, g_value_get_uint (from) == 2);
  return TRUE;
}

static void
ts_preferences_window_bind (TsPreferencesWindow *self)
{
  GSettings *settings = self->settings;

  bind_combo (settings, "evaluator-mode", self->mode_row, mode_nicks);
  bind_combo (settings, "ckks-preset", self->preset_row, preset_nicks);
  bind_combo (settings, "color-scheme", self->theme_row, scheme_nicks);
  g_settings_bind (settings, "evaluator-url", self->url_row, "text", G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (settings, "marketplace-url", self->market_row, "text",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (settings, "use-gpu", self->gpu_switch, "active", G_SETTINGS_BIND_DEFAULT);
  g_settings_bind_with_mapping (settings, "threads",
                                gtk_spin_button_get_adjustment (self->threads_spin), "value",
                                G_SETTINGS_BIND_DEFAULT, int_to_double, double_to_int,
                                NULL, NULL);
  g_settings_bind (settings, "evaluator-private", self->private_switch, "active",
                   G_SETTINGS_BIND_DEFAULT);
  g_settings_bind (settings, "privacy-rho", gtk_spin_button_get_adjustment (self->rho_spin),
                   "value", G_SETTINGS_BIND_DEFAULT);
  /* The address and the private mode only matter for the remote evaluator. */
  g_object_bind_property_full (self->mode_row, "selected", self->url_row, "sensitive",
                               G_BINDING_SYNC_CREATE, mode_is_remote, NULL, NULL, NULL);
  g_object_bind_property_full (self->mode_row, "selected", self->private_row, "sensitive",
                               G_BINDING_SYNC_CREATE, mode_is_remote, NULL, NULL, NULL);
  g_object_bind_property_full (self->mode_row, "selected", self->rho_row, "sensitive",
                               G_BINDING_SYNC_CREATE, mode_is_remote, NULL, NULL, NULL);
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
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, preset_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, threads_spin);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, gpu_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, gpu_switch);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, market_row);
  gtk_widget_class_bind_template_child (widget_class, TsPreferencesWindow, theme_row);
}

static void
ts_preferences_window_init (TsPreferencesWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));

  adw_action_row_set_subtitle (self->gpu_row, _("Probing…"));
  gtk_widget_set_sensitive (GTK_WIDGET (self->gpu_row), FALSE);
  self->cancellable = g_cancellable_new ();
  ts_gpu_probe_async (self->cancellable, gpu_probe_cb, self);
}

TsPreferencesWindow *
ts_preferences_window_new (GtkWindow *parent, GSettings *settings)
{
  TsPreferencesWindow *self;

  g_return_val_if_fail (G_IS_SETTINGS (settings), NULL);

  /* Part of the parent's application, so quitting closes it too. */
  self = g_object_new (TS_TYPE_PREFERENCES_WINDOW, "transient-for", parent,
                       "application", parent ? gtk_window_get_application (parent) : NULL,
                       NULL);
  self->settings = g_object_ref (settings);
  ts_preferences_window_bind (self);
  return self;
}

static void
color_scheme_changed_cb (GSettings *settings, const char *key, gpointer user_data)
{
  static const AdwColorScheme schemes[] = {
    ADW_COLOR_SCHEME_DEFAULT, ADW_COLOR_SCHEME_FORCE_LIGHT, ADW_COLOR_SCHEME_FORCE_DARK,
  };
  g_autofree char *nick = g_settings_get_string (settings, "color-scheme");

  for (guint i = 0; i < G_N_ELEMENTS (schemes); i++)
    if (g_str_equal (nick, scheme_nicks[i]))
      adw_style_manager_set_color_scheme (adw_style_manager_get_default (), schemes[i]);
}

void
ts_preferences_follow_color_scheme (GSettings *settings)
{
  g_return_if_fail (G_IS_SETTINGS (settings));

  g_signal_connect (settings, "changed::color-scheme", G_CALLBACK (color_scheme_changed_cb),
                    NULL);
  color_scheme_changed_cb (settings, "color-scheme", NULL);
}
