/* ts-conversation-settings-dialog-private.h: the dialog's fields, for its tests.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "ts-conversation-settings-dialog.h"

G_BEGIN_DECLS

struct _TsConversationSettingsDialog
{
  AdwWindow parent_instance;

  AdwComboRow *preset_row;       /* the presets, then "Custom" */
  GtkTextView *system_view;
  GtkSpinButton *temperature_spin;
  GtkSpinButton *top_k_spin;
  GtkSpinButton *top_p_spin;
  GtkSpinButton *min_p_spin;
  GtkSpinButton *repeat_spin;
  GtkSwitch *random_seed_switch;
  GtkSpinButton *seed_spin;
  AdwActionRow *context_row;
  GtkSpinButton *context_spin;
  GtkAdjustment *context_adjustment;
  GtkLabel *error_label;
  GtkButton *save_button;
  GtkWidget *make_default_button;

  TsConversationSettings *defaults;
  guint model_context;
  gboolean syncing_preset;       /* the preset row and the text are being matched */
  char *error;
};

G_END_DECLS
