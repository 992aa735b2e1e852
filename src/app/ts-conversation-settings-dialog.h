/* ts-conversation-settings-dialog.h: a conversation's system prompt and sampling settings.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * A modal window that edits a copy of one conversation's settings: the
 * system prompt with its presets (ts_system_prompt_presets(), then
 * "Custom"), temperature, top-k, top-p, min-p, repetition penalty, the seed
 * or a random one, and the context length up to the model's. Values are
 * checked as they change (ts_conversation_settings_validate()): an error
 * says which one is wrong and Save stays off until it is right.
 *
 * Signals: "saved" when Save is pressed (then the window closes; read the
 * values with ts_conversation_settings_dialog_get_settings() in the
 * handler), "make-default" when "Use as Defaults" is pressed.
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

#include "ts-conversation-settings.h"

G_BEGIN_DECLS

#define TS_TYPE_CONVERSATION_SETTINGS_DIALOG (ts_conversation_settings_dialog_get_type ())
G_DECLARE_FINAL_TYPE (TsConversationSettingsDialog, ts_conversation_settings_dialog, TS,
                      CONVERSATION_SETTINGS_DIALOG, AdwWindow)

/* Shows @current; "Reset to Defaults" shows @defaults; @model_context
 * (0: unknown) bounds the context length. Both are copied. */
TsConversationSettingsDialog *ts_conversation_settings_dialog_new (GtkWindow *parent,
                                                                   const TsConversationSettings *current,
                                                                   const TsConversationSettings *defaults,
                                                                   guint model_context);
/* Edits the defaults themselves (the preferences): the title says so and
 * "Use as Defaults" is hidden. */
void ts_conversation_settings_dialog_set_for_defaults (TsConversationSettingsDialog *self);
/* What the fields say now (newly allocated), valid or not. */
TsConversationSettings *ts_conversation_settings_dialog_get_settings (TsConversationSettingsDialog *self);
/* Shows @settings in the fields. */
void ts_conversation_settings_dialog_set_settings (TsConversationSettingsDialog *self,
                                                   const TsConversationSettings *settings);
/* The error shown, or NULL when the values are valid. */
const char *ts_conversation_settings_dialog_get_error (TsConversationSettingsDialog *self);

G_END_DECLS
