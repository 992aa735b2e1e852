/* ts-chat-turn.c: one turn of a conversation: a prompt or a reply.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-chat-turn.h"

struct _TsChatTurn
{
  GObject parent_instance;

  gboolean is_user;
  GString *text;
  GString *thinking;
  guint thinking_tokens;         /* 0: not known (a reply read back from history) */
  gboolean thinking_active;
  char *note;
  char *error;
  char *ending;
  TsHistoryReplyStats *stats;
  gboolean excluded;
};

G_DEFINE_FINAL_TYPE (TsChatTurn, ts_chat_turn, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_IS_USER,
  PROP_TEXT,
  PROP_THINKING,
  PROP_THINKING_TOKENS,
  PROP_THINKING_ACTIVE,
  PROP_NOTE,
  PROP_ERROR,
  PROP_ENDING,
  PROP_STATS,
  PROP_EXCLUDED,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

static void
notify (TsChatTurn *self, guint prop)
{
  g_object_notify_by_pspec (G_OBJECT (self), properties[prop]);
}

/* Replaces *@field with a copy of @value, notifying @prop when it differs. */
static void
set_optional_string (TsChatTurn *self, char **field, const char *value, guint prop)
{
  if (g_strcmp0 (*field, value) == 0)
    return;
  g_free (*field);
  *field = g_strdup (value);
  notify (self, prop);
}

gboolean
ts_chat_turn_get_is_user (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), FALSE);
  return self->is_user;
}

const char *
ts_chat_turn_get_text (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), NULL);
  return self->text->str;
}

void
ts_chat_turn_set_text (TsChatTurn *self, const char *text)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  if (g_strcmp0 (self->text->str, text != NULL ? text : "") == 0)
    return;
  g_string_assign (self->text, text != NULL ? text : "");
  notify (self, PROP_TEXT);
}

static void
finish_thinking (TsChatTurn *self)
{
  if (!self->thinking_active)
    return;
  self->thinking_active = FALSE;
  notify (self, PROP_THINKING_ACTIVE);
}

void
ts_chat_turn_append_text (TsChatTurn *self, const char *text)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  if (text == NULL || *text == '\0')
    return;
  g_string_append (self->text, text);
  notify (self, PROP_TEXT);
  /* The answer has started: the thinking above it is done. */
  finish_thinking (self);
}

const char *
ts_chat_turn_get_thinking (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), NULL);
  return self->thinking->str;
}

void
ts_chat_turn_append_thinking (TsChatTurn *self, const char *text, guint n_tokens)
{
  gboolean has_text = text != NULL && *text != '\0';

  g_return_if_fail (TS_IS_CHAT_TURN (self));
  /* No text starts no thinking (a reply that does not think). */
  if (!self->thinking_active && !has_text)
    return;
  if (!self->thinking_active)
    {
      self->thinking_active = TRUE;
      notify (self, PROP_THINKING_ACTIVE);
    }
  if (self->thinking_tokens != n_tokens)
    {
      self->thinking_tokens = n_tokens;
      notify (self, PROP_THINKING_TOKENS);
    }
  if (has_text)
    {
      g_string_append (self->thinking, text);
      notify (self, PROP_THINKING);
    }
}

void
ts_chat_turn_end_thinking (TsChatTurn *self)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  finish_thinking (self);
}

void
ts_chat_turn_set_thinking (TsChatTurn *self, const char *thinking)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  finish_thinking (self);
  if (self->thinking_tokens != 0)
    {
      self->thinking_tokens = 0;
      notify (self, PROP_THINKING_TOKENS);
    }
  g_string_assign (self->thinking, thinking != NULL ? thinking : "");
  /* Always notified: a view shows a finished thinking afresh. */
  notify (self, PROP_THINKING);
}

guint
ts_chat_turn_get_thinking_tokens (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), 0);
  return self->thinking_tokens;
}

gboolean
ts_chat_turn_get_thinking_active (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), FALSE);
  return self->thinking_active;
}

const char *
ts_chat_turn_get_note (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), NULL);
  return self->note;
}

void
ts_chat_turn_set_note (TsChatTurn *self, const char *note)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  set_optional_string (self, &self->note, note, PROP_NOTE);
}

void
ts_chat_turn_add_note (TsChatTurn *self, const char *line)
{
  g_autofree char *note = NULL;

  g_return_if_fail (TS_IS_CHAT_TURN (self));
  g_return_if_fail (line != NULL);
  note = self->note != NULL && *self->note != '\0'
         ? g_strconcat (self->note, "\n", line, NULL) : g_strdup (line);
  ts_chat_turn_set_note (self, note);
}

const char *
ts_chat_turn_get_error (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), NULL);
  return self->error;
}

void
ts_chat_turn_set_error (TsChatTurn *self, const char *error)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  set_optional_string (self, &self->error, error, PROP_ERROR);
}

const char *
ts_chat_turn_get_ending (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), NULL);
  return self->ending;
}

void
ts_chat_turn_set_ending (TsChatTurn *self, const char *ending)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  set_optional_string (self, &self->ending, ending, PROP_ENDING);
}

const TsHistoryReplyStats *
ts_chat_turn_get_stats (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), NULL);
  return self->stats;
}

void
ts_chat_turn_set_stats (TsChatTurn *self, const TsHistoryReplyStats *stats)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  g_clear_pointer (&self->stats, ts_history_reply_stats_free);
  if (stats != NULL)
    self->stats = ts_history_reply_stats_copy (stats);
  notify (self, PROP_STATS);
}

gboolean
ts_chat_turn_get_excluded (TsChatTurn *self)
{
  g_return_val_if_fail (TS_IS_CHAT_TURN (self), FALSE);
  return self->excluded;
}

void
ts_chat_turn_set_excluded (TsChatTurn *self, gboolean excluded)
{
  g_return_if_fail (TS_IS_CHAT_TURN (self));
  if (self->excluded == !!excluded)
    return;
  self->excluded = !!excluded;
  notify (self, PROP_EXCLUDED);
}

static void
ts_chat_turn_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  TsChatTurn *self = TS_CHAT_TURN (object);

  switch (prop_id)
    {
    case PROP_IS_USER:
      g_value_set_boolean (value, self->is_user);
      break;
    case PROP_TEXT:
      g_value_set_string (value, self->text->str);
      break;
    case PROP_THINKING:
      g_value_set_string (value, self->thinking->str);
      break;
    case PROP_THINKING_TOKENS:
      g_value_set_uint (value, self->thinking_tokens);
      break;
    case PROP_THINKING_ACTIVE:
      g_value_set_boolean (value, self->thinking_active);
      break;
    case PROP_NOTE:
      g_value_set_string (value, self->note);
      break;
    case PROP_ERROR:
      g_value_set_string (value, self->error);
      break;
    case PROP_ENDING:
      g_value_set_string (value, self->ending);
      break;
    case PROP_STATS:
      g_value_set_pointer (value, self->stats);
      break;
    case PROP_EXCLUDED:
      g_value_set_boolean (value, self->excluded);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_chat_turn_set_property (GObject *object, guint prop_id, const GValue *value,
                           GParamSpec *pspec)
{
  TsChatTurn *self = TS_CHAT_TURN (object);

  switch (prop_id)
    {
    case PROP_IS_USER:
      self->is_user = g_value_get_boolean (value);
      break;
    case PROP_TEXT:
      ts_chat_turn_set_text (self, g_value_get_string (value));
      break;
    case PROP_NOTE:
      ts_chat_turn_set_note (self, g_value_get_string (value));
      break;
    case PROP_ERROR:
      ts_chat_turn_set_error (self, g_value_get_string (value));
      break;
    case PROP_ENDING:
      ts_chat_turn_set_ending (self, g_value_get_string (value));
      break;
    case PROP_EXCLUDED:
      ts_chat_turn_set_excluded (self, g_value_get_boolean (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
ts_chat_turn_finalize (GObject *object)
{
  TsChatTurn *self = TS_CHAT_TURN (object);

  g_string_free (self->text, TRUE);
  g_string_free (self->thinking, TRUE);
  g_free (self->note);
  g_free (self->error);
  g_free (self->ending);
  ts_history_reply_stats_free (self->stats);
  G_OBJECT_CLASS (ts_chat_turn_parent_class)->finalize (object);
}

static void
ts_chat_turn_class_init (TsChatTurnClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;
  const GParamFlags ro = G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS;

  object_class->get_property = ts_chat_turn_get_property;
  object_class->set_property = ts_chat_turn_set_property;
  object_class->finalize = ts_chat_turn_finalize;
  properties[PROP_IS_USER] =
    g_param_spec_boolean ("is-user", NULL, NULL, FALSE,
                          G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS);
  properties[PROP_TEXT] = g_param_spec_string ("text", NULL, NULL, "", rw);
  properties[PROP_THINKING] = g_param_spec_string ("thinking", NULL, NULL, "", ro);
  properties[PROP_THINKING_TOKENS] =
    g_param_spec_uint ("thinking-tokens", NULL, NULL, 0, G_MAXUINT, 0, ro);
  properties[PROP_THINKING_ACTIVE] =
    g_param_spec_boolean ("thinking-active", NULL, NULL, FALSE, ro);
  properties[PROP_NOTE] = g_param_spec_string ("note", NULL, NULL, NULL, rw);
  properties[PROP_ERROR] = g_param_spec_string ("error", NULL, NULL, NULL, rw);
  properties[PROP_ENDING] = g_param_spec_string ("ending", NULL, NULL, NULL, rw);
  properties[PROP_STATS] = g_param_spec_pointer ("stats", NULL, NULL, ro);
  properties[PROP_EXCLUDED] = g_param_spec_boolean ("excluded", NULL, NULL, FALSE, rw);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
ts_chat_turn_init (TsChatTurn *self)
{
  self->text = g_string_new (NULL);
  self->thinking = g_string_new (NULL);
}

TsChatTurn *
ts_chat_turn_new (gboolean is_user, const char *text)
{
  return g_object_new (TS_TYPE_CHAT_TURN, "is-user", is_user, "text", text, NULL);
}
