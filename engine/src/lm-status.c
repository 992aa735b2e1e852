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
    case LM_ERR_IO: return "file could not be read";
    case LM_ERR_FORMAT: return "malformed file";
    case LM_ERR_UNSUPPORTED: return "not supported";
    case LM_ERR_SHAPE: return "shapes do not match the model";
    case LM_ERR_CONTEXT_FULL: return "context length exceeded";
    case LM_ERR_HOOK: return "LoRA hook failed";
    case LM_ERR_CANCELLED: return "cancelled";
    case LM_ERR_DEVICE: return "the GPU reported an error or is out of memory";
    }
  return "unknown status";
}
