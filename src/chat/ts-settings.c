/* ts-settings.c: the application's settings as typed properties, over GSettings.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-settings.h"

#include <glib/gi18n.h>

#include "ts-config.h"

/* ---- the enums, with the schema's nicks ---- */

#define DEFINE_ENUM(func, Name, ...)                                                   \
  GType                                                                                \
  func (void)                                                                          \
  {                                                                                    \
    static gsize type;                                                                 \
    static const GEnumValue values[] = { __VA_ARGS__, { 0, NULL, NULL } };             \
                                                                                       \
    if (g_once_init_enter (&type))                                                     \
      g_once_init_leave (&type, g_enum_register_static (Name, values));                \
    return type;                                                                       \
  }

DEFINE_ENUM (ts_evaluator_mode_get_type, "TsEvaluatorMode",
             { TS_EVALUATOR_MODE_PLAIN, "TS_EVALUATOR_MODE_PLAIN", "plain" },
             { TS_EVALUATOR_MODE_LOCAL, "TS_EVALUATOR_MODE_LOCAL", "local" },
             { TS_EVALUATOR_MODE_REMOTE, "TS_EVALUATOR_MODE_REMOTE", "remote" })
DEFINE_ENUM (ts_ckks_choice_get_type, "TsCkksChoice",
             { TS_CKKS_CHOICE_AUTO, "TS_CKKS_CHOICE_AUTO", "auto" },
             { TS_CKKS_CHOICE_N8192, "TS_CKKS_CHOICE_N8192", "n8192" },
             { TS_CKKS_CHOICE_N16384, "TS_CKKS_CHOICE_N16384", "n16384" },
             { TS_CKKS_CHOICE_N32768, "TS_CKKS_CHOICE_N32768", "n32768" })
DEFINE_ENUM (ts_color_scheme_get_type, "TsColorScheme",
             { TS_COLOR_SCHEME_DEFAULT, "TS_COLOR_SCHEME_DEFAULT", "default" },
             { TS_COLOR_SCHEME_LIGHT, "TS_COLOR_SCHEME_LIGHT", "light" },
             { TS_COLOR_SCHEME_DARK, "TS_COLOR_SCHEME_DARK", "dark" })

/* ---- the CKKS presets ---- */

static const TsCkksPreset presets[] = {
  { TS_CKKS_CHOICE_N8192, "fast", N_("Fast (N = 8192)") },
  { TS_CKKS_CHOICE_N16384, "default", N_("Default (N = 16384)") },
  { TS_CKKS_CHOICE_N32768, "wide", N_("Wide (N = 32768)") },
};

const TsCkksPreset *
ts_ckks_presets (guint *n_out)
{
  g_return_val_if_fail (n_out != NULL, NULL);

  *n_out = G_N_ELEMENTS (presets);
  return presets;
}

const TsCkksPreset *
ts_ckks_preset_lookup (const char *name)
{
  for (guint i = 0; name != NULL && i < G_N_ELEMENTS (presets); i++)
    if (g_str_equal (presets[i].name, name))
      return &presets[i];
  return NULL;
}

/* ---- the object ---- */

struct _TsSettings
{
  GObject parent_instance;

  GSettings *gsettings;          /* NULL: nothing is kept */
  GValue *values;                /* one per property, by its id */
};

G_DEFINE_FINAL_TYPE (TsSettings, ts_settings, G_TYPE_OBJECT)

enum {
  PROP_0,
  PROP_WINDOW_WIDTH,
  PROP_WINDOW_HEIGHT,
  PROP_WINDOW_MAXIMIZED,
  PROP_EVALUATOR_MODE,
  PROP_EVALUATOR_URL,
  PROP_EVALUATOR_PRIVATE,
  PROP_PRIVACY_RHO,
  PROP_CHAT_ADAPTER_OVERRIDE,
  PROP_CHAT_THINKING,
  PROP_MARKETPLACE_URL,
  PROP_THREADS,
  PROP_CKKS_PRESET,
  PROP_USE_GPU,
  PROP_COLOR_SCHEME,
  PROP_CHAT_MODEL,
  PROP_CHAT_ADAPTER,
  PROP_CHAT_SYSTEM_PROMPT,
  PROP_CHAT_TEMPERATURE,
  PROP_CHAT_TOP_K,
  PROP_CHAT_TOP_P,
  PROP_CHAT_MIN_P,
  PROP_CHAT_REPEAT_PENALTY,
  PROP_CHAT_SEED,
  PROP_CHAT_CONTEXT_LENGTH,
  PROP_BENCH_MODEL,
  PROP_BENCH_ADAPTER,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];
static GValue defaults[N_PROPS];   /* what a misused getter returns */

static void
ts_settings_get_property (GObject *object, guint prop_id, GValue *value, GParamSpec *pspec)
{
  g_value_copy (&TS_SETTINGS (object)->values[prop_id], value);
}

/* Every property is a key: a write that changes nothing notifies nothing,
 * so a binding's round trip through GSettings stops there. */
static void
ts_settings_set_property (GObject *object, guint prop_id, const GValue *value,
                          GParamSpec *pspec)
{
  TsSettings *self = TS_SETTINGS (object);

  if (g_param_values_cmp (pspec, &self->values[prop_id], value) == 0)
    return;
  g_value_copy (value, &self->values[prop_id]);
  g_object_notify_by_pspec (object, pspec);
}

static void
ts_settings_finalize (GObject *object)
{
  TsSettings *self = TS_SETTINGS (object);

  for (guint i = 1; i < N_PROPS; i++)
    g_value_unset (&self->values[i]);
  g_free (self->values);
  g_clear_object (&self->gsettings);
  G_OBJECT_CLASS (ts_settings_parent_class)->finalize (object);
}

#define FLAGS (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS)

/* The schema's defaults: the values when it is not installed. */
static void
ts_settings_class_init (TsSettingsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->get_property = ts_settings_get_property;
  object_class->set_property = ts_settings_set_property;
  object_class->finalize = ts_settings_finalize;

  properties[PROP_WINDOW_WIDTH] = g_param_spec_int ("window-width", NULL, NULL, G_MININT,
                                                    G_MAXINT, 1100, FLAGS);
  properties[PROP_WINDOW_HEIGHT] = g_param_spec_int ("window-height", NULL, NULL, G_MININT,
                                                     G_MAXINT, 720, FLAGS);
  properties[PROP_WINDOW_MAXIMIZED] = g_param_spec_boolean ("window-maximized", NULL, NULL,
                                                            FALSE, FLAGS);
  properties[PROP_EVALUATOR_MODE] = g_param_spec_enum ("evaluator-mode", NULL, NULL,
                                                       TS_TYPE_EVALUATOR_MODE,
                                                       TS_EVALUATOR_MODE_LOCAL, FLAGS);
  properties[PROP_EVALUATOR_URL] = g_param_spec_string ("evaluator-url", NULL, NULL,
                                                        "ws://127.0.0.1:8765/v1/helora", FLAGS);
  properties[PROP_EVALUATOR_PRIVATE] = g_param_spec_boolean ("evaluator-private", NULL, NULL,
                                                             FALSE, FLAGS);
  properties[PROP_PRIVACY_RHO] = g_param_spec_double ("privacy-rho", NULL, NULL, 0, 1, 0,
                                                      FLAGS);
  properties[PROP_CHAT_ADAPTER_OVERRIDE] = g_param_spec_string ("chat-adapter-override", NULL,
                                                                NULL, "", FLAGS);
  properties[PROP_CHAT_THINKING] = g_param_spec_boolean ("chat-thinking", NULL, NULL, FALSE,
                                                         FLAGS);
  properties[PROP_MARKETPLACE_URL] = g_param_spec_string ("marketplace-url", NULL, NULL,
                                                          "http://127.0.0.1:8766", FLAGS);
  properties[PROP_THREADS] = g_param_spec_int ("threads", NULL, NULL, 0, 1024, 0, FLAGS);
  properties[PROP_CKKS_PRESET] = g_param_spec_enum ("ckks-preset", NULL, NULL,
                                                    TS_TYPE_CKKS_CHOICE, TS_CKKS_CHOICE_AUTO,
                                                    FLAGS);
  properties[PROP_USE_GPU] = g_param_spec_boolean ("use-gpu", NULL, NULL, TRUE, FLAGS);
  properties[PROP_COLOR_SCHEME] = g_param_spec_enum ("color-scheme", NULL, NULL,
                                                     TS_TYPE_COLOR_SCHEME,
                                                     TS_COLOR_SCHEME_DEFAULT, FLAGS);
  properties[PROP_CHAT_MODEL] = g_param_spec_string ("chat-model", NULL, NULL, "", FLAGS);
  properties[PROP_CHAT_ADAPTER] = g_param_spec_string ("chat-adapter", NULL, NULL, "", FLAGS);
  properties[PROP_CHAT_SYSTEM_PROMPT] = g_param_spec_string ("chat-system-prompt", NULL, NULL, "",
                                                             FLAGS);
  properties[PROP_CHAT_TEMPERATURE] = g_param_spec_double ("chat-temperature", NULL, NULL, 0,
                                                           TS_TEMPERATURE_MAX, 0, FLAGS);
  properties[PROP_CHAT_TOP_K] = g_param_spec_int ("chat-top-k", NULL, NULL, 0, TS_TOP_K_MAX, 40,
                                                  FLAGS);
  properties[PROP_CHAT_TOP_P] = g_param_spec_double ("chat-top-p", NULL, NULL, TS_TOP_P_MIN, 1, 1,
                                                     FLAGS);
  properties[PROP_CHAT_MIN_P] = g_param_spec_double ("chat-min-p", NULL, NULL, 0, 1, 0.05, FLAGS);
  properties[PROP_CHAT_REPEAT_PENALTY] = g_param_spec_double ("chat-repeat-penalty", NULL, NULL,
                                                              1, TS_REPEAT_PENALTY_MAX, 1, FLAGS);
  properties[PROP_CHAT_SEED] = g_param_spec_int ("chat-seed", NULL, NULL, -1, TS_SEED_MAX, 0,
                                                 FLAGS);
  properties[PROP_CHAT_CONTEXT_LENGTH] = g_param_spec_int ("chat-context-length", NULL, NULL, 0,
                                                           1048576, 0, FLAGS);
  properties[PROP_BENCH_MODEL] = g_param_spec_string ("bench-model", NULL, NULL, "", FLAGS);
  properties[PROP_BENCH_ADAPTER] = g_param_spec_string ("bench-adapter", NULL, NULL, "",
                                                        FLAGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
  for (guint i = 1; i < N_PROPS; i++)
    {
      g_value_init (&defaults[i], G_PARAM_SPEC_VALUE_TYPE (properties[i]));
      g_param_value_set_default (properties[i], &defaults[i]);
    }
}

static void
ts_settings_init (TsSettings *self)
{
  self->values = g_new0 (GValue, N_PROPS);
  for (guint i = 1; i < N_PROPS; i++)
    {
      g_value_init (&self->values[i], G_PARAM_SPEC_VALUE_TYPE (properties[i]));
      g_value_copy (&defaults[i], &self->values[i]);
    }
}

TsSettings *
ts_settings_new (GSettings *gsettings)
{
  TsSettings *self = g_object_new (TS_TYPE_SETTINGS, NULL);

  g_return_val_if_fail (gsettings == NULL || G_IS_SETTINGS (gsettings), self);
  if (gsettings == NULL)
    return self;
  self->gsettings = g_object_ref (gsettings);
  for (guint i = 1; i < N_PROPS; i++)
    g_settings_bind (gsettings, properties[i]->name, self, properties[i]->name,
                     G_SETTINGS_BIND_DEFAULT);
  return self;
}

TsSettings *
ts_settings_new_default (void)
{
  GSettingsSchemaSource *source = g_settings_schema_source_get_default ();
  g_autoptr (GSettingsSchema) schema = NULL;
  g_autoptr (GSettings) gsettings = NULL;

  if (source != NULL)
    schema = g_settings_schema_source_lookup (source, TS_APP_ID, TRUE);
  if (schema == NULL)
    g_message ("Settings schema %s is not installed; settings will not be kept", TS_APP_ID);
  else
    gsettings = g_settings_new_full (schema, NULL, NULL);
  return ts_settings_new (gsettings);
}

GSettings *
ts_settings_get_gsettings (TsSettings *self)
{
  g_return_val_if_fail (TS_IS_SETTINGS (self), NULL);
  return self->gsettings;
}

gboolean
ts_settings_is_kept (TsSettings *self)
{
  g_return_val_if_fail (TS_IS_SETTINGS (self), FALSE);
  return self->gsettings != NULL;
}

/* ---- typed reads ---- */

static const GValue *
value_of (TsSettings *self, guint prop)
{
  g_return_val_if_fail (TS_IS_SETTINGS (self), &defaults[prop]);
  return &self->values[prop];
}

TsEvaluatorMode
ts_settings_get_evaluator_mode (TsSettings *self)
{
  return g_value_get_enum (value_of (self, PROP_EVALUATOR_MODE));
}

const char *
ts_settings_get_evaluator_url (TsSettings *self)
{
  return g_value_get_string (value_of (self, PROP_EVALUATOR_URL));
}

gboolean
ts_settings_get_evaluator_private (TsSettings *self)
{
  return g_value_get_boolean (value_of (self, PROP_EVALUATOR_PRIVATE));
}

double
ts_settings_get_privacy_rho (TsSettings *self)
{
  return g_value_get_double (value_of (self, PROP_PRIVACY_RHO));
}

const char *
ts_settings_get_marketplace_url (TsSettings *self)
{
  return g_value_get_string (value_of (self, PROP_MARKETPLACE_URL));
}

guint
ts_settings_get_threads (TsSettings *self)
{
  return (guint) g_value_get_int (value_of (self, PROP_THREADS));
}

TsCkksChoice
ts_settings_get_ckks_preset (TsSettings *self)
{
  return g_value_get_enum (value_of (self, PROP_CKKS_PRESET));
}

const char *
ts_settings_get_ckks_preset_name (TsSettings *self)
{
  TsCkksChoice choice = ts_settings_get_ckks_preset (self);

  for (guint i = 0; i < G_N_ELEMENTS (presets); i++)
    if (presets[i].choice == choice)
      return presets[i].name;
  return NULL;
}

gboolean
ts_settings_get_chat_thinking (TsSettings *self)
{
  return g_value_get_boolean (value_of (self, PROP_CHAT_THINKING));
}

gboolean
ts_settings_get_use_gpu (TsSettings *self)
{
  return g_value_get_boolean (value_of (self, PROP_USE_GPU));
}

TsColorScheme
ts_settings_get_color_scheme (TsSettings *self)
{
  return g_value_get_enum (value_of (self, PROP_COLOR_SCHEME));
}

const char *
ts_settings_get_chat_model (TsSettings *self)
{
  return g_value_get_string (value_of (self, PROP_CHAT_MODEL));
}

const char *
ts_settings_get_chat_adapter (TsSettings *self)
{
  return g_value_get_string (value_of (self, PROP_CHAT_ADAPTER));
}

void
ts_settings_set_chat_model (TsSettings *self, const char *model, const char *adapter)
{
  g_return_if_fail (TS_IS_SETTINGS (self));
  g_object_set (self, "chat-model", model != NULL ? model : "",
                "chat-adapter", model != NULL && adapter != NULL ? adapter : "", NULL);
}

const char *
ts_settings_get_bench_model (TsSettings *self)
{
  return g_value_get_string (value_of (self, PROP_BENCH_MODEL));
}

const char *
ts_settings_get_bench_adapter (TsSettings *self)
{
  return g_value_get_string (value_of (self, PROP_BENCH_ADAPTER));
}

void
ts_settings_set_bench_model (TsSettings *self, const char *path)
{
  g_return_if_fail (TS_IS_SETTINGS (self));
  g_object_set (self, "bench-model", path != NULL ? path : "", NULL);
}

void
ts_settings_set_bench_adapter (TsSettings *self, const char *path)
{
  g_return_if_fail (TS_IS_SETTINGS (self));
  g_object_set (self, "bench-adapter", path != NULL ? path : "", NULL);
}

TsConversationSettings *
ts_settings_get_conversation_defaults (TsSettings *self)
{
  TsConversationSettings *s = ts_conversation_settings_new ();

  g_return_val_if_fail (TS_IS_SETTINGS (self), s);
  g_free (s->system_prompt);
  s->system_prompt = g_strdup (g_value_get_string (value_of (self, PROP_CHAT_SYSTEM_PROMPT)));
  s->temperature = g_value_get_double (value_of (self, PROP_CHAT_TEMPERATURE));
  s->top_k = g_value_get_int (value_of (self, PROP_CHAT_TOP_K));
  s->top_p = g_value_get_double (value_of (self, PROP_CHAT_TOP_P));
  s->min_p = g_value_get_double (value_of (self, PROP_CHAT_MIN_P));
  s->repeat_penalty = g_value_get_double (value_of (self, PROP_CHAT_REPEAT_PENALTY));
  s->seed = g_value_get_int (value_of (self, PROP_CHAT_SEED));
  s->context_length = (guint) g_value_get_int (value_of (self, PROP_CHAT_CONTEXT_LENGTH));
  return s;
}

void
ts_settings_set_conversation_defaults (TsSettings *self, const TsConversationSettings *s)
{
  g_return_if_fail (TS_IS_SETTINGS (self));
  g_return_if_fail (s != NULL);
  g_object_set (self, "chat-system-prompt", s->system_prompt, "chat-temperature", s->temperature,
                "chat-top-k", s->top_k, "chat-top-p", s->top_p, "chat-min-p", s->min_p,
                "chat-repeat-penalty", s->repeat_penalty, "chat-seed", (int) s->seed,
                "chat-context-length", (int) MIN (s->context_length, 1048576u), NULL);
}
