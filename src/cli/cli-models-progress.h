/* cli-models-progress.h: download, hashing and copy progress on the terminal.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <stdio.h>

#include "ts-models-progress.h"

typedef struct CliProgress CliProgress;

/* Writes to @out: one line rewritten in place when @out is a terminal,
 * otherwise a plain line every few seconds and at each stage's end. */
CliProgress *cli_progress_new (FILE *out);
/* Ends the line in progress. */
void cli_progress_free (CliProgress *progress);
/* Says on stderr why a source failed and that the next one is tried. */
void cli_progress_source_failed (const char *source, const GError *error, gpointer user_data);
/* A TsModelsProgressFunc; @user_data is the CliProgress. */
void cli_progress_report (const TsModelsProgress *progress, gpointer user_data);
