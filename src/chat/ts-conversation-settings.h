/* ts-conversation-settings.h: one conversation's system prompt and sampling settings.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * Each conversation answers with its own system prompt and sampling
 * settings; history.sqlite keeps them with it (ts_history_set_settings()).
 * A conversation that has none kept follows the defaults of the
 * preferences (ts_settings_get_conversation_defaults()). Both chat panes
 * answer every turn with the same settings.
 *
 * The system prompt presets are listed once, here (ts_system_prompt_presets()):
 * their labels and texts are marked for translation (N_()).
 *
 * A TsConversationSettings is a plain struct, owned by whoever made it.
 */
#pragma once

#include <json-glib/json-glib.h>

G_BEGIN_DECLS

#define TS_CONVERSATION_SETTINGS_ERROR (ts_conversation_settings_error_quark ())
GQuark ts_conversation_settings_error_quark (void);

typedef enum {
  TS_CONVERSATION_SETTINGS_ERROR_RANGE,    /* a value outside its range (the message says which) */
  TS_CONVERSATION_SETTINGS_ERROR_PARSE,    /* stored text that is not the settings' JSON */
} TsConversationSettingsError;

/* The ranges the settings accept (inclusive). */
#define TS_TEMPERATURE_MAX 2.0
#define TS_TOP_K_MAX 1000
#define TS_TOP_P_MIN 0.05
#define TS_REPEAT_PENALTY_MAX 2.0
#define TS_SEED_MAX G_MAXINT32
#define TS_CONTEXT_MIN 64

typedef struct {
  char *system_prompt;        /* never NULL; "": no system turn */
  double temperature;         /* 0 … 2; 0: greedy (both panes give the same tokens) */
  int top_k;                  /* 0 … 1000; 0: off */
  double top_p;               /* 0.05 … 1; 1: off */
  double min_p;               /* 0 … 1; 0: off */
  double repeat_penalty;      /* 1 … 2; 1: off */
  gint64 seed;                /* 0 … G_MAXINT32, or -1: a fresh random seed each reply */
  guint context_length;       /* tokens; 0: the model's own, else 64 … the model's */
} TsConversationSettings;

/* The built-in defaults (the preferences' schema defaults): no system
 * prompt, greedy, top-k 40, top-p 1, min-p 0.05, no penalty, seed 0, the
 * model's context. */
TsConversationSettings *ts_conversation_settings_new (void);
TsConversationSettings *ts_conversation_settings_copy (const TsConversationSettings *settings);
void ts_conversation_settings_free (TsConversationSettings *settings);
G_DEFINE_AUTOPTR_CLEANUP_FUNC (TsConversationSettings, ts_conversation_settings_free)

gboolean ts_conversation_settings_equal (const TsConversationSettings *a,
                                         const TsConversationSettings *b);
/* Checks every value against its range; @model_context (0: unknown) bounds
 * the context length. The error names the first value out of range. */
gboolean ts_conversation_settings_validate (const TsConversationSettings *settings,
                                            guint model_context, GError **error);

/* As JSON members of the object @builder is building ("system_prompt",
 * "temperature", "top_k", "top_p", "min_p", "repeat_penalty", "seed" (null
 * for random), "context_length"). */
void ts_conversation_settings_add_members (JsonBuilder *builder,
                                           const TsConversationSettings *settings);
/* One JSON object of those members (newly allocated). */
char *ts_conversation_settings_to_json (const TsConversationSettings *settings);
/* Parses and validates; members left out keep the built-in defaults. */
TsConversationSettings *ts_conversation_settings_from_json (const char *json, GError **error);

/* A system prompt preset. */
typedef struct {
  const char *id;       /* "helpful", "concise", "code-review", "translator" */
  const char *label;    /* untranslated (N_()): show it with gettext() */
  const char *text;     /* untranslated (N_()): the system prompt, with gettext() */
} TsSystemPromptPreset;

/* The presets in the order the drop-down shows them; "Custom" is not one. */
const TsSystemPromptPreset *ts_system_prompt_presets (guint *n_out);
/* The index of the preset whose translated text is @text, or -1 (custom). */
int ts_system_prompt_preset_find (const char *text);

G_END_DECLS
