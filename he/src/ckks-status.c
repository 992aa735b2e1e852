/* ckks-status.c: status codes and their messages.
 * SPDX-License-Identifier: GPL-3.0-or-later */
#include "ckks-status.h"

const char *
ckks_status_message (CkksStatus status)
{
  switch (status)
    {
    case CKKS_OK: return "success";
    case CKKS_ERR_INVALID_ARGUMENT: return "invalid argument";
    case CKKS_ERR_NO_MEMORY: return "out of memory";
    case CKKS_ERR_INSECURE_PARAMETERS:
      return "log2 Q exceeds the HE Standard bound for 128-bit security";
    case CKKS_ERR_NO_PRIME: return "not enough NTT-friendly primes of the requested size";
    case CKKS_ERR_MISMATCH: return "objects belong to different parameters or shapes";
    case CKKS_ERR_LEVEL: return "operands are at incompatible levels";
    case CKKS_ERR_SCALE: return "operands have different scales or the scale overflows";
    case CKKS_ERR_TRUNCATED: return "serialised data is truncated";
    case CKKS_ERR_FORMAT: return "serialised data is malformed";
    case CKKS_ERR_VERSION: return "serialised data has an unsupported version";
    case CKKS_ERR_CHECKSUM: return "serialised data is corrupted (checksum mismatch)";
    case CKKS_ERR_AUTH: return "sealed key could not be authenticated";
    case CKKS_ERR_RANDOM: return "the random generator failed";
    case CKKS_ERR_CRYPTO: return "a cryptographic primitive failed";
    case CKKS_ERR_UNSUPPORTED: return "not supported by this build or machine";
    case CKKS_ERR_DEVICE: return "the GPU reported an error or is out of memory";
    }
  return "unknown status";
}

const char *
ckks_version (void)
{
  return "0.2.0";
}
