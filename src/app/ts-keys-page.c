/* ts-keys-page.c: the keys page: the CKKS key kept on this desktop.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-file-chooser.h"
#include "ts-keys-page-private.h"

/* What a dialog of the page asks for. */
typedef enum {
  ASK_GENERATE,
  ASK_UNLOCK,
  ASK_CHANGE_PASSPHRASE,
  ASK_ROTATE,
  ASK_DELETE,
} Ask;

#define MAX_ENTRIES 3

struct _TsKeysPage
{
  AdwBin parent_instance;

  AdwToastOverlay *toast_overlay;
  GtkStack *stack;
  AdwStatusPage *damaged_status;
  AdwActionRow *status_row;
  AdwActionRow *fingerprint_row;
  AdwActionRow *created_row;
  AdwActionRow *preset_row;
  GtkWidget *unlock_button;
  GtkWidget *lock_button;
  GtkProgressBar *progress_bar;

  TsKeyVault *vault;
  TsSettings *settings;         /* the application's, from construction on */
  AdwMessageDialog *dialog;     /* weak: the open dialog */
  char *last_toast;
  guint prompt_idle;
  gboolean prompted;
};

G_DEFINE_FINAL_TYPE (TsKeysPage, ts_keys_page, ADW_TYPE_BIN)

enum {
  PROP_0,
  PROP_SETTINGS,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

/* A preset's label (ts-settings.h); an unknown name reads as the default's. */
static const char *
preset_label (const char *preset)
{
  const TsCkksPreset *found = ts_ckks_preset_lookup (preset);
  guint n;

  if (found == NULL)
    found = &ts_ckks_presets (&n)[TS_CKKS_DEFAULT_INDEX];
  return gettext (found->label);
}

static void
toast (TsKeysPage *self, const char *text)
{
  g_free (self->last_toast);
  self->last_toast = g_strdup (text);
  adw_toast_overlay_add_toast (self->toast_overlay, adw_toast_new (text));
}

/* ---- Showing the vault ------------------------------------------------ */

static void
update_actions (TsKeysPage *self)
{
  TsKeyState state = self->vault ? ts_key_vault_get_state (self->vault) : TS_KEY_STATE_NONE;
  gboolean idle = self->vault != NULL && !ts_key_vault_get_busy (self->vault);
  gboolean has_key = state == TS_KEY_STATE_LOCKED || state == TS_KEY_STATE_UNLOCKED;
  GtkWidget *widget = GTK_WIDGET (self);

  gtk_widget_action_set_enabled (widget, "keys.generate", idle && state == TS_KEY_STATE_NONE);
  gtk_widget_action_set_enabled (widget, "keys.unlock", idle && state == TS_KEY_STATE_LOCKED);
  gtk_widget_action_set_enabled (widget, "keys.lock", idle && state == TS_KEY_STATE_UNLOCKED);
  gtk_widget_action_set_enabled (widget, "keys.change-passphrase", idle && has_key);
  gtk_widget_action_set_enabled (widget, "keys.rotate", idle && has_key);
  gtk_widget_action_set_enabled (widget, "keys.export", idle && has_key);
  gtk_widget_action_set_enabled (widget, "keys.copy-fingerprint", has_key);
  gtk_widget_action_set_enabled (widget, "keys.delete", idle && state != TS_KEY_STATE_NONE);
}

static void
update_rows (TsKeysPage *self)
{
  TsKeyState state = ts_key_vault_get_state (self->vault);
  GDateTime *created = ts_key_vault_get_created (self->vault);
  g_autofree char *date = created ? g_date_time_format (created, "%x %X") : NULL;

  adw_action_row_set_subtitle (self->status_row,
                               state == TS_KEY_STATE_UNLOCKED
                                 ? _("Unlocked: ready to encrypt")
                                 : _("Locked: enter the passphrase to use it"));
  gtk_widget_set_visible (self->unlock_button, state == TS_KEY_STATE_LOCKED);
  gtk_widget_set_visible (self->lock_button, state == TS_KEY_STATE_UNLOCKED);
  adw_action_row_set_subtitle (self->fingerprint_row,
                               ts_key_vault_get_fingerprint (self->vault));
  adw_action_row_set_subtitle (self->created_row, date != NULL ? date : "");
  adw_action_row_set_subtitle (self->preset_row,
                               preset_label (ts_key_vault_get_preset (self->vault)));
}

static void
update_view (TsKeysPage *self)
{
  TsKeyState state;

  update_actions (self);
  if (self->vault == NULL)
    {
      gtk_stack_set_visible_child_name (self->stack, "none");
      return;
    }
  state = ts_key_vault_get_state (self->vault);
  if (state == TS_KEY_STATE_NONE)
    gtk_stack_set_visible_child_name (self->stack, "none");
  else if (state == TS_KEY_STATE_DAMAGED)
    {
      adw_status_page_set_description (self->damaged_status,
                                       ts_key_vault_get_problem (self->vault));
      gtk_stack_set_visible_child_name (self->stack, "damaged");
    }
  else
    {
      update_rows (self);
      gtk_stack_set_visible_child_name (self->stack, "key");
    }
}

static void
update_progress (TsKeysPage *self)
{
  gboolean busy = ts_key_vault_get_busy (self->vault);

  gtk_widget_set_visible (GTK_WIDGET (self->progress_bar), busy);
  gtk_progress_bar_set_fraction (self->progress_bar, ts_key_vault_get_progress (self->vault));
  update_actions (self);
}

/* ---- Dialogs ---------------------------------------------------------- */

static GtkEditable *
dialog_entry (AdwMessageDialog *dialog, guint index)
{
  g_autofree char *key = g_strdup_printf ("entry-%u", index);

  return g_object_get_data (G_OBJECT (dialog), key);
}

/* The response is enabled when every entry has text and, when asked to
 * confirm, the last two agree. */
static void
entries_changed_cb (AdwMessageDialog *dialog)
{
  guint n = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (dialog), "n-entries"));
  gboolean confirm = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (dialog), "confirm"));
  const char *response = g_object_get_data (G_OBJECT (dialog), "response");
  gboolean ok = TRUE;

  for (guint i = 0; i < n; i++)
    ok = ok && *gtk_editable_get_text (dialog_entry (dialog, i)) != '\0';
  if (ok && confirm && n >= 2)
    ok = g_str_equal (gtk_editable_get_text (dialog_entry (dialog, n - 2)),
                      gtk_editable_get_text (dialog_entry (dialog, n - 1)));
  adw_message_dialog_set_response_enabled (dialog, response, ok);
}

static void
add_entries (AdwMessageDialog *dialog, GtkBox *box, const char *const *labels, gboolean confirm)
{
  guint n = 0;

  for (; labels != NULL && labels[n] != NULL; n++)
    {
      GtkWidget *entry = gtk_password_entry_new ();
      g_autofree char *key = g_strdup_printf ("entry-%u", n);

      gtk_password_entry_set_show_peek_icon (GTK_PASSWORD_ENTRY (entry), TRUE);
      g_object_set (entry, "placeholder-text", labels[n], "activates-default", TRUE, NULL);
      gtk_accessible_update_property (GTK_ACCESSIBLE (entry), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                      labels[n], -1);
      g_signal_connect_swapped (entry, "changed", G_CALLBACK (entries_changed_cb), dialog);
      gtk_box_append (box, entry);
      g_object_set_data (G_OBJECT (dialog), key, entry);
    }
  g_object_set_data (G_OBJECT (dialog), "n-entries", GUINT_TO_POINTER (n));
  g_object_set_data (G_OBJECT (dialog), "confirm", GUINT_TO_POINTER (confirm));
  if (n > 0)
    entries_changed_cb (dialog);
}

static void dialog_response_cb (AdwMessageDialog *dialog, const char *response, TsKeysPage *self);

static AdwMessageDialog *
dialog_new (TsKeysPage *self, Ask ask, const char *heading, const char *body,
            const char *response, const char *response_label, const char *const *entries,
            gboolean confirm)
{
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));
  AdwMessageDialog *dialog =
    ADW_MESSAGE_DIALOG (adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                                heading, body));
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 6);

  adw_message_dialog_add_responses (dialog, "cancel", _("_Cancel"), response, response_label,
                                    NULL);
  adw_message_dialog_set_response_appearance (dialog, response,
                                              ask == ASK_DELETE ? ADW_RESPONSE_DESTRUCTIVE
                                                                : ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (dialog, ask == ASK_DELETE ? "cancel" : response);
  adw_message_dialog_set_close_response (dialog, "cancel");
  g_object_set_data_full (G_OBJECT (dialog), "response", g_strdup (response), g_free);
  g_object_set_data (G_OBJECT (dialog), "ask", GUINT_TO_POINTER (ask));
  adw_message_dialog_set_extra_child (dialog, box);
  add_entries (dialog, GTK_BOX (box), entries, confirm);
  g_signal_connect_object (dialog, "response", G_CALLBACK (dialog_response_cb), self, 0);
  g_set_weak_pointer (&self->dialog, dialog);
  return dialog;
}

/* The drop-down starts on the preset chosen in the preferences. */
static guint
preferred_preset (TsKeysPage *self)
{
  const char *name = ts_settings_get_ckks_preset_name (self->settings);
  guint n;
  const TsCkksPreset *presets = ts_ckks_presets (&n);

  for (guint i = 0; name != NULL && i < n; i++)
    if (g_str_equal (name, presets[i].name))
      return i;
  return TS_CKKS_DEFAULT_INDEX;   /* "auto" */
}

static void
ask_generate (TsKeysPage *self)
{
  const char *entries[] = { _("Passphrase"), _("Confirm passphrase"), NULL };
  guint n;
  const TsCkksPreset *table = ts_ckks_presets (&n);
  g_autofree const char **presets = g_new0 (const char *, n + 1);
  AdwMessageDialog *dialog =
    dialog_new (self, ASK_GENERATE, _("Generate Encryption Key"),
                _("The key is sealed under this passphrase. Without it the key cannot be used, and nobody can recover it."),
                "generate", _("_Generate"), entries, TRUE);
  GtkWidget *drop_down;

  for (guint i = 0; i < n; i++)
    presets[i] = gettext (table[i].label);
  drop_down = gtk_drop_down_new_from_strings (presets);
  gtk_drop_down_set_selected (GTK_DROP_DOWN (drop_down), preferred_preset (self));
  gtk_accessible_update_property (GTK_ACCESSIBLE (drop_down), GTK_ACCESSIBLE_PROPERTY_LABEL,
                                  _("CKKS Parameters"), -1);
  gtk_box_append (GTK_BOX (adw_message_dialog_get_extra_child (dialog)), drop_down);
  g_object_set_data (G_OBJECT (dialog), "preset", drop_down);
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
ask_unlock (TsKeysPage *self)
{
  const char *entries[] = { _("Passphrase"), NULL };

  gtk_window_present (GTK_WINDOW (
    dialog_new (self, ASK_UNLOCK, _("Unlock Encryption Key"),
                _("Enter the passphrase of the key to use encrypted adapters."),
                "unlock", _("_Unlock"), entries, FALSE)));
}

static void
ask_change_passphrase (TsKeysPage *self)
{
  const char *entries[] = { _("Current passphrase"), _("New passphrase"),
                            _("Confirm new passphrase"), NULL };

  gtk_window_present (GTK_WINDOW (
    dialog_new (self, ASK_CHANGE_PASSPHRASE, _("Change Passphrase"),
                _("The same key is sealed again under the new passphrase."),
                "change", _("C_hange"), entries, TRUE)));
}

static void
ask_rotate (TsKeysPage *self)
{
  const char *entries[] = { _("Passphrase"), NULL };

  gtk_window_present (GTK_WINDOW (
    dialog_new (self, ASK_ROTATE, _("Rotate Encryption Key?"),
                _("A new key replaces the current one, sealed under the same passphrase. A remote evaluator needs the new public key."),
                "rotate", _("_Rotate"), entries, FALSE)));
}

static void
ask_delete (TsKeysPage *self)
{
  gtk_window_present (GTK_WINDOW (
    dialog_new (self, ASK_DELETE, _("Delete Encryption Key?"),
                _("The key is erased from this computer. This cannot be undone."),
                "delete", _("_Delete"), NULL, FALSE)));
}

/* ---- Operations ------------------------------------------------------- */

static void
report_error (TsKeysPage *self, const GError *error)
{
  if (g_error_matches (error, TS_KEY_ERROR, TS_KEY_ERROR_WRONG_PASSPHRASE))
    toast (self, _("The passphrase is not correct"));
  else
    {
      g_autofree char *text = g_strdup_printf (_("Key operation failed: %s"), error->message);
      toast (self, text);
    }
}

typedef gboolean (*FinishFunc) (TsKeyVault *, GAsyncResult *, GError **);

static void
operation_done (TsKeysPage *self, GAsyncResult *result, FinishFunc finish, const char *done)
{
  g_autoptr (GError) error = NULL;

  if (finish (TS_KEY_VAULT (self->vault), result, &error))
    toast (self, done);
  else
    report_error (self, error);
}

static void
generate_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsKeysPage) self = user_data;

  operation_done (self, result, ts_key_vault_generate_finish, _("Key generated and sealed"));
}

static void
unlock_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsKeysPage) self = user_data;
  g_autoptr (GError) error = NULL;

  if (ts_key_vault_unlock_finish (TS_KEY_VAULT (source), result, &error))
    {
      toast (self, _("Key unlocked"));
      return;
    }
  report_error (self, error);
  /* Ask again after a wrong passphrase; anything else is final. */
  if (g_error_matches (error, TS_KEY_ERROR, TS_KEY_ERROR_WRONG_PASSPHRASE))
    ask_unlock (self);
}

static void
change_passphrase_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsKeysPage) self = user_data;

  operation_done (self, result, ts_key_vault_change_passphrase_finish, _("Passphrase changed"));
}

static void
rotate_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (TsKeysPage) self = user_data;

  operation_done (self, result, ts_key_vault_rotate_finish, _("Key rotated"));
}

static void
delete_key (TsKeysPage *self)
{
  g_autoptr (GError) error = NULL;

  if (ts_key_vault_delete (self->vault, &error))
    toast (self, _("Key deleted"));
  else
    report_error (self, error);
}

static const char *
entry_text (AdwMessageDialog *dialog, guint index)
{
  return gtk_editable_get_text (dialog_entry (dialog, index));
}

static void
dialog_response_cb (AdwMessageDialog *dialog, const char *response, TsKeysPage *self)
{
  Ask ask = GPOINTER_TO_UINT (g_object_get_data (G_OBJECT (dialog), "ask"));
  GtkDropDown *preset;
  guint n;

  /* GTK 4.8's password entry reacts to the focus leaving a window being
   * destroyed after it is gone itself: move the focus away first. */
  gtk_window_set_focus (GTK_WINDOW (dialog), NULL);
  if (g_str_equal (response, "cancel") || self->vault == NULL)
    return;
  switch (ask)
    {
    case ASK_GENERATE:
      preset = g_object_get_data (G_OBJECT (dialog), "preset");
      ts_key_vault_generate_async (self->vault,
                                   ts_ckks_presets (&n)[gtk_drop_down_get_selected (preset)].name,
                                   entry_text (dialog, 0), NULL, generate_cb, g_object_ref (self));
      break;
    case ASK_UNLOCK:
      ts_key_vault_unlock_async (self->vault, entry_text (dialog, 0), NULL, unlock_cb,
                                 g_object_ref (self));
      break;
    case ASK_CHANGE_PASSPHRASE:
      ts_key_vault_change_passphrase_async (self->vault, entry_text (dialog, 0),
                                            entry_text (dialog, 1), NULL, change_passphrase_cb,
                                            g_object_ref (self));
      break;
    case ASK_ROTATE:
      ts_key_vault_rotate_async (self->vault, entry_text (dialog, 0), NULL, rotate_cb,
                                 g_object_ref (self));
      break;
    case ASK_DELETE:
      delete_key (self);
      break;
    default:
      g_assert_not_reached ();
    }
  /* The vault copied the passphrases; do not leave them in the entries. */
  for (guint i = 0; dialog_entry (dialog, i) != NULL; i++)
    gtk_editable_set_text (dialog_entry (dialog, i), "");
}

/* ---- Export ----------------------------------------------------------- */

static void
export_chosen_cb (GtkWidget *owner, const char *path, gpointer user_data)
{
  TsKeysPage *self = TS_KEYS_PAGE (owner);
  g_autoptr (GError) error = NULL;

  if (path == NULL)
    toast (self, _("The public key can only be saved to a local file"));
  else if (!ts_key_vault_export_public (self->vault, path, &error))
    report_error (self, error);
  else
    toast (self, _("Public key exported"));
}

static void
export_public_key (TsKeysPage *self)
{
  ts_file_chooser_run (GTK_WIDGET (self), GTK_FILE_CHOOSER_ACTION_SAVE, _("Export Public Key"),
                       _("_Export"), "tensafe-public-key.tspk", NULL, export_chosen_cb, NULL);
}

/* ---- Actions ---------------------------------------------------------- */

static void
key_action (GtkWidget *widget, const char *action_name, GVariant *param)
{
  TsKeysPage *self = TS_KEYS_PAGE (widget);

  if (self->vault == NULL)
    return;
  if (g_str_equal (action_name, "keys.generate"))
    ask_generate (self);
  else if (g_str_equal (action_name, "keys.unlock"))
    ask_unlock (self);
  else if (g_str_equal (action_name, "keys.lock"))
    ts_key_vault_lock (self->vault);
  else if (g_str_equal (action_name, "keys.change-passphrase"))
    ask_change_passphrase (self);
  else if (g_str_equal (action_name, "keys.rotate"))
    ask_rotate (self);
  else if (g_str_equal (action_name, "keys.delete"))
    ask_delete (self);
  else if (g_str_equal (action_name, "keys.export"))
    export_public_key (self);
  else if (g_str_equal (action_name, "keys.copy-fingerprint"))
    {
      /* Public: for comparing with what a remote evaluator was given. */
      gdk_clipboard_set_text (gtk_widget_get_clipboard (widget),
                              ts_key_vault_get_fingerprint (self->vault));
      toast (self, _("Fingerprint copied"));
    }
}

/* Once the page sits in a shown window, ask for the passphrase of a sealed key. */
static gboolean
prompt_unlock_idle (gpointer user_data)
{
  TsKeysPage *self = user_data;
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (self));

  self->prompt_idle = 0;
  if (self->prompted || self->vault == NULL || !GTK_IS_WINDOW (root)
      || !gtk_widget_get_visible (GTK_WIDGET (root)))
    return G_SOURCE_REMOVE;
  self->prompted = TRUE;
  if (ts_key_vault_get_state (self->vault) == TS_KEY_STATE_LOCKED && self->dialog == NULL)
    ask_unlock (self);
  return G_SOURCE_REMOVE;
}

static void
schedule_prompt (TsKeysPage *self)
{
  if (self->prompt_idle == 0 && !self->prompted)
    self->prompt_idle = g_idle_add (prompt_unlock_idle, self);
}

void
ts_keys_page_set_vault (TsKeysPage *self, TsKeyVault *vault)
{
  g_return_if_fail (TS_IS_KEYS_PAGE (self));
  g_return_if_fail (vault == NULL || TS_IS_KEY_VAULT (vault));

  if (self->vault == vault)
    return;
  if (self->vault != NULL)
    g_signal_handlers_disconnect_by_data (self->vault, self);
  g_set_object (&self->vault, vault);
  if (vault != NULL)
    {
      g_signal_connect_object (vault, "notify::state", G_CALLBACK (update_view), self,
                               G_CONNECT_SWAPPED);
      g_signal_connect_object (vault, "notify::fingerprint", G_CALLBACK (update_view), self,
                               G_CONNECT_SWAPPED);
      g_signal_connect_object (vault, "notify::busy", G_CALLBACK (update_progress), self,
                               G_CONNECT_SWAPPED);
      g_signal_connect_object (vault, "notify::progress", G_CALLBACK (update_progress), self,
                               G_CONNECT_SWAPPED);
      schedule_prompt (self);
    }
  update_view (self);
}

GtkWidget *
ts_keys_page_new (TsSettings *settings)
{
  g_return_val_if_fail (TS_IS_SETTINGS (settings), NULL);
  return g_object_new (TS_TYPE_KEYS_PAGE, "settings", settings, NULL);
}

static void
ts_keys_page_constructed (GObject *object)
{
  G_OBJECT_CLASS (ts_keys_page_parent_class)->constructed (object);
  g_return_if_fail (TS_IS_SETTINGS (TS_KEYS_PAGE (object)->settings));   /* required */
}

static void
ts_keys_page_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_SETTINGS:
      g_value_set_object (value, TS_KEYS_PAGE (object)->settings);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_keys_page_set_property (GObject *object, guint prop_id, const GValue *value,
                           GParamSpec *pspec)
{
  switch (prop_id)
    {
    case PROP_SETTINGS:
      TS_KEYS_PAGE (object)->settings = g_value_dup_object (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

TsKeyVault *
ts_keys_page_get_vault (TsKeysPage *self)
{
  g_return_val_if_fail (TS_IS_KEYS_PAGE (self), NULL);
  return self->vault;
}

/* ---- Test access ------------------------------------------------------ */

AdwMessageDialog *
_ts_keys_page_get_dialog (TsKeysPage *self)
{
  return self->dialog;
}

GtkEditable *
_ts_keys_page_dialog_entry (AdwMessageDialog *dialog, guint index)
{
  return dialog_entry (dialog, index);
}

const char *
_ts_keys_page_get_last_toast (TsKeysPage *self)
{
  return self->last_toast;
}

const char *
_ts_keys_page_get_row_text (TsKeysPage *self, const char *row)
{
  if (g_str_equal (row, "status"))
    return adw_action_row_get_subtitle (self->status_row);
  if (g_str_equal (row, "fingerprint"))
    return adw_action_row_get_subtitle (self->fingerprint_row);
  return adw_action_row_get_subtitle (self->created_row);
}

const char *
_ts_keys_page_get_view (TsKeysPage *self)
{
  return gtk_stack_get_visible_child_name (self->stack);
}

/* ---- GObject ---------------------------------------------------------- */

static void
ts_keys_page_map (GtkWidget *widget)
{
  GTK_WIDGET_CLASS (ts_keys_page_parent_class)->map (widget);
  schedule_prompt (TS_KEYS_PAGE (widget));
}

static void
ts_keys_page_dispose (GObject *object)
{
  TsKeysPage *self = TS_KEYS_PAGE (object);

  g_clear_handle_id (&self->prompt_idle, g_source_remove);
  if (self->dialog != NULL)
    gtk_window_destroy (GTK_WINDOW (self->dialog));
  g_clear_weak_pointer (&self->dialog);
  ts_keys_page_set_vault (self, NULL);
  g_clear_object (&self->settings);
  g_clear_pointer (&self->last_toast, g_free);
  /* AdwBin drops its child, the toast overlay, with everything in it. */
  G_OBJECT_CLASS (ts_keys_page_parent_class)->dispose (object);
}

static void
ts_keys_page_class_init (TsKeysPageClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  static const char *const actions[] = {
    "keys.generate", "keys.unlock", "keys.lock", "keys.change-passphrase",
    "keys.rotate", "keys.delete", "keys.export", "keys.copy-fingerprint",
  };

  object_class->constructed = ts_keys_page_constructed;
  object_class->dispose = ts_keys_page_dispose;
  object_class->get_property = ts_keys_page_get_property;
  object_class->set_property = ts_keys_page_set_property;
  properties[PROP_SETTINGS] =
    g_param_spec_object ("settings", NULL, NULL, TS_TYPE_SETTINGS,
                         G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
  widget_class->map = ts_keys_page_map;

  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/org/tensafe/Desktop/ui/ts-keys-page.ui");
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, stack);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, damaged_status);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, status_row);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, fingerprint_row);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, created_row);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, preset_row);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, unlock_button);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, lock_button);
  gtk_widget_class_bind_template_child (widget_class, TsKeysPage, progress_bar);

  for (guint i = 0; i < G_N_ELEMENTS (actions); i++)
    gtk_widget_class_install_action (widget_class, actions[i], NULL, key_action);
}

static void
ts_keys_page_init (TsKeysPage *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  update_view (self);
}
