/* ts-chat-page-private.h: internals of the chat page shared by its files.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-chat-router.h"
#include "ts-chat-page.h"
#include "ts-chat-session.h"
#include "ts-generation.h"
#include "ts-history.h"
#include "ts-key-vault.h"
#include "ts-prompt-view.h"
#include "ts-settings.h"

G_BEGIN_DECLS

#define TS_DEMO_MODEL "tiny-qwen35moe-f32.gguf"
#define TS_DEMO_ADAPTER "tiny-qwen35moe-lora-f32.gguf"

struct _TsChatPage
{
  AdwBin parent_instance;

  /* The application's settings (a reference; from construction on). */
  TsSettings *settings;
  GBinding *override_binding;    /* "chat-adapter-override" ↔ "adapter-override" */

  /* Template children. */
  AdwToastOverlay *toast_overlay;
  GtkListBox *history_list;
  GtkMenuButton *model_button;
  GtkMenuButton *adapter_button;
  GtkStack *content_stack;
  TsChatPane *plain_pane;
  TsChatPane *he_pane;
  TsPromptView *prompt_view;
  GtkSwitch *thinking_switch;    /* "chat-thinking"; insensitive for a model that cannot think */
  GtkWidget *edit_bar;           /* shown while an earlier prompt is edited */
  GtkLabel *edit_label;
  GtkButton *send_button;

  /* Editing an earlier prompt (chat.edit-prompt): its exchange's index
   * (-1: none), and the draft the prompt held before, for Cancel. */
  int editing;
  char *draft;

  /* The conversation's system prompt and sampling (ts-chat-page-settings.c):
   * never NULL; what both panes answer each turn with. */
  TsConversationSettings *conv_settings;
  GtkWidget *settings_dialog;    /* the open dialog (a weak pointer), or NULL */
  guint max_tokens;              /* the answers' length limit, for every conversation */
  guint save_interval_ms;        /* "save-interval": history writes while streaming */

  /* The model and adapters (the page shows the session's properties);
   * loads the page asked for stop when the page goes. */
  TsChatSession *session;
  GCancellable *load_cancellable;
  char *loading_model;           /* the load under way (for its error's remedy) */
  char *loading_adapter;

  /* The exchange in progress. */
  gboolean busy;
  gboolean turn_failed;          /* a pane of the turn under way failed */
  char *last_error;              /* the last error shown (_ts_chat_page_error) */
  gboolean regenerating;         /* the turn being started is a regenerate */
  guint n_regenerated;           /* regenerates so far: each draws with another seed */
  GArray *plain_ids;             /* token ids of the current reply, per pane */
  GArray *he_ids;
  guint save_timeout;

  /* Adapter routing (ts-chat-page-routing.c; the router is the session's):
   * the page's builds and routes, stopped when it goes, and the user's
   * choice ("" routes every turn). */
  GCancellable *routing_cancellable;
  GCancellable *route_cancellable;
  char *adapter_override;

  /* The key vault whose unlocked key HE replies use (a reference). */
  TsKeyVault *key_vault;
  GCancellable *verify_cancellable;  /* the check before Use in Chat */

  /* History. */
  TsHistory *history;
  GtkSearchEntry *history_search;  /* template children: the sidebar's filter, */
  GtkWidget *history_placeholder;  /* and what an empty result says */
  gint64 export_conversation;      /* the conversation the export dialog is for */
  gint64 conversation;
  gint64 last_user_message;      /* id of the last prompt (regenerate, edit) */
  gint64 plain_reply_message;
  gint64 he_reply_message;
};

void _ts_chat_page_toast (TsChatPage *self, const char *message);
/* Both panes answer @prompt with the adapter at @adapter_path (NULL: the
 * model's own); @note (NULL: none) above each reply says which. */
void _ts_chat_page_start_exchange (TsChatPage *self, const char *prompt,
                                   const char *adapter_path, const char *note);
/* An error as a toast that stays until dismissed. */
void _ts_chat_page_error (TsChatPage *self, const char *message);
/* The same with a button that activates @action (with @target) on the page. */
void _ts_chat_page_error_with_remedy (TsChatPage *self, const char *message,
                                      const char *button, const char *action, GVariant *target);
/* A turn stopped before generation began: the prompt returns to the entry. */
void _ts_chat_page_turn_cancelled (TsChatPage *self, const char *prompt);
void _ts_chat_page_update_actions (TsChatPage *self);
/* Notifies "routing", or "adapter-override" when @override. */
void _ts_chat_page_notify_routing (TsChatPage *self, gboolean override);
void _ts_chat_page_update_empty_state (TsChatPage *self);

/* "CKKS, local evaluator", … as the settings say (newly allocated). */
char *_ts_chat_page_describe_evaluator (TsChatPage *self);

/* ts-chat-page-models.c: pickers, loading, exports. */
void _ts_chat_page_update_subtitles (TsChatPage *self);
void _ts_chat_page_rebuild_adapter_menu (TsChatPage *self);
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

/* ts-chat-page-routing.c: one adapter per turn. */
char *_ts_chat_page_adapters_dir (void);
void _ts_chat_page_routing_init (TsChatPage *self);
void _ts_chat_page_routing_dispose (TsChatPage *self);
void _ts_chat_page_routing_class_init (GtkWidgetClass *widget_class);
/* Rebuilds the router when the model or the installed adapters changed. */
void _ts_chat_page_routing_refresh (TsChatPage *self);
/* Routes @prompt on a worker, then starts the exchange. */
void _ts_chat_page_route_turn (TsChatPage *self, const char *prompt);
void _ts_chat_page_cancel_route (TsChatPage *self);
void _ts_chat_page_set_adapter_override (TsChatPage *self, const char *id);
/* The user picked the adapter at @path: it answers every turn. */
void _ts_chat_page_adapter_picked (TsChatPage *self, const char *path);
/* The same for a stack of @n adapters with @weights. */
void _ts_chat_page_stack_picked (TsChatPage *self, const char *const *paths,
                                 const float *weights, guint n);

/* ts-chat-page-history.c: the sidebar and history.sqlite. */
void _ts_chat_page_history_init (TsChatPage *self);
void _ts_chat_page_history_class_init (GtkWidgetClass *widget_class);
void _ts_chat_page_history_refresh (TsChatPage *self);
/* Stores the prompt and empty replies (creating the conversation first). */
void _ts_chat_page_history_begin_exchange (TsChatPage *self, const char *prompt);
/* Writes the replies streamed so far (@complete: the pane finished). */
void _ts_chat_page_history_save_reply (TsChatPage *self, gboolean he, gboolean complete);
/* Keeps both panes' footer numbers and chart bars with their replies
 * (once both have finished: the HE pane's divergence mark needs both). */
void _ts_chat_page_history_save_stats (TsChatPage *self);
/* Leaves the last exchange out of both panes' conversations, for good (a
 * side failed to answer it): reopened, it is still left out. */
void _ts_chat_page_history_leave_out_exchange (TsChatPage *self);
/* Forgets the last exchange (regenerate, edit and resend). */
void _ts_chat_page_history_drop_exchange (TsChatPage *self);
/* Forgets exchange @index (from 0) and every later one, in one statement. */
void _ts_chat_page_history_truncate (TsChatPage *self, guint index);

/* ts-chat-page-edit.c: editing an earlier prompt. */
void _ts_chat_page_edit_class_init (GtkWidgetClass *widget_class);
void _ts_chat_page_edit_dispose (TsChatPage *self);
/* Leaves editing, the prompt view as it was before. */
void _ts_chat_page_edit_cancel (TsChatPage *self);
/* Sending the edited prompt: its exchange and the later ones go (panes and history). */
void _ts_chat_page_edit_commit (TsChatPage *self);

/* ts-chat-page-settings.c: the conversation's settings. */
void _ts_chat_page_settings_class_init (GtkWidgetClass *widget_class);
void _ts_chat_page_settings_dispose (TsChatPage *self);
/* A new conversation: the preferences' defaults. */
void _ts_chat_page_settings_reset (TsChatPage *self);
/* Stored conversation @conversation's, or the defaults when it has none. */
gboolean _ts_chat_page_settings_load (TsChatPage *self, gint64 conversation, GError **error);
/* Keeps the settings shown with the conversation (once it is stored). */
void _ts_chat_page_settings_store (TsChatPage *self);
/* Notifies the page's temperature, top-p and seed properties. */
void _ts_chat_page_notify_sampling (TsChatPage *self);

/* ts-chat-page-market.c: marketplace adapters. */
/* The session meters the adapter at @path (the turn's, or the one just
 * loaded) when it is a marketplace one. */
void _ts_chat_page_market_set_adapter (TsChatPage *self, const char *path);
/* After a turn: the session reports it (its "adapter-used", which the
 * page emits as its own, for a marketplace adapter). */
void _ts_chat_page_market_report_turn (TsChatPage *self);
/* Forwards the session's "adapter-used" (once the session exists). */
void _ts_chat_page_market_init (TsChatPage *self);
void _ts_chat_page_market_dispose (TsChatPage *self);
void _ts_chat_page_market_class_init (GObjectClass *object_class);

/* ts-chat-page-vault.c: the key vault's key. */
/* Makes @request's HE-LoRA session use the vault's unlocked key, if any. */
void _ts_chat_page_use_vault_key (TsChatPage *self, TsGenerationRequest *request);
void _ts_chat_page_vault_dispose (TsChatPage *self);

G_END_DECLS
