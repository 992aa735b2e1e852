/* ts-settings.h: the application's settings as typed properties, over GSettings.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A TsSettings has one property per key of org.tensafe.Desktop
 * (data/org.tensafe.Desktop.gschema.xml), of the same name, bound both
 * ways to a GSettings with g_settings_bind(): enum keys are enum
 * properties (the schema's nicks are the enums' nicks).
 * Widgets bind to the properties (g_object_bind_property(), <binding> in
 * .ui) and read them with the typed getters; every page, the preferences
 * window and the application share one. Without the installed schema it
 * still works, with the schema's defaults, and keeps nothing
 * (ts_settings_is_kept()).
 *
 * The CKKS presets the settings choose between are listed once, here
 * (ts_ckks_presets()): the preferences, the key generation and the
 * benchmark show them in that order.
 *
 * Thread-safety: main thread only (GSettings signals arrive there).
 */
#pragma once

#include <gio/gio.h>

#include "ts-conversation-settings.h"

G_BEGIN_DECLS

/* "evaluator-mode": how the adapter is evaluated. */
typedef enum
{
  TS_EVALUATOR_MODE_PLAIN,    /* the LoRA adapter without encryption */
  TS_EVALUATOR_MODE_LOCAL,    /* under CKKS, in this process */
  TS_EVALUATOR_MODE_REMOTE,   /* under CKKS, at "evaluator-url" */
} TsEvaluatorMode;

/* "ckks-preset": automatic, or a fixed ring degree. */
typedef enum
{
  TS_CKKS_CHOICE_AUTO,
  TS_CKKS_CHOICE_N8192,
  TS_CKKS_CHOICE_N16384,
  TS_CKKS_CHOICE_N32768,
} TsCkksChoice;

/* "color-scheme". */
typedef enum
{
  TS_COLOR_SCHEME_DEFAULT,    /* follows the system */
  TS_COLOR_SCHEME_LIGHT,
  TS_COLOR_SCHEME_DARK,
} TsColorScheme;

GType ts_evaluator_mode_get_type (void);
GType ts_ckks_choice_get_type (void);
GType ts_color_scheme_get_type (void);
#define TS_TYPE_EVALUATOR_MODE (ts_evaluator_mode_get_type ())
#define TS_TYPE_CKKS_CHOICE (ts_ckks_choice_get_type ())
#define TS_TYPE_COLOR_SCHEME (ts_color_scheme_get_type ())

/* One fixed CKKS preset. */
typedef struct
{
  TsCkksChoice  choice;     /* as "ckks-preset" names it */
  const char   *name;       /* the engine's preset (he/ckks-params.h): "fast" */
  const char   *label;      /* for people, untranslated (N_()): show it with gettext() */
} TsCkksPreset;

/* The fixed presets, smallest ring first (fast, default, wide); @n_out
 * gets their number. */
const TsCkksPreset *ts_ckks_presets (guint *n_out);
/* The preset with the engine's @name, or NULL. */
const TsCkksPreset *ts_ckks_preset_lookup (const char *name);
/* The preset lists start on this one when the settings say "auto". */
#define TS_CKKS_DEFAULT_INDEX 1

#define TS_TYPE_SETTINGS (ts_settings_get_type ())
G_DECLARE_FINAL_TYPE (TsSettings, ts_settings, TS, SETTINGS, GObject)

/* Over @gsettings (of org.tensafe.Desktop; NULL: nothing is kept). */
TsSettings *ts_settings_new (GSettings *gsettings);
/* Over the installed schema, with the default backend; nothing is kept
 * (and a message says so) when the schema is not installed. */
TsSettings *ts_settings_new_default (void);

/* The GSettings the properties are bound to, or NULL when nothing is kept. */
GSettings *ts_settings_get_gsettings (TsSettings *self);
gboolean ts_settings_is_kept (TsSettings *self);

TsEvaluatorMode ts_settings_get_evaluator_mode (TsSettings *self);
const char *ts_settings_get_evaluator_url (TsSettings *self);
gboolean ts_settings_get_evaluator_private (TsSettings *self);
double ts_settings_get_privacy_rho (TsSettings *self);
const char *ts_settings_get_marketplace_url (TsSettings *self);
/* Engine threads; 0: the caller's choice (one per core). */
guint ts_settings_get_threads (TsSettings *self);
TsCkksChoice ts_settings_get_ckks_preset (TsSettings *self);
/* The chosen preset's engine name, or NULL for "auto". */
const char *ts_settings_get_ckks_preset_name (TsSettings *self);
gboolean ts_settings_get_use_gpu (TsSettings *self);
/* Whether models that think (Qwen3, 3.5) think before they answer in the chat. */
gboolean ts_settings_get_chat_thinking (TsSettings *self);
TsColorScheme ts_settings_get_color_scheme (TsSettings *self);
/* The chat's last model and its adapter ("": the demo model, no adapter). */
const char *ts_settings_get_chat_model (TsSettings *self);
const char *ts_settings_get_chat_adapter (TsSettings *self);
/* Remembers them; NULL @model: the demo model (and no adapter). */
void ts_settings_set_chat_model (TsSettings *self, const char *model, const char *adapter);
/* The chat-system-prompt, chat-temperature, … keys: what new conversations,
 * and those with no settings of their own, answer with (newly allocated). */
TsConversationSettings *ts_settings_get_conversation_defaults (TsSettings *self);
/* Makes @settings the defaults (validated values: the keys' ranges are theirs). */
void ts_settings_set_conversation_defaults (TsSettings *self,
                                            const TsConversationSettings *settings);
const char *ts_settings_get_bench_model (TsSettings *self);
const char *ts_settings_get_bench_adapter (TsSettings *self);
void ts_settings_set_bench_model (TsSettings *self, const char *path);
void ts_settings_set_bench_adapter (TsSettings *self, const char *path);

G_END_DECLS
