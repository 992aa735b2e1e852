/* ts-market-details.c: one marketplace adapter in full: install, remove, use in chat, reduce rank.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-adapter-reduce.h"
#include "ts-market-details.h"
#include "ts-market-format.h"
#include "ts-market-install.h"
#include "ts-market-remove.h"
#include "ts-market-trust.h"
#include "ts-reduce-dialog.h"
#include "ts-toast.h"

struct _TsMarketDetails
{
  AdwBin parent_instance;

  TsMarketClient *client;
  TsMarketKeyring *keyring;
  char *adapters_dir;

  TsMarketAdapter *adapter;
  /* An adapter made on this computer (a rank reduction): shown from its
   * metadata.json and local release, never from the marketplace. */
  TsMarketInstalled *local;
  TsAdapterOrigin origin;
  GCancellable *load_cancellable;
  GCancellable *install_cancellable;
  gboolean installing;
  gboolean interrupted;  /* an install stopped early: the next one resumes */
  gboolean disposed;     /* late callbacks must not touch the template's widgets */
  double progress;
  GPtrArray *file_rows;

  GtkStack *stack;
  AdwStatusPage *error_page;
  GtkLabel *name_label;
  GtkLabel *publisher_label;
  GtkLabel *description_label;
  GtkButton *install_button;
  GtkRevealer *progress_revealer;
  GtkProgressBar *progress_bar;
  AdwActionRow *version_row;
  AdwActionRow *base_model_row;
  AdwActionRow *rank_row;
  AdwActionRow *origin_row;
  AdwActionRow *modules_row;
  AdwActionRow *price_row;
  AdwActionRow *license_row;
  AdwActionRow *publisher_row;
  AdwActionRow *signature_row;
  AdwPreferencesGroup *files_group;
};

G_DEFINE_FINAL_TYPE (TsMarketDetails, ts_market_details, ADW_TYPE_BIN)

enum {
  PROP_0,
  PROP_ADAPTER,
  PROP_INSTALLING,
  PROP_PROGRESS,
  PROP_INSTALLED,
  N_PROPS
};

enum {
  SIGNAL_BACK,
  SIGNAL_INSTALLED_CHANGED,
  SIGNAL_USE_IN_CHAT,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

static char *
installed_path (TsMarketDetails *self)
{
  if (self->adapter == NULL || self->adapters_dir == NULL)
    return NULL;
  return g_build_filename (self->adapters_dir, self->adapter->id, NULL);
}

gboolean
ts_market_details_get_installed (TsMarketDetails *self)
{
  g_autofree char *dir = NULL;
  g_autofree char *release = NULL;

  g_return_val_if_fail (TS_IS_MARKET_DETAILS (self), FALSE);

  dir = installed_path (self);
  if (dir == NULL)
    return FALSE;
  release = g_build_filename (dir, TS_MARKET_RELEASE_FILE, NULL);
  return g_file_test (release, G_FILE_TEST_IS_REGULAR);
}

/* Buttons follow the state: one place decides what can be done now. */
static void
update_actions (TsMarketDetails *self)
{
  gboolean loaded = self->adapter != NULL;
  gboolean installed = ts_market_details_get_installed (self);
  GtkWidget *w = GTK_WIDGET (self);

  gtk_widget_action_set_enabled (w, "details.install",
                                 loaded && !self->installing && self->local == NULL);
  gtk_widget_action_set_enabled (w, "details.cancel", self->installing);
  gtk_widget_action_set_enabled (w, "details.remove", installed && !self->installing);
  gtk_widget_action_set_enabled (w, "details.use-in-chat", installed && !self->installing);
  gtk_widget_action_set_enabled (w, "details.reduce", installed && !self->installing);
  gtk_widget_set_visible (GTK_WIDGET (self->install_button), self->local == NULL);
  if (self->interrupted)
    gtk_button_set_label (self->install_button, _("_Resume Install"));
  else if (installed)
    gtk_button_set_label (self->install_button, _("_Reinstall"));
  else
    gtk_button_set_label (self->install_button, _("_Install"));
  gtk_revealer_set_reveal_child (self->progress_revealer, self->installing);
}

static void
set_installing (TsMarketDetails *self, gboolean installing)
{
  if (self->installing == installing)
    return;
  self->installing = installing;
  update_actions (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_INSTALLING]);
}

static void
set_row (AdwActionRow *row, const char *subtitle)
{
  adw_action_row_set_subtitle (row, subtitle != NULL && *subtitle ? subtitle : "—");
}

static void
clear_file_rows (TsMarketDetails *self)
{
  for (guint i = 0; i < self->file_rows->len; i++)
    adw_preferences_group_remove (self->files_group, g_ptr_array_index (self->file_rows, i));
  g_ptr_array_set_size (self->file_rows, 0);
}

static void
show_files (TsMarketDetails *self, TsMarketManifest *manifest)
{
  clear_file_rows (self);
  for (guint i = 0; manifest != NULL && i < manifest->files->len; i++)
    {
      TsMarketFile *file = g_ptr_array_index (manifest->files, i);
      GtkWidget *row = adw_action_row_new ();
      g_autofree char *size = g_format_size ((guint64) file->size);
      GtkWidget *size_label = gtk_label_new (size);

      adw_preferences_row_set_title (ADW_PREFERENCES_ROW (row), file->name);
      adw_action_row_set_subtitle (ADW_ACTION_ROW (row), file->sha256);
      gtk_widget_add_css_class (row, "ts-market-hash");
      gtk_widget_add_css_class (size_label, "dim-label");
      adw_action_row_add_suffix (ADW_ACTION_ROW (row), size_label);
      adw_preferences_group_add (self->files_group, row);
      g_ptr_array_add (self->file_rows, row);
    }
}

/* What the signature says, checked here against the pinned key rather than
 * taken from the server. */
static void
show_trust (TsMarketDetails *self, TsMarketVersion *version)
{
  TsMarketAdapter *a = self->adapter;
  g_autoptr (GError) error = NULL;
  g_autofree char *publisher = NULL;
  gboolean pinned;

  if (version == NULL)
    {
      set_row (self->publisher_row, a->publisher_id);
      set_row (self->signature_row, _("No release is published"));
      return;
    }
  pinned = ts_market_keyring_is_pinned (self->keyring, a->publisher_id, version->key_id);
  publisher = g_strdup_printf (pinned ? _("%s — key %s is pinned")
                                      : _("%s — key %s is not pinned yet"),
                               a->publisher_id, version->key_id);
  set_row (self->publisher_row, publisher);
  if (!pinned)
    set_row (self->signature_row,
             _("Not checked yet: you will be asked to trust the publisher's key on install"));
  else if (ts_market_keyring_verify (self->keyring, version->manifest, version->key_id,
                                     version->signature, &error))
    set_row (self->signature_row, _("Valid: signed with the pinned key"));
  else
    set_row (self->signature_row, error->message);
}

/* Made here: no publisher signature covers it, its recorded digests do. */
static void
show_local_trust (TsMarketDetails *self)
{
  /* Translators: %s is a publisher id. */
  g_autofree char *publisher = g_strdup_printf (_("%s — not signed by the publisher: made on "
                                                  "this computer"),
                                                self->adapter->publisher_id);

  set_row (self->publisher_row, publisher);
  set_row (self->signature_row,
           self->local->derived_from != NULL
             ? _("None: made from a release whose signature was checked, and checked against "
                 "its own recorded digests before use")
             : _("None: checked against its own recorded digests before use"));
}

/* "tiny-poet 1.0.0 · rank 8 → 4 · 97.41 % of ‖B·A‖² kept" for a reduced adapter. */
static void
show_origin (TsMarketDetails *self)
{
  g_autofree char *text = NULL;

  gtk_widget_set_visible (GTK_WIDGET (self->origin_row), self->origin.id != NULL);
  if (self->origin.id == NULL)
    return;
  /* Translators: a reduced adapter's source, e.g. "Verse and rhyme (tiny) 1.0.0 · rank 8 → 4
   * · 97.41 % of the energy kept (smallest module 93.10 %)". */
  text = g_strdup_printf (_("%1$s %2$s · rank %3$u → %4$u · %5$.2f %% of the energy kept "
                            "(smallest module %6$.2f %%)"),
                          self->origin.name ? self->origin.name : self->origin.id,
                          self->origin.version ? self->origin.version : "",
                          self->origin.rank_in, self->origin.rank_out,
                          100.0 * self->origin.retained_total, 100.0 * self->origin.retained_min);
  set_row (self->origin_row, text);
}

static void
show_versions (TsMarketDetails *self)
{
  GString *versions = g_string_new (NULL);

  for (guint i = 0; i < self->adapter->versions->len; i++)
    {
      TsMarketVersion *v = g_ptr_array_index (self->adapter->versions, i);

      if (versions->len > 0)
        g_string_append (versions, ", ");
      g_string_append (versions, v->version);
    }
  /* An adapter made here has one version and nothing to install. */
  if (versions->len == 0 && self->adapter->latest_version != NULL)
    g_string_append (versions, self->adapter->latest_version);
  set_row (self->version_row, versions->str);
  g_string_free (versions, TRUE);
}

static void
show_adapter (TsMarketDetails *self)
{
  TsMarketAdapter *a = self->adapter;
  TsMarketVersion *latest = ts_market_adapter_find_version (a, NULL);
  g_autofree char *rank = ts_market_format_rank (a->rank, a->alpha);
  g_autofree char *modules = ts_market_format_modules ((const char * const *) a->target_modules);
  g_autofree char *price = ts_market_format_price (a->price_per_1k_tokens);
  g_autofree char *base_model = NULL;

  gtk_label_set_text (self->name_label, a->name);
  gtk_label_set_text (self->publisher_label, a->publisher_name ? a->publisher_name
                                                                : a->publisher_id);
  gtk_label_set_text (self->description_label, a->description ? a->description : "");
  show_versions (self);
  base_model = g_strdup_printf ("%s\nSHA-256 %s", a->base_model,
                                a->base_model_sha256 && *a->base_model_sha256
                                  ? a->base_model_sha256 : "—");
  set_row (self->base_model_row, base_model);
  set_row (self->rank_row, rank);
  set_row (self->modules_row, modules);
  set_row (self->price_row, price);
  set_row (self->license_row, a->license);
  if (self->local != NULL)
    show_local_trust (self);
  else
    show_trust (self, latest);
  show_origin (self);
  show_files (self, self->local ? self->local->manifest : latest ? latest->manifest : NULL);
  adw_preferences_group_set_description (
    self->files_group, self->local
      ? _("Each file is checked against the size and SHA-256 recorded when it was made.")
      : _("Each file is checked against its signed size and SHA-256 before it is installed."));
  gtk_stack_set_visible_child_name (self->stack, "adapter");
  update_actions (self);
}

static void
forget_local (TsMarketDetails *self)
{
  g_clear_pointer (&self->local, ts_market_installed_free);
  ts_adapter_origin_clear (&self->origin);
}

static void
set_adapter (TsMarketDetails *self, TsMarketAdapter *adapter)
{
  g_clear_pointer (&self->adapter, ts_market_adapter_unref);
  self->adapter = adapter;
  self->interrupted = FALSE;
  if (adapter != NULL)
    show_adapter (self);
  update_actions (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_ADAPTER]);
}

static void
load_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TsMarketDetails *self;
  g_autoptr (GError) error = NULL;
  TsMarketAdapter *adapter;

  adapter = ts_market_client_get_adapter_finish (TS_MARKET_CLIENT (source), result, &error);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;
  self = TS_MARKET_DETAILS (user_data);
  g_clear_object (&self->load_cancellable);
  if (adapter == NULL)
    {
      adw_status_page_set_description (self->error_page, error->message);
      gtk_stack_set_visible_child_name (self->stack, "error");
      return;
    }
  set_adapter (self, adapter);
}

/* An adapter made on this computer is shown from its own files: the
 * marketplace does not list it. */
static gboolean
load_local (TsMarketDetails *self, const char *id)
{
  g_autoptr (TsMarketInstalled) record = NULL;
  g_autoptr (GError) error = NULL;
  TsMarketAdapter *adapter;

  if (self->adapters_dir == NULL
      || (record = ts_market_read_installed (self->adapters_dir, id)) == NULL
      || !record->local)
    return FALSE;
  adapter = ts_adapter_read_metadata (record->path, &self->origin, &error);
  if (adapter == NULL)
    {
      adw_status_page_set_description (self->error_page, error->message);
      gtk_stack_set_visible_child_name (self->stack, "error");
      return TRUE;
    }
  self->local = g_steal_pointer (&record);
  set_adapter (self, adapter);
  return TRUE;
}

void
ts_market_details_load (TsMarketDetails *self, const char *id)
{
  g_return_if_fail (TS_IS_MARKET_DETAILS (self));
  g_return_if_fail (self->client != NULL || self->adapters_dir != NULL);

  g_cancellable_cancel (self->load_cancellable);
  g_clear_object (&self->load_cancellable);
  set_adapter (self, NULL);
  forget_local (self);
  if (load_local (self, id))
    return;
  self->load_cancellable = g_cancellable_new ();
  gtk_stack_set_visible_child_name (self->stack, "loading");
  /* The callback returns early on cancel, and dispose cancels: no ref needed. */
  ts_market_client_get_adapter_async (self->client, id, self->load_cancellable, load_cb, self);
}

static void
progress_cb (goffset received, goffset total, gpointer user_data)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (user_data);
  g_autofree char *got = g_format_size ((guint64) received);
  g_autofree char *all = g_format_size ((guint64) MAX (total, 0));
  g_autofree char *text = NULL;

  if (self->disposed)
    return;
  self->progress = total > 0 ? CLAMP ((double) received / (double) total, 0, 1) : 0;
  /* Translators: download progress, e.g. "12.3 kB of 33.8 kB". */
  text = total > 0 ? g_strdup_printf (_("%s of %s"), got, all) : g_strdup (got);
  gtk_progress_bar_set_fraction (self->progress_bar, self->progress);
  gtk_progress_bar_set_text (self->progress_bar, text);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_PROGRESS]);
}

static void
install_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsMarketDetails) self = user_data;
  g_autoptr (GError) error = NULL;
  g_autofree char *path = NULL;
  g_autofree char *message = NULL;

  path = ts_market_client_install_finish (TS_MARKET_CLIENT (source), result, &error);
  if (self->disposed)
    return;
  g_clear_object (&self->install_cancellable);
  self->interrupted = path == NULL;
  set_installing (self, FALSE);
  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    message = g_strdup (_("Install cancelled; it resumes where it stopped"));
  else if (path == NULL)
    message = g_strdup_printf (_("Could not install: %s"), error->message);
  else
    message = g_strdup_printf (_("“%s” is installed and verified"), self->adapter->name);
  ts_toast_show (GTK_WIDGET (self), message);
  if (self->adapter != NULL)
    show_trust (self, ts_market_adapter_find_version (self->adapter, NULL));
  update_actions (self);
  if (path != NULL)
    g_signal_emit (self, signals[SIGNAL_INSTALLED_CHANGED], 0);
}

static void
start_install (TsMarketDetails *self)
{
  g_clear_object (&self->install_cancellable);
  self->install_cancellable = g_cancellable_new ();
  self->progress = 0;
  gtk_progress_bar_set_fraction (self->progress_bar, 0);
  gtk_progress_bar_set_text (self->progress_bar, _("Verifying the signature…"));
  set_installing (self, TRUE);
  ts_market_client_install_async (self->client, self->adapter, NULL, self->keyring,
                                  self->adapters_dir, progress_cb, g_object_ref (self),
                                  g_object_unref, self->install_cancellable, install_cb,
                                  g_object_ref (self));
}

static void
trust_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (source);
  g_autoptr (GError) error = NULL;

  if (self->disposed)
    return;
  if (!ts_market_trust_key_finish (result, &error))
    {
      g_autofree char *message = NULL;

      set_installing (self, FALSE);
      if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        return;
      message = g_strdup_printf (_("Could not install: %s"), error->message);
      ts_toast_show (GTK_WIDGET (self), message);
      return;
    }
  start_install (self);
}

static void
install_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (widget);
  TsMarketVersion *latest = ts_market_adapter_find_version (self->adapter, NULL);

  if (latest == NULL)
    return;
  /* The keyring is written next to the adapters' folder. */
  ts_market_ensure_parent_dir (self->adapters_dir);
  if (ts_market_keyring_is_pinned (self->keyring, self->adapter->publisher_id, latest->key_id))
    {
      start_install (self);
      return;
    }
  /* First install from this publisher: trust on first use, with consent. */
  set_installing (self, TRUE);
  gtk_progress_bar_set_text (self->progress_bar, _("Waiting for your answer…"));
  ts_market_trust_key_async (widget, self->client, self->keyring, self->adapter->publisher_id,
                             self->adapter->publisher_name, latest->key_id, NULL, trust_cb,
                             NULL);
}

static void
cancel_action (GtkWidget *widget, const char *name, GVariant *param)
{
  g_cancellable_cancel (TS_MARKET_DETAILS (widget)->install_cancellable);
}

static void
remove_confirmed (GtkWidget *widget, const char *id)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (widget);
  g_autoptr (GError) error = NULL;
  g_autofree char *message = NULL;

  /* The dialog may have moved on to another adapter while it asked. */
  if (self->adapter == NULL || g_strcmp0 (self->adapter->id, id) != 0)
    return;
  if (!ts_market_remove_installed (self->adapters_dir, self->adapter->id, &error))
    message = g_strdup_printf (_("Could not remove: %s"), error->message);
  else
    message = g_strdup_printf (_("“%s” was removed"), self->adapter->name);
  ts_toast_show (widget, message);
  update_actions (self);
  g_signal_emit (self, signals[SIGNAL_INSTALLED_CHANGED], 0);
}

static void
remove_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (widget);

  if (self->adapter != NULL)
    ts_market_confirm_remove (widget, self->adapter->id, self->adapter->name, remove_confirmed);
}

static void
use_in_chat_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (widget);
  g_autofree char *path = installed_path (self);

  g_signal_emit (self, signals[SIGNAL_USE_IN_CHAT], 0, self->adapter->id, path);
}

static void
reduced_cb (TsMarketDetails *self, const char *id, const char *path)
{
  /* Translators: %s is the new adapter's name. */
  g_autofree char *message = g_strdup_printf (_("“%s” was added to the installed adapters"), id);

  ts_toast_show (GTK_WIDGET (self), message);
  g_signal_emit (self, signals[SIGNAL_INSTALLED_CHANGED], 0);
}

static void
reduced_use_in_chat_cb (TsMarketDetails *self, const char *id, const char *path)
{
  g_signal_emit (self, signals[SIGNAL_USE_IN_CHAT], 0, id, path);
}

static void
reduce_action (GtkWidget *widget, const char *name, GVariant *param)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (widget);
  g_autofree char *path = installed_path (self);
  TsReduceDialog *dialog;

  if (path == NULL)
    return;
  /* An adapter made here has its own metadata.json; a marketplace install
   * takes its metadata from the catalogue. */
  dialog = ts_reduce_dialog_present (widget, path, self->adapters_dir,
                                     self->local ? NULL : self->adapter);
  g_signal_connect_object (dialog, "reduced", G_CALLBACK (reduced_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (dialog, "use-in-chat", G_CALLBACK (reduced_use_in_chat_cb), self,
                           G_CONNECT_SWAPPED);
}

static void
back_action (GtkWidget *widget, const char *name, GVariant *param)
{
  g_signal_emit (widget, signals[SIGNAL_BACK], 0);
}

static void
ts_market_details_get_property (GObject *object, guint prop_id, GValue *value,
                                GParamSpec *pspec)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (object);

  switch (prop_id)
    {
    case PROP_ADAPTER:
      g_value_set_boxed (value, self->adapter);
      break;
    case PROP_INSTALLING:
      g_value_set_boolean (value, self->installing);
      break;
    case PROP_PROGRESS:
      g_value_set_double (value, self->progress);
      break;
    case PROP_INSTALLED:
      g_value_set_boolean (value, ts_market_details_get_installed (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_market_details_dispose (GObject *object)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (object);

  self->disposed = TRUE;
  g_cancellable_cancel (self->load_cancellable);
  g_cancellable_cancel (self->install_cancellable);
  g_clear_object (&self->load_cancellable);
  g_clear_object (&self->install_cancellable);
  gtk_widget_dispose_template (GTK_WIDGET (self), TS_TYPE_MARKET_DETAILS);
  G_OBJECT_CLASS (ts_market_details_parent_class)->dispose (object);
}

static void
ts_market_details_finalize (GObject *object)
{
  TsMarketDetails *self = TS_MARKET_DETAILS (object);

  g_clear_pointer (&self->adapter, ts_market_adapter_unref);
  forget_local (self);
  g_clear_pointer (&self->file_rows, g_ptr_array_unref);
  g_clear_object (&self->client);
  g_clear_object (&self->keyring);
  g_free (self->adapters_dir);
  G_OBJECT_CLASS (ts_market_details_parent_class)->finalize (object);
}

static void
ts_market_details_install_properties (GObjectClass *object_class)
{
  properties[PROP_ADAPTER] =
    g_param_spec_boxed ("adapter", NULL, NULL, TS_TYPE_MARKET_ADAPTER,
                        G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_INSTALLING] =
    g_param_spec_boolean ("installing", NULL, NULL, FALSE,
                          G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_PROGRESS] =
    g_param_spec_double ("progress", NULL, NULL, 0, 1, 0,
                         G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_INSTALLED] =
    g_param_spec_boolean ("installed", NULL, NULL, FALSE,
                          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);

  signals[SIGNAL_BACK] = g_signal_new ("back", G_TYPE_FROM_CLASS (object_class),
                                       G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIGNAL_INSTALLED_CHANGED] =
    g_signal_new ("installed-changed", G_TYPE_FROM_CLASS (object_class), G_SIGNAL_RUN_LAST, 0,
                  NULL, NULL, NULL, G_TYPE_NONE, 0);
  signals[SIGNAL_USE_IN_CHAT] =
    g_signal_new ("use-in-chat", G_TYPE_FROM_CLASS (object_class), G_SIGNAL_RUN_LAST, 0, NULL,
                  NULL, NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRING);
}

static void
ts_market_details_class_init (TsMarketDetailsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->get_property = ts_market_details_get_property;
  object_class->dispose = ts_market_details_dispose;
  object_class->finalize = ts_market_details_finalize;
  ts_market_details_install_properties (object_class);

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-market-details.ui");
#define BIND(name) gtk_widget_class_bind_template_child (widget_class, TsMarketDetails, name)
  BIND (stack);
  BIND (error_page);
  BIND (name_label);
  BIND (publisher_label);
  BIND (description_label);
  BIND (install_button);
  BIND (progress_revealer);
  BIND (progress_bar);
  BIND (version_row);
  BIND (base_model_row);
  BIND (rank_row);
  BIND (origin_row);
  BIND (modules_row);
  BIND (price_row);
  BIND (license_row);
  BIND (publisher_row);
  BIND (signature_row);
  BIND (files_group);
#undef BIND

  gtk_widget_class_install_action (widget_class, "details.install", NULL, install_action);
  gtk_widget_class_install_action (widget_class, "details.cancel", NULL, cancel_action);
  gtk_widget_class_install_action (widget_class, "details.remove", NULL, remove_action);
  gtk_widget_class_install_action (widget_class, "details.use-in-chat", NULL,
                                   use_in_chat_action);
  gtk_widget_class_install_action (widget_class, "details.reduce", NULL, reduce_action);
  gtk_widget_class_install_action (widget_class, "details.back", NULL, back_action);
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_Escape, 0, "details.back", NULL);
}

static void
ts_market_details_init (TsMarketDetails *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->file_rows = g_ptr_array_new ();
  update_actions (self);
}

void
ts_market_details_set_context (TsMarketDetails *self, TsMarketClient *client,
                               TsMarketKeyring *keyring, const char *adapters_dir)
{
  g_return_if_fail (TS_IS_MARKET_DETAILS (self));

  g_cancellable_cancel (self->load_cancellable);
  g_set_object (&self->client, client);
  g_set_object (&self->keyring, keyring);
  g_free (self->adapters_dir);
  self->adapters_dir = g_strdup (adapters_dir);
}

TsMarketAdapter *
ts_market_details_get_adapter (TsMarketDetails *self)
{
  g_return_val_if_fail (TS_IS_MARKET_DETAILS (self), NULL);
  return self->adapter;
}

gboolean
ts_market_details_get_installing (TsMarketDetails *self)
{
  g_return_val_if_fail (TS_IS_MARKET_DETAILS (self), FALSE);
  return self->installing;
}

double
ts_market_details_get_progress (TsMarketDetails *self)
{
  g_return_val_if_fail (TS_IS_MARKET_DETAILS (self), 0);
  return self->progress;
}
