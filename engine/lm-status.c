/* lm-status.c: status codes and their messages.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "lm.h"

const char *
lm_status_message (LmStatus status)
{
  switch (status)
    {
    case LM_OK: return "success";
    case LM_ERR_INVALID_ARGUMENT: return "invalid argument";
    case LM_ERR_NO_MEMORY: return "out of memory";
    }
  return "unknown status";
}
