/* ts-models-progress.c: counting bytes of a stage and reporting them.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ts-models-progress.h"

void
ts_models_meter_begin (TsModelsMeter *meter, TsModelsStage stage, gint64 total,
                       gint64 resumed, const char *what)
{
  if (meter == NULL)
    return;
  meter->state.stage = stage;
  meter->state.total = total;
  meter->state.done = resumed;
  meter->state.resumed = resumed;
  meter->state.what = what;
  if (meter->func != NULL)
    meter->func (&meter->state, meter->data);
}

void
ts_models_meter_add (TsModelsMeter *meter, gint64 bytes)
{
  if (meter == NULL)
    return;
  meter->state.done += bytes;
  if (meter->func != NULL)
    meter->func (&meter->state, meter->data);
}
