/* timings.c: per-token stage timings (DESIGN.md §2 stage names).
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include <time.h>

#include "lm.h"

static const char *const stage_names[LM_N_STAGES] = {
  "forward", "encrypt", "upload", "evaluate", "download", "decrypt", "lora_b",
  "lm_head", "sample",
};

const char *
lm_stage_name (LmStage stage)
{
  return (unsigned) stage < LM_N_STAGES ? stage_names[stage] : NULL;
}

void
lm_timings_add (LmTimings *timings, LmStage stage, double ms)
{
  if (timings != NULL && (unsigned) stage < LM_N_STAGES)
    timings->ms[stage] += ms;
}

double
lm_time_ms (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
