/* ts-chat-page-vault.c: the chat page's use of the key vault: the HE pane's
 * key badge, and the unlocked key handed to each HE-LoRA answer.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-chat-page-private.h"

/* The badge follows the vault between answers; an answer under way keeps
 * the key it started with. */
static void
key_vault_changed_cb (TsChatPage *self)
{
  const char *fingerprint = ts_key_vault_get_state (self->key_vault) == TS_KEY_STATE_UNLOCKED
    ? ts_key_vault_get_fingerprint (self->key_vault) : NULL;

  /* a pane whose last answer encrypted nothing shows no lock */
  if (!ts_chat_pane_get_busy (self->he_pane) && ts_chat_pane_get_encrypted (self->he_pane))
    ts_chat_pane_show_key (self->he_pane, fingerprint, fingerprint != NULL);
}

void
ts_chat_page_set_key_vault (TsChatPage *self, TsKeyVault *vault)
{
  g_return_if_fail (TS_IS_CHAT_PAGE (self));
  g_return_if_fail (vault == NULL || TS_IS_KEY_VAULT (vault));

  if (self->key_vault != NULL)
    g_signal_handlers_disconnect_by_data (self->key_vault, self);
  g_set_object (&self->key_vault, vault);
  if (vault == NULL)
    return;
  g_signal_connect_object (vault, "notify::state", G_CALLBACK (key_vault_changed_cb), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (vault, "notify::fingerprint", G_CALLBACK (key_vault_changed_cb), self,
                           G_CONNECT_SWAPPED);
  key_vault_changed_cb (self);
}

void
_ts_chat_page_use_vault_key (TsChatPage *self, TsGenerationRequest *request)
{
  const TsKeyPair *pair = self->key_vault != NULL ? ts_key_vault_get_key_pair (self->key_vault)
                                                  : NULL;
  g_autoptr (GError) error = NULL;

  if (pair == NULL || request->he_mode == NULL || g_str_equal (request->he_mode, "plain"))
    return;
  /* Sealed for the worker thread: the vault's pair is valid only until its
   * next state change. Without it the answer falls back to a fresh key. */
  if (!ts_generation_request_set_key_pair (request, pair,
                                           ts_key_vault_get_fingerprint (self->key_vault), &error))
    _ts_chat_page_error (self, error->message);
}

void
_ts_chat_page_vault_dispose (TsChatPage *self)
{
  if (self->key_vault != NULL)
    g_signal_handlers_disconnect_by_data (self->key_vault, self);
  g_clear_object (&self->key_vault);
}
