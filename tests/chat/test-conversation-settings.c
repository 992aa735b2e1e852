/* test-conversation-settings.c: a conversation's settings: each range's
 * bounds, the JSON kept in history (members left out, wrong types), and the
 * system prompt presets.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <math.h>
#include <string.h>

#include "ts-conversation-settings.h"

/* @field set to @value, then validated: @ok says whether it should pass;
 * a refusal names @name. */
#define CHECK(field, value, ok, name)                                                   \
  G_STMT_START {                                                                        \
    g_autoptr (TsConversationSettings) s_ = ts_conversation_settings_new ();            \
    g_autoptr (GError) e_ = NULL;                                                       \
    s_->field = (value);                                                                \
    g_assert_cmpint (ts_conversation_settings_validate (s_, 2048, &e_), ==, (ok));     \
    if (!(ok))                                                                          \
      {                                                                                 \
        g_assert_error (e_, TS_CONVERSATION_SETTINGS_ERROR,                             \
                        TS_CONVERSATION_SETTINGS_ERROR_RANGE);                          \
        g_assert_nonnull (strstr (e_->message, (name)));                                \
      }                                                                                 \
  } G_STMT_END

static void
test_ranges (void)
{
  g_autoptr (TsConversationSettings) defaults = ts_conversation_settings_new ();

  g_assert_true (ts_conversation_settings_validate (defaults, 0, NULL));
  CHECK (temperature, 0.0, TRUE, "");
  CHECK (temperature, 2.0, TRUE, "");
  CHECK (temperature, 2.01, FALSE, "Temperature");
  CHECK (temperature, -0.1, FALSE, "Temperature");
  CHECK (temperature, NAN, FALSE, "Temperature");
  CHECK (top_k, 0, TRUE, "");
  CHECK (top_k, 1000, TRUE, "");
  CHECK (top_k, 1001, FALSE, "Top-k");
  CHECK (top_k, -1, FALSE, "Top-k");
  CHECK (top_p, 0.05, TRUE, "");
  CHECK (top_p, 0.04, FALSE, "Top-p");
  CHECK (top_p, 1.5, FALSE, "Top-p");
  CHECK (min_p, 0.0, TRUE, "");
  CHECK (min_p, 1.0, TRUE, "");
  CHECK (min_p, -0.01, FALSE, "Min-p");
  CHECK (repeat_penalty, 1.0, TRUE, "");
  CHECK (repeat_penalty, 2.0, TRUE, "");
  CHECK (repeat_penalty, 0.9, FALSE, "Repetition penalty");
  CHECK (seed, -1, TRUE, "");
  CHECK (seed, G_MAXINT32, TRUE, "");
  CHECK (seed, -2, FALSE, "Seed");
  CHECK (seed, (gint64) G_MAXINT32 + 1, FALSE, "Seed");
  /* The context: 0 (the model's), else 64 up to the model's 2048. */
  CHECK (context_length, 0, TRUE, "");
  CHECK (context_length, 64, TRUE, "");
  CHECK (context_length, 2048, TRUE, "");
  CHECK (context_length, 63, FALSE, "Context length");
  CHECK (context_length, 2049, FALSE, "2048");
}

static void
test_json (void)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (TsConversationSettings) s = NULL;

  /* Members left out keep the built-in defaults; null seed is random. */
  s = ts_conversation_settings_from_json ("{\"temperature\": 0.25, \"seed\": null}", &error);
  g_assert_no_error (error);
  g_assert_cmpfloat (s->temperature, ==, 0.25);
  g_assert_cmpint (s->seed, ==, -1);
  g_assert_cmpint (s->top_k, ==, 40);
  g_assert_cmpfloat (s->min_p, ==, 0.05);
  g_assert_cmpstr (s->system_prompt, ==, "");
  g_clear_pointer (&s, ts_conversation_settings_free);
  /* The text written holds what was read, under the same names. */
  s = ts_conversation_settings_from_json ("{\"system_prompt\": \"Be brief.\", \"top_k\": 7,"
                                          " \"context_length\": 128, \"seed\": 99}", &error);
  g_assert_no_error (error);
  {
    g_autofree char *json = ts_conversation_settings_to_json (s);

    for (guint i = 0; i < 4; i++)
      {
        static const char *const members[] = { "\"system_prompt\":\"Be brief.\"", "\"top_k\":7,",
                                               "\"seed\":99,", "\"context_length\":128}" };

        g_assert_nonnull (strstr (json, members[i]));
      }
    g_assert_nonnull (strstr (json, "\"repeat_penalty\":1"));
  }
  g_clear_pointer (&s, ts_conversation_settings_free);
  /* Wrong types and values out of range are errors that say which. */
  g_assert_null (ts_conversation_settings_from_json ("{\"top_p\": \"high\"}", &error));
  g_assert_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_PARSE);
  g_assert_nonnull (strstr (error->message, "top_p"));
  g_clear_error (&error);
  g_assert_null (ts_conversation_settings_from_json ("{\"top_k\": 2.5}", &error));
  g_assert_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_PARSE);
  g_clear_error (&error);
  g_assert_null (ts_conversation_settings_from_json ("{\"temperature\": 9}", &error));
  g_assert_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_RANGE);
  g_clear_error (&error);
  g_assert_null (ts_conversation_settings_from_json ("[1]", &error));
  g_assert_error (error, TS_CONVERSATION_SETTINGS_ERROR, TS_CONVERSATION_SETTINGS_ERROR_PARSE);
  g_clear_error (&error);
  g_assert_null (ts_conversation_settings_from_json ("{", &error));
  g_assert_nonnull (error);
}

static void
test_presets (void)
{
  static const char *const ids[] = { "helpful", "concise", "code-review", "translator" };
  guint n = 0;
  const TsSystemPromptPreset *presets = ts_system_prompt_presets (&n);

  g_assert_cmpuint (n, ==, G_N_ELEMENTS (ids));
  for (guint i = 0; i < n; i++)
    {
      g_assert_cmpstr (presets[i].id, ==, ids[i]);
      g_assert_cmpuint (strlen (presets[i].label), >, 0);
      g_assert_cmpuint (strlen (presets[i].text), >, 20);
      g_assert_cmpint (ts_system_prompt_preset_find (presets[i].text), ==, (int) i);
      for (guint j = 0; j < i; j++)
        g_assert_cmpstr (presets[i].text, !=, presets[j].text);
    }
  /* Anything else is "Custom", even a preset's text edited by one letter. */
  g_assert_cmpint (ts_system_prompt_preset_find (""), ==, -1);
  g_assert_cmpint (ts_system_prompt_preset_find (NULL), ==, -1);
  {
    g_autofree char *edited = g_strconcat (presets[0].text, "!", NULL);

    g_assert_cmpint (ts_system_prompt_preset_find (edited), ==, -1);
  }
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/conversation-settings/ranges", test_ranges);
  g_test_add_func ("/conversation-settings/json", test_json);
  g_test_add_func ("/conversation-settings/presets", test_presets);
  return g_test_run ();
}
