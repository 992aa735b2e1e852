/* ts-chat-page-private.h: internals of the chat page shared by its files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-chat-page.h"
#include "ts-generation.h"
#include "ts-history.h"
#include "ts-key-vault.h"

G_BEGIN_DECLS

#define TS_DEMO_MODEL "tiny-qwen35moe-f32.gguf"
#define TS_DEMO_ADAPTER "tiny-qwen35moe-lora-f32.gguf"

struct _TsChatPage
{
  AdwBin parent_instance;

  /* Template children. */
  AdwToastOverlay *toast_overlay;
  GtkListBox *history_list;
  GtkMenuButton *model_button;
  GtkMenuButton *adapter_button;
  GtkStack *content_stack;
  TsChatPane *plain_pane;
  TsChatPane *he_pane;
  GtkEntry *prompt_entry;
  GtkEntry *system_entry;

  /* Generation settings (bound to the settings popover). */
  double temperature;
  double top_p;
  guint max_tokens;
  guint seed;

  /* Model and adapter. */
  TsGenerationModel *model;
  char *model_path;
  char *adapter_path;
  GCancellable *load_cancellable;

  /* The exchange in progress. */
  gboolean busy;
  GArray *plain_ids;             /* token ids of the current reply, per pane */
  GArray *he_ids;
  guint save_timeout;

  /* The key vault whose unlocked key HE replies use (a reference). */
  TsKeyVault *key_vault;
  /* The adapter's marketplace id and version, when it is an installed
   * marketplace adapter (turns are metered); else NULL. */
  char *market_id;
  char *market_version;
  GCancellable *verify_cancellable;

  /* History. */
  TsHistory *history;
  gint64 conversation;
  gint64 last_user_message;      /* id of the last prompt (regenerate, edit) */
  gint64 plain_reply_message;
  gint64 he_reply_message;
};

void _ts_chat_page_toast (TsChatPage *self, const char *message);
void _ts_chat_page_update_actions (TsChatPage *self);
void _ts_chat_page_update_empty_state (TsChatPage *self);

/* "CKKS, local evaluator", … as the settings say (newly allocated). */
char *_ts_chat_page_describe_evaluator (TsChatPage *self);

/* ts-chat-page-models.c: pickers, loading, exports. */
void _ts_chat_page_update_subtitles (TsChatPage *self);
void _ts_chat_page_models_init (TsChatPage *self);
void _ts_chat_page_load_model (TsChatPage *self, const char *model_path, const char *adapter_path);
/* Several adapters active at once, with @weights (NULL: all 1). */
void _ts_chat_page_load_stack (TsChatPage *self, const char *model_path,
                               const char *const *adapter_paths, const float *weights, guint n);
/* The demo adapter, then each installed one: (label, path) pairs, free with
 * g_ptr_array_unref (elements are GStrv {label, path}). */
GPtrArray *_ts_chat_page_list_adapters (TsChatPage *self);

/* ts-chat-page-stack.c: the "Stack Adapters" dialog. */
void _ts_chat_page_stack_class_init (GtkWidgetClass *widget_class);
void _ts_chat_page_models_class_init (GtkWidgetClass *widget_class);

/* ts-chat-page-history.c: the sidebar and history.sqlite. */
void _ts_chat_page_history_init (TsChatPage *self);
void _ts_chat_page_history_class_init (GtkWidgetClass *widget_class);
void _ts_chat_page_history_refresh (TsChatPage *self);
/* Stores the prompt and empty replies (creating the conversation first). */
void _ts_chat_page_history_begin_exchange (TsChatPage *self, const char *prompt);
/* Writes the replies streamed so far (@complete: the pane finished). */
void _ts_chat_page_history_save_reply (TsChatPage *self, gboolean he, gboolean complete);
/* Forgets the last exchange (regenerate, edit and resend). */
void _ts_chat_page_history_drop_exchange (TsChatPage *self);

/* ts-chat-page-market.c: marketplace adapters and the key vault's key. */
/* After a model or adapter loaded: finds out whether it is a marketplace one. */
void _ts_chat_page_market_adapter_loaded (TsChatPage *self);
/* After a turn: emits "adapter-used" for a marketplace adapter. */
void _ts_chat_page_market_report_turn (TsChatPage *self);
/* Makes @request's HE-LoRA session use the vault's unlocked key, if any. */
void _ts_chat_page_use_vault_key (TsChatPage *self, TsGenerationRequest *request);
void _ts_chat_page_market_dispose (TsChatPage *self);
void _ts_chat_page_market_class_init (GObjectClass *object_class);

G_END_DECLS
