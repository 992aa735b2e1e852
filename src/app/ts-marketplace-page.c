/* ts-marketplace-page.c: the marketplace page: browse, verify, install and pick LoRA adapters.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <string.h>

#include "ts-market-card.h"
#include "ts-market-client.h"
#include "ts-market-details.h"
#include "ts-market-format.h"
#include "ts-market-remove.h"
#include "ts-market-install.h"
#include "ts-market-keyring.h"
#include "ts-marketplace-page-private.h"
#include "ts-market-usage.h"
#include "ts-toast.h"

/* Typing pauses this long before a search goes out. */
#define SEARCH_DELAY_MS 250

struct _TsMarketplacePage
{
  AdwBin parent_instance;

  char *url;
  TsSettings *settings;    /* the application's, from construction on */
  TsMarketClient *client;
  TsMarketKeyring *keyring;
  TsMarketUsage *usage;
  char *adapters_dir;
  char *cache_dir;

  GCancellable *search_cancellable;
  char *cursor;            /* next page of the current search, NULL at the end */
  guint page_size;         /* 0: the server's default */
  guint search_timeout_id;
  gboolean loaded;         /* the catalogue was asked for since the URL was set */
  GHashTable *installed;   /* ids of the installed adapters */
  GHashTable *names;       /* id → name, of every adapter seen in the catalogue */

  GtkRevealer *banner;
  GtkLabel *banner_label;
  GtkStack *outer_stack;
  GtkStack *browse_stack;
  GtkStack *results_stack;
  GtkStack *installed_stack;
  GtkSearchEntry *search_entry;
  GtkDropDown *base_model_dropdown;
  GtkDropDown *rank_dropdown;
  GtkDropDown *license_dropdown;
  GtkDropDown *price_dropdown;
  GtkDropDown *sort_dropdown;
  GtkStringList *base_models;
  GtkStringList *licenses;
  GtkFlowBox *grid;
  GtkWidget *load_more_button;
  AdwStatusPage *empty_page;
  GtkListBox *installed_list;
  TsMarketDetails *details;
};

G_DEFINE_FINAL_TYPE (TsMarketplacePage, ts_marketplace_page, ADW_TYPE_BIN)

enum {
  PROP_0,
  PROP_MARKETPLACE_URL,
  PROP_OFFLINE,
  PROP_SETTINGS,
  N_PROPS
};

enum {
  SIGNAL_USE_IN_CHAT,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

/* The filter menus' fixed choices, in the order of their .ui items. */
static const gint64 rank_choices[] = { 0, 4, 8, 16, 32, 64 };
static const double price_choices[] = { -1, 0, 0.01, 0.05, 0.10, 1.00 };
static const char *sort_choices[] = { "relevance", "name", "price", "-price", "newest" };

static void start_search (TsMarketplacePage *self, gboolean next_page);
static void refresh_installed (TsMarketplacePage *self);

/* The banner ------------------------------------------------------------ */

static void
show_banner (TsMarketplacePage *self, const char *text)
{
  gtk_label_set_text (self->banner_label, text);
  gtk_revealer_set_reveal_child (self->banner, TRUE);
}

static void
offline_changed_cb (TsMarketplacePage *self)
{
  if (ts_marketplace_page_get_offline (self))
    show_banner (self, _("The marketplace cannot be reached. You are browsing the catalogue "
                         "as it was last seen; installing needs the marketplace."));
  else
    gtk_revealer_set_reveal_child (self->banner, FALSE);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_OFFLINE]);
}

/* The catalogue grid ---------------------------------------------------- */

static void
clear_grid (TsMarketplacePage *self)
{
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->grid))) != NULL)
    gtk_flow_box_remove (self->grid, child);
}

/* Filter menus list the values seen so far, after their "Any" entry. */
static void
remember_choice (GtkStringList *list, const char *value)
{
  guint n = g_list_model_get_n_items (G_LIST_MODEL (list));

  if (value == NULL || *value == '\0')
    return;
  for (guint i = 1; i < n; i++)
    if (g_strcmp0 (gtk_string_list_get_string (list, i), value) == 0)
      return;
  gtk_string_list_append (list, value);
}

static void
add_cards (TsMarketplacePage *self, GPtrArray *adapters)
{
  for (guint i = 0; i < adapters->len; i++)
    {
      TsMarketAdapter *adapter = g_ptr_array_index (adapters, i);
      GtkWidget *card = ts_market_card_new (adapter);

      ts_market_card_set_installed (TS_MARKET_CARD (card),
                                    g_hash_table_contains (self->installed, adapter->id));
      gtk_flow_box_append (self->grid, card);
      g_hash_table_replace (self->names, g_strdup (adapter->id), g_strdup (adapter->name));
      remember_choice (self->base_models, adapter->base_model);
      remember_choice (self->licenses, adapter->license);
    }
}

static void
search_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TsMarketplacePage *self;
  g_autoptr (TsMarketPage) page = NULL;
  g_autoptr (GError) error = NULL;
  gboolean has_results;

  page = ts_market_client_search_finish (TS_MARKET_CLIENT (source), result, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;
  self = TS_MARKETPLACE_PAGE (user_data);
  g_clear_object (&self->search_cancellable);
  if (page == NULL)
    {
      g_autofree char *text = g_strdup_printf (_("The marketplace at %s cannot be reached: %s"),
                                               self->url, error->message);
      show_banner (self, text);
    }
  else
    {
      /* A fresh answer clears an earlier error; a cached one keeps the
       * offline banner. */
      if (self->client != NULL && !ts_market_client_get_offline (self->client))
        gtk_revealer_set_reveal_child (self->banner, FALSE);
      add_cards (self, page->adapters);
      g_free (self->cursor);
      self->cursor = g_strdup (page->next_cursor);
    }
  has_results = gtk_widget_get_first_child (GTK_WIDGET (self->grid)) != NULL;
  gtk_widget_set_visible (self->load_more_button, self->cursor != NULL);
  gtk_stack_set_visible_child_name (self->results_stack, has_results ? "results" : "empty");
}

/* The filter's value from a dropdown of strings whose first item is "Any". */
static const char *
dropdown_choice (GtkDropDown *dropdown, GtkStringList *list)
{
  guint i = gtk_drop_down_get_selected (dropdown);

  return i == 0 || i == GTK_INVALID_LIST_POSITION ? NULL : gtk_string_list_get_string (list, i);
}

static guint
dropdown_index (GtkDropDown *dropdown, guint n_choices)
{
  guint i = gtk_drop_down_get_selected (dropdown);

  return i < n_choices ? i : 0;
}

static void
start_search (TsMarketplacePage *self, gboolean next_page)
{
  TsMarketSearch search = TS_MARKET_SEARCH_INIT;

  g_clear_handle_id (&self->search_timeout_id, g_source_remove);
  /* A newer question makes the answer to the older one useless. */
  g_cancellable_cancel (self->search_cancellable);
  g_clear_object (&self->search_cancellable);
  if (self->client == NULL)
    return;
  if (!next_page)
    {
      clear_grid (self);
      g_clear_pointer (&self->cursor, g_free);
      gtk_stack_set_visible_child_name (self->results_stack, "loading");
    }
  search.query = gtk_editable_get_text (GTK_EDITABLE (self->search_entry));
  search.base_model = dropdown_choice (self->base_model_dropdown, self->base_models);
  search.license = dropdown_choice (self->license_dropdown, self->licenses);
  search.rank = rank_choices[dropdown_index (self->rank_dropdown, G_N_ELEMENTS (rank_choices))];
  search.max_price =
    price_choices[dropdown_index (self->price_dropdown, G_N_ELEMENTS (price_choices))];
  search.sort = sort_choices[dropdown_index (self->sort_dropdown, G_N_ELEMENTS (sort_choices))];
  search.cursor = next_page ? self->cursor : NULL;
  search.limit = self->page_size;
  self->loaded = TRUE;
  self->search_cancellable = g_cancellable_new ();
  /* search_cb returns at once when cancelled, and dispose cancels. */
  ts_market_client_search_async (self->client, &search, self->search_cancellable, search_cb,
                                 self);
}

static gboolean
search_timeout_cb (gpointer user_data)
{
  TsMarketplacePage *self = user_data;

  self->search_timeout_id = 0;
  start_search (self, FALSE);
  return G_SOURCE_REMOVE;
}

static void
search_text_changed_cb (TsMarketplacePage *self)
{
  g_clear_handle_id (&self->search_timeout_id, g_source_remove);
  self->search_timeout_id = g_timeout_add (SEARCH_DELAY_MS, search_timeout_cb, self);
}

static void
filter_changed_cb (TsMarketplacePage *self)
{
  if (self->loaded)
    start_search (self, FALSE);
}

static void
edge_reached_cb (TsMarketplacePage *self, GtkPositionType pos)
{
  /* Infinite scroll: the next page when the bottom comes into view. */
  if (pos == GTK_POS_BOTTOM && self->cursor != NULL && self->search_cancellable == NULL)
    start_search (self, TRUE);
}

/* Details ------------------------------------------------------------------ */

static void
open_details (TsMarketplacePage *self, const char *id)
{
  ts_market_details_load (self->details, id);
  gtk_stack_set_visible_child_name (self->outer_stack, "details");
}

static void
card_activated_cb (TsMarketplacePage *self, GtkFlowBoxChild *child)
{
  GtkWidget *card = gtk_flow_box_child_get_child (child);

  open_details (self, ts_market_card_get_adapter (TS_MARKET_CARD (card))->id);
}

static void
details_back_cb (TsMarketplacePage *self)
{
  gtk_stack_set_visible_child_name (self->outer_stack, "browse");
}

static void
use_in_chat (TsMarketplacePage *self, const char *id, const char *path)
{
  g_autofree char *message = g_strdup_printf (_("“%s” is selected for the chat"), id);

  g_signal_emit (self, signals[SIGNAL_USE_IN_CHAT], 0, id, path);
  ts_toast_show (GTK_WIDGET (self->outer_stack), message);
  /* Inside the main window this shows the chat; alone (tests) it does nothing. */
  gtk_widget_activate_action (GTK_WIDGET (self), "win.show-page", "s", "chat");
}

static void
details_use_in_chat_cb (TsMarketplacePage *self, const char *id, const char *path)
{
  use_in_chat (self, id, path);
}

/* Installed adapters ---------------------------------------------------- */

static GtkWidget *
installed_button_new (const char *label, const char *icon, const char *action, const char *id)
{
  GtkWidget *button = label ? gtk_button_new_with_mnemonic (label)
                            : gtk_button_new_from_icon_name (icon);

  gtk_widget_set_valign (button, GTK_ALIGN_CENTER);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (button), action);
  gtk_actionable_set_action_target (GTK_ACTIONABLE (button), "s", id);
  return button;
}

static GtkWidget *
installed_row_new (TsMarketInstalled *inst, const char *name)
{
  GtkWidget *row = adw_action_row_new ();
  GtkWidget *use = installed_button_new (_("_Use in Chat"), NULL, "market.use-installed",
                                         inst->id);
  GtkWidget *remove = installed_button_new (NULL, "user-trash-symbolic",
                                            "market.remove-installed", inst->id);
  g_autofree char *subtitle = NULL;

  if (inst->local && inst->derived_from != NULL)
    /* Translators: a reduced adapter's version and the marketplace adapter it was made from,
     * e.g. "1.0.0 · reduced from tiny-poet". */
    subtitle = g_strdup_printf (_("Version %s · reduced from %s"), inst->version,
                                inst->derived_from);
  else
    /* Translators: an installed adapter's version and publisher, e.g. "1.0.0 · tensafe-demo". */
    subtitle = g_strdup_printf (_("Version %s · %s"), inst->version, inst->publisher);
  adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row),
                                 name ? name : inst->name ? inst->name : inst->id);
  adw_action_row_set_subtitle (ADW_ACTION_ROW (row), subtitle);
  gtk_widget_set_tooltip_text (remove, _("Remove"));
  gtk_widget_add_css_class (remove, "flat");
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), use);
  adw_action_row_add_suffix (ADW_ACTION_ROW (row), remove);
  gtk_actionable_set_action_name (GTK_ACTIONABLE (row), "market.show-details");
  gtk_actionable_set_action_target (GTK_ACTIONABLE (row), "s", inst->id);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), TRUE);
  return row;
}

static void
mark_installed_cards (TsMarketplacePage *self)
{
  for (GtkWidget *child = gtk_widget_get_first_child (GTK_WIDGET (self->grid)); child != NULL;
       child = gtk_widget_get_next_sibling (child))
    {
      TsMarketCard *card =
        TS_MARKET_CARD (gtk_flow_box_child_get_child (GTK_FLOW_BOX_CHILD (child)));

      ts_market_card_set_installed (card, g_hash_table_contains (self->installed,
                                                                 ts_market_card_get_adapter (card)->id));
    }
}

static void
refresh_installed (TsMarketplacePage *self)
{
  g_autoptr (GPtrArray) list = NULL;
  g_autoptr (GError) error = NULL;
  GtkWidget *child;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->installed_list))) != NULL)
    gtk_list_box_remove (self->installed_list, child);
  g_hash_table_remove_all (self->installed);
  list = ts_market_list_installed (self->adapters_dir, &error);
  if (list == NULL)
    {
      g_autofree char *message = g_strdup_printf (_("Cannot list installed adapters: %s"),
                                                  error->message);
      ts_toast_show (GTK_WIDGET (self->outer_stack), message);
      return;
    }
  for (guint i = 0; i < list->len; i++)
    {
      TsMarketInstalled *inst = g_ptr_array_index (list, i);

      gtk_list_box_append (self->installed_list,
                           installed_row_new (inst, g_hash_table_lookup (self->names, inst->id)));
      g_hash_table_insert (self->installed, g_strdup (inst->id), NULL);
    }
  gtk_stack_set_visible_child_name (self->installed_stack, list->len > 0 ? "list" : "empty");
  mark_installed_cards (self);
}

/* Actions --------------------------------------------------------------- */

static void
retry_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (widget);

  refresh_installed (self);
  start_search (self, FALSE);
}

static void
load_more_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (widget);

  if (self->cursor != NULL && self->search_cancellable == NULL)
    start_search (self, TRUE);
}

static void
show_details_action (GtkWidget *widget, const char *name, GVariant *param)
{
  open_details (TS_MARKETPLACE_PAGE (widget), g_variant_get_string (param, NULL));
}

static void
use_installed_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (widget);
  const char *id = g_variant_get_string (param, NULL);
  g_autofree char *path = g_build_filename (self->adapters_dir, id, NULL);

  use_in_chat (self, id, path);
}

static void
remove_installed (GtkWidget *widget, const char *id)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (widget);
  g_autoptr (GError) error = NULL;
  g_autofree char *message = NULL;

  if (ts_market_remove_installed (self->adapters_dir, id, &error))
    message = g_strdup_printf (_("“%s” was removed"), id);
  else
    message = g_strdup_printf (_("Could not remove: %s"), error->message);
  ts_toast_show (GTK_WIDGET (self->outer_stack), message);
  refresh_installed (self);
}

static void
remove_installed_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (widget);
  const char *id = g_variant_get_string (param, NULL);

  ts_market_confirm_remove (widget, id, g_hash_table_lookup (self->names, id), remove_installed);
}

/* Set-up ---------------------------------------------------------------- */

static void
replace_client (TsMarketplacePage *self)
{
  g_autoptr (GError) error = NULL;
  g_autofree char *hash = NULL;
  g_autofree char *cache = NULL;

  if (self->client != NULL)
    g_signal_handlers_disconnect_by_data (self->client, self);
  g_clear_object (&self->client);
  g_clear_object (&self->usage);
  self->loaded = FALSE;
  self->client = ts_market_client_new (self->url, &error);
  if (self->client == NULL)
    {
      g_autofree char *text = g_strdup_printf (_("The marketplace address %s is not usable: %s"),
                                               self->url, error->message);
      show_banner (self, text);
      return;
    }
  gtk_revealer_set_reveal_child (self->banner, FALSE);
  /* One cache per marketplace: answers are kept by request path only. */
  hash = g_compute_checksum_for_string (G_CHECKSUM_SHA256, self->url, -1);
  hash[16] = '\0';
  cache = g_build_filename (self->cache_dir, hash, NULL);
  ts_market_client_set_cache_dir (self->client, cache);
  g_signal_connect_swapped (self->client, "notify::offline", G_CALLBACK (offline_changed_cb),
                            self);
  ts_market_details_set_context (self->details, self->client, self->keyring,
                                 self->adapters_dir);
}

static void
ts_marketplace_page_map (GtkWidget *widget)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (widget);

  GTK_WIDGET_CLASS (ts_marketplace_page_parent_class)->map (widget);
  /* The network is asked only once the user looks at the page. */
  refresh_installed (self);
  if (!self->loaded)
    start_search (self, FALSE);
}

GtkWidget *
ts_marketplace_page_new (TsSettings *settings)
{
  g_return_val_if_fail (TS_IS_SETTINGS (settings), NULL);
  return g_object_new (TS_TYPE_MARKETPLACE_PAGE, "settings", settings, NULL);
}

/* The address follows the settings, unless the environment names one. */
static void
ts_marketplace_page_constructed (GObject *object)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (object);
  const char *env = g_getenv ("TENSAFE_MARKETPLACE_URL");

  G_OBJECT_CLASS (ts_marketplace_page_parent_class)->constructed (object);
  g_return_if_fail (TS_IS_SETTINGS (self->settings));   /* required */
  if (env != NULL && *env != '\0')
    ts_marketplace_page_set_marketplace_url (self, env);
  else
    g_object_bind_property (self->settings, "marketplace-url", self, "marketplace-url",
                            G_BINDING_SYNC_CREATE);
}

static void
ts_marketplace_page_get_property (GObject *object, guint prop_id, GValue *value,
                                  GParamSpec *pspec)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (object);

  switch (prop_id)
    {
    case PROP_MARKETPLACE_URL:
      g_value_set_string (value, self->url);
      break;
    case PROP_OFFLINE:
      g_value_set_boolean (value, ts_marketplace_page_get_offline (self));
      break;
    case PROP_SETTINGS:
      g_value_set_object (value, self->settings);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_marketplace_page_set_property (GObject *object, guint prop_id, const GValue *value,
                                  GParamSpec *pspec)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (object);

  switch (prop_id)
    {
    case PROP_MARKETPLACE_URL:
      ts_marketplace_page_set_marketplace_url (self, g_value_get_string (value));
      break;
    case PROP_SETTINGS:
      self->settings = g_value_dup_object (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_marketplace_page_dispose (GObject *object)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (object);

  g_clear_handle_id (&self->search_timeout_id, g_source_remove);
  g_cancellable_cancel (self->search_cancellable);
  g_clear_object (&self->search_cancellable);
  g_clear_object (&self->settings);
  if (self->client != NULL)
    g_signal_handlers_disconnect_by_data (self->client, self);
  g_clear_object (&self->usage);
  g_clear_object (&self->client);
  gtk_widget_dispose_template (GTK_WIDGET (self), TS_TYPE_MARKETPLACE_PAGE);
  G_OBJECT_CLASS (ts_marketplace_page_parent_class)->dispose (object);
}

static void
ts_marketplace_page_finalize (GObject *object)
{
  TsMarketplacePage *self = TS_MARKETPLACE_PAGE (object);

  g_clear_object (&self->keyring);
  g_clear_pointer (&self->installed, g_hash_table_unref);
  g_clear_pointer (&self->names, g_hash_table_unref);
  g_free (self->url);
  g_free (self->cursor);
  g_free (self->adapters_dir);
  g_free (self->cache_dir);
  G_OBJECT_CLASS (ts_marketplace_page_parent_class)->finalize (object);
}

static void
ts_marketplace_page_install_properties (GObjectClass *object_class)
{
  properties[PROP_MARKETPLACE_URL] =
    g_param_spec_string ("marketplace-url", NULL, NULL, NULL,
                         G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_SETTINGS] =
    g_param_spec_object ("settings", NULL, NULL, TS_TYPE_SETTINGS,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_OFFLINE] =
    g_param_spec_boolean ("offline", NULL, NULL, FALSE,
                          G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals[SIGNAL_USE_IN_CHAT] =
    g_signal_new ("use-in-chat", G_TYPE_FROM_CLASS (object_class), G_SIGNAL_RUN_LAST, 0, NULL,
                  NULL, NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);
}

static void
ts_marketplace_page_class_init (TsMarketplacePageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_marketplace_page_get_property;
  object_class->set_property = ts_marketplace_page_set_property;
  object_class->constructed = ts_marketplace_page_constructed;
  object_class->dispose = ts_marketplace_page_dispose;
  object_class->finalize = ts_marketplace_page_finalize;
  widget_class->map = ts_marketplace_page_map;
  ts_marketplace_page_install_properties (object_class);

  g_type_ensure (TS_TYPE_MARKET_DETAILS);
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-marketplace-page.ui");
#define BIND(name) gtk_widget_class_bind_template_child (widget_class, TsMarketplacePage, name)
  BIND (banner);
  BIND (banner_label);
  BIND (outer_stack);
  BIND (browse_stack);
  BIND (results_stack);
  BIND (installed_stack);
  BIND (search_entry);
  BIND (base_model_dropdown);
  BIND (rank_dropdown);
  BIND (license_dropdown);
  BIND (price_dropdown);
  BIND (sort_dropdown);
  BIND (base_models);
  BIND (licenses);
  BIND (grid);
  BIND (load_more_button);
  BIND (empty_page);
  BIND (installed_list);
  BIND (details);
#undef BIND
  gtk_widget_class_bind_template_callback (widget_class, search_text_changed_cb);
  gtk_widget_class_bind_template_callback (widget_class, filter_changed_cb);
  gtk_widget_class_bind_template_callback (widget_class, edge_reached_cb);
  gtk_widget_class_bind_template_callback (widget_class, card_activated_cb);
  gtk_widget_class_bind_template_callback (widget_class, details_back_cb);
  gtk_widget_class_bind_template_callback (widget_class, details_use_in_chat_cb);
  gtk_widget_class_bind_template_callback (widget_class, refresh_installed);

  gtk_widget_class_install_action (widget_class, "market.retry", NULL, retry_action);
  gtk_widget_class_install_action (widget_class, "market.load-more", NULL, load_more_action);
  gtk_widget_class_install_action (widget_class, "market.show-details", "s",
                                   show_details_action);
  gtk_widget_class_install_action (widget_class, "market.use-installed", "s",
                                   use_installed_action);
  gtk_widget_class_install_action (widget_class, "market.remove-installed", "s",
                                   remove_installed_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_F5, 0, "market.retry", NULL);
}

static void
ts_marketplace_page_init (TsMarketplacePage *self)
{
  g_autofree char *keyring_path = NULL;
  g_autoptr (GError) error = NULL;

  gtk_widget_init_template (GTK_WIDGET (self));
  self->installed = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  self->names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->adapters_dir = g_build_filename (g_get_user_data_dir (), "tensafe", "adapters", NULL);
  self->cache_dir = g_build_filename (g_get_user_cache_dir (), "tensafe", "market", NULL);
  keyring_path = ts_market_keyring_path ();
  self->keyring = ts_market_keyring_new (keyring_path);
  if (!ts_market_keyring_load (self->keyring, &error))
    g_message ("Pinned publisher keys could not be read: %s", error->message);
}

void
ts_marketplace_page_set_loaded_model (TsMarketplacePage *self, const char *base_model)
{
  guint n;

  g_return_if_fail (TS_IS_MARKETPLACE_PAGE (self));
  if (base_model == NULL || *base_model == '\0')
    return;
  remember_choice (self->base_models, base_model);
  n = g_list_model_get_n_items (G_LIST_MODEL (self->base_models));
  for (guint i = 1; i < n; i++)
    if (g_strcmp0 (gtk_string_list_get_string (self->base_models, i), base_model) == 0)
      gtk_drop_down_set_selected (self->base_model_dropdown, i);
}

const char *
ts_marketplace_page_get_marketplace_url (TsMarketplacePage *self)
{
  g_return_val_if_fail (TS_IS_MARKETPLACE_PAGE (self), NULL);
  return self->url;
}

void
ts_marketplace_page_set_marketplace_url (TsMarketplacePage *self, const char *url)
{
  g_return_if_fail (TS_IS_MARKETPLACE_PAGE (self));

  if (url == NULL || g_strcmp0 (self->url, url) == 0)
    return;
  g_free (self->url);
  self->url = g_strdup (url);
  g_cancellable_cancel (self->search_cancellable);
  g_clear_object (&self->search_cancellable);
  replace_client (self);
  if (gtk_widget_get_mapped (GTK_WIDGET (self)))
    start_search (self, FALSE);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MARKETPLACE_URL]);
}

gboolean
ts_marketplace_page_get_offline (TsMarketplacePage *self)
{
  g_return_val_if_fail (TS_IS_MARKETPLACE_PAGE (self), FALSE);
  return self->client != NULL && ts_market_client_get_offline (self->client);
}

const char *
ts_marketplace_page_get_adapters_dir (TsMarketplacePage *self)
{
  g_return_val_if_fail (TS_IS_MARKETPLACE_PAGE (self), NULL);
  return self->adapters_dir;
}

static char *
read_usage_token (void)
{
  const char *env = g_getenv ("TENSAFE_MARKET_TOKEN");
  g_autofree char *path = NULL;
  g_autofree char *text = NULL;

  if (env != NULL && *env != '\0')
    return g_strdup (env);
  path = g_build_filename (g_get_user_config_dir (), "tensafe", "market-token", NULL);
  if (!g_file_get_contents (path, &text, NULL, NULL))
    return NULL;
  text[strcspn (text, "\r\n")] = '\0';
  return g_strdup (text);
}

static TsMarketUsage *
ensure_usage (TsMarketplacePage *self)
{
  g_autofree char *token = NULL;
  g_autofree char *queue = NULL;
  g_autoptr (GError) error = NULL;

  if (self->usage != NULL || self->client == NULL)
    return self->usage;
  token = read_usage_token ();
  queue = g_build_filename (g_get_user_data_dir (), "tensafe", "market-usage.json", NULL);
  ts_market_ensure_parent_dir (queue);
  self->usage = ts_market_usage_new (self->client, token, queue);
  if (!ts_market_usage_load (self->usage, &error))
    g_message ("Queued usage records could not be read: %s", error->message);
  return self->usage;
}

void
ts_marketplace_page_report_usage (TsMarketplacePage *self, const char *id, const char *version,
                                  gint64 tokens)
{
  TsMarketUsage *usage;

  g_return_if_fail (TS_IS_MARKETPLACE_PAGE (self));
  g_return_if_fail (id != NULL && version != NULL);

  usage = ensure_usage (self);
  if (usage != NULL)
    g_free (ts_market_usage_record (usage, id, version, tokens));
}

/* For tests. */

GtkEditable *
_ts_marketplace_page_get_search_entry (TsMarketplacePage *self)
{
  return GTK_EDITABLE (self->search_entry);
}

GtkFlowBox *
_ts_marketplace_page_get_grid (TsMarketplacePage *self)
{
  return self->grid;
}

GtkListBox *
_ts_marketplace_page_get_installed_list (TsMarketplacePage *self)
{
  return self->installed_list;
}

TsMarketDetails *
_ts_marketplace_page_get_details (TsMarketplacePage *self)
{
  return self->details;
}

GtkRevealer *
_ts_marketplace_page_get_banner (TsMarketplacePage *self)
{
  return self->banner;
}

GtkDropDown *
_ts_marketplace_page_get_filter (TsMarketplacePage *self, const char *name)
{
  const struct { const char *name; GtkDropDown *dropdown; } filters[] = {
    { "base-model", self->base_model_dropdown }, { "rank", self->rank_dropdown },
    { "license", self->license_dropdown }, { "price", self->price_dropdown },
    { "sort", self->sort_dropdown },
  };

  for (gsize i = 0; i < G_N_ELEMENTS (filters); i++)
    if (g_strcmp0 (filters[i].name, name) == 0)
      return filters[i].dropdown;
  return NULL;
}

TsMarketUsage *
_ts_marketplace_page_get_usage (TsMarketplacePage *self)
{
  return ensure_usage (self);
}

void
_ts_marketplace_page_set_page_size (TsMarketplacePage *self, guint page_size)
{
  self->page_size = page_size;
}

gboolean
_ts_marketplace_page_get_busy (TsMarketplacePage *self)
{
  return !self->loaded || self->search_cancellable != NULL || self->search_timeout_id != 0;
}
