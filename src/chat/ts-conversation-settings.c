/* ts-conversation-settings.c: one conversation's system prompt and sampling settings.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <glib/gi18n.h>
#include <math.h>

#include "ts-conversation-settings.h"
#include "ts-generation.h"
#include "ts-json-builder.h"

G_DEFINE_QUARK (ts-conversation-settings-error-quark, ts_conversation_settings_error)

static const TsSystemPromptPreset presets[] = {
  { "helpful", N_("Helpful assistant"),
    N_("You are a helpful assistant. Answer clearly and correctly, and say so when you do not know.") },
  { "concise", N_("Concise"),
    N_("Answer in as few words as possible: no introduction, no summary, no repetition of the question.") },
  { "code-review", N_("Code reviewer"),
    N_("You are a careful code reviewer. Point out bugs, unclear names and missing error handling, "
       "most serious first, and suggest the corrected code.") },
  { "translator", N_("Translator"),
    N_("Translate the user's text into English, or into French when it is already English. "
       "Reply with the translation only.") },
};

const TsSystemPromptPreset *
ts_system_prompt_presets (guint *n_out)
{
  g_return_val_if_fail (n_out != NULL, NULL);

  *n_out = G_N_ELEMENTS (presets);
  return presets;
}

int
ts_system_prompt_preset_find (const char *text)
{
  for (guint i = 0; text != NULL && i < G_N_ELEMENTS (presets); i++)
    if (g_str_equal (gettext (presets[i].text), text))
      return (int) i;
  return -1;
}

TsConversationSettings *
ts_conversation_settings_new (void)
{
  TsConversationSettings *s = g_new0 (TsConversationSettings, 1);

  s->system_prompt = g_strdup ("");
  s->temperature = 0;
  s->top_k = TS_SAMPLING_DEFAULT_TOP_K;
  s->top_p = TS_SAMPLING_DEFAULT_TOP_P;
  s->min_p = TS_SAMPLING_DEFAULT_MIN_P;
  s->repeat_penalty = TS_SAMPLING_DEFAULT_REPEAT_PENALTY;
  s->seed = 0;
  s->context_length = 0;
  return s;
}

TsConversationSettings *
ts_conversation_settings_copy (const TsConversationSettings *settings)
{
  TsConversationSettings *copy;

  g_return_val_if_fail (settings != NULL, NULL);
  copy = g_memdup2 (settings, sizeof *settings);
  copy->system_prompt = g_strdup (settings->system_prompt != NULL ? settings->system_prompt : "");
  return copy;
}

void
ts_conversation_settings_free (TsConversationSettings *settings)
{
  if (settings == NULL)
    return;
  g_free (settings->system_prompt);
  g_free (settings);
}

gboolean
ts_conversation_settings_equal (const TsConversationSettings *a, const TsConversationSettings *b)
{
  g_return_val_if_fail (a != NULL && b != NULL, FALSE);
  return g_strcmp0 (a->system_prompt, b->system_prompt) == 0 && a->temperature == b->temperature
         && a->top_k == b->top_k && a->top_p == b->top_p && a->min_p == b->min_p
         && a->repeat_penalty == b->repeat_penalty && a->seed == b->seed
         && a->context_length == b->context_length;
}

static gboolean
check_range (const char *name, double value, double min, double max, GError **error)
{
  if (!isnan (value) && value >= min && value <= max)
    return TRUE;
  g_set_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_RANGE,
               _("%s must be between %g and %g, not %g"), name, min, max, value);
  return FALSE;
}

static gboolean
check_context (guint length, guint model_context, GError **error)
{
  guint max = model_context > 0 ? model_context : G_MAXINT32;

  if (length == 0 || (length >= TS_CONTEXT_MIN && length <= max))
    return TRUE;
  g_set_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_RANGE,
               _("Context length must be 0 (the model's own) or between %d and %u tokens, not %u"),
               TS_CONTEXT_MIN, max, length);
  return FALSE;
}

gboolean
ts_conversation_settings_validate (const TsConversationSettings *s, guint model_context,
                                   GError **error)
{
  g_return_val_if_fail (s != NULL, FALSE);

  if (s->seed != -1 && !check_range (_("Seed"), (double) s->seed, 0, TS_SEED_MAX, error))
    return FALSE;
  return check_range (_("Temperature"), s->temperature, 0, TS_TEMPERATURE_MAX, error)
         && check_range (_("Top-k"), s->top_k, 0, TS_TOP_K_MAX, error)
         && check_range (_("Top-p"), s->top_p, TS_TOP_P_MIN, 1, error)
         && check_range (_("Min-p"), s->min_p, 0, 1, error)
         && check_range (_("Repetition penalty"), s->repeat_penalty, 1, TS_REPEAT_PENALTY_MAX, error)
         && check_context (s->context_length, model_context, error);
}

void
ts_conversation_settings_add_members (JsonBuilder *b, const TsConversationSettings *s)
{
  g_return_if_fail (JSON_IS_BUILDER (b) && s != NULL);
  ts_json_builder_add_string (b, "system_prompt", s->system_prompt);
  ts_json_builder_add_double (b, "temperature", s->temperature);
  ts_json_builder_add_int (b, "top_k", s->top_k);
  ts_json_builder_add_double (b, "top_p", s->top_p);
  ts_json_builder_add_double (b, "min_p", s->min_p);
  ts_json_builder_add_double (b, "repeat_penalty", s->repeat_penalty);
  if (s->seed < 0)
    {
      json_builder_set_member_name (b, "seed");
      json_builder_add_null_value (b);
    }
  else
    ts_json_builder_add_int (b, "seed", s->seed);
  ts_json_builder_add_int (b, "context_length", s->context_length);
}

char *
ts_conversation_settings_to_json (const TsConversationSettings *settings)
{
  g_return_val_if_fail (settings != NULL, NULL);

  g_autoptr (JsonBuilder) b = json_builder_new ();
  g_autoptr (JsonNode) root = NULL;

  json_builder_begin_object (b);
  ts_conversation_settings_add_members (b, settings);
  json_builder_end_object (b);
  root = json_builder_get_root (b);
  return json_to_string (root, FALSE);
}

/* A number member, or @fallback when it is absent; FALSE when it is there
 * but not a number. */
static gboolean
read_number (JsonObject *o, const char *name, double fallback, double *out, GError **error)
{
  JsonNode *node = json_object_get_member (o, name);

  *out = fallback;
  if (node == NULL)
    return TRUE;
  if (JSON_NODE_HOLDS_VALUE (node) && json_node_get_value_type (node) != G_TYPE_STRING
      && json_node_get_value_type (node) != G_TYPE_BOOLEAN)
    {
      *out = json_node_get_double (node);
      return TRUE;
    }
  g_set_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_PARSE,
               "Conversation settings: \"%s\" is not a number", name);
  return FALSE;
}

static gboolean
read_members (JsonObject *o, TsConversationSettings *s, GError **error)
{
  double top_k, seed, context;
  JsonNode *seed_node = json_object_get_member (o, "seed");

  if (json_object_has_member (o, "system_prompt"))
    {
      const char *text = json_object_get_string_member_with_default (o, "system_prompt", NULL);

      if (text == NULL)
        return g_set_error (error, TS_CONVERSATION_SETTINGS_ERROR,
                            TS_CONVERSATION_SETTINGS_ERROR_PARSE,
                            "Conversation settings: \"system_prompt\" is not a string"), FALSE;
      g_free (s->system_prompt);
      s->system_prompt = g_strdup (text);
    }
  if (!read_number (o, "temperature", s->temperature, &s->temperature, error)
      || !read_number (o, "top_k", s->top_k, &top_k, error)
      || !read_number (o, "top_p", s->top_p, &s->top_p, error)
      || !read_number (o, "min_p", s->min_p, &s->min_p, error)
      || !read_number (o, "repeat_penalty", s->repeat_penalty, &s->repeat_penalty, error)
      || !read_number (o, "context_length", s->context_length, &context, error))
    return FALSE;
  if (seed_node != NULL && JSON_NODE_HOLDS_NULL (seed_node))
    seed = -1;
  else if (!read_number (o, "seed", (double) s->seed, &seed, error))
    return FALSE;
  if (top_k != floor (top_k) || seed != floor (seed) || context != floor (context) || context < 0
      || context > G_MAXUINT32 || fabs (top_k) > G_MAXINT32 || fabs (seed) > G_MAXINT64 / 2)
    return g_set_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_PARSE,
                        "Conversation settings: top_k, seed and context_length must be whole "
                        "numbers"), FALSE;
  s->top_k = (int) top_k;
  s->seed = (gint64) seed;
  s->context_length = (guint) context;
  return TRUE;
}

TsConversationSettings *
ts_conversation_settings_from_json (const char *json, GError **error)
{
  g_autoptr (JsonParser) parser = json_parser_new ();
  g_autoptr (TsConversationSettings) s = ts_conversation_settings_new ();
  JsonNode *root;

  g_return_val_if_fail (json != NULL, NULL);
  if (!json_parser_load_from_data (parser, json, -1, error))
    return NULL;
  root = json_parser_get_root (parser);
  if (root == NULL || !JSON_NODE_HOLDS_OBJECT (root))
    {
      g_set_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_PARSE,
                   "Conversation settings: not a JSON object");
      return NULL;
    }
  if (!read_members (json_node_get_object (root), s, error)
      || !ts_conversation_settings_validate (s, 0, error))
    return NULL;
  return g_steal_pointer (&s);
}
