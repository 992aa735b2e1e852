/* ts-chat-page-market.c: the chat page's marketplace adapters (checked; metered by the session).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>

#include "ts-chat-page-private.h"
#include "ts-market-format.h"
#include "ts-market-install.h"
#include "ts-market-keyring.h"

enum {
  SIGNAL_ADAPTER_USED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

/* ---- marketplace adapters ------------------------------------------------ */

typedef struct {
  TsChatPage *self;              /* a reference, until the check is done */
  char *id;
  char *path;
} VerifyRequest;

static void
verify_request_free (VerifyRequest *r)
{
  g_object_unref (r->self);
  g_free (r->id);
  g_free (r->path);
  g_free (r);
}

static void
verify_done_cb (GObject *source, GAsyncResult *result, gpointer data)
{
  VerifyRequest *r = data;
  TsChatPage *self = r->self;
  g_autoptr (GError) error = NULL;
  const char *model_path = ts_chat_session_get_model_path (self->session);
  g_autofree char *demo_model = NULL;

  if (!ts_market_verify_installed_finish (result, &error))
    {
      g_autofree char *message = NULL;

      if (!g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        {
          message = g_strdup_printf (_("“%s” cannot be used: %s"), r->id, error->message);
          _ts_chat_page_toast (self, message);
        }
      verify_request_free (r);
      return;
    }
  if (model_path == NULL)
    demo_model = ts_chat_page_find_demo_file (TS_DEMO_MODEL);
  _ts_chat_page_adapter_picked (self, r->path);
  _ts_chat_page_load_model (self, model_path != NULL ? model_path : demo_model, r->path);
  verify_request_free (r);
}

/* The keyring is the file the marketplace page pins publishers into. */
void
ts_chat_page_use_market_adapter (TsChatPage *self, const char *adapters_dir, const char *id,
                                 const char *path)
{
  g_autofree char *keyring_path = ts_market_keyring_path ();
  VerifyRequest *r;

  g_return_if_fail (TS_IS_CHAT_PAGE (self));
  g_return_if_fail (adapters_dir != NULL && id != NULL && path != NULL);

  g_cancellable_cancel (self->verify_cancellable);
  g_clear_object (&self->verify_cancellable);
  self->verify_cancellable = g_cancellable_new ();
  r = g_new0 (VerifyRequest, 1);
  r->self = g_object_ref (self);
  r->id = g_strdup (id);
  r->path = g_strdup (path);
  ts_market_verify_installed_async (adapters_dir, id, keyring_path, self->verify_cancellable,
                                    verify_done_cb, r);
}

const char *
ts_chat_page_get_adapter_path (TsChatPage *self)
{
  g_return_val_if_fail (TS_IS_CHAT_PAGE (self), NULL);
  return ts_chat_session_get_adapter_path (self->session);
}

/* Installed marketplace adapters are metered, however they were picked
 * (Use in Chat or the adapter menu). */
void
_ts_chat_page_market_set_adapter (TsChatPage *self, const char *path)
{
  g_autofree char *dir = _ts_chat_page_adapters_dir ();

  ts_chat_session_meter_adapter (self->session, dir, path);
}

void
_ts_chat_page_market_report_turn (TsChatPage *self)
{
  ts_chat_session_report_turn (self->session,
                               (gint64) ts_chat_pane_get_n_tokens (self->plain_pane)
                               + ts_chat_pane_get_n_tokens (self->he_pane));
}

static void
adapter_used_cb (TsChatSession *session, const char *id, const char *version, gint64 tokens,
                 TsChatPage *self)
{
  g_signal_emit (self, signals[SIGNAL_ADAPTER_USED], 0, id, version, tokens);
}

void
_ts_chat_page_market_init (TsChatPage *self)
{
  g_signal_connect_object (self->session, "adapter-used", G_CALLBACK (adapter_used_cb), self, 0);
}

void
_ts_chat_page_market_dispose (TsChatPage *self)
{
  g_cancellable_cancel (self->verify_cancellable);
  g_clear_object (&self->verify_cancellable);
}

void
_ts_chat_page_market_class_init (GObjectClass *object_class)
{
  signals[SIGNAL_ADAPTER_USED] =
    g_signal_new ("adapter-used", G_TYPE_FROM_CLASS (object_class), G_SIGNAL_RUN_LAST, 0, NULL,
                  NULL, NULL, G_TYPE_NONE, 3, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_INT64);
}
