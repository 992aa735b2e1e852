/* ts-market-trust.c: asking the user to trust (pin) a publisher's signing key on first install.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-market-format.h"
#include "ts-market-trust.h"

typedef struct
{
  TsMarketKeyring *keyring;
  char *publisher_id;
  char *publisher_name;
  char *key_id;
  char *public_key;
} TrustRequest;

static void
trust_request_free (gpointer data)
{
  TrustRequest *req = data;

  g_clear_object (&req->keyring);
  g_free (req->publisher_id);
  g_free (req->publisher_name);
  g_free (req->key_id);
  g_free (req->public_key);
  g_free (req);
}

static void
trust_response_cb (AdwMessageDialog *dialog, const char *response, gpointer user_data)
{
  g_autoptr (GTask) task = user_data;
  TrustRequest *req = g_task_get_task_data (task);
  GError *error = NULL;

  /* The dialog may answer again as it closes (its close response): the
   * first answer is the user's, and the task is finished by it. */
  g_signal_handlers_disconnect_by_func (dialog, trust_response_cb, user_data);
  if (g_strcmp0 (response, TS_MARKET_TRUST_RESPONSE_TRUST) != 0)
    {
      g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED,
                               _("The publisher's key was not trusted"));
      return;
    }
  /* The keyring checks the id against the key itself, so a server cannot
   * have us pin a key under another key's id. */
  if (!ts_market_keyring_pin (req->keyring, req->publisher_id, req->key_id, req->public_key,
                              &error))
    g_task_return_error (task, error);
  else
    g_task_return_boolean (task, TRUE);
}

static void
trust_ask (GTask *task)
{
  TrustRequest *req = g_task_get_task_data (task);
  GtkRoot *root = gtk_widget_get_root (GTK_WIDGET (g_task_get_source_object (task)));
  g_autofree char *fingerprint = ts_market_format_fingerprint (req->public_key);
  g_autofree char *body = NULL;
  GtkWidget *dialog;

  /* Translators: %1$s is a publisher's name, %2$s a key id, %3$s the key itself. */
  body = g_strdup_printf (_("“%1$s” signs its adapters with the key below. Compare it with "
                            "the key the publisher announces; once trusted, every release "
                            "is checked against it.\n\n%2$s\n%3$s"),
                          req->publisher_name, req->key_id, fingerprint);
  dialog = adw_message_dialog_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                   _("Trust This Publisher?"), body);
  adw_message_dialog_add_responses (ADW_MESSAGE_DIALOG (dialog),
                                    TS_MARKET_TRUST_RESPONSE_CANCEL, _("_Cancel"),
                                    TS_MARKET_TRUST_RESPONSE_TRUST, _("_Trust and Install"),
                                    NULL);
  adw_message_dialog_set_response_appearance (ADW_MESSAGE_DIALOG (dialog),
                                              TS_MARKET_TRUST_RESPONSE_TRUST,
                                              ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (ADW_MESSAGE_DIALOG (dialog),
                                           TS_MARKET_TRUST_RESPONSE_CANCEL);
  adw_message_dialog_set_close_response (ADW_MESSAGE_DIALOG (dialog),
                                         TS_MARKET_TRUST_RESPONSE_CANCEL);
  g_signal_connect (dialog, "response", G_CALLBACK (trust_response_cb), g_object_ref (task));
  gtk_window_present (GTK_WINDOW (dialog));
}

static void
keys_cb (GObject *source, GAsyncResult *result, gpointer user_data)
{
  g_autoptr (GTask) task = user_data;
  TrustRequest *req = g_task_get_task_data (task);
  g_autoptr (GPtrArray) keys = NULL;
  GError *error = NULL;

  keys = ts_market_client_get_publisher_keys_finish (TS_MARKET_CLIENT (source), result, &error);
  if (keys == NULL)
    {
      g_task_return_error (task, error);
      return;
    }
  for (guint i = 0; i < keys->len; i++)
    {
      TsMarketPublisherKey *key = g_ptr_array_index (keys, i);

      if (g_strcmp0 (key->key_id, req->key_id) == 0 && !key->revoked)
        {
          req->public_key = g_strdup (key->public_key);
          trust_ask (task);
          return;
        }
    }
  g_task_return_new_error (task, TS_MARKET_ERROR, TS_MARKET_ERROR_UNKNOWN_KEY,
                           _("The publisher does not list the key %s this release is signed with"),
                           req->key_id);
}

void
ts_market_trust_key_async (GtkWidget *parent, TsMarketClient *client, TsMarketKeyring *keyring,
                           const char *publisher_id, const char *publisher_name,
                           const char *key_id, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data)
{
  g_autoptr (GTask) task = g_task_new (parent, cancellable, callback, user_data);
  TrustRequest *req = g_new0 (TrustRequest, 1);

  req->keyring = g_object_ref (keyring);
  req->publisher_id = g_strdup (publisher_id);
  req->publisher_name = g_strdup (publisher_name ? publisher_name : publisher_id);
  req->key_id = g_strdup (key_id);
  g_task_set_task_data (task, req, trust_request_free);
  g_task_set_source_tag (task, ts_market_trust_key_async);
  ts_market_client_get_publisher_keys_async (client, publisher_id, cancellable, keys_cb,
                                             g_steal_pointer (&task));
}

gboolean
ts_market_trust_key_finish (GAsyncResult *result, GError **error)
{
  return g_task_propagate_boolean (G_TASK (result), error);
}
