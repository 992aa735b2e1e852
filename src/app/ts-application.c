/* ts-application.c: application lifetime, --version, app-wide actions.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-application.h"
#include "ts-config.h"
#include "ts-core.h"
#include "ts-preferences-window.h"
#include "ts-resources.h"
#include "ts-window.h"

struct _TsApplication
{
  AdwApplication parent_instance;

  TsSettings *settings;
  TsKeyVault *key_vault;
  char *start_model;      /* --model, --adapter */
  char *start_adapter;
};

G_DEFINE_FINAL_TYPE (TsApplication, ts_application, ADW_TYPE_APPLICATION)

static gpointer
ref_object (gconstpointer object, gpointer unused)
{
  return g_object_ref ((gpointer) object);
}

static void
ts_application_quit_action (GSimpleAction *action, GVariant *param, gpointer user_data)
{
  GApplication *app = G_APPLICATION (user_data);
  GList *windows = g_list_copy_deep (gtk_application_get_windows (GTK_APPLICATION (app)),
                                     ref_object, NULL);

  /* Close windows first so each one is torn down in order; then leave. */
  for (GList *l = windows; l != NULL; l = l->next)
    gtk_window_close (GTK_WINDOW (l->data));
  g_list_free_full (windows, g_object_unref);
  g_application_quit (app);
}

static const GActionEntry app_actions[] = {
  { .name = "quit", .activate = ts_application_quit_action },
};

static void
ts_application_startup (GApplication *app)
{
  TsApplication *self = TS_APPLICATION (app);
  static const char *quit_accels[] = { "<Control>q", NULL };

  G_APPLICATION_CLASS (ts_application_parent_class)->startup (app);

  ts_preferences_follow_color_scheme (ts_application_get_settings (self));
  g_action_map_add_action_entries (G_ACTION_MAP (app), app_actions,
                                   G_N_ELEMENTS (app_actions), app);
  gtk_application_set_accels_for_action (GTK_APPLICATION (app), "app.quit", quit_accels);
  gtk_window_set_default_icon_name (TS_APP_ID);
}

static void
ts_application_activate (GApplication *app)
{
  GtkWindow *window = gtk_application_get_active_window (GTK_APPLICATION (app));

  if (window == NULL)
    window = GTK_WINDOW (ts_window_new (TS_APPLICATION (app)));
  gtk_window_present (window);
}

static int
ts_application_handle_local_options (GApplication *app, GVariantDict *options)
{
  TsApplication *self = TS_APPLICATION (app);
  g_autofree char *model = NULL, *adapter = NULL;

  if (g_variant_dict_contains (options, "version"))
    {
      g_print ("tensafe %s\n", ts_version ());
      return 0;
    }
  g_variant_dict_lookup (options, "model", "^ay", &model);
  g_variant_dict_lookup (options, "adapter", "^ay", &adapter);
  if (adapter != NULL && model == NULL)
    {
      g_printerr ("tensafe: --adapter needs --model\n");
      return 2;
    }
  if (model != NULL)
    ts_application_set_start_model (self, model, adapter);
  return -1;
}

static void
ts_application_dispose (GObject *object)
{
  TsApplication *self = TS_APPLICATION (object);

  g_clear_object (&self->settings);
  g_clear_object (&self->key_vault);
  g_clear_pointer (&self->start_model, g_free);
  g_clear_pointer (&self->start_adapter, g_free);
  G_OBJECT_CLASS (ts_application_parent_class)->dispose (object);
}

static void
ts_application_class_init (TsApplicationClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GApplicationClass *app_class = G_APPLICATION_CLASS (klass);

  object_class->dispose = ts_application_dispose;
  app_class->startup = ts_application_startup;
  app_class->activate = ts_application_activate;
  app_class->handle_local_options = ts_application_handle_local_options;

  /* Templates load from these resources, so they must be there before any
   * widget class of ours is initialised. */
  ts_register_resource ();
}

static void
ts_application_init (TsApplication *self)
{
  static const GOptionEntry entries[] = {
    { "version", 0, 0, G_OPTION_ARG_NONE, NULL, N_("Print the version and exit"), NULL },
    { "model", 0, 0, G_OPTION_ARG_FILENAME, NULL, N_("Start the chat on this GGUF model"),
      N_("FILE") },
    { "adapter", 0, 0, G_OPTION_ARG_FILENAME, NULL,
      N_("With --model: apply this LoRA adapter (GGUF file or PEFT folder)"), N_("PATH") },
    { NULL },
  };

  g_application_add_main_option_entries (G_APPLICATION (self), entries);
}

TsApplication *
ts_application_new (GApplicationFlags flags)
{
  return g_object_new (TS_TYPE_APPLICATION,
                       "application-id", TS_APP_ID,
                       "flags", flags,
                       "resource-base-path", "/org/tensafe/Desktop",
                       NULL);
}

TsKeyVault *
ts_application_get_key_vault (TsApplication *self)
{
  g_return_val_if_fail (TS_IS_APPLICATION (self), NULL);

  /* Made on first use, so --version never touches the key folder. */
  if (self->key_vault == NULL)
    self->key_vault = ts_key_vault_new (NULL);
  return self->key_vault;
}

TsSettings *
ts_application_get_settings (TsApplication *self)
{
  g_return_val_if_fail (TS_IS_APPLICATION (self), NULL);

  /* Made on first use, like the key vault: a test's pages may ask before
   * the application has started. */
  if (self->settings == NULL)
    self->settings = ts_settings_new_default ();
  return self->settings;
}

const char *
ts_application_get_start_model (TsApplication *self, const char **adapter_out)
{
  g_return_val_if_fail (TS_IS_APPLICATION (self), NULL);

  if (adapter_out != NULL)
    *adapter_out = self->start_adapter;
  return self->start_model;
}

void
ts_application_set_start_model (TsApplication *self, const char *model, const char *adapter)
{
  g_return_if_fail (TS_IS_APPLICATION (self));

  /* Made absolute now: the working directory is the command line's. */
  g_free (self->start_model);
  g_free (self->start_adapter);
  self->start_model = model != NULL ? g_canonicalize_filename (model, NULL) : NULL;
  self->start_adapter = adapter != NULL ? g_canonicalize_filename (adapter, NULL) : NULL;
}
