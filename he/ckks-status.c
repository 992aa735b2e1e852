/* ckks-status.c: status codes and their messages.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks.h"

const char *
ckks_status_message (CkksStatus status)
{
  switch (status)
    {
    case CKKS_OK: return "success";
    case CKKS_ERR_INVALID_ARGUMENT: return "invalid argument";
    case CKKS_ERR_NO_MEMORY: return "out of memory";
    }
  return "unknown status";
}

const char *
ckks_version (void)
{
  return "0.1.0";
}
