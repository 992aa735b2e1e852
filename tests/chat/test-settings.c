/* test-settings.c: TsSettings against the installed schema: each kind of key
 * both ways, the schema's defaults without it, the CKKS presets against the
 * HE engine's own.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <string.h>

#include "ckks-params.h"
#include "ts-config.h"
#include "ts-settings.h"

/* A GSettings of the schema (the memory backend of the test environment),
 * every key at its default. */
static GSettings *
fresh_gsettings (void)
{
  GSettings *gsettings = g_settings_new (TS_APP_ID);
  g_autoptr (GSettingsSchema) schema = NULL;
  g_auto (GStrv) keys = NULL;

  g_object_get (gsettings, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    g_settings_reset (gsettings, keys[i]);
  return gsettings;
}

static void
count_notify (GObject *object, GParamSpec *pspec, gpointer data)
{
  (*(guint *) data)++;
}

static void
test_keys_to_properties (void)
{
  g_autoptr (GSettings) gsettings = fresh_gsettings ();
  g_autoptr (TsSettings) settings = ts_settings_new (gsettings);
  guint notified = 0;

  g_signal_connect (settings, "notify::evaluator-url", G_CALLBACK (count_notify), &notified);
  g_settings_set_string (gsettings, "evaluator-url", "ws://10.0.0.7:9000/v1/helora");
  g_assert_cmpstr (ts_settings_get_evaluator_url (settings), ==, "ws://10.0.0.7:9000/v1/helora");
  g_assert_cmpuint (notified, ==, 1);
  g_settings_set_string (gsettings, "evaluator-mode", "remote");
  g_assert_cmpint (ts_settings_get_evaluator_mode (settings), ==, TS_EVALUATOR_MODE_REMOTE);
  g_settings_set_string (gsettings, "ckks-preset", "n32768");
  g_assert_cmpint (ts_settings_get_ckks_preset (settings), ==, TS_CKKS_CHOICE_N32768);
  g_assert_cmpstr (ts_settings_get_ckks_preset_name (settings), ==, "wide");
  g_settings_set_string (gsettings, "color-scheme", "dark");
  g_assert_cmpint (ts_settings_get_color_scheme (settings), ==, TS_COLOR_SCHEME_DARK);
  g_settings_set_int (gsettings, "threads", 6);
  g_assert_cmpuint (ts_settings_get_threads (settings), ==, 6);
  g_settings_set_boolean (gsettings, "use-gpu", FALSE);
  g_assert_false (ts_settings_get_use_gpu (settings));
  g_assert_false (ts_settings_get_chat_thinking (settings));
  g_settings_set_boolean (gsettings, "chat-thinking", TRUE);
  g_assert_true (ts_settings_get_chat_thinking (settings));
  g_settings_set_double (gsettings, "privacy-rho", 0.0025);
  g_assert_cmpfloat (ts_settings_get_privacy_rho (settings), ==, 0.0025);
  /* The same value again changes nothing. */
  g_settings_set_string (gsettings, "evaluator-url", "ws://10.0.0.7:9000/v1/helora");
  g_assert_cmpuint (notified, ==, 1);
}

static void
test_properties_to_keys (void)
{
  g_autoptr (GSettings) gsettings = fresh_gsettings ();
  g_autoptr (TsSettings) settings = ts_settings_new (gsettings);
  g_autofree char *mode = NULL, *preset = NULL, *model = NULL, *override = NULL;

  g_object_set (settings, "evaluator-mode", TS_EVALUATOR_MODE_PLAIN,
                "ckks-preset", TS_CKKS_CHOICE_N8192, "window-width", 1000,
                "window-maximized", TRUE, "chat-adapter-override", "pirate", NULL);
  ts_settings_set_bench_model (settings, "/models/a.gguf");
  mode = g_settings_get_string (gsettings, "evaluator-mode");
  preset = g_settings_get_string (gsettings, "ckks-preset");
  model = g_settings_get_string (gsettings, "bench-model");
  override = g_settings_get_string (gsettings, "chat-adapter-override");
  g_assert_cmpstr (mode, ==, "plain");
  g_assert_cmpstr (preset, ==, "n8192");
  g_assert_cmpstr (model, ==, "/models/a.gguf");
  g_assert_cmpstr (override, ==, "pirate");
  g_assert_cmpint (g_settings_get_int (gsettings, "window-width"), ==, 1000);
  g_assert_true (g_settings_get_boolean (gsettings, "window-maximized"));
  ts_settings_set_bench_model (settings, NULL);
  g_clear_pointer (&model, g_free);
  model = g_settings_get_string (gsettings, "bench-model");
  g_assert_cmpstr (model, ==, "");
}

/* Without a GSettings, each property holds the schema's default for its key,
 * and every key has its property. */
static void
test_defaults_are_the_schemas (void)
{
  g_autoptr (GSettings) gsettings = fresh_gsettings ();
  g_autoptr (TsSettings) bound = ts_settings_new (gsettings);
  g_autoptr (TsSettings) alone = ts_settings_new (NULL);
  g_autoptr (GSettingsSchema) schema = NULL;
  g_auto (GStrv) keys = NULL;

  g_assert_false (ts_settings_is_kept (alone));
  g_assert_true (ts_settings_is_kept (bound));
  g_object_get (gsettings, "settings-schema", &schema, NULL);
  keys = g_settings_schema_list_keys (schema);
  for (guint i = 0; keys[i] != NULL; i++)
    {
      GParamSpec *pspec = g_object_class_find_property (G_OBJECT_GET_CLASS (alone), keys[i]);
      GValue from_schema = G_VALUE_INIT, from_alone = G_VALUE_INIT;

      g_assert_nonnull (pspec);
      /* The bound object holds what the schema's default maps to. */
      g_value_init (&from_schema, pspec->value_type);
      g_value_init (&from_alone, pspec->value_type);
      g_object_get_property (G_OBJECT (bound), keys[i], &from_schema);
      g_object_get_property (G_OBJECT (alone), keys[i], &from_alone);
      if (g_param_values_cmp (pspec, &from_schema, &from_alone) != 0)
        g_error ("%s: the property's default is not the schema's", keys[i]);
      g_value_unset (&from_schema);
      g_value_unset (&from_alone);
    }
}

/* Each preset is one the HE engine knows by that name, of the ring degree
 * its choice and its label name; together they are all of the engine's. */
static void
test_presets_are_the_engines (void)
{
  static const guint log_n[] = { [TS_CKKS_CHOICE_N8192] = 13, [TS_CKKS_CHOICE_N16384] = 14,
                                 [TS_CKKS_CHOICE_N32768] = 15 };
  const char *const *names = ckks_params_preset_names ();
  guint n;
  const TsCkksPreset *presets = ts_ckks_presets (&n);

  g_assert_cmpuint (n, ==, g_strv_length ((char **) names));
  for (guint i = 0; i < n; i++)
    {
      CkksParams params;
      g_autofree char *in_label = g_strdup_printf ("(N = %u)", 1u << log_n[presets[i].choice]);

      g_assert_cmpstr (presets[i].name, ==, names[i]);
      g_assert_cmpint (ckks_params_preset (presets[i].name, &params), ==, CKKS_OK);
      g_assert_cmpuint (params.log_n, ==, log_n[presets[i].choice]);
      g_assert_nonnull (strstr (presets[i].label, in_label));
      g_assert_true (ts_ckks_preset_lookup (presets[i].name) == &presets[i]);
    }
  g_assert_null (ts_ckks_preset_lookup ("n8192"));
  g_assert_cmpstr (presets[TS_CKKS_DEFAULT_INDEX].name, ==, "default");
}

/* The chat-* keys are the defaults of new conversations, both ways; the
 * schema's defaults are the built-in ones. */
static void
test_conversation_defaults (void)
{
  g_autoptr (GSettings) gsettings = fresh_gsettings ();
  g_autoptr (TsSettings) settings = ts_settings_new (gsettings);
  g_autoptr (TsConversationSettings) builtin = ts_conversation_settings_new ();
  g_autoptr (TsConversationSettings) defaults = ts_settings_get_conversation_defaults (settings);
  g_autofree char *system_prompt = NULL;

  g_assert_true (ts_conversation_settings_equal (defaults, builtin));
  g_settings_set_string (gsettings, "chat-system-prompt", "Be brief.");
  g_settings_set_double (gsettings, "chat-temperature", 0.7);
  g_settings_set_int (gsettings, "chat-top-k", 5);
  g_settings_set_int (gsettings, "chat-seed", -1);
  g_settings_set_int (gsettings, "chat-context-length", 1024);
  g_clear_pointer (&defaults, ts_conversation_settings_free);
  defaults = ts_settings_get_conversation_defaults (settings);
  g_assert_cmpstr (defaults->system_prompt, ==, "Be brief.");
  g_assert_cmpfloat (defaults->temperature, ==, 0.7);
  g_assert_cmpint (defaults->top_k, ==, 5);
  g_assert_cmpint (defaults->seed, ==, -1);
  g_assert_cmpuint (defaults->context_length, ==, 1024);
  builtin->min_p = 0.2;
  builtin->repeat_penalty = 1.3;
  builtin->top_p = 0.5;
  ts_settings_set_conversation_defaults (settings, builtin);
  g_assert_cmpfloat (g_settings_get_double (gsettings, "chat-min-p"), ==, 0.2);
  g_assert_cmpfloat (g_settings_get_double (gsettings, "chat-repeat-penalty"), ==, 1.3);
  g_assert_cmpfloat (g_settings_get_double (gsettings, "chat-top-p"), ==, 0.5);
  system_prompt = g_settings_get_string (gsettings, "chat-system-prompt");
  g_assert_cmpstr (system_prompt, ==, "");
  g_assert_cmpint (g_settings_get_int (gsettings, "chat-seed"), ==, 0);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/settings/keys-to-properties", test_keys_to_properties);
  g_test_add_func ("/settings/properties-to-keys", test_properties_to_keys);
  g_test_add_func ("/settings/defaults-are-the-schemas", test_defaults_are_the_schemas);
  g_test_add_func ("/settings/presets-are-the-engines", test_presets_are_the_engines);
  g_test_add_func ("/settings/conversation-defaults", test_conversation_defaults);
  return g_test_run ();
}
