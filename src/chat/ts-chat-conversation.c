/* ts-chat-conversation.c: a conversation as a list of turns.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-chat-conversation.h"

struct _TsChatConversation
{
  GObject parent_instance;

  GPtrArray *turns;              /* TsChatTurn, owned */
};

static void list_model_init (GListModelInterface *iface);

G_DEFINE_FINAL_TYPE_WITH_CODE (TsChatConversation, ts_chat_conversation, G_TYPE_OBJECT,
                               G_IMPLEMENT_INTERFACE (G_TYPE_LIST_MODEL, list_model_init))

static GType
get_item_type (GListModel *model)
{
  return TS_TYPE_CHAT_TURN;
}

static guint
get_n_items (GListModel *model)
{
  return TS_CHAT_CONVERSATION (model)->turns->len;
}

static gpointer
get_item (GListModel *model, guint position)
{
  TsChatTurn *turn = ts_chat_conversation_get_turn (TS_CHAT_CONVERSATION (model), position);

  return turn != NULL ? g_object_ref (turn) : NULL;
}

static void
list_model_init (GListModelInterface *iface)
{
  iface->get_item_type = get_item_type;
  iface->get_n_items = get_n_items;
  iface->get_item = get_item;
}

static TsChatTurn *
turn_at (TsChatConversation *self, guint position)
{
  return g_ptr_array_index (self->turns, position);
}

/* Removes the turns from @position to the end, in one emission. */
static void
remove_from (TsChatConversation *self, guint position)
{
  guint removed = self->turns->len - position;

  if (removed == 0)
    return;
  g_ptr_array_set_size (self->turns, position);
  g_list_model_items_changed (G_LIST_MODEL (self), position, removed, 0);
}

TsChatTurn *
ts_chat_conversation_append (TsChatConversation *self, gboolean is_user, const char *text)
{
  TsChatTurn *turn;

  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), NULL);
  turn = ts_chat_turn_new (is_user, text);
  g_ptr_array_add (self->turns, turn);
  g_list_model_items_changed (G_LIST_MODEL (self), self->turns->len - 1, 0, 1);
  return turn;
}

TsChatTurn *
ts_chat_conversation_get_turn (TsChatConversation *self, guint position)
{
  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), NULL);
  return position < self->turns->len ? turn_at (self, position) : NULL;
}

TsChatTurn *
ts_chat_conversation_get_last_reply (TsChatConversation *self)
{
  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), NULL);
  for (guint i = self->turns->len; i > 0; i--)
    if (!ts_chat_turn_get_is_user (turn_at (self, i - 1)))
      return turn_at (self, i - 1);
  return NULL;
}

void
ts_chat_conversation_clear (TsChatConversation *self)
{
  g_return_if_fail (TS_IS_CHAT_CONVERSATION (self));
  remove_from (self, 0);
}

/* The position of the @index-th prompt, or -1. */
static int
prompt_position (TsChatConversation *self, guint index)
{
  guint n = 0;

  for (guint i = 0; i < self->turns->len; i++)
    if (ts_chat_turn_get_is_user (turn_at (self, i)) && n++ == index)
      return (int) i;
  return -1;
}

guint
ts_chat_conversation_count_prompts_before (TsChatConversation *self, guint position)
{
  guint n = 0;

  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), 0);
  for (guint i = 0; i < MIN (position, self->turns->len); i++)
    n += ts_chat_turn_get_is_user (turn_at (self, i));
  return n;
}

guint
ts_chat_conversation_get_n_prompts (TsChatConversation *self)
{
  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), 0);
  return ts_chat_conversation_count_prompts_before (self, self->turns->len);
}

TsChatTurn *
ts_chat_conversation_get_prompt (TsChatConversation *self, guint index)
{
  int position;

  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), NULL);
  position = prompt_position (self, index);
  return position >= 0 ? turn_at (self, (guint) position) : NULL;
}

gboolean
ts_chat_conversation_truncate (TsChatConversation *self, guint index)
{
  int position;

  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), FALSE);
  if ((position = prompt_position (self, index)) < 0)
    return FALSE;
  remove_from (self, (guint) position);
  return TRUE;
}

char *
ts_chat_conversation_pop_exchange (TsChatConversation *self)
{
  guint n;
  char *text;

  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), NULL);
  if ((n = ts_chat_conversation_get_n_prompts (self)) == 0)
    return NULL;
  text = g_strdup (ts_chat_turn_get_text (ts_chat_conversation_get_prompt (self, n - 1)));
  ts_chat_conversation_truncate (self, n - 1);
  return text;
}

void
ts_chat_conversation_exclude_last_exchange (TsChatConversation *self, const char *why)
{
  guint n;
  TsChatTurn *reply;

  g_return_if_fail (TS_IS_CHAT_CONVERSATION (self));
  n = ts_chat_conversation_get_n_prompts (self);
  if (n > 0)
    for (guint i = (guint) prompt_position (self, n - 1); i < self->turns->len; i++)
      ts_chat_turn_set_excluded (turn_at (self, i), TRUE);
  if (why != NULL && (reply = ts_chat_conversation_get_last_reply (self)) != NULL)
    ts_chat_turn_add_note (reply, why);
}

GPtrArray *
ts_chat_conversation_get_texts (TsChatConversation *self)
{
  GPtrArray *texts = g_ptr_array_new_with_free_func (g_free);

  g_return_val_if_fail (TS_IS_CHAT_CONVERSATION (self), texts);
  for (guint i = 0; i < self->turns->len; i++)
    {
      TsChatTurn *turn = turn_at (self, i);

      if (ts_chat_turn_get_excluded (turn))
        continue;
      /* Keep user/assistant alternating even after a failed reply. */
      if (ts_chat_turn_get_is_user (turn) == (texts->len % 2 == 1))
        g_ptr_array_add (texts, g_strdup (""));
      g_ptr_array_add (texts, g_strdup (ts_chat_turn_get_text (turn)));
    }
  return texts;
}

static void
ts_chat_conversation_finalize (GObject *object)
{
  g_ptr_array_unref (TS_CHAT_CONVERSATION (object)->turns);
  G_OBJECT_CLASS (ts_chat_conversation_parent_class)->finalize (object);
}

static void
ts_chat_conversation_class_init (TsChatConversationClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = ts_chat_conversation_finalize;
}

static void
ts_chat_conversation_init (TsChatConversation *self)
{
  self->turns = g_ptr_array_new_with_free_func (g_object_unref);
}

TsChatConversation *
ts_chat_conversation_new (void)
{
  return g_object_new (TS_TYPE_CHAT_CONVERSATION, NULL);
}
