/* ts-window.c: the main window, its pages, actions and remembered size.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-about.h"
#include "ts-bench-page.h"
#include "ts-chat-page.h"
#include "ts-keys-page.h"
#include "ts-marketplace-page.h"
#include "ts-models-dialog.h"
#include "ts-preferences-window.h"
#include "ts-window.h"

struct _TsWindow
{
  AdwApplicationWindow parent_instance;

  AdwToastOverlay *toast_overlay;
  AdwViewStack *stack;
  TsKeysPage *keys_page;
  TsChatPage *chat_page;
  TsMarketplacePage *market_page;
  AdwHeaderBar *header_bar;
  GtkWidget *header_pickers;     /* the chat's model and adapter pickers */
  TsSettings *settings;          /* the application's; every page is built with them */
};

G_DEFINE_FINAL_TYPE (TsWindow, ts_window, ADW_TYPE_APPLICATION_WINDOW)

enum {
  PROP_0,
  PROP_VISIBLE_PAGE,
  PROP_SETTINGS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
show_page_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  ts_window_set_visible_page (TS_WINDOW (widget), g_variant_get_string (param, NULL));
}

static void
about_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  ts_about_present (GTK_WINDOW (widget));
}

/* The Models window: "Use" loads into this window's chat. */
static void
models_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsWindow *self = TS_WINDOW (widget);

  gtk_window_present (GTK_WINDOW (ts_models_dialog_new (GTK_WINDOW (self), self->chat_page)));
}

static void
preferences_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsWindow *self = TS_WINDOW (widget);

  if (!ts_settings_is_kept (self->settings))
    {
      adw_toast_overlay_add_toast (self->toast_overlay,
                                   adw_toast_new (_("Settings are not installed; preferences cannot be kept")));
      return;
    }
  gtk_window_present (GTK_WINDOW (ts_preferences_window_new (GTK_WINDOW (self), self->settings)));
}

/* The marketplace page already asks for the chat page to be shown; the chat
 * checks the adapter before it selects it. */
static void
use_in_chat_cb (TsWindow *self, const char *id, const char *path)
{
  ts_chat_page_use_market_adapter (self->chat_page,
                                   ts_marketplace_page_get_adapters_dir (self->market_page),
                                   id, path);
}

/* The marketplace shows the adapters made for the model the chat runs. */
static void
model_picked_cb (TsWindow *self)
{
  ts_marketplace_page_set_loaded_model (
    self->market_page, gtk_menu_button_get_label (ts_chat_page_get_picker (self->chat_page, FALSE)));
}

static void
adapter_used_cb (TsWindow *self, const char *id, const char *version, gint64 tokens)
{
  ts_marketplace_page_report_usage (self->market_page, id, version, tokens);
}

/* The header's pickers run the chat page's actions. */
static void
forward_chat_action (GSimpleAction *action, GVariant *param, gpointer data)
{
  TsWindow *self = TS_WINDOW (data);
  g_autofree char *name = g_strconcat ("chat.", g_action_get_name (G_ACTION (action)), NULL);

  gtk_widget_activate_action_variant (GTK_WIDGET (self->chat_page), name, param);
}

static GtkWidget *
mirror_picker (GtkMenuButton *source)
{
  GtkWidget *button = gtk_menu_button_new ();
  GtkWidget *label = gtk_label_new (NULL);

  /* Real model and adapter file names are long: shortened in the middle
   * (the quantisation at the end stays readable), whole in the tooltip, so
   * the header never widens the window past a laptop screen. */
  gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_MIDDLE);
  gtk_label_set_width_chars (GTK_LABEL (label), 12);
  gtk_label_set_max_width_chars (GTK_LABEL (label), 22);
  gtk_menu_button_set_child (GTK_MENU_BUTTON (button), label);
  gtk_menu_button_set_always_show_arrow (GTK_MENU_BUTTON (button), TRUE);
  g_object_bind_property (source, "menu-model", button, "menu-model", G_BINDING_SYNC_CREATE);
  g_object_bind_property (source, "label", label, "label", G_BINDING_SYNC_CREATE);
  g_object_bind_property (source, "tooltip-text", button, "tooltip-text", G_BINDING_SYNC_CREATE);
  gtk_widget_set_visible (GTK_WIDGET (source), FALSE);
  return button;
}

/* The model and adapter pickers live in the header while the chat is shown. */
static void
ts_window_add_header_pickers (TsWindow *self)
{
  static const GActionEntry entries[] = {
    { "use-demo", forward_chat_action, NULL, NULL, NULL },
    { "use-model", forward_chat_action, "s", NULL, NULL },
    { "open-model", forward_chat_action, NULL, NULL, NULL },
    { "use-adapter", forward_chat_action, "s", NULL, NULL },
    { "route-adapter", forward_chat_action, "s", NULL, NULL },
    { "open-adapter", forward_chat_action, NULL, NULL, NULL },
    { "stack-adapters", forward_chat_action, NULL, NULL, NULL },
  };
  g_autoptr (GSimpleActionGroup) group = g_simple_action_group_new ();

  g_action_map_add_action_entries (G_ACTION_MAP (group), entries, G_N_ELEMENTS (entries), self);
  gtk_widget_insert_action_group (GTK_WIDGET (self), "chat", G_ACTION_GROUP (group));
  self->header_pickers = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 6);
  gtk_box_append (GTK_BOX (self->header_pickers),
                  mirror_picker (ts_chat_page_get_picker (self->chat_page, FALSE)));
  gtk_box_append (GTK_BOX (self->header_pickers),
                  mirror_picker (ts_chat_page_get_picker (self->chat_page, TRUE)));
  adw_header_bar_pack_start (self->header_bar, self->header_pickers);
}

static void
update_header_pickers (TsWindow *self)
{
  if (self->header_pickers != NULL)
    gtk_widget_set_visible (self->header_pickers,
                            g_strcmp0 (ts_window_get_visible_page (self), "chat") == 0);
}

static void
stack_visible_child_cb (TsWindow *self)
{
  update_header_pickers (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_VISIBLE_PAGE]);
}

/* Window size and state follow the settings both ways, so the next start
 * opens the window as the user left it. */
static void
ts_window_bind_settings (TsWindow *self)
{
  const GBindingFlags both = G_BINDING_BIDIRECTIONAL | G_BINDING_SYNC_CREATE;

  g_object_bind_property (self->settings, "window-width", self, "default-width", both);
  g_object_bind_property (self->settings, "window-height", self, "default-height", both);
  g_object_bind_property (self->settings, "window-maximized", self, "maximized", both);
}

static void
ts_window_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsWindow *self = TS_WINDOW (object);

  switch (prop_id)
    {
    case PROP_VISIBLE_PAGE:
      g_value_set_string (value, ts_window_get_visible_page (self));
      break;
    case PROP_SETTINGS:
      g_value_set_object (value, self->settings);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_window_set_property (GObject *object, guint prop_id, const GValue *value,
                        GParamSpec *pspec)
{
  TsWindow *self = TS_WINDOW (object);

  switch (prop_id)
    {
    case PROP_VISIBLE_PAGE:
      ts_window_set_visible_page (self, g_value_get_string (value));
      break;
    case PROP_SETTINGS:
      self->settings = g_value_dup_object (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static GtkWidget *
add_page (TsWindow *self, GtkWidget *page, const char *name, const char *title,
          const char *icon_name)
{
  AdwViewStackPage *stack_page = adw_view_stack_add_titled (self->stack, page, name, title);

  adw_view_stack_page_set_use_underline (stack_page, TRUE);
  adw_view_stack_page_set_icon_name (stack_page, icon_name);
  return page;
}

/* The pages are built here rather than in the template, which GTK builds
 * before the window's own properties are set: so that no page exists, even
 * for a moment, without the settings it follows. */
static void
ts_window_add_pages (TsWindow *self)
{
  self->chat_page = TS_CHAT_PAGE (add_page (self, ts_chat_page_new (self->settings), "chat",
                                            _("_Chat"), "ts-chat-symbolic"));
  self->market_page =
    TS_MARKETPLACE_PAGE (add_page (self, ts_marketplace_page_new (self->settings), "market",
                                   _("_Marketplace"), "ts-market-symbolic"));
  self->keys_page = TS_KEYS_PAGE (add_page (self, ts_keys_page_new (self->settings), "keys",
                                            _("_Keys"), "ts-keys-symbolic"));
  add_page (self, ts_bench_page_new (self->settings), "bench", _("_Benchmark"),
            "ts-bench-symbolic");
  g_signal_connect_swapped (self->market_page, "use-in-chat", G_CALLBACK (use_in_chat_cb), self);
  g_signal_connect_swapped (self->chat_page, "adapter-used", G_CALLBACK (adapter_used_cb), self);
  g_signal_connect_swapped (ts_chat_page_get_picker (self->chat_page, FALSE), "notify::label",
                            G_CALLBACK (model_picked_cb), self);
}

static void
ts_window_constructed (GObject *object)
{
  TsWindow *self = TS_WINDOW (object);

  G_OBJECT_CLASS (ts_window_parent_class)->constructed (object);
  g_return_if_fail (TS_IS_SETTINGS (self->settings));   /* ts_window_new() gives them */
  ts_window_add_pages (self);
  ts_window_add_header_pickers (self);
  update_header_pickers (self);
  ts_window_bind_settings (self);
}

static void
ts_window_finalize (GObject *object)
{
  g_clear_object (&TS_WINDOW (object)->settings);
  G_OBJECT_CLASS (ts_window_parent_class)->finalize (object);
}

static void
ts_window_add_page_shortcut (GtkWidgetClass *widget_class, guint key, const char *page)
{
  gtk_widget_class_add_binding_action (widget_class, key, GDK_ALT_MASK,
                                       "win.show-page", "s", page);
}

static void
ts_window_class_init (TsWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_window_get_property;
  object_class->set_property = ts_window_set_property;
  object_class->constructed = ts_window_constructed;
  object_class->finalize = ts_window_finalize;

  properties[PROP_VISIBLE_PAGE] =
    g_param_spec_string ("visible-page", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  /* Every page is built with them (ts_window_add_pages()). */
  properties[PROP_SETTINGS] =
    g_param_spec_object ("settings", NULL, NULL, TS_TYPE_SETTINGS,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-window.ui");
  gtk_widget_class_bind_template_child (widget_class, TsWindow, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, TsWindow, stack);
  gtk_widget_class_bind_template_child (widget_class, TsWindow, header_bar);
  gtk_widget_class_bind_template_callback (widget_class, stack_visible_child_cb);

  gtk_widget_class_install_action (widget_class, "win.show-page", "s", show_page_action);
  gtk_widget_class_install_action (widget_class, "win.about", NULL, about_action);
  gtk_widget_class_install_action (widget_class, "win.preferences", NULL, preferences_action);
  gtk_widget_class_install_action (widget_class, "win.models", NULL, models_action);

  ts_window_add_page_shortcut (widget_class, GDK_KEY_1, "chat");
  ts_window_add_page_shortcut (widget_class, GDK_KEY_2, "market");
  ts_window_add_page_shortcut (widget_class, GDK_KEY_3, "keys");
  ts_window_add_page_shortcut (widget_class, GDK_KEY_4, "bench");
}

static void
ts_window_init (TsWindow *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
}

/* The model of --model (and its --adapter) instead of the demo model;
 * without them, the model (and adapter) the chat had last time, when its
 * file is still there. */
static void
start_model (TsWindow *self, TsApplication *app)
{
  TsSettings *settings = ts_application_get_settings (app);
  const char *adapter = NULL;
  const char *model = ts_application_get_start_model (app, &adapter);

  if (model == NULL)
    {
      model = ts_settings_get_chat_model (settings);
      adapter = ts_settings_get_chat_adapter (settings);
      if (!g_file_test (model, G_FILE_TEST_IS_REGULAR))
        return;
      if (!g_file_test (adapter, G_FILE_TEST_EXISTS))
        adapter = NULL;
    }
  ts_chat_page_load_model (self->chat_page, model, adapter);
}

TsWindow *
ts_window_new (TsApplication *app)
{
  TsWindow *self;

  g_return_val_if_fail (TS_IS_APPLICATION (app), NULL);

  self = g_object_new (TS_TYPE_WINDOW, "application", app,
                       "settings", ts_application_get_settings (app), NULL);
  ts_keys_page_set_vault (self->keys_page, ts_application_get_key_vault (app));
  ts_chat_page_set_key_vault (self->chat_page, ts_application_get_key_vault (app));
  start_model (self, app);
  return self;
}

const char *
ts_window_get_visible_page (TsWindow *self)
{
  g_return_val_if_fail (TS_IS_WINDOW (self), NULL);
  return adw_view_stack_get_visible_child_name (self->stack);
}

void
ts_window_set_visible_page (TsWindow *self, const char *name)
{
  g_return_if_fail (TS_IS_WINDOW (self));
  g_return_if_fail (name != NULL);

  if (adw_view_stack_get_child_by_name (self->stack, name) == NULL)
    {
      g_warning ("TsWindow has no page named '%s'", name);
      return;
    }
  /* The stack's notify::visible-child-name reaches stack_visible_child_cb,
   * which notifies visible-page only when the page really changed. */
  adw_view_stack_set_visible_child_name (self->stack, name);
}
