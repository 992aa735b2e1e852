/* ts-models-dialog.h: the Models window: the catalogue and the installed models.
 * SPDX-License-Identifier: GPL-3.0-or-later
 *
 * One row per model of data/models.json and per imported file, with what
 * it is (architecture, parameters, quantisation, size, memory needed) and
 * whether it is in the models folder (src/models, ts_models_dir()). A model
 * not there downloads with live progress (percentage, speed, time left).
 * Pause (or closing the window) stops it and keeps what arrived: the row
 * says how much, and Resume asks the server for the rest only. Cancel,
 * while it runs or paused, deletes what arrived. An installed one is used
 * in the chat (after a warning when it needs more memory than the machine
 * has available) or removed after a confirmation; "Import GGUF…" copies a
 * file of the user's in, refused with the engine's reason when it cannot
 * run it. Downloads and imports run on a worker thread, one at a time.
 *
 * Main-thread only.
 */
#pragma once

#include <adwaita.h>

#include "ts-chat-page.h"

G_BEGIN_DECLS

#define TS_TYPE_MODELS_DIALOG (ts_models_dialog_get_type ())
G_DECLARE_FINAL_TYPE (TsModelsDialog, ts_models_dialog, TS, MODELS_DIALOG, AdwWindow)

/* A dialog whose "Use" loads models into @chat_page (not owned; may be NULL). */
TsModelsDialog *ts_models_dialog_new (GtkWindow *parent, TsChatPage *chat_page);

/* What the buttons do, for the file chooser and for tests. */
void ts_models_dialog_import (TsModelsDialog *self, const char *path);
void ts_models_dialog_download (TsModelsDialog *self, const char *name);
/* Stops the running download and keeps what arrived (Resume: _download()). */
void ts_models_dialog_pause (TsModelsDialog *self);
/* Stops @name's download, running or paused, and deletes what arrived. */
void ts_models_dialog_cancel (TsModelsDialog *self, const char *name);
void ts_models_dialog_remove (TsModelsDialog *self, const char *name);
void ts_models_dialog_use (TsModelsDialog *self, const char *name);

/* Rows shown, and how many of them are installed. */
guint ts_models_dialog_count_rows (TsModelsDialog *self);
guint ts_models_dialog_count_installed (TsModelsDialog *self);
/* TRUE while a download or import runs. */
gboolean ts_models_dialog_get_busy (TsModelsDialog *self);
/* The last failure shown (NULL after a success). */
const char *ts_models_dialog_get_error (TsModelsDialog *self);
/* The last toast shown (NULL before the first). */
const char *ts_models_dialog_get_last_toast (TsModelsDialog *self);
/* What @name's row says of its download: the progress bar's text while it
 * runs, "Paused · …" while paused; NULL otherwise. */
const char *ts_models_dialog_get_row_status (TsModelsDialog *self, const char *name);

G_END_DECLS
