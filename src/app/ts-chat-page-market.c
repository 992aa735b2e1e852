/* ts-chat-page-market.c: the chat page's marketplace adapters (checked, metered).
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

static gboolean
same_file (const char *a, const char *b)
{
  g_autofree char *ca = g_canonicalize_filename (a, NULL);
  g_autofree char *cb = g_canonicalize_filename (b, NULL);

  return g_str_equal (ca, cb);
}

/* Installed marketplace adapters are metered, however they were picked
 * (Use in Chat or the adapter menu); one made here from a marketplace
 * adapter (a rank reduction) is metered as that adapter, whose version it
 * keeps. */
void
_ts_chat_page_market_set_adapter (TsChatPage *self, const char *path)
{
  g_autofree char *dir = _ts_chat_page_adapters_dir ();
  g_autoptr (GPtrArray) list = NULL;

  g_clear_pointer (&self->market_id, g_free);
  g_clear_pointer (&self->market_version, g_free);
  if (path == NULL || (list = ts_market_list_installed (dir, NULL)) == NULL)
    return;
  for (guint i = 0; i < list->len; i++)
    {
      TsMarketInstalled *a = g_ptr_array_index (list, i);

      if (same_file (a->path, path))
        {
          if (a->local && a->derived_from == NULL)
            return;
          self->market_id = g_strdup (a->local ? a->derived_from : a->id);
          self->market_version = g_strdup (a->version);
          return;
        }
    }
}

void
_ts_chat_page_market_report_turn (TsChatPage *self)
{
  gint64 tokens = (gint64) ts_chat_pane_get_n_tokens (self->plain_pane)
                  + ts_chat_pane_get_n_tokens (self->he_pane);

  if (self->market_id != NULL && tokens > 0)
    g_signal_emit (self, signals[SIGNAL_ADAPTER_USED], 0, self->market_id, self->market_version,
                   tokens);
}

void
_ts_chat_page_market_dispose (TsChatPage *self)
{
  g_cancellable_cancel (self->verify_cancellable);
  g_clear_object (&self->verify_cancellable);
  g_clear_pointer (&self->market_id, g_free);
  g_clear_pointer (&self->market_version, g_free);
}

void
_ts_chat_page_market_class_init (GObjectClass *object_class)
{
  signals[SIGNAL_ADAPTER_USED] =
    g_signal_new ("adapter-used", G_TYPE_FROM_CLASS (object_class), G_SIGNAL_RUN_LAST, 0, NULL,
                  NULL, NULL, G_TYPE_NONE, 3, G_TYPE_STRING, G_TYPE_STRING, G_TYPE_INT64);
}
